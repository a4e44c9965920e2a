/**
 * Turns records into stored rows and back, the same way for every store: the strict codec
 * (`serializeCheckpoint` / `parseCheckpoint`, sealed when an HMAC key is configured), payload
 * encryption, and the row checks that make a quarantined row an error naming its key.
 */
import { createHash } from 'node:crypto';
import { assertIdentifier, LIMITS, parseTimestamp } from '../checkpoint/bounds';
import { canonicalJson } from '../checkpoint/canonical-json';
import { parseCheckpoint, serializeCheckpoint, type ParseOptions, type SealOptions } from '../checkpoint/codec';
import { CheckpointError, isCheckpointError, type CheckpointErrorDetails } from '../checkpoint/errors';
import { bindingDifferences, bindingSnapshot, deepFreeze, validateCheckpoint } from '../checkpoint/record';
import { STATUSES, type Binding, type CheckpointRecord, type JsonValue, type Status } from '../checkpoint/types';
import { checkpointKey } from './checkpoint-key';
import type { CheckpointStoreOptions, CreateOptions, QuarantinedRow } from './checkpoint-store';
import { createPayloadCipher, decryptText, isEncryptedPayload, missingKeyError, protectPlainText, type PayloadCipher } from './payload-cipher';

/** The record field that holds free text from tools and providers, encrypted like the payload. */
const REASON_FIELD = 'execution.uncertainReason';

/** The columns of one row. `updatedAt` is normalized to `toISOString()` form (ms, UTC). */
export interface EncodedRow {
  readonly key: string;
  readonly namespace: string;
  readonly callId: string;
  readonly toolName: string;
  readonly status: string;
  readonly revision: number;
  readonly updatedAt: string;
  readonly body: string;
  /** The `dedupe_key` column of an insert (`createIfAbsent`'s option), never part of the body; absent: NULL. */
  readonly dedupeKey?: string;
  /** The `dedupe_until` column of an insert (ISO-8601 UTC, `toISOString()` form); absent: NULL. */
  readonly dedupeUntil?: string;
}

/** What a store reads back: the key, the index columns, and the body (text, or anything a damaged row holds). */
export interface StoredRow {
  readonly key: string;
  readonly status: string;
  readonly revision: number | string;
  /** ISO-8601 UTC, as the store's `updated_at` column returns it. */
  readonly updatedAt: string;
  readonly body: unknown;
}

/** Codes a stored row can be quarantined with. */
export const QUARANTINE_CODES = ['INVALID_CHECKPOINT', 'INTEGRITY_FAILURE', 'UNSUPPORTED_SCHEMA', 'DECRYPTION_FAILED'] as const;

/**
 * Encodes and decodes rows for one store configuration (seal keys, encryption keys).
 */
export class RowCodec {
  private readonly seal: SealOptions | undefined;
  private readonly parseOptions: ParseOptions;
  private readonly cipher: PayloadCipher | null;
  /**
   * The exact stored body each record object came from (decoded here) or was written as (see
   * {@link remember}); its digest is what a compare-and-swap with `expected` requires the row to
   * still hold, hashed only when such a compare-and-swap comes (most records are never one's
   * `expected`). Weak: a record the caller dropped is forgotten with it.
   */
  private readonly bodies = new WeakMap<object, string>();

  /**
   * @throws {@link CheckpointError} INVALID_ARGUMENT for inconsistent key options.
   */
  constructor(options: CheckpointStoreOptions = {}) {
    if (options.hmacKey !== undefined || options.keyId !== undefined) {
      if (options.hmacKey === undefined || options.keyId === undefined) {
        throw new CheckpointError('INVALID_ARGUMENT', 'hmacKey and keyId must be given together', { field: options.hmacKey === undefined ? 'hmacKey' : 'keyId' });
      }
      this.seal = { hmacKey: options.hmacKey, keyId: options.keyId };
    } else if (options.hmacKeys !== undefined && Object.keys(options.hmacKeys).length > 0) {
      throw new CheckpointError('INVALID_ARGUMENT', 'hmacKeys needs hmacKey and keyId too: a store must be able to seal what it writes', { field: 'hmacKey' });
    }
    this.parseOptions = { hmacKey: options.hmacKey, keyId: options.keyId, hmacKeys: options.hmacKeys };
    this.cipher = createPayloadCipher(options);
    if (this.seal !== undefined) {
      // Fail at open time, not on the first write, for a short key or bad key id.
      serializeCheckpoint(PROBE, this.seal);
    }
  }

