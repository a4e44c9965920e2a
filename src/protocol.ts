/**
 * `temporal-tool-checkpoint/protocol`: the checkpoint protocol itself, for those who build a
 * store or inspect records: the record and its types, the transitions (pure functions that each
 * return the next record or throw), the decision table, digests and idempotency keys, canonical
 * JSON (RFC 8785), the bounds, the sealed codec and the format migrations. The rules are in
 * docs/protocol.md. Node only (digests and the codec use node:crypto).
 */
export type { Action, Binding, CheckpointRecord, Decision, DeliveryState, ExecutionState, JsonValue, ResultState, Status, TransitionResult } from './checkpoint/types';
export { ACTIONS, CURRENT_SCHEMA_VERSION, STATUSES } from './checkpoint/types';
export { FINGERPRINT_PATTERN, IDENTIFIER_MAX_LENGTH, LIMITS, assertJsonValue } from './checkpoint/bounds';
export { canonicalJson } from './checkpoint/canonical-json';
export { fingerprintInput, idempotencyKey, intentDigest } from './checkpoint/digest';
export type { IdempotencyKeyParts, Intent } from './checkpoint/digest';
export { CALL_ID_TAG, callBindingId, parseCallBindingId } from './checkpoint/call-identity';
export type { CallIdentity } from './checkpoint/call-identity';
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
export { checkpointKey, CHECKPOINT_KEY_PREFIX } from './stores/checkpoint-key';
