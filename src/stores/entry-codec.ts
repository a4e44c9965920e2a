/**
 * The stored form of a conversation-log entry (claim check), the same way for every
 * store: strict RFC 8785 canonical JSON `{ entry: 1, log, key, value }`, the value encrypted as
 * `enc` when the store encrypts payloads, sealed with HMAC-SHA256 when the store seals records.
 * The body names its log and key and both are bound into the seal and the ciphertext, so an
 * entry copied to another log or key is detected. A body that fails any check is a
 * quarantine-style {@link CheckpointError} naming the log and key, never a silently wrong value.
 *
 * Node side (node:crypto); workflow code must never import this file.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { describe, LIMITS, utf8ByteLength } from '../checkpoint/bounds';
import { canonicalJson } from '../checkpoint/canonical-json';
import { isSealShape, MIN_HMAC_KEY_BYTES } from '../checkpoint/codec';
import { CheckpointError, isCheckpointError, type CheckpointErrorDetails } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import type { CheckpointStoreOptions, ConversationEntry } from './checkpoint-store';
import { createPayloadCipher, decryptText, ENCRYPTED_TEXT_PREFIX, PAYLOAD_ENCRYPTION_ALGORITHM, type PayloadCipher } from './payload-cipher';
import { QUARANTINE_CODES } from './row-codec';

export type { ConversationEntry } from './checkpoint-store';

/** The conversation table's name in every store: `(log_id, entry_key, body, bytes, created_at)`, primary key `(log_id, entry_key)`. */
export const CONVERSATION_TABLE = 'ttc_conversation_entries';

/** Largest value of one entry, in UTF-8 bytes of its canonical JSON: the 10 MiB payload bound plus 64 KiB for a message's own fields. */
export const MAX_CONVERSATION_ENTRY_BYTES = LIMITS.hardMaxPayloadBytes + 64 * 1024;

/** Most entries one `putConversationEntries` call may write. */
export const MAX_CONVERSATION_ENTRIES_PER_PUT = 10_000;

/** Most keys one `getConversationEntries` call may read (stores read them in chunks). */
export const MAX_CONVERSATION_KEYS_PER_GET = 100_000;

/** Longest log id and entry key, UTF-16 code units (`r/<callId>` holds a call id of up to 2,048). */
export const MAX_LOG_ID_LENGTH = 256;
export const MAX_ENTRY_KEY_LENGTH = 2_100;

/**
 * Bounds of one entry's value: a message wraps a tool output (itself within the protocol's payload
 * bounds) or several tool calls, so depth and count are looser than a payload's; the byte
 * bound {@link MAX_CONVERSATION_ENTRY_BYTES} is what caps the work.
 */
const VALUE_BOUNDS = { maxDepth: LIMITS.maxDepth + 8, maxValues: 1_000_000 } as const;
const BODY_BOUNDS = { maxDepth: VALUE_BOUNDS.maxDepth + 2, maxValues: VALUE_BOUNDS.maxValues + 16 } as const;
/** Longest stored body accepted, UTF-16 code units (the value, base64 growth of a ciphertext, and the envelope). */
const MAX_BODY_LENGTH = Math.ceil(MAX_CONVERSATION_ENTRY_BYTES * 1.4) + 64 * 1024;
const CIPHER_PREFIX = `${ENCRYPTED_TEXT_PREFIX}${PAYLOAD_ENCRYPTION_ALGORITHM}:`;
const VALUE_FIELD = 'conversation.value';

/** An entry as a store writes it: the row's columns. `bytes` is the UTF-8 length of the value's canonical JSON. */
export interface EncodedEntry {
  readonly logId: string;
  readonly key: string;
  readonly body: string;
  readonly bytes: number;
  /** The value's RFC 8785 canonical JSON (what "the same value" compares). */
  readonly text: string;
}

/** An entry as a store reads it back (a damaged row may hold anything in `body` and `bytes`). */
export interface StoredEntry {
  readonly logId: string;
  readonly key: string;
  readonly body: unknown;
  readonly bytes: unknown;
}

/** A decoded entry: the value and its canonical JSON text. */
export interface DecodedEntry {
  readonly value: JsonValue;
  readonly text: string;
}

/**
 * Encodes and decodes conversation entries for one store configuration (the seal and
 * encryption keys of {@link CheckpointStoreOptions}, validated by the store's `RowCodec` first).
 */
export class EntryCodec {
  private readonly sealKey: { readonly key: Uint8Array; readonly keyId: string } | null;
  private readonly verifyKeys: ReadonlyMap<string, Uint8Array>;
  private readonly cipher: PayloadCipher | null;