  /**
   * The row for `record`: validated, payload and `execution.uncertainReason` encrypted when a
   * key is configured (a reason starting with `$enc:` is otherwise wrapped as `$enc:plain:…`),
   * serialized and sealed.
   *
   * @throws {@link CheckpointError} INVALID_CHECKPOINT / UNSUPPORTED_SCHEMA for an invalid record;
   *   INVALID_ARGUMENT for a plaintext payload shaped like an encryption envelope when no key is set.
   */
  encode(record: CheckpointRecord): EncodedRow {
    // serializeCheckpoint validates what it writes; an encrypted record is validated in plaintext first.
    let stored = record;
    if (record !== null && typeof record === 'object' && record.result !== null && record.result !== undefined) {
      if (this.cipher?.encrypts) {
        validateCheckpoint(record);
        stored = { ...record, result: { payload: this.cipher.encrypt(record.result.payload, checkpointKey(record.binding)) } };
      } else if (isEncryptedPayload(record.result.payload)) {
        throw new CheckpointError(
          'INVALID_ARGUMENT',
          'result payload has the exact shape of an encryption envelope ({ $enc, kid, iv, tag, ct }); it cannot be stored unencrypted without ambiguity',
          { field: 'result.payload' },
        );
      }
    }
    const reason = record?.execution?.uncertainReason;
    if (typeof reason === 'string') {
      // The reason quotes tool and provider error text: encrypted like the payload.
      validateCheckpoint(record);
      const storedReason = this.cipher === null ? protectPlainText(reason) : this.cipher.encryptText(reason, checkpointKey(record.binding), REASON_FIELD);
      if (storedReason !== reason) stored = { ...stored, execution: { ...stored.execution!, uncertainReason: storedReason } };
    }
    const body = serializeCheckpoint(stored, this.seal);
    return {
      key: checkpointKey(record.binding),
      namespace: record.binding.namespace,
      callId: record.binding.callId,
      toolName: record.binding.toolName,
      status: record.status,
      revision: record.revision,
      updatedAt: normalizeTimestamp(record.updatedAt, 'updatedAt'),
      body,
    };
  }

