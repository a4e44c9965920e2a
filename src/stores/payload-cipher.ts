/**
 * Optional encryption at rest of result payloads (docs/protocol.md#stored-form: payloads may contain
 * secrets). AES-256-GCM from node:crypto. The store replaces `result.payload` with an envelope
 * JSON value before serializing, so the stored body stays a valid, sealable, strictly parseable
 * checkpoint; it decrypts after parsing. The envelope names its key id, so keys can rotate:
 * new writes use the current key, older key ids stay readable while their keys are configured.
 */
import { GCM_IV_BYTES, GCM_TAG_BYTES, gcmOpen, gcmSeal } from '../aes-gcm';
import { assertIdentifier } from '../checkpoint/bounds';
import { canonicalJson } from '../checkpoint/canonical-json';
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';

/** The envelope's algorithm tag. */
export const PAYLOAD_ENCRYPTION_ALGORITHM = 'A256GCM' as const;

/** AES-256 keys are exactly this many bytes. */
export const ENCRYPTION_KEY_BYTES = 32;

/** GCM IV and tag lengths, bytes: exactly 12 and 16; truncated tags are refused (see `../aes-gcm`). */
export { GCM_IV_BYTES, GCM_TAG_BYTES };

/**
 * Prefix of an encrypted text field (see {@link PayloadCipher.encryptText}):
 * `$enc:A256GCM:<iv>:<tag>:<ct>:<kid>` (iv, tag, ct base64url without padding), or
 * `$enc:plain:<text>` for a plaintext that itself starts with this prefix.
 */
export const ENCRYPTED_TEXT_PREFIX = '$enc:';
const PLAIN_TEXT_PREFIX = `${ENCRYPTED_TEXT_PREFIX}plain:`;
const CIPHER_TEXT_PREFIX = `${ENCRYPTED_TEXT_PREFIX}${PAYLOAD_ENCRYPTION_ALGORITHM}:`;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * An encrypted payload as stored in `result.payload`: `{ $enc: 'A256GCM', kid, iv, tag, ct }`,
 * where `iv` (12 bytes), `tag` (16 bytes) and `ct` are base64url without padding. The
 * additional authenticated data binds the ciphertext to its key id and its row key, so a
 * ciphertext copied into another row does not decrypt.
 */
export interface EncryptedPayload {
  readonly $enc: typeof PAYLOAD_ENCRYPTION_ALGORITHM;
  readonly kid: string;
  readonly iv: string;
  readonly tag: string;
  readonly ct: string;
}

/** Encryption options of a store. */
export interface PayloadEncryptionOptions {
  /** The current key (exactly 32 bytes); new payloads are encrypted with it. Requires `encryptionKeyId`. */
  readonly encryptionKey?: Uint8Array;
  /** Id of `encryptionKey`, stored in every envelope (at most 128 characters). */
  readonly encryptionKeyId?: string;
  /** Older (or additional) keys by id, for reading payloads written before a rotation. */
  readonly encryptionKeys?: Readonly<Record<string, Uint8Array>>;
}

const ENVELOPE_FIELDS = ['$enc', 'ct', 'iv', 'kid', 'tag'];

/** True when `value` has exactly the shape of an {@link EncryptedPayload}. */
export function isEncryptedPayload(value: unknown): value is EncryptedPayload {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  const keys = Object.keys(v).sort();
  return (
    keys.length === ENVELOPE_FIELDS.length &&
    keys.every((k, i) => k === ENVELOPE_FIELDS[i]) &&
    v.$enc === PAYLOAD_ENCRYPTION_ALGORITHM &&
    typeof v.kid === 'string' &&
    typeof v.iv === 'string' &&
    typeof v.tag === 'string' &&
    typeof v.ct === 'string'
  );
}

/**
 * Encrypts and decrypts result payloads with AES-256-GCM. Build one with
 * {@link createPayloadCipher}.
 */
export class PayloadCipher {
  private readonly keys: ReadonlyMap<string, Uint8Array>;

  /** @internal use {@link createPayloadCipher}. */
  constructor(
    private readonly currentKeyId: string | null,
    keys: ReadonlyMap<string, Uint8Array>,
  ) {
    this.keys = keys;
  }

  /** @internal the key with id `kid`, if configured. */
  keyFor(kid: string): Uint8Array | undefined {
    return this.keys.get(kid);
  }

  /** Whether new payloads are encrypted (a current key is configured). */
  get encrypts(): boolean {
    return this.currentKeyId !== null;
  }

  /** The id of the key new payloads are encrypted with, or null when only older keys are configured. */
  get currentKey(): string | null {
    return this.currentKeyId;
  }

