/**
 * The ONLY mapping from errors to Temporal `ApplicationFailure`s. A raw `CheckpointError` must
 * never leave an activity: Temporal would make it `type: 'CheckpointError'` and retryable, and a
 * BINDING_CONFLICT would be retried. Retryability comes from the code table in
 * `checkpoint/errors.ts`.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { CHECKPOINT_ERROR_CODES, isCheckpointError, type CheckpointError } from '../../checkpoint/errors';
import { boundedFailure } from './failure-bounds';

/** `details[0].fault` of a failure caused by the worker's key configuration (see {@link isKeyConfigurationFault}). */
export const KEY_CONFIGURATION_FAULT = 'key-configuration';

/**
 * True for a stored record this worker's keys cannot read: DECRYPTION_FAILED or INTEGRITY_FAILURE
 * raised by the store for a quarantined row (`details.quarantined`: a missing or wrong key id, a
 * seal that does not verify under the configured keys, a plaintext where a ciphertext is due).
 * The row is never changed (quarantine), so nothing about the call was learned or lost: a worker
 * with the right keys can read it. Not a fact about the call, and never a reason to ask a person.
 */
export function isKeyConfigurationFault(error: unknown): error is CheckpointError {
  return (isCheckpointError(error, 'DECRYPTION_FAILED') || isCheckpointError(error, 'INTEGRITY_FAILURE')) && error.details.quarantined === true;
}

/**
 * Maps an error thrown inside an activity to what the activity should throw.
 * - A key configuration fault ({@link isKeyConfigurationFault}) → a *retryable* ApplicationFailure
 *   with `type` = the code (DECRYPTION_FAILED or INTEGRITY_FAILURE) and `details[0]` = the error's
 *   details plus `fault: 'key-configuration'`: the attempt is retried (the run does not pause for
 *   a person, who could only be offered a rerun) until a worker with the right keys reads the row.
 * - CheckpointError → ApplicationFailure with `type` = code, `nonRetryable` from the code table,
 *   `details[0]` = the error's details (with `names`' call id, tool and key where they name
 *   none), `nextRetryDelay` = `details.retryAfterMs` when present.
 * - ApplicationFailure and cancellation pass through unchanged.
 * - Anything else → retryable ApplicationFailure of type `UNEXPECTED` (it happened before or
 *   outside any claim; a claimed call's tool errors are classified before they get here).
 * A failure built here stays within Temporal's failure size limit (`./failure-bounds`: message,
 * details, cause and stacks cut, with a marker).
 */
export function toApplicationFailure(error: unknown, names?: CallNames): Error {
  if (error instanceof ApplicationFailure || error instanceof CancelledFailure) return error;
  if (isKeyConfigurationFault(error)) {
    return boundedFailure({
      type: error.code,
      message: `${error.message}; this worker's keys cannot read the stored record (a key rotation without the old key listed, or a deploy rolled back to older keys): the record is left untouched, nothing ran, and the attempt is retried until a worker with the right keys reads it`,
      nonRetryable: false,
      details: { ...definedNames(names), ...error.details, fault: KEY_CONFIGURATION_FAULT },
      cause: error,
    });
  }
  if (isCheckpointError(error)) {
    const retryAfterMs = error.details.retryAfterMs;
    return boundedFailure({
      type: error.code,
      message: error.message,
      nonRetryable: !CHECKPOINT_ERROR_CODES[error.code].retryable,
      details: { ...definedNames(names), ...error.details },
      nextRetryDelay: typeof retryAfterMs === 'number' && retryAfterMs > 0 ? retryAfterMs : undefined,
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return boundedFailure({
    type: 'UNEXPECTED',
    message,
    nonRetryable: false,
    ...(names === undefined ? {} : { details: definedNames(names) }),
    cause: error instanceof Error ? error : undefined,
  });
}

/** What names a call in a failure's `details[0]` when the error's own details do not (they win). */
export interface CallNames {
  readonly callId?: string;
  readonly toolName?: string;
  readonly idempotencyKey?: string;
}

function definedNames(names: CallNames | undefined): Record<string, string> {
  const defined: Record<string, string> = {};
  for (const key of ['callId', 'toolName', 'idempotencyKey'] as const) {
    const value = names?.[key];
    if (typeof value === 'string') defined[key] = value;
  }
  return defined;
}