  /**
   * The record of a stored row: parsed strictly, seal verified, payload decrypted, and the row
   * columns checked against the body (key = `checkpointKey(binding)`, same status and revision).
   * With a current encryption key configured, a result payload stored unencrypted is refused
   * (DECRYPTION_FAILED, reason `unencrypted`): this store writes every payload encrypted, so a
   * plaintext one was swapped in for the ciphertext (or written before encryption was turned
   * on). A store with only older keys (`encryptionKeys`, encryption being turned off) reads
   * plaintext payloads. An `execution.uncertainReason` is decrypted when encrypted; a plaintext
   * one (written before reasons were encrypted, or without a key) is read as is.
   *
   * @param lookedUp the binding the row was read by and its key, when it was read by key: a body
   *   whose binding has the same five fields has that key, so it is not hashed again.
   * @throws {@link CheckpointError} INVALID_CHECKPOINT, INTEGRITY_FAILURE, UNSUPPORTED_SCHEMA or
   *   DECRYPTION_FAILED; the message starts with the row key and `details.key` holds it.
   */
  decode(row: StoredRow, lookedUp?: { readonly binding: Binding; readonly key: string }): CheckpointRecord {
    try {
      const parsed = parseCheckpoint(row.body as string, this.parseOptions);
      const key = lookedUp !== undefined && bindingDifferences(parsed.binding, lookedUp.binding).length === 0 ? lookedUp.key : checkpointKey(parsed.binding);
      if (key !== row.key)
        throw new CheckpointError('INVALID_CHECKPOINT', `the body's binding has key ${key}, not the row's key (a body moved between rows)`, { field: 'row.key' });
      if (parsed.status !== row.status)
        throw new CheckpointError('INVALID_CHECKPOINT', `the row's status column is ${row.status} but the body's status is ${parsed.status}`, { field: 'row.status' });
      if (parsed.revision !== Number(row.revision))
        throw new CheckpointError('INVALID_CHECKPOINT', `the row's revision column is ${row.revision} but the body's revision is ${parsed.revision}`, { field: 'row.revision' });
      if (normalizeTimestamp(parsed.updatedAt, 'updatedAt') !== row.updatedAt)
        throw new CheckpointError('INVALID_CHECKPOINT', `the row's updated_at column is ${row.updatedAt} but the body's updatedAt is ${parsed.updatedAt}`, {
          field: 'row.updated_at',
        });
      let record: CheckpointRecord = parsed;
      const reason = parsed.execution?.uncertainReason;
      if (typeof reason === 'string') {
        const plain = decryptText(this.cipher, reason, row.key, REASON_FIELD);
        if (plain !== reason) record = { ...record, execution: { ...record.execution!, uncertainReason: plain } };
      }
      if (parsed.result !== null) {
        if (!isEncryptedPayload(parsed.result.payload)) {
          const current = this.cipher?.currentKey ?? null;
          if (current !== null) throw unencryptedError(current);
        } else {
          const envelope = parsed.result.payload;
          if (this.cipher === null) throw missingKeyError(envelope);
          const payload: JsonValue = this.cipher.decrypt(envelope, row.key);
          record = { ...record, result: { payload } };
        }
      }
      if (record === parsed) return this.remember(parsed, row.body as string);
      validateCheckpoint(record);
      return this.remember(deepFreeze(record), row.body as string);
    } catch (error) {
      throw quarantineError(row.key, error);
    }
  }

  /**
   * Remembers that `record` is stored as exactly `body` (call it after a write of `body`
   * committed; `decode` calls it for every record it returns).
   * @returns `record`.
   */
  remember<T extends CheckpointRecord>(record: T, body: string): T {
    this.bodies.set(record, body);
    return record;
  }

  /**
   * The exact body a compare-and-swap from `expected` must find in the row, or null when no
   * `expected` was given (revision-only CAS). `nextKey` is the row key of the record replacing it.
   * SQLite compares this text in the database; PostgreSQL sends its {@link bodyDigest} instead.
   *
   * @throws {@link CheckpointError} INVALID_ARGUMENT when `expected` is not a record this
   *   codec decoded or remembered (never a silent fall-back to revision-only), or is not at
   *   `expectedRevision`, or is another row's record than `next`.
   */
  expectedBody(expectedRevision: number, nextKey: string, expected: CheckpointRecord | undefined): string | null {
    if (expected === undefined) return null;
    const body = typeof expected === 'object' && expected !== null ? this.bodies.get(expected) : undefined;
    if (body === undefined) {
      throw new CheckpointError(
        'INVALID_ARGUMENT',
        'compareAndSwap: expected is not a record this store returned or wrote (pass the record from get, getByCall, createIfAbsent or listByStatus, or a next whose compare-and-swap succeeded)',
        {
          field: 'expected',
        },
      );
    }
    if (expected.revision !== expectedRevision) {
      throw new CheckpointError('INVALID_ARGUMENT', `compareAndSwap: expected.revision is ${expected.revision}, not expectedRevision ${expectedRevision}`, {
        field: 'expected.revision',
        expected: expectedRevision,
      });
    }
    if (checkpointKey(expected.binding) !== nextKey) {
      throw new CheckpointError('INVALID_ARGUMENT', "compareAndSwap: expected is another row's record than next (their bindings differ)", { field: 'expected.binding' });
    }
    return body;
  }

