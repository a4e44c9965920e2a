/**
 * Creating and validating checkpoint records (docs/protocol.md#record, #decide-and-validate). Pure:
 * no I/O, no clock, no Temporal. A record that fails validation is quarantined by the caller, never
 * reset to `ready`.
 */
import { assertIdentifier, assertJsonValue, FINGERPRINT_PATTERN, LIMITS, parseTimestamp, utf8ByteLength, describe } from './bounds';
import canonicalize from 'canonicalize';
import { CheckpointError, isCheckpointError } from './errors';
import { CURRENT_SCHEMA_VERSION, STATUSES, type Binding, type CheckpointRecord, type Status } from './types';

const BINDING_FIELDS = ['namespace', 'callId', 'toolName', 'toolRevision', 'inputFingerprint'] as const;
const RECORD_FIELDS = ['schemaVersion', 'binding', 'status', 'revision', 'createdAt', 'updatedAt', 'execution', 'result', 'delivery'] as const;
const EXECUTION_FIELDS = ['attemptId', 'claimedAt', 'finishedAt', 'uncertainAt', 'uncertainReason', 'previousAttemptId', 'deadlineAt'] as const;
const DELIVERY_FIELDS = ['deliveryId', 'claimedAt', 'releasedAt', 'deliveredAt'] as const;
/**
 * Longest stored reason in its encrypted (`$enc:A256GCM:…`: base64url of up to 3 UTF-8 bytes per
 * code unit, plus IV, tag and key id) or wrapped (`$enc:plain:…`) form, in UTF-16 code units
 * (see `src/stores/payload-cipher.ts`).
 */
const MAX_STORED_REASON_LENGTH = 4 * LIMITS.maxReasonLength + 512;

/**
 * Asserts a complete, well-formed binding: every field present, bounded, and
 * `inputFingerprint` of the form `sha256:` + 64 lowercase hex.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field.
 */
export function assertBinding(binding: unknown): asserts binding is Binding {
  if (typeof binding !== 'object' || binding === null) {
    throw new CheckpointError('INVALID_ARGUMENT', 'binding must be an object with namespace, callId, toolName, toolRevision and inputFingerprint', {
      field: 'binding',
      actual: describe(binding),
    });
  }
  const b = binding as Record<string, unknown>;
  assertIdentifier(b.namespace, 'namespace');
  assertIdentifier(b.callId, 'callId');
  assertIdentifier(b.toolName, 'toolName');
  assertIdentifier(b.toolRevision, 'toolRevision');
  if (typeof b.inputFingerprint !== 'string' || !FINGERPRINT_PATTERN.test(b.inputFingerprint)) {
    throw new CheckpointError('INVALID_ARGUMENT', 'inputFingerprint must be "sha256:" followed by 64 lowercase hex digits (see fingerprintInput)', {
      field: 'inputFingerprint',
      actual: describe(b.inputFingerprint),
    });
  }
}

/**
 * A frozen copy of exactly the five fields of `binding` (extra properties dropped): what a record
 * holds, and what a store checks a row against while it awaits the row (a caller that changes its
 * binding object meanwhile changes nothing). Anything but an object is returned as it is, for
 * {@link assertBinding} to refuse.
 */
export function bindingSnapshot(binding: Binding): Binding {
  if (typeof binding !== 'object' || binding === null) return binding;
  return Object.freeze({
    namespace: binding.namespace,
    callId: binding.callId,
    toolName: binding.toolName,
    toolRevision: binding.toolRevision,
    inputFingerprint: binding.inputFingerprint,
  });
}

/**
 * The binding fields in which `a` and `b` differ (empty when they are the same call).
 */
export function bindingDifferences(a: Binding, b: Binding): string[] {
  return BINDING_FIELDS.filter((field) => a[field] !== b[field]);
}

/**
 * Creates a fresh checkpoint: schema version {@link CURRENT_SCHEMA_VERSION} (2), status `ready`,
 * revision 0, frozen.
 *
 * @param binding the call (see {@link Binding}); copied, only its five fields are kept.
 * @param options.createdAt ISO-8601 UTC; also `updatedAt`.
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad binding field or timestamp.
 * Pure: reads no clock.
 */
export function createCheckpoint(binding: Binding, options: { createdAt: string }): CheckpointRecord {
  assertBinding(binding);
  parseTimestamp(options?.createdAt, 'createdAt');
  return trustValid(
    deepFreeze({
      schemaVersion: CURRENT_SCHEMA_VERSION,
      binding: bindingSnapshot(binding),
      status: 'ready',
      revision: 0,
      createdAt: options.createdAt,
      updatedAt: options.createdAt,
      execution: null,
      result: null,
      delivery: null,
    }),
  );
}

/**
 * Checks a record completely: schema version (first), exact field sets, binding, status,
 * revision, timestamps and the invariants of each status (executing has an attempt,
 * completed has a result, delivering has a delivery fence, …), and the result payload's JSON
 * shape within the hard bounds (10 MiB, depth 32, 10,000 values).
 *
 * @returns true.
 * @throws {@link CheckpointError} UNSUPPORTED_SCHEMA when `schemaVersion` is not the current one, 2 (for older
 *   versions use `migrateCheckpoint`).
 * @throws {@link CheckpointError} INVALID_CHECKPOINT naming the first broken rule in `details.field`.
 */
