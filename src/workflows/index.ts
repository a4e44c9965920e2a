/**
 * Workflow entry point (`workflowsPath` points here): the agent workflow and its message
 * definitions, nothing else. Everything reachable from here runs in the workflow sandbox, so
 * it must never reach Node builtins, `checkpoint/digest`, `checkpoint/codec`, the stores, the
 * activity implementations or `src/index.ts` (guarded by test/workflow-bundle.test.ts).
 *
 * @see docs/protocol.md#agent-workflow
 */
export { agentWorkflow } from './agent-workflow';
export { approveCallUpdate, cancelRunSignal, MESSAGE_ERROR_TYPES, rejectCallUpdate, resolveOutcomeUpdate, runStatusQuery } from './messages';
export type { MessageErrorType } from './messages';
export type { ToolActivities } from './activity-types';
export type * from './types';
