/**
 * An optional Temporal payload codec: every payload a worker or client sends to
 * Temporal (workflow input, activity input and results, queries, updates, the run result) is
 * encrypted with AES-256-GCM before it leaves the process, so Temporal history holds ciphertext.
 * Codecs run outside the workflow sandbox (Temporal's data converter: wire <-> codec <-> payload
 * converter), so workflow code is unaffected.
 *
 * Wire form of an encrypted payload:
 * - `metadata.encoding` = `binary/encrypted`, `metadata["encryption-key-id"]` = the key id;
 * - `data` = IV (12 random bytes) ‖ ciphertext ‖ GCM tag (16 bytes), where the plaintext is the
 *   whole original Payload serialized with Temporal's protobuf `Payload.encode` (its metadata is
 *   encrypted too) and the additional authenticated data binds the key id;
 * - a codec bound to a namespace (workers, clients and the codec server always bind theirs) also
 *   writes `metadata["encryption-format"]` = `namespace-bound/2` and binds the namespace into the
 *   additional authenticated data, so a payload copied into another namespace's history (or
 *   decoded by a codec server asked for another namespace) does not decrypt, even under the same
 *   key. A payload without that marker (written before namespaces were bound, format 1) still
 *   decodes by its key id in any namespace; it stops decoding once its key is retired.
 *
 * Rotation: one current key encrypts; every configured key (current and older, by id) decrypts.
 * Payloads without the `binary/encrypted` encoding pass through `decode` unchanged, so turning
 * the codec on does not break the older history of running workflows.
 */
import { GCM_IV_BYTES, GCM_TAG_BYTES, gcmOpen, gcmSeal } from '../aes-gcm';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { CheckpointError } from '../checkpoint/errors';

/** `metadata.encoding` of an encrypted payload (the value Temporal's encryption samples use). */
export const PAYLOAD_CODEC_ENCODING = 'binary/encrypted';
/** Metadata key naming the id of the key a payload is encrypted with. */
export const PAYLOAD_CODEC_KEY_ID_METADATA = 'encryption-key-id';
/** Codec keys are AES-256 keys: exactly this many bytes. */
export const PAYLOAD_CODEC_KEY_BYTES = 32;
/** Bytes of the random GCM IV at the start of `data`. */
export const PAYLOAD_CODEC_IV_BYTES = GCM_IV_BYTES;
/** Bytes of the GCM authentication tag at the end of `data` (never shorter). */
export const PAYLOAD_CODEC_TAG_BYTES = GCM_TAG_BYTES;
/** What a key id may be: 1 to 128 letters, digits, `_`, `.` or `-` (as the store's key ids). */
export const PAYLOAD_CODEC_KEY_ID_PATTERN = /^[\w.-]{1,128}$/;

const AAD_PREFIX = 'ttc/temporal-payload/1\n';
const NAMESPACE_AAD_PREFIX = 'ttc/temporal-payload/2\n';
/** Metadata key marking the format of an encrypted payload; absent: format 1 (key id bound only). */
export const PAYLOAD_CODEC_FORMAT_METADATA = 'encryption-format';
/** {@link PAYLOAD_CODEC_FORMAT_METADATA} of a payload whose ciphertext is bound to its namespace and key id. */
export const PAYLOAD_CODEC_NAMESPACE_BOUND_FORMAT = 'namespace-bound/2';
const NAMESPACE_BOUND_FORMAT_BYTES = Buffer.from(PAYLOAD_CODEC_NAMESPACE_BOUND_FORMAT, 'utf8');
const ENCODING_BYTES = Buffer.from(PAYLOAD_CODEC_ENCODING, 'utf8');

/** Keys of a {@link createPayloadCodec} codec. */
export interface PayloadCodecKeys {
  /** Id of the current key, written into every encrypted payload's metadata. */
  readonly keyId: string;
  /** The current key (exactly 32 bytes): new payloads are encrypted with it. */
  readonly key: Uint8Array;
  /** Older keys by id that still decrypt (rotation). The current id may appear only with the same key. */
  readonly olderKeys?: Readonly<Record<string, Uint8Array>>;
  /**
   * The Temporal namespace whose payloads this codec encodes and decodes: new payloads are bound
   * to it (format `namespace-bound/2`). Workers and clients bind their codec to their configured
   * namespace ({@link AesGcmPayloadCodec.forNamespace}, `codecDataConverter`). @default none: new
   * payloads are format 1 and namespace-bound payloads are refused (DECRYPTION_FAILED `no-namespace`)
   */
  readonly namespace?: string;
}

