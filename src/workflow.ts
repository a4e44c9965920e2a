/**
 * Workflow-safe exports: `temporal-tool-checkpoint/workflow`, importable from workflow code
 * running in Temporal's V8 sandbox. Everything here is reachable from the agent workflow's own
 * module, so it never reaches Node builtins, `node:crypto` (the digests and the record codec), the
 * stores, the activity implementations or the root entry (`temporal-tool-checkpoint`), whose
 * imports the workflow bundler refuses. Guarded by test/workflow-bundle.test.ts and
 * test/package/pack.test.ts, which bundles a workflow importing this entry from the packed package.
 *
 * Re-export `agentWorkflow` from your own workflows module to run it on your worker (a plugin
 * cannot register workflows); read a fenced activity's failure with the predicates below.
 */
export { agentWorkflow } from './workflows/agent-workflow';
export { approveCallUpdate, cancelRunSignal, MESSAGE_ERROR_TYPES, rejectCallUpdate, resolveOutcomeUpdate, runStatusQuery } from './workflows/messages';
export type { MessageErrorType } from './workflows/messages';
export {
  activityFailureDetails,
  activityFailureMessage,
  activityFailureType,
  isCheckpointFailure,
  isNothingApplied,
  isOutcomeUnknown,
  isScheduleToCloseTimeout,
  isTimeout,
  NOTHING_APPLIED_CODES,
} from './workflows/common/failures';
export { CHECKPOINT_ERROR_CODES } from './checkpoint/errors';
export type { CheckpointErrorCode, CheckpointErrorDetails } from './checkpoint/errors';
export { TOOL_ERROR_CLASSES } from './activities/contract/error-classes';
export type { ToolErrorClass } from './activities/contract/error-classes';
export type { Delivered, DeliveredOutcome, FencedToolInput, FencedToolResult, OutputRef, ResultSource, ToolOutcome } from './activities/contract/contract';
export type { ToolActivities } from './workflows/activity-types';
export type * from './workflows/types';
export { FINAL_CALL_STATUSES, LIVE_CALL_STATUSES, RUN_PHASES, RUN_STATUSES, STOP_REASONS } from './workflows/types';
// Approved calls through the plugin: describe a fenced call for a person, run it under the digest they approved.
export { withApprovedIntent } from './plugin/workflow/approval-scope';
export { fencedCallDescriber } from './plugin/workflow/approval-describe';
export type { FencedCallDescriber } from './plugin/workflow/approval-describe';
export { DESCRIBE_FENCED_CALL_ACTIVITY } from './plugin/workflow/approval-contract';
export type { ApprovedIntent, DescribeFencedCallInput, FencedCallDescription } from './plugin/workflow/approval-contract';
// Temporal visibility: the search attributes agent runs set while a person is needed.
export { TTC_NEEDS_PERSON, TTC_WAITING_CALLS } from './workflows/search-attributes';
// Compensations (a saga) in your own workflows under the plugin (docs/compensation.md).
export { Compensations, COMPENSATION_CALL_SUFFIX } from './plugin/workflow/compensations';
export type { CompensationEntry, CompensationReport, FailedCompensation, StepCompensation } from './plugin/workflow/compensations';
