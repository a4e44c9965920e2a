/**
 * Limits of docs/protocol.md#bounds and the checks that enforce them: JSON values (iterative, so a
 * hostile input cannot exhaust the stack), identifiers and timestamps. Pure and sandbox-safe.
 */
import { CheckpointError } from './errors';
import type { JsonValue } from './types';

/** Default and hard limits. Bytes are UTF-8 bytes of the RFC 8785 canonical JSON text. */
export const LIMITS = {
  /** @default 65,536 UTF-8 JSON bytes for a result payload. */
  defaultMaxPayloadBytes: 65_536,
  /** `maxPayloadBytes` may be raised to at most 10 MiB. */
  hardMaxPayloadBytes: 10 * 1024 * 1024,
  /**
   * @default 65,536 UTF-8 bytes of a tool call's input as the model sent it (the arguments text
   * of an OpenAI call) and of its canonical JSON; `maxToolInputBytes` may be
   * set from 1 to `hardMaxPayloadBytes`.
   */
  defaultMaxToolInputBytes: 65_536,
  /** Nesting depth: `{}` and `[]` count 1 each; a scalar at the top counts 0. */
  maxDepth: 32,
  /** Values in one payload, counting every container and scalar. */
  maxValues: 10_000,
  /** Free-text reasons (uncertainty), in UTF-16 code units. */
  maxReasonLength: 2_048,
} as const;

/** Maximum lengths (UTF-16 code units) of the identifiers the protocol names (docs/protocol.md#bounds). */
export const IDENTIFIER_MAX_LENGTH = {
  namespace: 256,
  /** Also the binding's encoded call id (`callBindingId`: run chain, workflow id and call id). */
  callId: 2_048,
  runChainId: 256,
  toolName: 128,
  toolRevision: 128,
  attemptId: 256,
  deliveryId: 256,
  workflowId: 1_000,
  keyId: 128,
  /** A store row's dedupe key (`createIfAbsent`'s option): the fence makes them 70 characters. */
  dedupeKey: 256,
} as const;

export type IdentifierField = keyof typeof IDENTIFIER_MAX_LENGTH;

/** Options of {@link assertJsonValue}. */
export interface JsonBoundsOptions {
  /** @default LIMITS.maxDepth */
  readonly maxDepth?: number;
  /** @default LIMITS.maxValues */
  readonly maxValues?: number;
}

/** The shape of an input fingerprint: `sha256:` + 64 lowercase hex (docs/protocol.md#keys-and-digests). */
export const FINGERPRINT_PATTERN = /^sha256:[0-9a-f]{64}$/;

/** Unicode general category Cc: C0, DEL and C1 (U+0080–U+009F, e.g. NEL U+0085). */
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Asserts that `value` is a plain JSON value within the depth and count bounds. Walks with an
 * explicit stack (no recursion). Plain objects only (prototype `Object.prototype` or null);
 * strings must be well-formed UTF-16 (RFC 8785 §3.2.2.2 forbids lone surrogates).
 *
 * @param what names the value in error messages, e.g. `result`.
 * @throws {@link CheckpointError} NOT_JSON for NaN, ±Infinity, undefined, functions, symbols,
 *   bigint, cycles, sparse arrays, non-plain objects and lone surrogates; details name the path.
 * @throws {@link CheckpointError} PAYLOAD_TOO_LARGE when depth or value count exceeds its bound.
 */
