/**
 * The ONLY mapping from errors to Temporal `ApplicationFailure`s. A raw `CheckpointError` must
 * never leave an activity: Temporal would make it `type: 'CheckpointError'` and retryable, and a
 * BINDING_CONFLICT would be retried. Retryability comes from the code table in
 * `checkpoint/errors.ts`.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { CHECKPOINT_ERROR_CODES, isCheckpointError } from '../checkpoint/errors';
import { boundedFailure } from './failure-bounds';

/**
 * Maps an error thrown inside an activity to what the activity should throw.
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
  return boundedFailure({ type: 'UNEXPECTED', message, nonRetryable: false, ...(names === undefined ? {} : { details: definedNames(names) }), cause: error instanceof Error ? error : undefined });
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
