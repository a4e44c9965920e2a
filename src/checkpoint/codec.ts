/**
 * The stored form of a checkpoint (docs/protocol.md#stored-form): RFC 8785 canonical JSON, parsed
 * strictly, optionally sealed with HMAC-SHA256 so tampering is detected. Uses node:crypto, so
 * workflow code must never import this file.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import canonicalize from 'canonicalize';
import { assertIdentifier, LIMITS } from './bounds';
import { canonicalJson } from './canonical-json';
import { CheckpointError, isCheckpointError } from './errors';
import { findDuplicateKey, maxNestingDepth } from './json-text';
import { migrateCheckpoint, readSchemaVersion } from './migrate';
import { deepFreeze, isKnownValid, trustValid, validateCheckpoint } from './record';
import type { CheckpointRecord } from './types';

/** HMAC keys must have at least this many bytes (RFC 2104 §3: at least the hash output length). */
export const MIN_HMAC_KEY_BYTES = 32;

/** Largest stored text accepted, in UTF-16 code units: the 10 MiB payload bound plus room for the record. */
export const MAX_STORED_TEXT_LENGTH = LIMITS.hardMaxPayloadBytes + 64 * 1024;

/** The record's own nesting and values on top of the payload's bounds. */
const RECORD_BOUNDS = { maxDepth: LIMITS.maxDepth + 4, maxValues: LIMITS.maxValues + 64 } as const;

/** Seal options: `hmacKey` of at least 32 bytes; `keyId` is written into the sealed form so keys can rotate. */
export interface SealOptions {
  readonly hmacKey: Uint8Array;
  readonly keyId: string;
}

/**
 * Parse options. With any key given, an unsealed record is refused (no downgrade); a sealed
 * record is verified with the key its `keyId` names.
 */
export interface ParseOptions {
  readonly hmacKey?: Uint8Array;
  readonly keyId?: string;
  /** Several keys by id, for rotation. */
  readonly hmacKeys?: Readonly<Record<string, Uint8Array>>;
}

/** A seal's MAC: exactly 64 lowercase hex digits (Buffer.from(…, 'hex') would ignore trailing junk or accept upper case). */
const MAC_PATTERN = /^[0-9a-f]{64}$/;

/** A stored record's or conversation entry's HMAC seal: algorithm, key id, MAC (hex). */
export interface Seal {
  alg: 'HMAC-SHA256';
  keyId: string;
  mac: string;
}

/**
 * The stored text of `record`: canonical JSON (RFC 8785), with a top-level `seal`
 * `{ alg: 'HMAC-SHA256', keyId, mac }` when `options` carries a key. The MAC covers the key id
 * and the canonical record.
 *
 * @throws {@link CheckpointError} INVALID_CHECKPOINT / UNSUPPORTED_SCHEMA from validation;
 *   INVALID_ARGUMENT for a key shorter than 32 bytes or a bad key id.
 */
export function serializeCheckpoint(record: CheckpointRecord, options?: SealOptions): string {
  // A record this layer built is bounded JSON by construction: canonicalize it without the walk.
  const trusted = isKnownValid(record);
  if (!trusted) validateCheckpoint(record);
  const canonical = (value: object): string => (trusted ? (canonicalize(value) as string) : canonicalJson(value, 'checkpoint', RECORD_BOUNDS));
  const text = canonical(record);
  if (options === undefined) return text;
  assertKey(options.hmacKey, 'hmacKey');
  assertIdentifier(options.keyId, 'keyId');
  const seal: Seal = { alg: 'HMAC-SHA256', keyId: options.keyId, mac: mac(options.hmacKey, options.keyId, text) };
  return canonical({ ...record, seal });
}

/**
 * Parses stored text strictly into a frozen, validated record. In order: JSON syntax
 * (truncated text fails here), the schema version, canonical form (duplicate keys at any
 * depth, reordered keys, whitespace and non-finite numbers are refused), the seal, migration
 * and validation. A failure is never "no record".
 *
 * @throws {@link CheckpointError} UNSUPPORTED_SCHEMA for an unknown schema version (checked first);
 *   INVALID_CHECKPOINT for malformed, duplicate-key, non-canonical or invalid records;
 *   INTEGRITY_FAILURE for a wrong, missing or unverifiable seal.
 */
