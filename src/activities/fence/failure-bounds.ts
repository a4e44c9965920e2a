/**
 * Bounds on what a failure raised by the fence carries (message, details, cause chain, stack
 * traces), so that Temporal keeps it as it was sent. Temporal keeps an activity's last
 * *retryable* failure in the workflow's mutable state only up to
 * `limit.mutableStateActivityFailureSize.error` (4 KiB by default); a larger one is replaced by
 * "Failure exceeds size limit." with no type, no details and no call id, and an operator can then
 * name the call from the worker's log alone. Every failure the fence raises stays within
 * {@link FAILURE_BUDGET_BYTES} encoded, whatever third-party text (a tool's or a provider's
 * error, a driver's message) it quotes, and names its call, tool and idempotency key in `details[0]`.
 */
import { ApplicationFailure } from '@temporalio/common';

/**
 * Largest protobuf size of a failure the fence raises, bytes: under Temporal's default
 * `limit.mutableStateActivityFailureSize.error` (4,096) with room for a payload codec's envelope
 * (key id, nonce, tag) around the details and, with the codec's failure converter, around the
 * message and stack trace.
 */
export const FAILURE_BUDGET_BYTES = 3_584;
/** Largest message of a failure, UTF-8 bytes once JSON-escaped (what a codec's failure converter encodes). */
export const MAX_FAILURE_MESSAGE_BYTES = 900;
/** Largest failure type, bytes (a stored error result's type is a tool's). */
const MAX_TYPE_BYTES = 128;
/** Largest stack trace kept on a failure and on its cause, bytes. */
const MAX_STACK_BYTES = 256;
/** Largest message of the failure's cause, bytes. */
const MAX_CAUSE_MESSAGE_BYTES = 256;
/** Largest string value in `details[0]`, bytes (a naming field: {@link MAX_NAME_BYTES}). */
const MAX_DETAIL_BYTES = 192;
/** Largest call id, tool name or idempotency key in `details[0]`, bytes: whole for every realistic one (a plugin call id is `act-N`, a key 69 characters). */
const MAX_NAME_BYTES = 512;
/** Largest `details[0]`, bytes of its JSON. */
const MAX_DETAILS_BYTES = 1_152;
/** What `details[0]` keeps first when it must drop entries: the fields that name the call. */
const NAMING_FIELDS = ['callId', 'toolName', 'idempotencyKey', 'item', 'toolRevision', 'status', 'cause', 'retryAfterMs', 'storedToolRevision'] as const;
/** The fields that name the call, kept whole up to {@link MAX_NAME_BYTES}. */
const NAMES: readonly string[] = ['callId', 'toolName', 'idempotencyKey'];

/**
 * `text` cut so that its JSON string form is at most `maxBytes` UTF-8 bytes, ending with a marker
 * saying how many bytes were cut (`… [412 bytes cut]`). Code points are never split. Text that
 * fits is returned unchanged.
 */
export function truncateText(text: string, maxBytes: number): string {
  const whole = text.toWellFormed();
  if (jsonBytes(whole) <= maxBytes) return whole;
  const total = Buffer.byteLength(whole, 'utf8');
  const room = maxBytes - 40; // the marker and the JSON quotes
  let used = 2;
  let end = 0;
  for (const char of whole) {
    const size = jsonBytes(char) - 2;
    if (used + size > room) break;
    used += size;
    end += char.length;
  }
  const kept = whole.slice(0, end);
  return `${kept}… [${total - Buffer.byteLength(kept, 'utf8')} bytes cut]`;
}

/** `details` with every string value cut to {@link MAX_DETAIL_BYTES} and the whole within {@link MAX_DETAILS_BYTES} (naming fields first). */
export function boundDetails(details: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const bounded: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) bounded[key] = typeof value === 'string' && NAMES.includes(key) ? truncateText(value, MAX_NAME_BYTES) : boundValue(value);
  if (jsonBytes(bounded) <= MAX_DETAILS_BYTES) return bounded;
  const kept: Record<string, unknown> = { truncated: true };
  const keys = [...NAMING_FIELDS.filter((key) => key in bounded), ...Object.keys(bounded).filter((key) => !(NAMING_FIELDS as readonly string[]).includes(key))];
  for (const key of keys) {
    const next = { ...kept, [key]: bounded[key] };
    if (jsonBytes(next) <= MAX_DETAILS_BYTES) Object.assign(kept, { [key]: bounded[key] });
  }
  return kept;
}

