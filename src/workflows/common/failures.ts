/**
 * Sandbox-safe reading of activity failures: which `CheckpointErrorCode` an `ActivityFailure`
 * carries (its cause's `type`, set by `activities/fence/failures.ts`), and what the workflow does
 * about it.
 *
 * @see docs/protocol.md#the-fenced-attempt, docs/protocol.md#errors
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import type { BatchCancellationReport, PausedItem } from '../../activities/contract/batch-items';
import { NOTHING_APPLIED_CODES } from '../../activities/contract/contract';
import { CHECKPOINT_ERROR_CODES, type CheckpointErrorCode } from '../../checkpoint/errors';

export { NOTHING_APPLIED_CODES };

/**
 * The failure `type` behind an activity failure: the `ApplicationFailure` cause's `type`
 * (a `CheckpointErrorCode` for fenced activities), `TIMEOUT_<TimeoutType>` for a timeout, or
 * `null` when it is neither.
 */
export function activityFailureType(err: unknown): string | null {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) return cause.type ?? null;
  if (cause instanceof TimeoutFailure) return `TIMEOUT_${cause.timeoutType ?? 'UNSPECIFIED'}`;
  return null;
}

/** The type a failure without one is reported under (a call's `errorType`, a refused message). */
export const UNCLASSIFIED = 'UNCLASSIFIED';

/** {@link activityFailureType}, or {@link UNCLASSIFIED} when the failure has no type. */
export function failureTypeOrUnclassified(err: unknown): string {
  return activityFailureType(err) ?? UNCLASSIFIED;
}

/** The innermost human-readable message of an activity failure. */
export function activityFailureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof Error) return cause.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The first details object of an activity failure's `ApplicationFailure` cause (a CheckpointError's `details`), or null. */
export function activityFailureDetails(err: unknown): Readonly<Record<string, unknown>> | null {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const first = cause instanceof ApplicationFailure ? cause.details?.[0] : undefined;
  return typeof first === 'object' && first !== null ? (first as Record<string, unknown>) : null;
}

/** True when `err` is an activity failure of the given `CheckpointErrorCode`. */
export function isCheckpointFailure(err: unknown, code: CheckpointErrorCode): boolean {
  return activityFailureType(err) === code;
}

/** True when `err` is an activity failure of type OUTCOME_UNKNOWN: the run must pause for a person. */
export function isOutcomeUnknown(err: unknown): boolean {
  return isCheckpointFailure(err, 'OUTCOME_UNKNOWN');
}

/** True when the failure proves the call applied nothing (see {@link NOTHING_APPLIED_CODES}). */
export function isNothingApplied(err: unknown): boolean {
  const type = activityFailureType(err);
  return type !== null && type in CHECKPOINT_ERROR_CODES && NOTHING_APPLIED_CODES.includes(type as CheckpointErrorCode);
}

/** True when `err` is an activity timeout of the schedule-to-close kind (the workflow sets it to the time left before the run deadline). */
export function isScheduleToCloseTimeout(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_CLOSE';
}

/** True when `err` is any activity timeout. */
export function isTimeout(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof TimeoutFailure;
}

/**
 * The batch item an OUTCOME_UNKNOWN failure names (`details.item` = { key, generation, index,
 * total, idempotencyKey }; `total` kept when it is an integer above `index`), or null when the
 * failure names none or the shape is not that one (key a non-empty string, generation an integer ≥
 * 1, index an integer ≥ 0).
 */
export function pausedItemOf(err: unknown): PausedItem | null {
  const item = activityFailureDetails(err)?.item;
  if (typeof item !== 'object' || item === null) return null;
  const { key, generation, index, total, idempotencyKey } = item as Record<string, unknown>;
  if (typeof key !== 'string' || key.length === 0 || !isInteger(generation, 1) || !isInteger(index, 0)) return null;
  return { key, generation, index, ...(isInteger(total, index + 1) ? { total } : {}), idempotencyKey: typeof idempotencyKey === 'string' ? idempotencyKey : null };
}

/**
 * The tool revision and idempotency key a failure of a fenced attempt names (`details.toolRevision`
 * and `details.idempotencyKey`: the revision the call was claimed under and the key its request
 * was sent with), each null when the failure does not name it (a timeout, an older worker).
 */
export function claimIdentityOf(err: unknown): { readonly toolRevision: string | null; readonly idempotencyKey: string | null } {
  const details = activityFailureDetails(err);
  const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
  return { toolRevision: text(details?.toolRevision), idempotencyKey: text(details?.idempotencyKey) };
}

/**
 * The batch report of a cancelled batch call: `details[0].batch` of the activity's
 * `CancelledFailure` (the activity stops at an item boundary and reports its items), or null
 * when the cancellation carries none (not a batch call, or the activity did not report).
 */
export function batchCancellationReportOf(err: unknown): BatchCancellationReport | null {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof CancelledFailure)) return null;
  const first = cause.details?.[0];
  const batch = typeof first === 'object' && first !== null ? (first as Record<string, unknown>).batch : undefined;
  if (typeof batch !== 'object' || batch === null) return null;
  const report = batch as Record<string, unknown>;
  const counted = (part: unknown): boolean =>
    typeof part === 'object' && part !== null && isInteger((part as Record<string, unknown>).count, 0) && Array.isArray((part as Record<string, unknown>).keys);
  if (!isInteger(report.total, 0) || !counted(report.applied) || !counted(report.notApplied) || !counted(report.unknown)) return null;
  return batch as BatchCancellationReport;
}

function isInteger(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}