  /** Whether two records are the same (canonical JSON equality, plaintext payloads). */
  sameRecord(a: CheckpointRecord, b: CheckpointRecord): boolean {
    return canonicalJson(a, 'checkpoint', RECORD_BOUNDS) === canonicalJson(b, 'checkpoint', RECORD_BOUNDS);
  }
}

function unencryptedError(keyId: string): CheckpointError {
  return new CheckpointError(
    'DECRYPTION_FAILED',
    `result payload is stored unencrypted, but encryption is configured (current key id ${JSON.stringify(keyId)}); refusing a plaintext payload in place of a ciphertext`,
    {
      field: 'result.payload',
      keyId,
      reason: 'unencrypted',
    },
  );
}

/** Lowercase hex SHA-256 of a stored body's UTF-8 bytes (what PostgreSQL's `encode(sha256(convert_to(body, 'UTF8')), 'hex')` computes). */
export function bodyDigest(body: string): string {
  return createHash('sha256').update(body, 'utf8').digest('hex');
}

/**
 * Re-labels a decode failure so its message and details name the row key; anything that is
 * not a {@link CheckpointError} (a bug) becomes INVALID_CHECKPOINT with the cause attached.
 */
export function quarantineError(key: string, error: unknown): CheckpointError {
  if (isCheckpointError(error) && (QUARANTINE_CODES as readonly string[]).includes(error.code)) {
    const inner = error.message.startsWith(`${error.code}: `) ? error.message.slice(error.code.length + 2) : error.message;
    const details: CheckpointErrorDetails = { ...error.details, key, quarantined: true };
    return new CheckpointError(error.code, `checkpoint row ${key} is quarantined and left untouched: ${inner}`, details, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CheckpointError('INVALID_CHECKPOINT', `checkpoint row ${key} is quarantined and left untouched: ${message}`, { key, quarantined: true, field: '$' }, { cause: error });
}

/**
 * `value` (an ISO-8601 UTC timestamp) as `Date#toISOString()` text, which sorts
 * lexicographically in time order.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming `field`.
 */
export function normalizeTimestamp(value: unknown, field: string): string {
  return new Date(parseTimestamp(value, field)).toISOString();
}

/**
 * Validates a `limit` option: an integer from 1 to 10,000.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT.
 */
export function resolveLimit(limit: unknown, fallback = 100): number {
  if (limit === undefined) return fallback;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new CheckpointError('INVALID_ARGUMENT', `limit must be an integer from 1 to 10,000, got ${String(limit)}`, { field: 'limit', limit: 10_000 });
  }
  return limit;
}

/**
 * Validates the `statuses` argument of `listByStatus`: a non-empty array of statuses
 * (docs/protocol.md#statuses-and-actions).
 *
 * @returns the statuses without repeats.
 * @throws {@link CheckpointError} INVALID_ARGUMENT.
 */
export function assertStatuses(statuses: readonly Status[]): Status[] {
  if (!Array.isArray(statuses) || statuses.length === 0 || statuses.some((s) => !STATUSES.includes(s))) {
    throw new CheckpointError('INVALID_ARGUMENT', `statuses must be a non-empty array of ${STATUSES.join(', ')}`, {
      field: 'statuses',
      actual: JSON.stringify(statuses) ?? 'undefined',
    });
  }
  return [...new Set(statuses)];
}

/**
 * Checks the arguments of `getByCall`: a namespace and a call id, each a bounded identifier.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field.
 */
export function assertCallArguments(namespace: unknown, callId: unknown): void {
  assertIdentifier(namespace, 'namespace');
  assertIdentifier(callId, 'callId');
}

/**
 * Checks `createIfAbsent`'s options: `dedupeKey` absent or a bounded identifier (see
 * `assertIdentifier`); `dedupeUntil` absent, or ISO-8601 UTC with a `dedupeKey`.
 * @returns the dedupe columns of the insert (`dedupeUntil` in `toISOString()` form).
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`field` `dedupeKey` or `dedupeUntil`).
 */
export function dedupeColumns(options: CreateOptions | undefined): Pick<EncodedRow, 'dedupeKey' | 'dedupeUntil'> {
  if (options === undefined) return {};
  const { dedupeKey, dedupeUntil } = options;
  if (dedupeKey !== undefined) assertIdentifier(dedupeKey, 'dedupeKey');
  if (dedupeUntil === undefined) return dedupeKey === undefined ? {} : { dedupeKey };
  if (dedupeKey === undefined) throw new CheckpointError('INVALID_ARGUMENT', 'dedupeUntil needs a dedupeKey', { field: 'dedupeUntil' });
  return { dedupeKey, dedupeUntil: normalizeTimestamp(dedupeUntil, 'dedupeUntil') };
}

/**
 * Checks `releaseDedupeKey`'s holder and returns the row it names: its key and revision.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a record without a valid binding or revision.
 */
export function releaseArguments(holder: CheckpointRecord): { key: string; revision: number } {
  const revision = (holder as { revision?: unknown } | null)?.revision;
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `holder.revision must be a non-negative integer, got ${String(revision)}`, { field: 'holder.revision' });
  }
  return { key: checkpointKey(bindingSnapshot(holder.binding)), revision };
}

