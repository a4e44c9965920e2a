/**
 * The ONLY mapping from errors to Temporal `ApplicationFailure`s. A raw `CheckpointError` must
 * never leave an activity: Temporal would make it `type: 'CheckpointError'` and retryable, and a
 * BINDING_CONFLICT would be retried. Retryability comes from the code table in
 * `checkpoint/errors.ts`.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { CHECKPOINT_ERROR_CODES, isCheckpointError } from '../checkpoint/errors';

/**
 * Maps an error thrown inside an activity to what the activity should throw.
 * - CheckpointError → ApplicationFailure with `type` = code, `nonRetryable` from the code table,
 *   `details[0]` = the error's details, `nextRetryDelay` = `details.retryAfterMs` when present.
 * - ApplicationFailure and cancellation pass through unchanged.
 * - Anything else → retryable ApplicationFailure of type `UNEXPECTED` (it happened before or
 *   outside any claim; a claimed call's tool errors are classified before they get here).
 */
export function toApplicationFailure(error: unknown): Error {
  if (error instanceof ApplicationFailure || error instanceof CancelledFailure) return error;
  if (isCheckpointError(error)) {
    const retryAfterMs = error.details.retryAfterMs;
    return ApplicationFailure.create({
      type: error.code,
      message: error.message,
      nonRetryable: !CHECKPOINT_ERROR_CODES[error.code].retryable,
      details: [error.details],
      nextRetryDelay: typeof retryAfterMs === 'number' && retryAfterMs > 0 ? retryAfterMs : undefined,
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return ApplicationFailure.create({ type: 'UNEXPECTED', message, nonRetryable: false, cause: error instanceof Error ? error : undefined });
}