export function validateCheckpoint(record: unknown): record is CheckpointRecord {
  if (isKnownValid(record)) return true;
  if (typeof record !== 'object' || record === null || Array.isArray(record)) {
    throw invalid('$', `a checkpoint must be a JSON object, got ${describe(record)}`);
  }
  const r = record as Record<string, unknown>;
  if (r.schemaVersion !== CURRENT_SCHEMA_VERSION) {
    throw new CheckpointError('UNSUPPORTED_SCHEMA', `schemaVersion ${describe(r.schemaVersion)} is not supported; this code reads version ${CURRENT_SCHEMA_VERSION}`, {
      field: 'schemaVersion',
      actual: describe(r.schemaVersion),
      supported: String(CURRENT_SCHEMA_VERSION),
    });
  }
  exactFields(r, RECORD_FIELDS, '$');
  try {
    assertBinding(r.binding);
  } catch (error) {
    throw asInvalid(error, 'binding');
  }
  exactFields(r.binding as unknown as Record<string, unknown>, BINDING_FIELDS, 'binding');
  if (!STATUSES.includes(r.status as Status)) throw invalid('status', `unknown status ${describe(r.status)}`);
  const status = r.status as Status;
  if (!Number.isSafeInteger(r.revision) || (r.revision as number) < 0) throw invalid('revision', `revision must be a non-negative integer, got ${describe(r.revision)}`);
  const revision = r.revision as number;
  const createdAt = time(r.createdAt, 'createdAt');
  const updatedAt = time(r.updatedAt, 'updatedAt');
  const notBefore = (ms: number | null, field: string, floor: number, floorName: string): void => {
    if (ms !== null && (ms < floor || ms > updatedAt)) throw invalid(field, `${field} must lie between ${floorName} and updatedAt`);
  };
  notBefore(updatedAt, 'updatedAt', createdAt, 'createdAt');

  // A ready record above revision 0 had every claim released (releaseExecution): claimable again.
  const minRevision: Record<Status, number> = { ready: 0, executing: 1, uncertain: 2, completed: 2, delivering: 3, delivered: 4 };
  if (revision < minRevision[status]) {
    throw invalid('revision', `revision ${revision} is impossible for status ${status}`);
  }

  const execution = r.execution as Record<string, unknown> | null;
  const needsExecution = status !== 'ready';
  if (!needsExecution) {
    if (execution !== null) throw invalid('execution', 'a ready record has no execution');
  } else {
    if (typeof execution !== 'object' || execution === null) throw invalid('execution', `a ${status} record must have an execution fence`);
    exactFields(execution, EXECUTION_FIELDS, 'execution');
    try {
      assertIdentifier(execution.attemptId, 'attemptId');
      if (execution.previousAttemptId !== null) assertIdentifier(execution.previousAttemptId, 'attemptId');
    } catch (error) {
      throw asInvalid(error, 'execution');
    }
    const claimedAt = time(execution.claimedAt, 'execution.claimedAt');
    notBefore(claimedAt, 'execution.claimedAt', createdAt, 'createdAt');
    const deadlineAt = nullableTime(execution.deadlineAt, 'execution.deadlineAt');
    if (deadlineAt !== null && deadlineAt < claimedAt) throw invalid('execution.deadlineAt', 'deadlineAt must not be before the claim');
    const finishedAt = nullableTime(execution.finishedAt, 'execution.finishedAt');
    const uncertainAt = nullableTime(execution.uncertainAt, 'execution.uncertainAt');
    notBefore(uncertainAt, 'execution.uncertainAt', claimedAt, 'execution.claimedAt');
    notBefore(finishedAt, 'execution.finishedAt', uncertainAt ?? claimedAt, 'the claim');
    const finished = status !== 'executing' && status !== 'uncertain';
    if (finished !== (finishedAt !== null)) throw invalid('execution.finishedAt', `finishedAt must be ${finished ? 'set' : 'null'} when status is ${status}`);
    if ((uncertainAt === null) !== (execution.uncertainReason === null)) throw invalid('execution.uncertainReason', 'uncertainAt and uncertainReason are set together');
    // A store with an encryption key stores the reason encrypted: '$enc:…' text, longer than the plaintext.
    const maxReason = typeof execution.uncertainReason === 'string' && execution.uncertainReason.startsWith('$enc:') ? MAX_STORED_REASON_LENGTH : LIMITS.maxReasonLength;
    if (
      execution.uncertainReason !== null &&
      (typeof execution.uncertainReason !== 'string' || execution.uncertainReason.length > maxReason || !execution.uncertainReason.isWellFormed())
    ) {
      throw invalid('execution.uncertainReason', 'uncertainReason must be a bounded string');
    }
    if (status === 'uncertain' && uncertainAt === null) throw invalid('execution.uncertainAt', 'an uncertain record records when it became uncertain');
    if (status === 'executing' && uncertainAt !== null) throw invalid('execution.uncertainAt', 'an executing record is not uncertain');
  }

  const hasResult = status === 'completed' || status === 'delivering' || status === 'delivered';
  const result = r.result as Record<string, unknown> | null;
  if (!hasResult) {
    if (result !== null) throw invalid('result', `a ${status} record has no result`);
  } else {
    if (typeof result !== 'object' || result === null) throw invalid('result', `a ${status} record must have a result`);
    exactFields(result, ['payload'], 'result');
    try {
      assertJsonValue(result.payload, 'result.payload');
      const bytes = utf8ByteLength(canonicalize(result.payload) as string);
      if (bytes > LIMITS.hardMaxPayloadBytes) throw invalid('result.payload', `result payload is ${bytes} bytes, over the hard limit of ${LIMITS.hardMaxPayloadBytes}`);
    } catch (error) {
      throw asInvalid(error, 'result.payload');
    }
  }

  const delivery = r.delivery as Record<string, unknown> | null;
  if (delivery !== null) {
    if (!hasResult) throw invalid('delivery', `a ${status} record has no delivery`);
    if (typeof delivery !== 'object') throw invalid('delivery', 'delivery must be an object or null');
    exactFields(delivery, DELIVERY_FIELDS, 'delivery');
    try {
      assertIdentifier(delivery.deliveryId, 'deliveryId');
    } catch (error) {
      throw asInvalid(error, 'delivery');
    }
    const finishedAt = Date.parse(String(execution?.finishedAt));
    const claimedAt = time(delivery.claimedAt, 'delivery.claimedAt');
    notBefore(claimedAt, 'delivery.claimedAt', finishedAt, 'execution.finishedAt');
    const releasedAt = nullableTime(delivery.releasedAt, 'delivery.releasedAt');
    const deliveredAt = nullableTime(delivery.deliveredAt, 'delivery.deliveredAt');
    notBefore(releasedAt, 'delivery.releasedAt', claimedAt, 'delivery.claimedAt');
    notBefore(deliveredAt, 'delivery.deliveredAt', claimedAt, 'delivery.claimedAt');
    const expected = { completed: [true, false], delivering: [false, false], delivered: [false, true] } as const;
    const [released, delivered] = expected[status as 'completed' | 'delivering' | 'delivered'];
    if ((releasedAt !== null) !== released || (deliveredAt !== null) !== delivered) {
      throw invalid('delivery', `delivery times do not fit status ${status}`);
    }
  } else if (status === 'delivering' || status === 'delivered') {
    throw invalid('delivery', `a ${status} record must have a delivery fence`);
  }
  return true;
}

