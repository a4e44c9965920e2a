/**
 * The error classes of the retry policy (docs/protocol.md#the-fenced-attempt), in one table, and
 * the HTTP classifier that maps a provider's answer to them.
 *
 * A class name is what a person or the model reads to know what went wrong and whether a
 * resend could ever help. It appears in exactly one of three places:
 * - the stored error result's `error.type` (`{ ok: false, error: { type, message } }`), for a
 *   tool that ran and was refused: the tool throws a `ToolError` (or any error with `kind` and
 *   `type`) naming the class;
 * - the `ApplicationFailure` type, where the activity itself fails before anything ran
 *   (`INVALID_TOOL_INPUT`, `UNKNOWN_TOOL`) or the outcome is unknown (`OUTCOME_UNKNOWN`);
 * - a call's `errorType` in the workflow result (`USER_REJECTION`).
 *
 * Pure data and one pure function; no imports, no I/O. Workflow code imports its types only.
 */

/**
 * How a tool failure is classified; tools (or their HTTP clients) put it on the error as `kind`.
 * - `transient`: not applied (429, 503, connection refused); retried in the attempt with backoff and the same key.
 * - `rejected`: refused for good (validation, permission, business rule, key conflict); stored and delivered as an error result.
 * - `unknown-outcome`: the request may have been applied; never "failed, safe to resend".
 * An error without a `kind` is treated as `unknown-outcome` (fail safe).
 */
export type ToolErrorKind = 'transient' | 'rejected' | 'unknown-outcome';

/**
 * Every error class, with `retryable`: whether the fenced activity retries it (always with the
 * same idempotency key). Stable names: never renamed.
 */
export const TOOL_ERROR_CLASSES = {
  /**
   * Transient: rate limited (429), unavailable before any effect (503), request timeout before
   * the request was read (408), or a connection that never delivered the request. Retried inside
   * the attempt with the same idempotency key, exponential backoff with full jitter,
   * `Retry-After` honoured as the next delay, within the tool's `callDeadlineMs`; when that runs
   * out the attempt gives its claim back and the next attempt tries again (same key), and only
   * the last attempt (the retry policy's `maximumAttempts`, or the schedule-to-close deadline)
   * stores the call with this type. Nothing was applied.
   */
  TRANSIENT_EXHAUSTED: { retryable: true },
  /** The input broke the tool's schema (activity failure, nothing written) or the provider refused it as malformed (400, 413, 415, 422). */
  INVALID_TOOL_INPUT: { retryable: false },
  /** The provider refused the caller (401, 403). */
  PERMISSION_DENIED: { retryable: false },
  /**
   * The provider refused the request under its business rules (404, other 4xx, and a 409 to a
   * request that carried no idempotency key). Never a 409 to a keyed request: see `OUTCOME_UNKNOWN`.
   */
  BUSINESS_REJECTION: { retryable: false },
  /** The provider saw the idempotency key before with another request body (422, draft-ietf-httpapi-idempotency-key-header §2.7). */
  IDEMPOTENCY_CONFLICT: { retryable: false },
  /** A person rejected the call, or its approval expired; nothing ran (workflow result `errorType`). */
  USER_REJECTION: { retryable: false },
  /** The model asked for a tool or revision the run or the worker does not have (activity failure, nothing written). */
  UNKNOWN_TOOL: { retryable: false },
  /**
   * The request may have been applied (reset or timeout after sending, 500/502/504, unreadable
   * 2xx), or an earlier request with the same idempotency key is still in flight (a 409 to a
   * keyed request: Stripe's `idempotency_key_in_use`, an RFC 9457 type ending
   * `/idempotency-key-in-flight`, or a plain 409). Never "failed, safe to resend", never a
   * stored final error: reconciled by lookup or a same-key repeat, else the run pauses for a
   * person (activity failure). The in-flight 409 is classified `{ kind: 'transient', type:
   * 'OUTCOME_UNKNOWN' }`: retried in the attempt with the same key, and an unknown outcome if
   * those retries run out.
   */
  OUTCOME_UNKNOWN: { retryable: false },
  /**
   * A person settled an unknown outcome in the store as not applied (`ttc resolve-in-store
   * --not-applied`, `resolveCallInStore`): the fenced activity's next attempt fails with this
   * type, non-retryably, and your workflow decides whether to make a new call.
   */
  RESOLVED_NOT_APPLIED: { retryable: false },
} as const;

/** A tool error class name. */
export type ToolErrorClass = keyof typeof TOOL_ERROR_CLASSES;

/** How a failed HTTP exchange is handled: the fenced activity's `kind`, and the class stored if it ends the call. */
export interface HttpFailureClass {
  readonly kind: ToolErrorKind;
  readonly type: ToolErrorClass;
}

