/**
 * temporal-tool-checkpoint: persisted, compare-and-swap checkpoints around AI-agent tool calls
 * on Temporal (docs/protocol.md). This barrel is for Node code (workers, clients, tests); workflow code
 * must never import it, because it reaches node:crypto and the store drivers.
 */
export type {
  Action,
  Binding,
  CheckpointRecord,
  Decision,
  DeliveryState,
  ExecutionState,
  JsonValue,
  ResultState,
  Status,
  TransitionResult,
} from './checkpoint/types';
export { ACTIONS, CURRENT_SCHEMA_VERSION, STATUSES } from './checkpoint/types';
export { CHECKPOINT_ERROR_CODES, CheckpointError, isCheckpointError } from './checkpoint/errors';
export type { CheckpointErrorCode, CheckpointErrorDetails } from './checkpoint/errors';
export { FINGERPRINT_PATTERN, IDENTIFIER_MAX_LENGTH, LIMITS, assertJsonValue } from './checkpoint/bounds';
export { canonicalJson } from './checkpoint/canonical-json';
export { fingerprintInput, idempotencyKey, intentDigest } from './checkpoint/digest';
export { CALL_ID_TAG, callBindingId, parseCallBindingId } from './checkpoint/call-identity';
export type { CallIdentity } from './checkpoint/call-identity';
export type { IdempotencyKeyParts, Intent } from './checkpoint/digest';
export { assertBinding, createCheckpoint, validateCheckpoint } from './checkpoint/record';
export { ACTION_BY_STATUS, decideCheckpoint } from './checkpoint/decide';
export {
  claimDelivery,
  claimExecution,
  completeDelivery,
  completeExecution,
  markExecutionUncertain,
  reclaimExecution,
  releaseExecution,
  renewExecution,
  releaseDelivery,
} from './checkpoint/transitions';
export { MIN_HMAC_KEY_BYTES, parseCheckpoint, serializeCheckpoint } from './checkpoint/codec';
export type { ParseOptions, SealOptions } from './checkpoint/codec';
export { migrateCheckpoint, supportedSchemaVersions } from './checkpoint/migrate';

// Side stores (docs/protocol.md#side-stores): SQLite (embedded default) and PostgreSQL (fleet),
// opened by URL.
export { openCheckpointStore, maskUrl } from './stores/open-checkpoint-store';
export type {
  CheckpointStore,
  CheckpointStoreOptions,
  ConversationEntry,
  CreateResult,
  ListOptions,
  PruneOptions,
  ListQuarantinedOptions,
  QuarantinedRow,
} from './stores/checkpoint-store';
export { checkpointKey, CHECKPOINT_KEY_PREFIX } from './stores/checkpoint-key';
export { SqliteCheckpointStore, DEFAULT_SQLITE_BUSY_TIMEOUT_MS, type SqliteStoreSettings } from './stores/sqlite-store';
export type { SqliteStoreStats } from './stores/sqlite-store';
export { PostgresCheckpointStore, DEFAULT_POSTGRES_POOL_SIZE, DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS } from './stores/postgres-store';
export { ENCRYPTION_KEY_BYTES, PAYLOAD_ENCRYPTION_ALGORITHM, isEncryptedPayload } from './stores/payload-cipher';
export type { EncryptedPayload, PayloadEncryptionOptions } from './stores/payload-cipher';

