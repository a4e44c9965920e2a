/**
 * The errors an attempt raises while a call's outcome is not settled: OUTCOME_UNKNOWN (a person
 * must decide) and RECONCILE_PENDING (retryable: the next attempt reads what this one left).
 */
import { CheckpointError } from '../../checkpoint/errors';
import type { PreparedCall } from './prepare-call';

/** OUTCOME_UNKNOWN for `call`: it cannot be looked up (`reason`); details carry what a person looks the effect up by. Non-retryable. */
export function outcomeUnknown(call: PreparedCall, reason: string): CheckpointError {
  return new CheckpointError(
    'OUTCOME_UNKNOWN',
    `${call.tool.name} call ${call.input.callId}: the outcome is unknown and cannot be looked up (${reason}); the run waits for a person`,
    {
      callId: call.input.callId,
      toolName: call.tool.name,
      toolRevision: call.tool.revision,
      idempotencyKey: call.idempotencyKey,
      intentDigest: call.intentDigest,
      reason,
    },
  );
}

/** RECONCILE_PENDING for `call` (retryable), with `retryAfterMs` (ms, rounded up) when positive. */
export function pendingReconcile(call: PreparedCall, message: string, retryAfterMs: number | undefined): CheckpointError {
  return new CheckpointError('RECONCILE_PENDING', message, {
    callId: call.input.callId,
    ...(retryAfterMs !== undefined && retryAfterMs > 0 ? { retryAfterMs: Math.ceil(retryAfterMs) } : {}),
  });
}