/** What {@link classifyHttpFailure} reads of a failed HTTP exchange. */
export interface HttpFailure {
  /** The HTTP status; absent when no answer came. */
  readonly status?: number;
  /** The RFC 9457 problem `type` of the answer, if any. */
  readonly problemType?: string;
  /** A provider error code from the answer's body, if any (e.g. Stripe's `idempotency_key_in_use`). */
  readonly code?: string;
  /** Whether the request may have reached the provider (`no` only when the connection never delivered it). */
  readonly sent?: 'no' | 'yes' | 'maybe';
  /** The request carried an `Idempotency-Key`. @default false */
  readonly keyed?: boolean;
}

/** The RFC 9457 problem type suffix of "a request with this key is in flight" (the demo provider's; draft-ietf-httpapi-idempotency-key-header §2.7 answers 409). */
const IN_FLIGHT_PROBLEM_SUFFIX = '/idempotency-key-in-flight';
/** Stripe's error code for a same-key request while the first is still in progress (HTTP 409). */
const IN_FLIGHT_CODE = 'idempotency_key_in_use';

/**
 * Classifies a provider's HTTP answer (or a network failure) for the retry policy. The one
 * table for tools and model adapters (`src/model/sdk-common.ts` maps its answer onto
 * `MODEL_TRANSIENT` / `MODEL_REJECTED`).
 *
 * | answer | kind | type |
 * |---|---|---|
 * | no answer, `sent: 'no'` | `transient` | `TRANSIENT_EXHAUSTED` |
 * | no answer, `sent` `yes`/`maybe`/absent | `unknown-outcome` | `OUTCOME_UNKNOWN` |
 * | 4xx with an in-flight signal (problem type `…/idempotency-key-in-flight` or code `idempotency_key_in_use`; implies `keyed`) | `transient` | `OUTCOME_UNKNOWN` |
 * | 409 with `keyed: true` | `transient` | `OUTCOME_UNKNOWN` |
 * | 408, 429, 503 | `transient` | `TRANSIENT_EXHAUSTED` |
 * | 401, 403 | `rejected` | `PERMISSION_DENIED` |
 * | 422 `…/idempotency-key-reused` | `rejected` | `IDEMPOTENCY_CONFLICT` |
 * | 400, 413, 415, 422 | `rejected` | `INVALID_TOOL_INPUT` |
 * | other 4xx, 409 without a key among them | `rejected` | `BUSINESS_REJECTION` |
 * | 5xx other than 503, any other status | `unknown-outcome` | `OUTCOME_UNKNOWN` |
 *
 * A 409 to a keyed request means "the same key is still being processed" (or already
 * applied), never "refused": it is retried in the attempt with the same key, and when those
 * retries run out the fenced activity treats it as an unknown outcome (a `transient` error
 * whose `type` is `OUTCOME_UNKNOWN`), never as a stored final error. A 409 to a request
 * without a key is a conflict with the resource's state: a business rejection.
 *
 * @returns `{ kind, type }`. Pure.
 * @see draft-ietf-httpapi-idempotency-key-header §2.7, RFC 9110 §15, RFC 9457
 */
export function classifyHttpFailure(failure: HttpFailure): HttpFailureClass {
  const { status, problemType = '', code } = failure;
  if (status === undefined) {
    return failure.sent === 'no' ? { kind: 'transient', type: 'TRANSIENT_EXHAUSTED' } : { kind: 'unknown-outcome', type: 'OUTCOME_UNKNOWN' };
  }
  const inFlight = problemType.endsWith(IN_FLIGHT_PROBLEM_SUFFIX) || code === IN_FLIGHT_CODE;
  if (status >= 400 && status < 500 && (inFlight || (status === 409 && failure.keyed === true))) return { kind: 'transient', type: 'OUTCOME_UNKNOWN' };
  if (status === 408 || status === 429 || status === 503) return { kind: 'transient', type: 'TRANSIENT_EXHAUSTED' };
  if (status === 401 || status === 403) return { kind: 'rejected', type: 'PERMISSION_DENIED' };
  if (status === 422 && problemType.endsWith('/idempotency-key-reused')) return { kind: 'rejected', type: 'IDEMPOTENCY_CONFLICT' };
  if (status === 400 || status === 413 || status === 415 || status === 422) return { kind: 'rejected', type: 'INVALID_TOOL_INPUT' };
  if (status >= 400 && status < 500) return { kind: 'rejected', type: 'BUSINESS_REJECTION' };
  return { kind: 'unknown-outcome', type: 'OUTCOME_UNKNOWN' };
}
