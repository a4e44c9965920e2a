/**
 * The rules of compensation (a saga) that both workflow surfaces apply: the agent workflow's
 * `compensateRun` (`src/workflows/agent/compensation.ts`) and the plugin's `Compensations` (`src/workflows/fenced/compensations.ts`).
 * Sandbox-safe: imports only `@temporalio/workflow` and `./failures`.
 *
 * - order: compensations undo effects in the reverse order they applied ({@link lastAppliedFirst});
 * - wind-down: they run in a non-cancellable scope ({@link windDown}), each activity's failure
 *   returned, never thrown ({@link attemptWindDown});
 * - classification: an attempt is compensated, failed with a known outcome (the effect stays
 *   applied), or of unknown outcome (OUTCOME_UNKNOWN: only a person can tell), see
 *   {@link compensationVerdict}.
 *
 * What each surface does with a verdict is its own: the agent pauses for a person on any
 * verdict other than `compensated`; the plugin lists it in its report (`failed` / `pending`).
 *
 * @see docs/compensation.md, docs/protocol.md#agent-workflow
 */
import { CancellationScope } from '@temporalio/workflow';
import { activityFailureMessage, activityFailureType, isOutcomeUnknown, UNCLASSIFIED } from './failures';

/** How an activity run while winding down ended (never cancelled: the scope is non-cancellable). */
export type WindDownAttempt<T> = { readonly kind: 'ok'; readonly value: T } | { readonly kind: 'failed'; readonly error: unknown };

/** A failure as a compensation reports it: `type` (a `CheckpointErrorCode`, a stored rejection's type, `TIMEOUT_<kind>`, or the surface's fallback) and the innermost `message`. */
export interface CompensationError {
  readonly type: string;
  readonly message: string;
}

/**
 * What one compensation attempt came to:
 * - `compensated`: the effect is undone (or the fence found it undone);
 * - `failed`: a known failure (the provider refused, a timeout, a refusal by the worker); the
 *   effect it should undo stays applied;
 * - `outcome-unknown`: OUTCOME_UNKNOWN, the compensation may have applied and only a person can tell.
 */
export type CompensationVerdict = { readonly kind: 'compensated' } | { readonly kind: 'failed' | 'outcome-unknown'; readonly error: CompensationError };

/**
 * The verdict of an attempt that ended with a thrown failure `error`: `outcome-unknown` for an
 * OUTCOME_UNKNOWN activity failure, else `failed`. `error.type` is `activityFailureType(error)`,
 * or `untypedAs(error)` when the failure carries no type (an error that is neither an
 * `ApplicationFailure` nor a timeout): the surfaces name those differently (the agent
 * `UNCLASSIFIED`, the plugin the error's `name`). Pure.
 */
export function failedAttemptVerdict(error: unknown, untypedAs: (error: unknown) => string): Exclude<CompensationVerdict, { kind: 'compensated' }> {
  return {
    kind: isOutcomeUnknown(error) ? 'outcome-unknown' : 'failed',
    error: { type: activityFailureType(error) ?? untypedAs(error), message: activityFailureMessage(error) },
  };
}

/**
 * The verdict of a compensation attempt: `compensated` when it returned and `refusal(value)` is
 * null, `failed` with that refusal when the activity returned a refusal (the agent's
 * `compensateToolCall` returns a provider's refusal as an `ok: false` outcome; a plugin activity
 * throws it), else {@link failedAttemptVerdict} of the thrown failure. Pure.
 */
export function compensationVerdict<T>(
  attempt: WindDownAttempt<T>,
  untypedAs: (error: unknown) => string,
  refusal: (value: T) => CompensationError | null = () => null,
): CompensationVerdict {
  if (attempt.kind === 'failed') return failedAttemptVerdict(attempt.error, untypedAs);
  const refused = refusal(attempt.value);
  return refused === null ? { kind: 'compensated' } : { kind: 'failed', error: refused };
}

/** The agent's name for a failure that carries no type. */
export const untypedAsUnclassified = (): string => UNCLASSIFIED;

/** The plugin's name for a failure that carries no type: the error's `name` (`Error` for a non-error). */
export function untypedAsErrorName(error: unknown): string {
  return error instanceof Error ? error.name : 'Error';
}

/**
 * The entries whose effect applied, last applied first: those with a non-null place in the order
 * of application (`appliedSeq`, increasing as effects apply), sorted by it, highest first. Pure;
 * `entries` is not changed.
 */
export function lastAppliedFirst<T>(entries: readonly T[], appliedSeq: (entry: T) => number | null): T[] {
  return entries.filter((entry) => appliedSeq(entry) !== null).sort((a, b) => appliedSeq(b)! - appliedSeq(a)!);
}

/**
 * Runs `run` (the wind-down: compensations, and the pauses they need) in
 * `CancellationScope.nonCancellable`: a cancellation of the workflow does not cut it short, and
 * the activities it schedules are not cancelled.
 */
export function windDown<T>(run: () => Promise<T>): Promise<T> {
  return CancellationScope.nonCancellable(run);
}

/** Runs one activity of the wind-down and returns how it ended: its value, or the failure it threw (never rethrown). */
export async function attemptWindDown<T>(run: () => Promise<T>): Promise<WindDownAttempt<T>> {
  try {
    return { kind: 'ok', value: await run() };
  } catch (error) {
    return { kind: 'failed', error };
  }
}
