/**
 * The error classes of the retry policy (SPEC §4 "Fenced tool activity", issue 6 "Retry
 * policy"), in one table, and the HTTP classifier that maps a provider's answer to them.
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
import type { ToolErrorKind } from './define-tool';

/**
 * Every error class, with `retryable`: whether the fenced activity retries it (always with the
 * same idempotency key). Stable names: never renamed.
 */
export const TOOL_ERROR_CLASSES = {
  /**
   * Transient: rate limited (429), unavailable before any effect (503), key still in flight
   * (409), or a connection that never delivered the request. Retried inside the attempt with
   * the same idempotency key, exponential backoff with full jitter, `Retry-After` honoured as
   * the next delay, within the tool's `callDeadlineMs`; when that runs out the call is stored
   * with this type. Nothing was applied.
   */
  TRANSIENT_EXHAUSTED: { retryable: true },
  /** The input broke the tool's schema (activity failure, nothing written) or the provider refused it as malformed (400, 413, 415, 422). */
  INVALID_TOOL_INPUT: { retryable: false },
  /** The provider refused the caller (401, 403). */
  PERMISSION_DENIED: { retryable: false },
  /** The provider refused the request under its business rules (404, 409, other 4xx). */
  BUSINESS_REJECTION: { retryable: false },
  /** The provider saw the idempotency key before with another request body (422, draft-ietf-httpapi-idempotency-key-header §2.7). */
  IDEMPOTENCY_CONFLICT: { retryable: false },
  /** A person rejected the call, or its approval expired; nothing ran (workflow result `errorType`). */
  USER_REJECTION: { retryable: false },
  /** The model asked for a tool or revision the run or the worker does not have (activity failure, nothing written). */
  UNKNOWN_TOOL: { retryable: false },
  /**
   * The request may have been applied (reset or timeout after sending, 500/502/504, unreadable
   * 2xx). Never "failed, safe to resend": reconciled by lookup or a same-key repeat, else the run
   * pauses for a person (activity failure).
   */
  OUTCOME_UNKNOWN: { retryable: false },
} as const;

/** A tool error class name. */
export type ToolErrorClass = keyof typeof TOOL_ERROR_CLASSES;

/** How a failed HTTP exchange is handled: the fenced activity's `kind`, and the class stored if it ends the call. */
export interface HttpFailureClass {
  readonly kind: ToolErrorKind;
  readonly type: ToolErrorClass;
}

/**
 * Classifies a provider's HTTP answer (or a network failure) for the retry policy.
 *
 * @param failure `status`: the HTTP status, absent when no answer came; `problemType`: the
 *   RFC 9457 problem `type`, if any; `sent`: whether the request may have reached the provider
 *   (`no` only when the connection never delivered it).
 * @returns `{ kind, type }`: 429/503 and 409 `…/idempotency-key-in-flight` and unsent requests →
 *   transient; 401/403 → PERMISSION_DENIED; 422 `…/idempotency-key-reused` → IDEMPOTENCY_CONFLICT;
 *   400/413/415/422 → INVALID_TOOL_INPUT; other 4xx → BUSINESS_REJECTION; 5xx and anything sent
 *   without an answer → OUTCOME_UNKNOWN. Pure.
 * @see draft-ietf-httpapi-idempotency-key-header §2.7, RFC 9110 §15
 */
export function classifyHttpFailure(failure: { readonly status?: number; readonly problemType?: string; readonly sent?: 'no' | 'yes' | 'maybe' }): HttpFailureClass {
  const { status, problemType = '' } = failure;
  if (status === undefined) {
    return failure.sent === 'no' ? { kind: 'transient', type: 'TRANSIENT_EXHAUSTED' } : { kind: 'unknown-outcome', type: 'OUTCOME_UNKNOWN' };
  }
  if (status === 429 || status === 503) return { kind: 'transient', type: 'TRANSIENT_EXHAUSTED' };
  if (status === 409 && problemType.endsWith('/idempotency-key-in-flight')) return { kind: 'transient', type: 'TRANSIENT_EXHAUSTED' };
  if (status === 401 || status === 403) return { kind: 'rejected', type: 'PERMISSION_DENIED' };
  if (status === 422 && problemType.endsWith('/idempotency-key-reused')) return { kind: 'rejected', type: 'IDEMPOTENCY_CONFLICT' };
  if (status === 400 || status === 413 || status === 415 || status === 422) return { kind: 'rejected', type: 'INVALID_TOOL_INPUT' };
  if (status >= 400 && status < 500) return { kind: 'rejected', type: 'BUSINESS_REJECTION' };
  return { kind: 'unknown-outcome', type: 'OUTCOME_UNKNOWN' };
}