  /**
   * Encrypts the canonical JSON of `payload` with the current key.
   *
   * @param aad the row key the envelope is bound to.
   * @returns an {@link EncryptedPayload}; `payload` unchanged when no current key is configured.
   */
  encrypt(payload: JsonValue, aad: string): JsonValue {
    if (this.currentKeyId === null) return payload;
    const kid = this.currentKeyId;
    const { iv, ct, tag } = gcmSeal(this.keys.get(kid)!, canonicalJson(payload, 'result.payload'), additionalData(kid, aad));
    const envelope: EncryptedPayload = { $enc: PAYLOAD_ENCRYPTION_ALGORITHM, kid, iv: iv.toString('base64url'), tag: tag.toString('base64url'), ct: ct.toString('base64url') };
    return envelope as unknown as JsonValue;
  }

  /**
   * Decrypts an envelope written by {@link encrypt} for the same `aad`.
   *
   * @throws {@link CheckpointError} DECRYPTION_FAILED naming the key id when that key is not
   *   configured, or the key is wrong, or the envelope was altered or moved to another row.
   */
  decrypt(envelope: EncryptedPayload, aad: string): JsonValue {
    const key = this.keys.get(envelope.kid);
    if (key === undefined) {
      throw new CheckpointError(
        'DECRYPTION_FAILED',
        `result payload is encrypted with key id ${JSON.stringify(envelope.kid)}, which is not configured (set encryptionKey/encryptionKeys)`,
        {
          field: 'result.payload',
          keyId: envelope.kid,
          reason: 'unknown-key',
        },
      );
    }
    return JSON.parse(decryptWith(key, envelope, additionalData(envelope.kid, aad), 'result.payload')) as JsonValue;
  }

  /**
   * Encrypts a free-text field (e.g. `execution.uncertainReason`, which can quote tool or
   * provider error text) with the current key, as `$enc:A256GCM:<iv>:<tag>:<ct>:<kid>`.
   * Without a current key the text is returned as is, except that a text starting with
   * `$enc:` is wrapped as `$enc:plain:<text>` so it is never read as an envelope.
   *
   * @param aad the row key; `field` names the field, both bound into the ciphertext.
   */
  encryptText(text: string, aad: string, field: string): string {
    if (this.currentKeyId === null) return protectPlainText(text);
    const kid = this.currentKeyId;
    const { iv, ct, tag } = gcmSeal(this.keys.get(kid)!, text, textAdditionalData(kid, aad, field));
    return `${CIPHER_TEXT_PREFIX}${iv.toString('base64url')}:${tag.toString('base64url')}:${ct.toString('base64url')}:${kid}`;
  }
}

/**
 * Wraps a plaintext that starts with `$enc:` as `$enc:plain:<text>` (other text unchanged), so
 * tool text shaped like an envelope is stored and read back as itself.
 */
export function protectPlainText(text: string): string {
  return text.startsWith(ENCRYPTED_TEXT_PREFIX) ? `${PLAIN_TEXT_PREFIX}${text}` : text;
}

/**
 * Reads a free-text field written by {@link PayloadCipher.encryptText} or
 * {@link protectPlainText}: plain text (written before encryption, or without a key) as is,
 * `$enc:plain:` unwrapped, `$enc:A256GCM:` decrypted with the key its id names.
 *
 * @throws {@link CheckpointError} DECRYPTION_FAILED naming `field` and the key id for a
 *   malformed envelope, an unknown key id, no keys (`cipher` null), or a failed authentication.
 */
export function decryptText(cipher: PayloadCipher | null, text: string, aad: string, field: string): string {
  if (!text.startsWith(ENCRYPTED_TEXT_PREFIX)) return text;
  if (text.startsWith(PLAIN_TEXT_PREFIX)) return text.slice(PLAIN_TEXT_PREFIX.length);
  const parts = text.startsWith(CIPHER_TEXT_PREFIX) ? text.slice(CIPHER_TEXT_PREFIX.length).split(':') : [];
  const [iv, tag, ct] = parts;
  const kid = parts.slice(3).join(':');
  if (parts.length < 4 || kid === '' || ![iv, tag, ct].every((p) => BASE64URL.test(p!))) {
    throw new CheckpointError('DECRYPTION_FAILED', `${field} starts with ${JSON.stringify(ENCRYPTED_TEXT_PREFIX)} but is not an encrypted text envelope`, {
      field,
      reason: 'malformed',
    });
  }
  const envelope: EncryptedPayload = { $enc: PAYLOAD_ENCRYPTION_ALGORITHM, kid, iv: iv!, tag: tag!, ct: ct! };
  const key = cipher?.keyFor(kid);
  if (key === undefined) {
    throw new CheckpointError('DECRYPTION_FAILED', `${field} is encrypted with key id ${JSON.stringify(kid)}, which is not configured (set encryptionKey/encryptionKeys)`, {
      field,
      keyId: kid,
      reason: cipher === null ? 'no-keys' : 'unknown-key',
    });
  }
  return decryptWith(key, envelope, textAdditionalData(kid, aad, field), field);
}