  constructor(options: CheckpointStoreOptions = {}) {
    this.sealKey = options.hmacKey !== undefined && options.keyId !== undefined ? { key: options.hmacKey, keyId: options.keyId } : null;
    const keys = new Map<string, Uint8Array>(Object.entries(options.hmacKeys ?? {}));
    if (this.sealKey !== null) keys.set(this.sealKey.keyId, this.sealKey.key);
    this.verifyKeys = keys;
    this.cipher = createPayloadCipher(options);
  }

  /**
   * The row of one entry: the value's canonical JSON (encrypted when a current encryption key
   * is configured), wrapped with its log id and key, sealed when an HMAC key is configured.
   *
   * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad log id or key; NOT_JSON or
   *   PAYLOAD_TOO_LARGE for a value that is not bounded JSON or is over
   *   {@link MAX_CONVERSATION_ENTRY_BYTES}.
   */
  encode(logId: string, key: string, value: JsonValue): EncodedEntry {
    assertLogId(logId);
    assertEntryKey(key);
    const text = canonicalJson(value, `conversation entry ${key}`, VALUE_BOUNDS);
    const bytes = utf8ByteLength(text);
    if (bytes > MAX_CONVERSATION_ENTRY_BYTES) {
      throw new CheckpointError(
        'PAYLOAD_TOO_LARGE',
        `conversation entry ${key} is ${bytes.toLocaleString('en-US')} UTF-8 JSON bytes, the limit is ${MAX_CONVERSATION_ENTRY_BYTES.toLocaleString('en-US')}`,
        {
          field: 'value',
          limit: MAX_CONVERSATION_ENTRY_BYTES,
          actual: bytes,
        },
      );
    }
    const content: Record<string, JsonValue> = this.cipher?.encrypts ? { enc: this.cipher.encryptText(text, aad(logId, key), VALUE_FIELD) } : { value };
    const unsealed: Record<string, JsonValue> = { entry: 1, log: logId, key, ...content };
    let body = canonicalJson(unsealed, 'conversation entry', BODY_BOUNDS);
    if (this.sealKey !== null) {
      const seal = { alg: 'HMAC-SHA256', keyId: this.sealKey.keyId, mac: mac(this.sealKey.key, this.sealKey.keyId, body) };
      body = canonicalJson({ ...unsealed, seal }, 'conversation entry', BODY_BOUNDS);
    }
    return { logId, key, body, bytes, text };
  }

  /**
   * The value of a stored entry, after every check: canonical form (no duplicate keys, no
   * edits by other tools), the seal (required whenever an HMAC key is configured), the log id
   * and key in the body equal to the row's, decryption (a plaintext value is refused while a
   * current encryption key is configured), and the `bytes` column equal to the value's length.
   *
   * @throws {@link CheckpointError} INVALID_CHECKPOINT, INTEGRITY_FAILURE, UNSUPPORTED_SCHEMA or
   *   DECRYPTION_FAILED; the message names the log and key, `details` holds `logId`, `key` and
   *   `quarantined: true`. The row is never changed.
   */
  decode(row: StoredEntry): DecodedEntry {
    try {
      return this.decodeUnchecked(row);
    } catch (error) {
      throw entryQuarantineError(row.logId, row.key, error);
    }
  }

