/**
 * Where an attempt of a fenced call stands with Temporal: whether Temporal still waits for it,
 * what losing the call's fence to another attempt means for it
 * (docs/protocol.md#overlapping-attempts), and whether it is the activity's last attempt.
 */
import type { Info } from '@temporalio/activity';
import { msOptionalToNumber } from '@temporalio/common/lib/time';
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import type { PreparedCall } from './prepare-call';

/** What an attempt knows about whether Temporal still waits for it. */
export interface AttemptStanding {
  /** The activity's attempt number (`Info.attempt`, from 1). */
  readonly attempt: number;
  /** The activity's cancellation details (`Context.cancellationDetails`), if it was cancelled. */
  readonly cancellation?: { readonly notFound?: boolean; readonly timedOut?: boolean; readonly reset?: boolean } | undefined;
}

/**
 * Whether Temporal has given up on this attempt: it said so (the activity was cancelled because
 * its heartbeat found it timed out, unknown to the server, or reset), or the fence that took the
 * call over is a later attempt of the activity (`attempt-N-…` with N greater than this
 * attempt's number: Temporal starts attempt N only after it stopped waiting for this one).
 */
export function supersededAttempt(standing: AttemptStanding, heldBy: unknown): boolean {
  const c = standing.cancellation;
  if (c?.notFound === true || c?.timedOut === true || c?.reset === true) return true;
  const holder = typeof heldBy === 'string' ? /^attempt-(\d+)-/.exec(heldBy) : null;
  return holder !== null && Number(holder[1]) > standing.attempt;
}

/**
 * A FENCE_CONFLICT of this attempt's own claim (another attempt took the call over, e.g. an
 * earlier attempt of a keyed tool, delayed past its heartbeat timeout, by a same-key repeat)
 * stays final (non-retryable, its result discarded) only for an attempt Temporal has given up
 * on ({@link supersededAttempt}). The attempt Temporal still waits for has learned only that a
 * live competitor holds the call: it fails with RECONCILE_PENDING (retryable; `details.cause`
 * FENCE_CONFLICT, `details.heldBy` the fence holding the call), and the next attempt delivers the
 * competitor's stored result or reconciles its claim. Any other error is returned unchanged.
 */
export function fenceLost(error: unknown, call: PreparedCall, standing: AttemptStanding): unknown {
  if (!isCheckpointError(error, 'FENCE_CONFLICT')) return error;
  const heldBy = error.details.heldBy;
  if (supersededAttempt(standing, heldBy)) return error;
  const bare = error.message.startsWith('FENCE_CONFLICT: ') ? error.message.slice('FENCE_CONFLICT: '.length) : error.message;
  return new CheckpointError(
    'RECONCILE_PENDING',
    `${call.tool.name} call ${call.input.callId}: another attempt took the call over while attempt ${standing.attempt} ran (FENCE_CONFLICT: ${bare}); this attempt's result is discarded and the next attempt delivers the stored result or reconciles`,
    { callId: call.input.callId, cause: 'FENCE_CONFLICT', heldBy: typeof heldBy === 'string' ? heldBy : null },
    { cause: error },
  );
}

/**
 * Whether Temporal starts no further attempt of this activity (`info`) after this one fails
 * retryably: this is attempt `maximumAttempts` of its retry policy, the policy makes
 * RECONCILE_PENDING non-retryable, or the next attempt (after `retryAfterMs`, else the policy's
 * backoff: initial 1 s, coefficient 2, maximum 100 × initial by default) would start at or after
 * the activity's schedule-to-close deadline (agentWorkflow sets it to the time left before the run
 * deadline). Without a schedule-to-close timeout and `maximumAttempts`, Temporal retries without
 * end: false. `nowMs` is the fence's clock, read only for the deadline.
 */
export function lastAttempt(info: Info, nowMs: () => number, retryAfterMs: number | undefined): boolean {
  const policy = info.retryPolicy;
  if (policy?.maximumAttempts !== undefined && policy.maximumAttempts > 0 && info.attempt >= policy.maximumAttempts) return true;
  if (policy?.nonRetryableErrorTypes?.includes('RECONCILE_PENDING') === true) return true;
  if (!(info.scheduleToCloseTimeoutMs > 0)) return false;
  const initialMs = msOptionalToNumber(policy?.initialInterval) ?? 1_000;
  const maximumMs = msOptionalToNumber(policy?.maximumInterval) ?? 100 * initialMs;
  const backoffMs = retryAfterMs ?? Math.min(maximumMs, initialMs * (policy?.backoffCoefficient ?? 2) ** Math.max(0, info.attempt - 1));
  return nowMs() + backoffMs >= info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs;
}