/**
 * Decrypts `envelope` with no cipher configured: always fails, naming the key id.
 *
 * @throws {@link CheckpointError} DECRYPTION_FAILED.
 */
export function missingKeyError(envelope: EncryptedPayload): CheckpointError {
  return new CheckpointError('DECRYPTION_FAILED', `result payload is encrypted with key id ${JSON.stringify(envelope.kid)}, but no encryption key is configured`, {
    field: 'result.payload',
    keyId: envelope.kid,
    reason: 'no-keys',
  });
}

/**
 * Validates encryption options and builds a cipher, or returns null when no key is given.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a key that is not exactly 32 bytes, a
 *   missing or malformed `encryptionKeyId`, or an id given twice with different keys.
 */
export function createPayloadCipher(options: PayloadEncryptionOptions = {}): PayloadCipher | null {
  const keys = new Map<string, Uint8Array>();
  for (const [id, key] of Object.entries(options.encryptionKeys ?? {})) {
    assertIdentifier(id, 'keyId');
    assertAesKey(key, `encryptionKeys.${id}`);
    keys.set(id, Buffer.from(key));
  }
  let current: string | null = null;
  if (options.encryptionKey !== undefined || options.encryptionKeyId !== undefined) {
    if (options.encryptionKey === undefined || options.encryptionKeyId === undefined) {
      throw new CheckpointError('INVALID_ARGUMENT', 'encryptionKey and encryptionKeyId must be given together', {
        field: options.encryptionKey === undefined ? 'encryptionKey' : 'encryptionKeyId',
      });
    }
    assertIdentifier(options.encryptionKeyId, 'keyId');
    assertAesKey(options.encryptionKey, 'encryptionKey');
    const known = keys.get(options.encryptionKeyId);
    if (known !== undefined && !Buffer.from(known).equals(Buffer.from(options.encryptionKey))) {
      throw new CheckpointError('INVALID_ARGUMENT', `encryption key id ${JSON.stringify(options.encryptionKeyId)} is given twice with different keys`, {
        field: 'encryptionKeys',
        keyId: options.encryptionKeyId,
      });
    }
    keys.set(options.encryptionKeyId, Buffer.from(options.encryptionKey));
    current = options.encryptionKeyId;
  }
  return keys.size === 0 ? null : new PayloadCipher(current, keys);
}

/**
 * Decrypts `envelope` with `key` and returns the UTF-8 plaintext. The IV must be exactly 12
 * bytes and the tag exactly 16 (a truncated tag would let a forger try 2^32 tags instead of
 * 2^128), each as canonical base64url; anything else fails like a wrong key.
 */
function decryptWith(key: Uint8Array, envelope: EncryptedPayload, aad: Buffer, field: string): string {
  const fail = (cause: unknown, reason: string): CheckpointError =>
    new CheckpointError(
      'DECRYPTION_FAILED',
      `${field} does not decrypt with key id ${JSON.stringify(envelope.kid)} (wrong key, altered ciphertext or moved row)`,
      {
        field,
        keyId: envelope.kid,
        reason,
      },
      cause === undefined ? undefined : { cause },
    );
  const iv = strictBase64url(envelope.iv);
  const tag = strictBase64url(envelope.tag);
  const ct = strictBase64url(envelope.ct);
  if (iv === null || iv.length !== GCM_IV_BYTES) throw fail(undefined, 'bad-iv');
  if (tag === null || tag.length !== GCM_TAG_BYTES) throw fail(undefined, 'bad-tag');
  if (ct === null) throw fail(undefined, 'malformed');
  try {
    return gcmOpen(key, iv, ct, tag, aad).toString('utf8');
  } catch (error) {
    throw fail(error, 'authentication-failed');
  }
}

/** The bytes of canonical unpadded base64url text, else null (no silently ignored characters). */
function strictBase64url(text: string): Buffer | null {
  if (typeof text !== 'string' || !BASE64URL.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : null;
}

function textAdditionalData(kid: string, aad: string, field: string): Buffer {
  return Buffer.from(`ttc/text/1\n${kid}\n${aad}\n${field}`, 'utf8');
}

function additionalData(kid: string, aad: string): Buffer {
  return Buffer.from(`ttc/payload/1\n${kid}\n${aad}`, 'utf8');
}

function assertAesKey(key: unknown, field: string): void {
  if (!(key instanceof Uint8Array) || key.length !== ENCRYPTION_KEY_BYTES) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must be a Buffer of exactly ${ENCRYPTION_KEY_BYTES} bytes (AES-256)`, {
      field,
      limit: ENCRYPTION_KEY_BYTES,
      actual: key instanceof Uint8Array ? key.length : typeof key,
    });
  }
}