export function assertJsonValue(value: unknown, what: string, options: JsonBoundsOptions = {}): asserts value is JsonValue {
  const maxDepth = options.maxDepth ?? LIMITS.maxDepth;
  const maxValues = options.maxValues ?? LIMITS.maxValues;
  // Frames: a value to visit (its path built only for an error), or an exit marker that takes a
  // container off the current path (at most `maxDepth` long, so a list is searched, not a Set).
  const stack: Array<JsonFrame | { exit: object }> = [{ value, parent: null, key: '', depth: 0 }];
  const onPath: object[] = [];
  let count = 0;
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if ('exit' in frame) {
      onPath.pop();
      continue;
    }
    const { value: v, depth } = frame;
    count += 1;
    if (count > maxValues) {
      throw new CheckpointError('PAYLOAD_TOO_LARGE', `${what} has more than ${maxValues} JSON values`, { field: what, limit: maxValues, bound: 'values' });
    }
    switch (typeof v) {
      case 'boolean':
        continue;
      case 'string':
        if (!v.isWellFormed()) throw notJson(what, frame, 'a string with a lone surrogate');
        continue;
      case 'number':
        if (!Number.isFinite(v)) throw notJson(what, frame, String(v));
        continue;
      case 'object':
        break;
      default:
        throw notJson(what, frame, typeof v);
    }
    if (v === null) continue;
    if (onPath.includes(v)) throw notJson(what, frame, 'a cycle');
    const childDepth = depth + 1;
    if (childDepth > maxDepth) {
      const path = pathOf(frame);
      throw new CheckpointError('PAYLOAD_TOO_LARGE', `${what} at ${path} nests deeper than ${maxDepth} levels`, { field: what, path, limit: maxDepth, bound: 'depth' });
    }
    onPath.push(v);
    stack.push({ exit: v });
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i -= 1) {
        if (!(i in v)) throw notJson(what, frame, `a sparse array (hole at index ${i})`);
        stack.push({ value: v[i], parent: frame, key: i, depth: childDepth });
      }
      // JSON has no named members on arrays; serializers would drop them silently.
      if (Object.keys(v).length !== v.length) throw notJson(what, frame, 'an array with non-index properties');
      continue;
    }
    const proto = Object.getPrototypeOf(v);
    // A plain object of any realm (jest, vm, worker threads): its prototype is null or a root prototype.
    if (proto !== null && Object.getPrototypeOf(proto) !== null) {
      throw notJson(what, frame, `an instance of ${(v as object).constructor?.name ?? 'a class'}`);
    }
    if (Object.getOwnPropertySymbols(v).length > 0) throw notJson(what, frame, 'an object with symbol keys');
    for (const key of Object.keys(v)) {
      if (!key.isWellFormed()) throw notJson(what, frame, 'an object key with a lone surrogate');
      stack.push({ value: (v as Record<string, unknown>)[key], parent: frame, key, depth: childDepth });
    }
  }
}

/** A value {@link assertJsonValue} visits: its parent frame and its key there (`$` has none). */
interface JsonFrame {
  readonly value: unknown;
  readonly parent: JsonFrame | null;
  readonly key: string | number;
  readonly depth: number;
}

/** The JSONPath-like path of a frame: `$`, `$.a`, `$.a[0]`. */
function pathOf(frame: JsonFrame): string {
  const parts: string[] = [];
  for (let f: JsonFrame | null = frame; f !== null && f.parent !== null; f = f.parent) parts.push(typeof f.key === 'number' ? `[${f.key}]` : `.${f.key}`);
  return `$${parts.reverse().join('')}`;
}

function notJson(what: string, frame: JsonFrame, kind: string): CheckpointError {
  const path = pathOf(frame);
  return new CheckpointError('NOT_JSON', `${what} at ${path} is ${kind}, not a JSON value`, { field: what, path, kind });
}

/**
 * Asserts a required identifier: a string, non-empty, no control characters, at most
 * {@link IDENTIFIER_MAX_LENGTH}[field] UTF-16 code units. An empty or missing id is never
 * hashed as "" or "null".
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field.
 */
