/**
 * temporal-tool-checkpoint: a persisted, compare-and-swap checkpoint around every tool call on
 * Temporal, so a retried activity delivers a stored result or reconciles an unknown outcome
 * instead of running the tool again. This root entry holds what adopting it takes: open a store,
 * define tools, build the activities and the agent's worker and client, read the configuration,
 * handle its errors. Other roles sit on subpaths (README, "Import paths"). Node only: workflow
 * code imports `temporal-tool-checkpoint/workflow`.
 */
export { openCheckpointStore } from './stores/open-checkpoint-store';
export type { CheckpointStore, CheckpointStoreOptions } from './stores/checkpoint-store';
export { defineTool, ToolError } from './activities/tools/define-tool';
export type { LookupResult, ToolContext, ToolDefinition, ToolErrorKind, ToolSuccess } from './activities/tools/define-tool';
export { classifyHttpFailure, TOOL_ERROR_CLASSES } from './activities/contract/error-classes';
export type { HttpFailureClass, ToolErrorClass } from './activities/contract/error-classes';
export { CHECKPOINT_ERROR_CODES, CheckpointError, isCheckpointError } from './checkpoint/errors';
export type { CheckpointErrorCode, CheckpointErrorDetails } from './checkpoint/errors';
export type { JsonValue } from './checkpoint/types';
export { createToolActivities } from './activities';
export type { ToolActivities, ToolActivitiesOptions } from './activities';
export type { ToolOutcome } from './activities/contract/contract';
export { createModelActivities } from './activities/agent/model-turn';
export type { ModelActivitiesOptions } from './activities/agent/model-turn';
export { createAgentWorker } from './worker';
export type { AgentWorker, AgentWorkerOptions } from './worker';
export { connectClient, startAgentRun } from './client';
export type { ConnectClientOptions, StartAgentRunOptions } from './client';
export type { AgentWorkflowInput, AgentWorkflowResult } from './workflows/agent/types';
export { defineConfig, loadConfig } from './config';
export type { Config, ConfigInput } from './config';
/** Absolute path of the agent's workflows, for `Worker.create({ workflowsPath })`. */
export const workflowsPath = require.resolve('./workflows');