export function parseCheckpoint(text: string, options: ParseOptions = {}): CheckpointRecord {
  if (typeof text !== 'string') throw new CheckpointError('INVALID_CHECKPOINT', `stored checkpoint must be text, got ${typeof text}`, { field: '$' });
  if (text.length > MAX_STORED_TEXT_LENGTH) {
    throw new CheckpointError('INVALID_CHECKPOINT', `stored checkpoint is ${text.length} characters, over the limit of ${MAX_STORED_TEXT_LENGTH}`, {
      field: '$',
      limit: MAX_STORED_TEXT_LENGTH,
      actual: text.length,
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CheckpointError('INVALID_CHECKPOINT', `stored checkpoint is not valid JSON (truncated or corrupted): ${(error as Error).message}`, { field: '$' }, { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CheckpointError('INVALID_CHECKPOINT', 'stored checkpoint must be a JSON object', { field: '$' });
  }
  readSchemaVersion(value);
  assertCanonical(text, value);
  const { seal, ...record } = value as Record<string, unknown>;
  verifySeal(record, seal, options);
  return trustValid(deepFreeze(migrateCheckpoint(record)));
}

function assertCanonical(text: string, value: unknown): void {
  let canonical: string;
  try {
    canonical = canonicalJson(value, 'checkpoint', RECORD_BOUNDS);
  } catch (error) {
    if (!isCheckpointError(error)) throw error;
    throw new CheckpointError('INVALID_CHECKPOINT', `stored checkpoint: ${error.message}`, { field: '$', reason: error.code }, { cause: error });
  }
  if (canonical === text) return;
  // JSON.parse keeps only the last of duplicate keys, so a dropped member may nest arbitrarily
  // deep; bound the text's depth before the (recursive) AST parser sees it.
  const depth = maxNestingDepth(text);
  if (depth > RECORD_BOUNDS.maxDepth) {
    throw new CheckpointError('INVALID_CHECKPOINT', `stored checkpoint nests ${depth} levels, deeper than ${RECORD_BOUNDS.maxDepth}`, {
      field: '$',
      reason: 'PAYLOAD_TOO_LARGE',
      limit: RECORD_BOUNDS.maxDepth,
      actual: depth,
    });
  }
  const duplicate = findDuplicateKey(text);
  if (duplicate !== null) {
    throw new CheckpointError('INVALID_CHECKPOINT', `stored checkpoint has duplicate key ${JSON.stringify(duplicate.key)} at ${duplicate.path}`, {
      field: duplicate.path,
      key: duplicate.key,
      reason: 'duplicate-key',
    });
  }
  throw new CheckpointError('INVALID_CHECKPOINT', 'stored checkpoint is not in RFC 8785 canonical form (edited or written by another tool)', {
    field: '$',
    reason: 'not-canonical',
  });
}

/** Whether `seal` is exactly `{ alg: 'HMAC-SHA256', keyId, mac }` with `mac` 64 lowercase hex digits (a stored record's or conversation entry's seal). */
export function isSealShape(seal: unknown): seal is Seal {
  const s = seal as Partial<Seal>;
  return (
    typeof seal === 'object' &&
    seal !== null &&
    s.alg === 'HMAC-SHA256' &&
    typeof s.keyId === 'string' &&
    typeof s.mac === 'string' &&
    MAC_PATTERN.test(s.mac) &&
    Object.keys(seal).length === 3
  );
}

function verifySeal(record: Record<string, unknown>, seal: unknown, options: ParseOptions): void {
  // A Map, not an object: a stored key id such as "constructor" or "__proto__" must not find Object.prototype members.
  const keys = new Map<string, Uint8Array>(Object.entries(options.hmacKeys ?? {}));
  if (options.hmacKey !== undefined) keys.set(options.keyId ?? '', options.hmacKey);
  const keyed = keys.size > 0;
  if (seal === undefined) {
    if (keyed)
      throw new CheckpointError('INTEGRITY_FAILURE', 'stored checkpoint is not sealed but an HMAC key is configured (refusing a downgrade)', { field: 'seal', reason: 'missing' });
    return;
  }
  if (!isSealShape(seal)) {
    throw new CheckpointError('INTEGRITY_FAILURE', 'stored checkpoint has a malformed seal', { field: 'seal', reason: 'malformed' });
  }
  const s = seal;
  const key = keys.get(s.keyId) ?? (options.keyId === undefined ? options.hmacKey : undefined);
  if (key === undefined) {
    throw new CheckpointError('INTEGRITY_FAILURE', `stored checkpoint is sealed with key id ${JSON.stringify(s.keyId)}, which is not configured`, {
      field: 'seal.keyId',
      keyId: s.keyId,
      reason: 'unknown-key',
    });
  }
  assertKey(key, 'hmacKey');
  const expected = Buffer.from(mac(key, s.keyId, canonicalJson(record, 'checkpoint', RECORD_BOUNDS)), 'hex');
  const actual = Buffer.from(s.mac, 'hex');
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) {
    throw new CheckpointError('INTEGRITY_FAILURE', `stored checkpoint's seal does not verify with key id ${JSON.stringify(s.keyId)} (tampered or wrong key)`, {
      field: 'seal.mac',
      keyId: s.keyId,
      reason: 'mismatch',
    });
  }
}

function mac(key: Uint8Array, keyId: string, text: string): string {
  return createHmac('sha256', key).update(`ttc/checkpoint-seal/1\n${keyId}\n`).update(text, 'utf8').digest('hex');
}

function assertKey(key: unknown, field: string): void {
  if (!(key instanceof Uint8Array) || key.length < MIN_HMAC_KEY_BYTES) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must be a Buffer of at least ${MIN_HMAC_KEY_BYTES} bytes`, { field, limit: MIN_HMAC_KEY_BYTES });
  }
}