/**
 * Checks the arguments of `compareAndSwap`: an integer `expectedRevision` and a `next` with a
 * higher revision (`expectedRevision + 1` for one transition, + n for n composed ones: see
 * `../checkpoint/compose`).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT.
 */
export function assertCasArguments(expectedRevision: unknown, next: CheckpointRecord): void {
  if (typeof expectedRevision !== 'number' || !Number.isSafeInteger(expectedRevision) || expectedRevision < 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `expectedRevision must be a non-negative integer, got ${String(expectedRevision)}`, { field: 'expectedRevision' });
  }
  if (typeof next !== 'object' || next === null || typeof next.revision !== 'number' || !(next.revision > expectedRevision)) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `next.revision must be above expectedRevision (at least ${expectedRevision + 1}), got ${String((next as { revision?: unknown } | null)?.revision)}`,
      {
        field: 'next.revision',
        expected: expectedRevision + 1,
      },
    );
  }
}

/** The record's own nesting and values on top of the payload's bounds (as in the codec). */
const RECORD_BOUNDS = { maxDepth: LIMITS.maxDepth + 4, maxValues: LIMITS.maxValues + 64 } as const;

const PROBE: CheckpointRecord = {
  schemaVersion: 2,
  binding: { namespace: 'probe', callId: 'probe', toolName: 'probe', toolRevision: '1', inputFingerprint: `sha256:${'0'.repeat(64)}` },
  status: 'ready',
  revision: 0,
  createdAt: '2000-01-01T00:00:00.000Z',
  updatedAt: '2000-01-01T00:00:00.000Z',
  execution: null,
  result: null,
  delivery: null,
};

/**
 * Pages through every row in key order and collects those that fail to decode (quarantined),
 * up to `limit`. `fetchPage(afterKey)` returns at most `pageSize` rows with keys after
 * `afterKey`, in key order. Shared by both stores' `listQuarantined`.
 */
export async function scanQuarantined(codec: RowCodec, fetchPage: (afterKey: string) => Promise<StoredRow[]>, pageSize: number, limit: number): Promise<QuarantinedRow[]> {
  const found: QuarantinedRow[] = [];
  for (let after = ''; ;) {
    const rows = await fetchPage(after);
    for (const row of rows) {
      try {
        codec.decode(row);
      } catch (error) {
        if (!isCheckpointError(error)) throw error;
        found.push({ key: row.key, status: row.status, revision: Number(row.revision), updatedAt: row.updatedAt, error: { code: error.code, message: error.message } });
        if (found.length === limit) return found;
      }
    }
    if (rows.length < pageSize) return found;
    after = rows[rows.length - 1]!.key;
  }
}