  private decodeUnchecked(row: StoredEntry): DecodedEntry {
    const body = row.body;
    if (typeof body !== 'string') throw invalid(`the stored body must be text, got ${typeof body}`, '$');
    if (body.length > MAX_BODY_LENGTH) throw invalid(`the stored body is ${body.length} characters, over the limit of ${MAX_BODY_LENGTH}`, '$');
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch (error) {
      throw invalid(`the stored body is not valid JSON (truncated or corrupted): ${(error as Error).message}`, '$');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid('the stored body must be a JSON object', '$');
    const fields = parsed as Record<string, unknown>;
    if (fields.entry !== 1) {
      throw new CheckpointError('UNSUPPORTED_SCHEMA', `conversation entry format ${describe(fields.entry)} is not one this code reads (1)`, { field: 'entry', supported: '1' });
    }
    let canonical: string;
    try {
      canonical = canonicalJson(parsed, 'conversation entry', BODY_BOUNDS);
    } catch (error) {
      throw invalid(`the stored body: ${(error as Error).message}`, '$');
    }
    if (canonical !== body) throw invalid('the stored body is not in RFC 8785 canonical form (a duplicate key, or edited by another tool)', '$');
    const { seal, ...unsealed } = fields;
    const allowed = ['entry', 'log', 'key', 'value', 'enc'];
    const unknown = Object.keys(unsealed).find((k) => !allowed.includes(k));
    if (unknown !== undefined) throw invalid(`the stored body has an unknown field ${JSON.stringify(unknown)}`, unknown);
    if ('value' in unsealed === 'enc' in unsealed) throw invalid('the stored body must hold exactly one of value and enc', 'value');
    this.verifySeal(unsealed, seal);
    if (unsealed.log !== row.logId || unsealed.key !== row.key) {
      throw invalid(`the body belongs to log ${describe(unsealed.log)} key ${describe(unsealed.key)}, not to this row (an entry moved between rows)`, 'row.key');
    }
    let text: string;
    let value: JsonValue;
    if ('enc' in unsealed) {
      const enc = unsealed.enc;
      if (typeof enc !== 'string' || !enc.startsWith(CIPHER_PREFIX)) {
        throw new CheckpointError('DECRYPTION_FAILED', `${VALUE_FIELD} is not an encrypted text envelope`, { field: VALUE_FIELD, reason: 'malformed' });
      }
      text = decryptText(this.cipher, enc, aad(row.logId, row.key), VALUE_FIELD);
      try {
        value = JSON.parse(text) as JsonValue;
      } catch (error) {
        throw invalid(`the decrypted value is not valid JSON: ${(error as Error).message}`, 'enc');
      }
      if (canonicalJson(value, 'conversation entry value', VALUE_BOUNDS) !== text) throw invalid('the decrypted value is not in RFC 8785 canonical form', 'enc');
    } else {
      const current = this.cipher?.currentKey ?? null;
      if (current !== null) {
        throw new CheckpointError(
          'DECRYPTION_FAILED',
          `${VALUE_FIELD} is stored unencrypted, but encryption is configured (current key id ${JSON.stringify(current)}); refusing a plaintext value in place of a ciphertext`,
          {
            field: VALUE_FIELD,
            keyId: current,
            reason: 'unencrypted',
          },
        );
      }
      value = unsealed.value as JsonValue;
      text = canonicalJson(value, 'conversation entry value', VALUE_BOUNDS);
    }
    const bytes = utf8ByteLength(text);
    if (Number(row.bytes) !== bytes) throw invalid(`the row's bytes column is ${describe(row.bytes)} but the value is ${bytes} bytes`, 'row.bytes');
    return { value, text };
  }

  private verifySeal(unsealed: Record<string, unknown>, seal: unknown): void {
    if (seal === undefined) {
      if (this.verifyKeys.size > 0)
        throw new CheckpointError('INTEGRITY_FAILURE', 'the entry is not sealed but an HMAC key is configured (refusing a downgrade)', { field: 'seal', reason: 'missing' });
      return;
    }
    if (!isSealShape(seal)) {
      throw new CheckpointError('INTEGRITY_FAILURE', 'the entry has a malformed seal', { field: 'seal', reason: 'malformed' });
    }
    const s = seal;
    const key = this.verifyKeys.get(s.keyId);
    if (key === undefined || key.length < MIN_HMAC_KEY_BYTES) {
      throw new CheckpointError('INTEGRITY_FAILURE', `the entry is sealed with key id ${JSON.stringify(s.keyId)}, which is not configured`, {
        field: 'seal.keyId',
        keyId: s.keyId,
        reason: 'unknown-key',
      });
    }
    const expected = Buffer.from(mac(key, s.keyId, canonicalJson(unsealed, 'conversation entry', BODY_BOUNDS)), 'hex');
    const actual = Buffer.from(s.mac, 'hex');
    if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) {
      throw new CheckpointError('INTEGRITY_FAILURE', `the entry's seal does not verify with key id ${JSON.stringify(s.keyId)} (tampered or wrong key)`, {
        field: 'seal.mac',
        keyId: s.keyId,
        reason: 'mismatch',
      });
    }
  }
}

/**
 * Checks a conversation log id: a non-empty string of at most {@link MAX_LOG_ID_LENGTH}
 * characters, no control characters or lone surrogates.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.field` `logId`).
 */
export function assertLogId(logId: unknown): asserts logId is string {
  assertText(logId, 'logId', MAX_LOG_ID_LENGTH);
}

/**
 * Checks an entry key: a non-empty string of at most {@link MAX_ENTRY_KEY_LENGTH} characters,
 * no control characters or lone surrogates.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.field` `key`).
 */
export function assertEntryKey(key: unknown): asserts key is string {
  assertText(key, 'key', MAX_ENTRY_KEY_LENGTH);
}

