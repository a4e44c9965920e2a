/**
 * The activities of the fenced tool layer: `createToolActivities` (the agent's tool activities,
 * `./agent/tool-activities.ts`) and what a tool author and a worker use from `src/activities`.
 * Node side only: workflow code imports at most `./contract`.
 */
export { createToolActivities } from './agent/tool-activities';
export type { FenceActivities, ToolActivities, ToolActivitiesOptions } from './agent/tool-activities';
export { defineTool, ToolError } from './tools/define-tool';
export { toolCallActivities } from './agent/tool-call-activities';
export type { ToolCallActivity } from './agent/tool-call-activities';
export type { LookupResult, ToolContext, ToolDefinition, ToolErrorKind, ToolSuccess } from './tools/define-tool';
export { toApplicationFailure } from './fence/failures';
export { classifyHttpFailure, TOOL_ERROR_CLASSES } from './contract/error-classes';
export type { HttpFailureClass, ToolErrorClass } from './contract/error-classes';
export { DEFAULT_TRANSIENT_RETRY, nextRetryDelayMs, retryTransient } from './tools/transient-retry';
export type { TransientRetryPolicy } from './tools/transient-retry';
export { DEFAULT_RECONCILE_MARGIN_MS, settleTime } from './fence/fenced-tool';
export type { AttemptEvidence, FencedToolDeps } from './fence/fenced-tool';
export { FENCE_POINTS } from './fence/crash-points';
export type { FencePoint } from './fence/crash-points';
export { DEFAULT_CALL_DEADLINE_MS } from './tools/define-tool';