/**
 * Records built by this layer itself (`createCheckpoint`, the transitions, `parseCheckpoint`):
 * deeply frozen and valid by construction. A frozen record cannot change, so validating it
 * again cannot fail; remembering them saves the full re-validation (and payload re-walk) on
 * every transition and serialization. Only this layer adds to the set, never user input.
 */
const KNOWN_VALID = new WeakSet<object>();

/** Marks a deeply frozen record this layer built as valid (see {@link KNOWN_VALID}). Internal. */
export function trustValid<T extends CheckpointRecord>(record: T): T {
  KNOWN_VALID.add(record);
  return record;
}

/** True for a record this layer built (deeply frozen, valid by construction). Internal. */
export function isKnownValid(record: unknown): boolean {
  return typeof record === 'object' && record !== null && KNOWN_VALID.has(record);
}

/**
 * Freezes `value` and everything reachable from it (iteratively) and returns it.
 */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
      Object.freeze(v);
      for (const child of Object.values(v)) stack.push(child);
    }
  }
  return value;
}

function invalid(field: string, message: string): CheckpointError {
  return new CheckpointError('INVALID_CHECKPOINT', `${field}: ${message}`, { field });
}

function asInvalid(error: unknown, field: string): CheckpointError {
  if (isCheckpointError(error, 'INVALID_CHECKPOINT')) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new CheckpointError('INVALID_CHECKPOINT', `${field}: ${message}`, { field, reason: isCheckpointError(error) ? error.code : 'unknown' }, { cause: error });
}

function exactFields(value: Record<string, unknown>, fields: readonly string[], where: string): void {
  const keys = Object.keys(value);
  const unknown = keys.filter((k) => !fields.includes(k));
  const missing = fields.filter((f) => !Object.prototype.hasOwnProperty.call(value, f));
  if (unknown.length > 0 || missing.length > 0) {
    throw new CheckpointError('INVALID_CHECKPOINT', `${where}: ${[...missing.map((m) => `missing field ${m}`), ...unknown.map((u) => `unknown field ${u}`)].join(', ')}`, {
      field: where,
      missing,
      unknown,
    });
  }
}

function time(value: unknown, field: string): number {
  try {
    return parseTimestamp(value, field);
  } catch (error) {
    throw asInvalid(error, field);
  }
}

function nullableTime(value: unknown, field: string): number | null {
  return value === null ? null : time(value, field);
}