/**
 * Validates the arguments of `putConversationEntries` and encodes every entry (outside any
 * transaction). Repeats of one key within the call are merged when their values are equal.
 *
 * @returns the encoded entries sorted by key (stores write in key order, so concurrent writers never deadlock).
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad log id, key or entry list (over
 *   {@link MAX_CONVERSATION_ENTRIES_PER_PUT}); CONVERSATION_CONFLICT for one key given twice with
 *   different values; NOT_JSON / PAYLOAD_TOO_LARGE for a value.
 */
export function encodeEntries(codec: EntryCodec, logId: string, entries: readonly ConversationEntry[]): EncodedEntry[] {
  assertLogId(logId);
  if (!Array.isArray(entries) || entries.length > MAX_CONVERSATION_ENTRIES_PER_PUT) {
    throw new CheckpointError('INVALID_ARGUMENT', `entries must be an array of at most ${MAX_CONVERSATION_ENTRIES_PER_PUT} { key, value }`, {
      field: 'entries',
      limit: MAX_CONVERSATION_ENTRIES_PER_PUT,
    });
  }
  const byKey = new Map<string, EncodedEntry>();
  for (const entry of entries) {
    if (typeof entry !== 'object' || entry === null) throw new CheckpointError('INVALID_ARGUMENT', 'each entry must be { key, value }', { field: 'entries' });
    const encoded = codec.encode(logId, entry.key, entry.value);
    const earlier = byKey.get(encoded.key);
    if (earlier !== undefined && earlier.text !== encoded.text) throw conversationConflict(logId, encoded.key, 'the same call gives the key two different values');
    byKey.set(encoded.key, earlier ?? encoded);
  }
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * Validates the arguments of `getConversationEntries`.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad log id, a bad key, or more than {@link MAX_CONVERSATION_KEYS_PER_GET} keys.
 */
export function assertGetArguments(logId: unknown, keys: readonly string[]): void {
  assertLogId(logId);
  if (!Array.isArray(keys) || keys.length > MAX_CONVERSATION_KEYS_PER_GET) {
    throw new CheckpointError('INVALID_ARGUMENT', `keys must be an array of at most ${MAX_CONVERSATION_KEYS_PER_GET} entry keys`, {
      field: 'keys',
      limit: MAX_CONVERSATION_KEYS_PER_GET,
    });
  }
  for (const key of keys) assertEntryKey(key);
}

/** CONVERSATION_CONFLICT for `(logId, key)`: the entry holds another value than the one written. Non-retryable. */
export function conversationConflict(logId: string, key: string, why = 'the entry already holds another value'): CheckpointError {
  return new CheckpointError('CONVERSATION_CONFLICT', `conversation log ${logId} entry ${key}: ${why}; nothing of this write was stored`, { logId, key });
}

/** CONVERSATION_ENTRY_MISSING for `(logId, key)`. Non-retryable. */
export function entryMissing(logId: string, key: string): CheckpointError {
  return new CheckpointError('CONVERSATION_ENTRY_MISSING', `conversation log ${logId} has no entry ${key} (never written, or the log was pruned)`, { logId, key });
}

/**
 * Re-labels a decode failure so it names the entry; anything that is not a quarantine-code
 * {@link CheckpointError} (a bug) becomes INVALID_CHECKPOINT with the cause attached.
 */
export function entryQuarantineError(logId: string, key: string, error: unknown): CheckpointError {
  const where = `conversation log ${logId} entry ${key}`;
  if (isCheckpointError(error) && (QUARANTINE_CODES as readonly string[]).includes(error.code)) {
    const inner = error.message.startsWith(`${error.code}: `) ? error.message.slice(error.code.length + 2) : error.message;
    const details: CheckpointErrorDetails = { ...error.details, logId, key, quarantined: true };
    return new CheckpointError(error.code, `${where} is quarantined and left untouched: ${inner}`, details, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CheckpointError('INVALID_CHECKPOINT', `${where} is quarantined and left untouched: ${message}`, { logId, key, quarantined: true, field: '$' }, { cause: error });
}

function invalid(message: string, field: string): CheckpointError {
  return new CheckpointError('INVALID_CHECKPOINT', message, { field });
}

function assertText(value: unknown, field: string, limit: number): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > limit || /[\u0000-\u001f\u007f-\u009f]/.test(value) || !value.isWellFormed()) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must be a non-empty string of at most ${limit} characters without control characters`, {
      field,
      limit,
      actual: describe(value),
    });
  }
}

/** What the ciphertext of an entry is bound to (with the key id and field name): its log and key. */
function aad(logId: string, key: string): string {
  return `ttc/conversation/1\n${logId}\n${key}`;
}

function mac(key: Uint8Array, keyId: string, text: string): string {
  return createHmac('sha256', key).update(`ttc/conversation-seal/1\n${keyId}\n`).update(text, 'utf8').digest('hex');
}
