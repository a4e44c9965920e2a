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
export { agentWorkflow } from './workflows/agent/agent-workflow';
export { approveCallUpdate, cancelRunSignal, MESSAGE_ERROR_TYPES, rejectCallUpdate, resolveOutcomeUpdate, runStatusQuery } from './workflows/agent/messages';
export type { MessageErrorType } from './workflows/agent/messages';
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
export type { ToolActivities } from './workflows/agent/activity-types';
export type * from './workflows/agent/types';
export { FINAL_CALL_STATUSES, LIVE_CALL_STATUSES, RUN_PHASES, RUN_STATUSES, STOP_REASONS } from './workflows/agent/types';
// Approved calls through the plugin: describe a fenced call for a person, run it under the digest they approved.
export { withApprovedIntent, withApprovalGrant } from './workflows/fenced/approval-scope';
export type { ApprovalGrant } from './workflows/fenced/approval-scope';
export { fencedCallDescriber, grantRequestDescriber } from './workflows/fenced/approval-describe';
export type { FencedCallDescriber, GrantRequestDescriber } from './workflows/fenced/approval-describe';
export type { GrantedCall } from './checkpoint/approval';
export { DESCRIBE_FENCED_CALL_ACTIVITY } from './plugin/contract/approval-contract';
export type { ApprovedIntent, DescribeFencedCallInput, FencedCallDescription } from './plugin/contract/approval-contract';
// Temporal visibility: the search attributes agent runs set while a person is needed.
export { TTC_NEEDS_PERSON, TTC_WAITING_CALLS } from './workflows/agent/search-attributes';
// Compensations (a saga) in your own workflows under the plugin (docs/compensation.md).
export { Compensations, COMPENSATION_CALL_SUFFIX } from './workflows/fenced/compensations';
export type { CompensationEntry, CompensationReport, FailedCompensation, StepCompensation } from './workflows/fenced/compensations';