export function assertIdentifier(value: unknown, field: IdentifierField): asserts value is string {
  const limit = IDENTIFIER_MAX_LENGTH[field];
  if (typeof value !== 'string' || value.length === 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} is required and must be a non-empty string`, { field, actual: describe(value) });
  }
  if (value.length > limit) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} is ${value.length} characters, the limit is ${limit}`, { field, limit, actual: value.length });
  }
  if (CONTROL_CHARS.test(value) || !value.isWellFormed()) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} contains a control character or a lone surrogate`, { field });
  }
}

const ISO_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;
const GREGORIAN_CYCLE_MS = 146_097 * 86_400_000;

/**
 * Asserts an ISO-8601 UTC timestamp such as `2026-11-29T08:52:20.000Z` and returns its
 * epoch milliseconds (proleptic Gregorian, as `Date.parse`; digits past milliseconds truncated).
 * Impossible dates and times (2026-02-30, 24:00, a leap second) are refused, not rolled over.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field.
 */
export function parseTimestamp(value: unknown, field: string): number {
  const m = typeof value === 'string' ? ISO_UTC.exec(value) : null;
  if (m !== null) {
    const [year, month, day, hour, minute, second] = [+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!];
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
    if (days !== undefined && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59) {
      const ms = m[7] === undefined ? 0 : +m[7].padEnd(3, '0').slice(0, 3);
      // Date.UTC maps years 0–99 to 1900–1999: count them 400 years (146,097 days, one Gregorian cycle) later.
      if (year < 100) return Date.UTC(year + 400, month - 1, day, hour, minute, second, ms) - GREGORIAN_CYCLE_MS;
      return Date.UTC(year, month - 1, day, hour, minute, second, ms);
    }
  }
  throw new CheckpointError('INVALID_ARGUMENT', `${field} must be an ISO-8601 UTC timestamp like 2026-01-31T12:00:00.000Z`, { field, actual: describe(value) });
}

/**
 * Asserts free text (an uncertainty reason): non-empty, at most {@link LIMITS.maxReasonLength}.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field.
 */
export function assertReason(value: unknown, field: string): asserts value is string {
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > LIMITS.maxReasonLength || !value.isWellFormed()) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must be a non-empty string of at most ${LIMITS.maxReasonLength} characters`, {
      field,
      limit: LIMITS.maxReasonLength,
      actual: describe(value),
    });
  }
}

/**
 * Free text from a tool or provider made fit to store as a reason: lone surrogates replaced
 * (well-formed UTF-16), cut to at most `maxLength` UTF-16 code units without splitting a code
 * point, trimmed, and `fallback` when nothing is left. Never throws, so a reason can always be
 * recorded after an effect (docs/protocol.md#nothing-applied).
 *
 * @param maxLength @default 2,000 (below {@link LIMITS.maxReasonLength}, room for a suffix)
 */
export function sanitizeReason(text: unknown, fallback: string, maxLength = 2_000): string {
  let value = typeof text === 'string' ? text.toWellFormed() : '';
  if (value.length > maxLength) {
    let cut = maxLength - 1; // room for the ellipsis
    const last = value.charCodeAt(cut - 1);
    if (last >= 0xd800 && last <= 0xdbff) cut -= 1; // do not split a surrogate pair
    value = `${value.slice(0, cut)}…`;
  }
  value = value.trim();
  return value.length > 0 ? value : fallback;
}

/**
 * Resolves a caller's `maxPayloadBytes`.
 *
 * @returns the limit in UTF-8 JSON bytes, {@link LIMITS.defaultMaxPayloadBytes} when absent.
 * @throws {@link CheckpointError} INVALID_ARGUMENT when not an integer in 1…10 MiB.
 */
export function resolveMaxPayloadBytes(value: number | undefined): number {
  return resolveByteLimit('maxPayloadBytes', value, LIMITS.defaultMaxPayloadBytes);
}

/**
 * Resolves a caller's `maxToolInputBytes` (`createToolActivities`, the model adapters).
 *
 * @returns the limit in UTF-8 bytes, {@link LIMITS.defaultMaxToolInputBytes} when absent.
 * @throws {@link CheckpointError} INVALID_ARGUMENT when not an integer in 1…10 MiB.
 */
export function resolveMaxToolInputBytes(value: number | undefined): number {
  return resolveByteLimit('maxToolInputBytes', value, LIMITS.defaultMaxToolInputBytes);
}

/** `value`, or `fallback` when absent. @throws {@link CheckpointError} INVALID_ARGUMENT naming `field` unless an integer in 1…10 MiB. */
function resolveByteLimit(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > LIMITS.hardMaxPayloadBytes) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must be an integer from 1 to ${LIMITS.hardMaxPayloadBytes} (10 MiB), got ${String(value)}`, {
      field,
      limit: LIMITS.hardMaxPayloadBytes,
      actual: describe(value),
    });
  }
  return value;
}

/** UTF-8 byte length of a string, without Node's Buffer (sandbox-safe). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

/** A short, JSON-safe description of a bad value for error details. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return value.length > 64 ? `string(${value.length})` : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeof value;
}
