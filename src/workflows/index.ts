/**
 * Workflow entry point (`workflowsPath` points here): the agent workflow and its message
 * definitions, nothing else. Everything reachable from here runs in the workflow sandbox, so
 * it must never reach Node builtins, `checkpoint/digest`, `checkpoint/codec`, the stores, the
 * activity implementations or `src/index.ts` (guarded by test/workflow-bundle.test.ts).
 *
 * @see docs/protocol.md#agent-workflow
 */
export { agentWorkflow } from './agent/agent-workflow';
export { approveCallUpdate, cancelRunSignal, MESSAGE_ERROR_TYPES, rejectCallUpdate, resolveOutcomeUpdate, runStatusQuery } from './agent/messages';
export type { MessageErrorType } from './agent/messages';
export type { ToolActivities } from './agent/activity-types';
export type * from './agent/types';