// Temporal integration (docs/protocol.md#the-fenced-attempt, #agent-workflow, #client-and-fleet):
// activities, worker and client entry points, configuration.
export { createToolActivities, defineTool, ToolError, toApplicationFailure } from './activities';
export type { LookupResult, ToolActivities, ToolActivitiesOptions, ToolContext, ToolDefinition, ToolErrorKind, ToolSuccess } from './activities';
export type { Delivered, DeliveredOutcome, FencedToolInput, FencedToolResult, OutputRef, ToolOutcome, ResultSource } from './activities/contract';
export { NOTHING_APPLIED_CODES } from './activities/contract';
export { createModelActivities } from './activities/model-turn';
export type { ModelActivitiesOptions } from './activities/model-turn';
// The conversation log (claim check): a run's conversation and large outputs live in.
export { conversationLogId } from './activities/conversation-log';
export { ConversationCache, DEFAULT_CONVERSATION_CACHE_BYTES } from './activities/conversation-cache';
export { TOOL_ERROR_CLASSES, classifyHttpFailure } from './activities/error-classes';
export type { ToolErrorClass, HttpFailureClass } from './activities/error-classes';
export { createAgentWorker } from './worker';
export type { AgentWorker, AgentWorkerOptions } from './worker';
export { connectClient, scriptedRunInput, startAgentRun } from './client';
export type { ConnectClientOptions, StartAgentRunOptions } from './client';
// Temporal payload codec: AES-256-GCM for everything Temporal stores, and its codec server.
export {
  AesGcmPayloadCodec,
  createPayloadCodec,
  isEncryptedTemporalPayload,
  PAYLOAD_CODEC_ENCODING,
  PAYLOAD_CODEC_IV_BYTES,
  PAYLOAD_CODEC_KEY_BYTES,
  PAYLOAD_CODEC_KEY_ID_METADATA,
  PAYLOAD_CODEC_TAG_BYTES,
} from './codec/payload-codec';
export type { PayloadCodecKeys } from './codec/payload-codec';
export { codecFromEnv, requireCodecFromEnv, PAYLOAD_CODEC_KEY_ENV, PAYLOAD_CODEC_KEY_ID_ENV, PAYLOAD_CODEC_KEYS_ENV, DEFAULT_PAYLOAD_CODEC_KEY_ID } from './codec/codec-config';
export { codecDataConverter, ENCODED_FAILURE_CONVERTER_PATH } from './codec/data-converter';
export { buildAgentWorkflowBundle, assertWorkflowBundleEncodesFailures } from './codec/workflow-bundle';
export type { AgentWorkflowBundleOptions } from './codec/workflow-bundle';
export { startCodecServer, parseCorsOrigin, DEFAULT_CODEC_SERVER_PORT, DEFAULT_CODEC_SERVER_HOST, MAX_CODEC_REQUEST_BYTES } from './codec/codec-server';
export type { CodecServerOptions, RunningCodecServer } from './codec/codec-server';
// Observability: the fence's span and metric names, and the store-latency buckets to give your own
// Temporal runtime.
export { TRACER_NAME } from './telemetry/attempt-telemetry';
export { FENCE_METRICS, STORE_LATENCY_BUCKETS_MS } from './telemetry/fence-metrics';
export type { FenceHeartbeatDetails, FencePhase } from './telemetry/heartbeat-details';
// People in the loop: read the call a decision is about, send the workflow's validated update.
export { approveCall, rejectCall, resolveCall, readWaitingCall, readRunStatus, DecisionRefusedError } from './operator/run-decisions';
export type { WaitingCall } from './operator/run-decisions';
export { listWaitingRuns, WAITING_RUNS_QUERY } from './operator/waiting-runs';
export type { ListWaitingRunsOptions, WaitingRun } from './operator/waiting-runs';
// Temporal visibility: the runs' search attributes, registered on a server that lacks them.
export { hasRunSearchAttributes, registerRunSearchAttributes, searchAttributeCreateCommands } from './visibility/namespace-search-attributes';
export { TTC_NEEDS_PERSON, TTC_WAITING_CALLS } from './workflows/search-attributes';
export { defineConfig, loadConfig, resolveConfig } from './config';
export type { Config, ConfigInput } from './config';
export type { AgentWorkflowInput, AgentWorkflowResult, ContinuedRun, RunLimits, RunStatusView } from './workflows/types';
/** Absolute path for `Worker.create({ workflowsPath })`. */
export const workflowsPath = require.resolve('./workflows');