/**
 * The AES-256-GCM payload codec. Build one with {@link createPayloadCodec} and pass it as
 * `dataConverter: { payloadCodecs: [codec] }` to the worker and every client of the namespace.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  readonly #keyId: string;
  readonly #keys: ReadonlyMap<string, Buffer>;
  readonly #namespace: string | null;

  /** @internal use {@link createPayloadCodec}. */
  constructor(keyId: string, keys: ReadonlyMap<string, Buffer>, namespace: string | null = null) {
    this.#keyId = keyId;
    this.#keys = keys;
    this.#namespace = namespace;
  }

  /** The namespace new payloads are bound to, or null (format 1, see the module docstring). */
  get namespace(): string | null {
    return this.#namespace;
  }

  /**
   * The same keys bound to `namespace`: its payloads are encoded as `namespace-bound/2` for that
   * namespace and only that namespace's bound payloads decode (format 1 ones still do, by key id).
   *
   * @throws {@link CheckpointError} INVALID_ARGUMENT for an empty namespace.
   */
  forNamespace(namespace: string): AesGcmPayloadCodec {
    assertNamespace(namespace, 'namespace');
    return namespace === this.#namespace ? this : new AesGcmPayloadCodec(this.#keyId, this.#keys, namespace);
  }

  /** The id of the key new payloads are encrypted with. */
  get currentKeyId(): string {
    return this.#keyId;
  }

  /** Every key id this codec decrypts (the current one first). */
  get keyIds(): readonly string[] {
    return [this.#keyId, ...[...this.#keys.keys()].filter((id) => id !== this.#keyId)];
  }

  /** Encrypts each whole payload (metadata and data) with the current key, bound to the codec's namespace when it has one. */
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encryptOne(payload));
  }

  /**
   * Decrypts each `binary/encrypted` payload; any other payload is returned unchanged.
   *
   * @throws {@link CheckpointError} DECRYPTION_FAILED naming the key id (never the key), with
   *   `details.reason`: `missing-key-id` (no or malformed `encryption-key-id`), `unknown-key`
   *   (that id is not configured), `malformed` (data shorter than IV + tag, or the plaintext is
   *   not a Payload), `unknown-format` (an `encryption-format` this codec does not know),
   *   `no-namespace` (a namespace-bound payload and a codec bound to none) or
   *   `authentication-failed` (wrong key, another namespace, altered IV, ciphertext, tag, key id
   *   or format marker).
   */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => (isEncryptedTemporalPayload(payload) ? this.decryptOne(payload) : payload));
  }

  private encryptOne(payload: Payload): Payload {
    const plaintext = temporal.api.common.v1.Payload.encode(payload).finish();
    const namespace = this.#namespace;
    const { iv, ct, tag } = gcmSeal(this.#keys.get(this.#keyId)!, plaintext, additionalData(this.#keyId, namespace));
    const metadata: Record<string, Uint8Array> = { [METADATA_ENCODING_KEY]: ENCODING_BYTES, [PAYLOAD_CODEC_KEY_ID_METADATA]: Buffer.from(this.#keyId, 'utf8') };
    if (namespace !== null) metadata[PAYLOAD_CODEC_FORMAT_METADATA] = NAMESPACE_BOUND_FORMAT_BYTES;
    return { metadata, data: Buffer.concat([iv, ct, tag]) };
  }

  private decryptOne(payload: Payload): Payload {
    const kidBytes = payload.metadata?.[PAYLOAD_CODEC_KEY_ID_METADATA];
    const keyId = kidBytes ? Buffer.from(kidBytes).toString('utf8') : '';
    if (!PAYLOAD_CODEC_KEY_ID_PATTERN.test(keyId)) {
      throw decryptionFailed('missing-key-id', null, `an encrypted Temporal payload has no valid ${PAYLOAD_CODEC_KEY_ID_METADATA} metadata`);
    }
    const formatBytes = payload.metadata?.[PAYLOAD_CODEC_FORMAT_METADATA];
    const namespaceBound = formatBytes !== undefined && formatBytes !== null;
    if (namespaceBound && !Buffer.from(formatBytes).equals(NAMESPACE_BOUND_FORMAT_BYTES)) {
      throw decryptionFailed(
        'unknown-format',
        keyId,
        `an encrypted Temporal payload (key id ${JSON.stringify(keyId)}) has ${PAYLOAD_CODEC_FORMAT_METADATA} ${JSON.stringify(Buffer.from(formatBytes).toString('utf8').slice(0, 64))}, which this codec does not know`,
      );
    }
    if (namespaceBound && this.#namespace === null) {
      throw decryptionFailed(
        'no-namespace',
        keyId,
        `an encrypted Temporal payload (key id ${JSON.stringify(keyId)}) is bound to its namespace, and this codec has no namespace configured`,
      );
    }
    const key = this.#keys.get(keyId);
    if (key === undefined) {
      throw decryptionFailed(
        'unknown-key',
        keyId,
        `a Temporal payload is encrypted with key id ${JSON.stringify(keyId)}, which is not configured (TTC_PAYLOAD_CODEC_KEY / TTC_PAYLOAD_CODEC_KEYS)`,
      );
    }
    const data = Buffer.from(payload.data ?? new Uint8Array(0));
    if (data.length < PAYLOAD_CODEC_IV_BYTES + PAYLOAD_CODEC_TAG_BYTES) {
      throw decryptionFailed(
        'malformed',
        keyId,
        `an encrypted Temporal payload (key id ${JSON.stringify(keyId)}) has ${data.length} bytes, fewer than its ${PAYLOAD_CODEC_IV_BYTES}-byte IV and ${PAYLOAD_CODEC_TAG_BYTES}-byte tag`,
      );
    }
    const iv = data.subarray(0, PAYLOAD_CODEC_IV_BYTES);
    const tag = data.subarray(data.length - PAYLOAD_CODEC_TAG_BYTES);
    let plaintext: Buffer;
    try {
      plaintext = gcmOpen(
        key,
        iv,
        data.subarray(PAYLOAD_CODEC_IV_BYTES, data.length - PAYLOAD_CODEC_TAG_BYTES),
        tag,
        additionalData(keyId, namespaceBound ? this.#namespace : null),
      );
    } catch (error) {
      const where = namespaceBound
        ? ` in namespace ${JSON.stringify(this.#namespace)} (wrong key, a payload of another namespace, or the IV, ciphertext, tag, key id or format was altered)`
        : ' (wrong key, or the IV, ciphertext, tag or key id was altered)';
      throw decryptionFailed('authentication-failed', keyId, `a Temporal payload does not decrypt with key id ${JSON.stringify(keyId)}${where}`, error);
    }
    try {
      return temporal.api.common.v1.Payload.decode(plaintext);
    } catch (error) {
      throw decryptionFailed('malformed', keyId, `a Temporal payload decrypted with key id ${JSON.stringify(keyId)} is not a serialized Payload`, error);
    }
  }
}

/**
 * Validates the keys and builds the codec.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a key that is not exactly 32 bytes, a key
 *   id that does not match {@link PAYLOAD_CODEC_KEY_ID_PATTERN}, or the current id listed among the
 *   older keys with another key. Messages name the key id, never the key.
 */
export function createPayloadCodec(options: PayloadCodecKeys): AesGcmPayloadCodec {
  const keys = new Map<string, Buffer>();
  assertKeyId(options.keyId, 'keyId');
  assertKey(options.key, 'key');
  keys.set(options.keyId, Buffer.from(options.key));
  for (const [id, key] of Object.entries(options.olderKeys ?? {})) {
    assertKeyId(id, 'olderKeys');
    assertKey(key, `olderKeys.${id}`);
    if (id === options.keyId && !Buffer.from(key).equals(keys.get(id)!)) {
      throw new CheckpointError('INVALID_ARGUMENT', `payload codec key id ${JSON.stringify(id)} is given twice with different keys`, { field: 'olderKeys', keyId: id });
    }
    keys.set(id, Buffer.from(key));
  }
  if (options.namespace !== undefined) assertNamespace(options.namespace, 'namespace');
  return new AesGcmPayloadCodec(options.keyId, keys, options.namespace ?? null);
}

/** True when `payload` says it is encrypted by this codec (`metadata.encoding` = `binary/encrypted`). */
export function isEncryptedTemporalPayload(payload: Payload): boolean {
  const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
  return encoding !== undefined && encoding !== null && Buffer.from(encoding).equals(ENCODING_BYTES);
}

/** Format 1 (namespace null): the key id; `namespace-bound/2`: the namespace and the key id, unambiguously (JSON). */
function additionalData(keyId: string, namespace: string | null): Buffer {
  return Buffer.from(namespace === null ? `${AAD_PREFIX}${keyId}` : `${NAMESPACE_AAD_PREFIX}${JSON.stringify([namespace, keyId])}`, 'utf8');
}

function assertNamespace(namespace: unknown, field: string): void {
  if (typeof namespace !== 'string' || namespace === '') {
    throw new CheckpointError('INVALID_ARGUMENT', `${field}: a payload codec's namespace is a non-empty string`, { field });
  }
}

function decryptionFailed(reason: string, keyId: string | null, message: string, cause?: unknown): CheckpointError {
  return new CheckpointError('DECRYPTION_FAILED', message, { field: 'temporal.payload', keyId, reason }, cause === undefined ? undefined : { cause });
}

function assertKeyId(id: unknown, field: string): void {
  if (typeof id !== 'string' || !PAYLOAD_CODEC_KEY_ID_PATTERN.test(id)) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `${field}: a payload codec key id is 1 to 128 letters, digits, "_", "." or "-", got ${JSON.stringify(typeof id === 'string' ? id.slice(0, 140) : typeof id)}`,
      { field },
    );
  }
}

function assertKey(key: unknown, field: string): void {
  if (!(key instanceof Uint8Array) || key.length !== PAYLOAD_CODEC_KEY_BYTES) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must be exactly ${PAYLOAD_CODEC_KEY_BYTES} bytes (AES-256)`, {
      field,
      limit: PAYLOAD_CODEC_KEY_BYTES,
      actual: key instanceof Uint8Array ? key.length : typeof key,
    });
  }
}