/** What {@link boundedFailure} builds: an `ApplicationFailure`'s fields, unbounded. */
export interface FailureParts {
  readonly type: string;
  readonly message: string;
  readonly nonRetryable: boolean;
  /** Becomes `details[0]`, bounded by {@link boundDetails}. */
  readonly details?: Readonly<Record<string, unknown>>;
  /** Ms; passed as is. */
  readonly nextRetryDelay?: number;
  /** Kept as the failure's cause (in-process checks read its code), cut: message and stack bounded, its own cause dropped. */
  readonly cause?: unknown;
}

/**
 * An `ApplicationFailure` within {@link FAILURE_BUDGET_BYTES} once encoded: the message cut to
 * {@link MAX_FAILURE_MESSAGE_BYTES} (with a marker), `details[0]` bounded, the cause reduced to
 * one error with a bounded message and stack and no further cause, and the stack traces cut.
 */
export function boundedFailure(parts: FailureParts): ApplicationFailure {
  const failure = ApplicationFailure.create({
    type: truncateText(parts.type, MAX_TYPE_BYTES),
    message: truncateText(parts.message, MAX_FAILURE_MESSAGE_BYTES),
    nonRetryable: parts.nonRetryable,
    details: parts.details === undefined ? undefined : [boundDetails(parts.details)],
    nextRetryDelay: parts.nextRetryDelay,
    cause: boundedCause(parts.cause),
  });
  failure.stack = boundStack(failure.stack);
  return failure;
}

/**
 * `cause` as a failure's cause that encodes small: the same error (an `Error` keeps its class,
 * name, code and details, so in-process checks such as `isCheckpointError` still hold) with its
 * message and stack cut and its own cause dropped; a non-`Error` becomes an `Error` of its text.
 * The original error is not changed.
 */
function boundedCause(cause: unknown): Error | undefined {
  if (cause === undefined || cause === null) return undefined;
  if (!(cause instanceof Error)) return new Error(truncateText(String(cause), MAX_CAUSE_MESSAGE_BYTES));
  const copy = Object.create(Object.getPrototypeOf(cause) as object) as Error;
  for (const key of Object.getOwnPropertyNames(cause)) {
    if (key === 'cause' || key === 'stack' || key === 'message') continue;
    Object.defineProperty(copy, key, Object.getOwnPropertyDescriptor(cause, key)!);
  }
  Object.defineProperty(copy, 'message', { value: truncateText(cause.message, MAX_CAUSE_MESSAGE_BYTES), enumerable: false, writable: true, configurable: true });
  Object.defineProperty(copy, 'stack', { value: boundStack(cause.stack), enumerable: false, writable: true, configurable: true });
  return copy;
}

/** A stack trace cut to its first lines within {@link MAX_STACK_BYTES}. */
function boundStack(stack: string | undefined): string | undefined {
  if (stack === undefined) return undefined;
  const lines = stack.split('\n');
  let kept = '';
  for (const line of lines) {
    const next = kept === '' ? line : `${kept}\n${line}`;
    if (jsonBytes(next) > MAX_STACK_BYTES) break;
    kept = next;
  }
  return kept === '' ? truncateText(lines[0] ?? '', MAX_STACK_BYTES) : kept;
}

/** A detail value: strings cut, objects and arrays bounded member by member (4 levels), anything still too large as its cut JSON text. */
function boundValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return truncateText(value, MAX_DETAIL_BYTES);
  if (value === null || value === undefined || typeof value === 'number' || typeof value === 'boolean') return value;
  let bounded: unknown;
  if (depth < 4 && Array.isArray(value)) bounded = value.slice(0, 32).map((member) => boundValue(member, depth + 1));
  else if (depth < 4 && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    bounded = Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .slice(0, 32)
        .map(([key, member]) => [truncateText(key, 64), boundValue(member, depth + 1)]),
    );
  } else bounded = value;
  let text: string;
  try {
    text = JSON.stringify(bounded) ?? String(bounded);
  } catch {
    text = String(bounded);
  }
  return Buffer.byteLength(text, 'utf8') <= MAX_DETAILS_BYTES / 2 ? bounded : truncateText(text, MAX_DETAIL_BYTES);
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}
