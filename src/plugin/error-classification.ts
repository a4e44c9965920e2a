/**
 * How the fence interceptor classifies an error a fenced user activity throws (the `fence`
 * option's `classifyError`, `./options`): which errors are the call's final error result and
 * which leave its outcome unknown (docs/protocol.md#the-fenced-attempt,
 * docs/protocol.md#nothing-applied). Node side; no I/O.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ToolError, type ToolErrorKind } from '../activities/tools/define-tool';

/** A classifier of errors thrown by a fenced activity (see `FencedActivityOptions.classifyError`). */
export type ErrorClassifier = (error: unknown) => ToolErrorKind;

const KINDS: readonly unknown[] = ['transient', 'rejected', 'unknown-outcome'] satisfies ToolErrorKind[];

/**
 * The default classification of an error a fenced activity throws:
 * - an error with a `kind` field (`ToolError`, or any error carrying `kind`) keeps it;
 * - an `ApplicationFailure` with `nonRetryable: true` is `rejected`: unfenced, Temporal fails such an
 *   activity without a retry, and fenced it is the call's final error result (stored, delivered
 *   as a non-retryable `ApplicationFailure` with the same `type` and message, never run again);
 * - everything else (a plain `Error`, a retryable `ApplicationFailure`, a cancellation, a
 *   timeout) is `unknown-outcome`: the activity may have applied its effect before it threw, so
 *   the call is reconciled (`lookup`, or a same-key repeat with `dedupesByKey`) or pauses.
 */
export function defaultClassifyError(error: unknown): ToolErrorKind {
  const kind = ownKind(error);
  if (kind !== undefined) return kind;
  if (error instanceof ApplicationFailure && error.nonRetryable === true) return 'rejected';
  return 'unknown-outcome';
}

/**
 * `error` as the fence stores or reconciles it, by `classify` (`defaultClassifyError` when absent):
 * - the error itself when its own `kind` is the one `classify` gives (its `type` and
 *   `retryAfterMs` are kept, as for a `defineTool` tool);
 * - otherwise a `ToolError` of the classified kind and the error's message, whose `type` (the
 *   stored error result's type for `rejected`) is: the error's own `type` when it is a non-empty
 *   string (an `ApplicationFailure`'s type), else the `name` of an `Error` subclass that sets one
 *   (what Temporal would make the failure type unfenced), else `BUSINESS_REJECTION`; `TRANSIENT_EXHAUSTED` for `transient`; `OUTCOME_UNKNOWN` for
 *   `unknown-outcome`. An error whose `type` is `OUTCOME_UNKNOWN` keeps it (the fence then treats
 *   the outcome as unknown, whatever the kind).
 *
 * A classifier that throws, or returns anything but a {@link ToolErrorKind}, means
 * `unknown-outcome` (fail safe: never "refused" without evidence).
 */
export function classifyActivityError(classify: ErrorClassifier | undefined, error: unknown): unknown {
  let kind: unknown;
  try {
    kind = (classify ?? defaultClassifyError)(error);
  } catch {
    kind = 'unknown-outcome';
  }
  if (!KINDS.includes(kind)) kind = 'unknown-outcome';
  const classified = kind as ToolErrorKind;
  if (ownKind(error) === classified) return error;
  const message = error instanceof Error ? error.message : String(error);
  const type = typeOf(error);
  if (type === 'OUTCOME_UNKNOWN') return new ToolError(classified, message, undefined, type);
  if (classified === 'rejected') return new ToolError('rejected', message, undefined, type ?? nameOf(error) ?? 'BUSINESS_REJECTION');
  return new ToolError(classified, message);
}

function ownKind(error: unknown): ToolErrorKind | undefined {
  const kind = (error as { kind?: unknown } | null)?.kind;
  return KINDS.includes(kind) ? (kind as ToolErrorKind) : undefined;
}

function typeOf(error: unknown): string | undefined {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type !== '' ? type : undefined;
}

/** The name Temporal would give an unfenced activity's plain error as its failure type, when it says more than `Error`. */
function nameOf(error: unknown): string | undefined {
  return error instanceof Error && !(error instanceof ApplicationFailure) && typeof error.name === 'string' && error.name !== '' && error.name !== 'Error' ? error.name : undefined;
}
