/**
 * Unit level: the AES-256-GCM Temporal payload codec. Every payload is
 * encrypted whole (metadata too) under the current key id; every configured key decrypts; an
 * unknown key id, a short tag, another IV length, altered bytes or a relabelled key id are
 * refused with DECRYPTION_FAILED; payloads that are not encrypted pass through decode unchanged.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import { defaultPayloadConverter, METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { isCheckpointError } from '../../src/checkpoint/errors';
import { createPayloadCodec, PAYLOAD_CODEC_ENCODING, PAYLOAD_CODEC_KEY_ID_METADATA, type AesGcmPayloadCodec } from '../../src/codec/payload-codec';

const SECRET = { ticketId: 'T-SECRET-4711', receipt: 'rcpt_top_secret_0042' };
const utf8 = (bytes: Uint8Array | null | undefined): string => Buffer.from(bytes ?? new Uint8Array(0)).toString('utf8');
const plainPayload = (): Payload => defaultPayloadConverter.toPayload(SECRET);

/** Runs `work` and returns the DECRYPTION_FAILED error it rejects with (fails the test otherwise). */
async function decryptionFailure(work: Promise<unknown>): Promise<{ message: string; details: Record<string, unknown> }> {
  try {
    await work;
  } catch (error) {
    if (isCheckpointError(error, 'DECRYPTION_FAILED')) return { message: error.message, details: error.details };
    throw error;
  }
  throw new Error('decode accepted the payload');
}

/** Encrypts `payload` by hand with `key` (for forged layouts the codec itself never writes). */
function forge(payload: Payload, key: Buffer, keyId: string, ivBytes: number, tagBytes: number): Payload {
  const iv = randomBytes(ivBytes);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: tagBytes });
  cipher.setAAD(Buffer.from(`ttc/temporal-payload/1\n${keyId}`, 'utf8'));
  const ct = Buffer.concat([cipher.update(temporal.api.common.v1.Payload.encode(payload).finish()), cipher.final()]);
  return {
    metadata: { [METADATA_ENCODING_KEY]: Buffer.from(PAYLOAD_CODEC_ENCODING), [PAYLOAD_CODEC_KEY_ID_METADATA]: Buffer.from(keyId) },
    data: Buffer.concat([iv, ct, cipher.getAuthTag()]),
  };
}

async function encodeOne(codec: AesGcmPayloadCodec, payload: Payload = plainPayload()): Promise<Payload> {
  const [encoded] = await codec.encode([payload]);
  return encoded!;
}

describe('the payload codec', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('round trip: the encoded payload is binary/encrypted under the key id with no plaintext, and decodes to the original metadata and data', async () => {
    const codec = createPayloadCodec({ keyId: 'c1', key: k1 });
    const original = plainPayload();
    const encoded = await encodeOne(codec, original);
    expect(Object.keys(encoded.metadata ?? {}).sort()).toEqual([PAYLOAD_CODEC_KEY_ID_METADATA, METADATA_ENCODING_KEY].sort());
    expect(utf8(encoded.metadata?.[METADATA_ENCODING_KEY])).toBe('binary/encrypted');
    expect(utf8(encoded.metadata?.[PAYLOAD_CODEC_KEY_ID_METADATA])).toBe('c1');
    const wire = Buffer.from(temporal.api.common.v1.Payload.encode(encoded).finish());
    for (const text of [SECRET.ticketId, SECRET.receipt, 'json/plain']) expect(wire.includes(Buffer.from(text))).toBe(false);
    expect(encoded.data!.length).toBe(12 + temporal.api.common.v1.Payload.encode(original).finish().length + 16);

    const [decoded] = await codec.decode([encoded]);
    expect(utf8(decoded!.metadata?.[METADATA_ENCODING_KEY])).toBe('json/plain');
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual(SECRET);
    // A fresh IV per payload: the same value never encrypts to the same bytes.
    expect(Buffer.from((await encodeOne(codec, original)).data!).equals(Buffer.from(encoded.data!))).toBe(false);
  });

  it('rotation: the current key encrypts, every configured key decrypts', async () => {
    const before = createPayloadCodec({ keyId: 'c1', key: k1 });
    const after = createPayloadCodec({ keyId: 'c2', key: k2, olderKeys: { c1: k1 } });
    const old = await encodeOne(before);
    const fresh = await encodeOne(after);
    expect(utf8(fresh.metadata?.[PAYLOAD_CODEC_KEY_ID_METADATA])).toBe('c2');
    expect((await after.decode([old, fresh])).map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([SECRET, SECRET]);
    expect(after.keyIds).toEqual(['c2', 'c1']);
  });

  it('an unknown key id is a typed DECRYPTION_FAILED naming the id, never the key', async () => {
    const before = createPayloadCodec({ keyId: 'c1', key: k1 });
    const after = createPayloadCodec({ keyId: 'c2', key: k2, olderKeys: { c1: k1 } });
    const failure = await decryptionFailure(before.decode([await encodeOne(after)]));
    expect(failure.details).toMatchObject({ keyId: 'c2', reason: 'unknown-key' });
    expect(failure.message).toContain('"c2"');
    for (const key of [k1, k2]) for (const form of ['hex', 'base64', 'base64url'] as const) expect(failure.message).not.toContain(key.toString(form));
  });

  it('a truncated tag, a short tag that verifies under GCM, another IV length or data shorter than IV + tag is refused', async () => {
    const codec = createPayloadCodec({ keyId: 'c1', key: k1 });
    const good = await encodeOne(codec);
    const truncated = { ...good, data: good.data!.subarray(0, good.data!.length - 12) };
    expect((await decryptionFailure(codec.decode([truncated]))).details).toMatchObject({ keyId: 'c1', reason: 'authentication-failed' });
    // Correctly computed with the right key, but a 4-byte tag (GCM allows it) or a 16-byte IV.
    expect((await decryptionFailure(codec.decode([forge(plainPayload(), k1, 'c1', 12, 4)]))).details).toMatchObject({ reason: 'authentication-failed' });
    expect((await decryptionFailure(codec.decode([forge(plainPayload(), k1, 'c1', 16, 16)]))).details).toMatchObject({ reason: 'authentication-failed' });
    // The layout itself is right: the same forge with 12 and 16 decodes.
    expect(defaultPayloadConverter.fromPayload((await codec.decode([forge(plainPayload(), k1, 'c1', 12, 16)]))[0]!)).toEqual(SECRET);
    const short = { ...good, data: good.data!.subarray(0, 27) };
    expect((await decryptionFailure(codec.decode([short]))).details).toMatchObject({ reason: 'malformed' });
    expect((await decryptionFailure(codec.decode([{ metadata: good.metadata }]))).details).toMatchObject({ reason: 'malformed' });
  });

  it('altered ciphertext, IV, tag, a relabelled key id or a missing key id is refused', async () => {
    // The same key under two ids: only the bound key id decrypts.
    const codec = createPayloadCodec({ keyId: 'c1', key: k1, olderKeys: { alias: k1 } });
    const good = await encodeOne(codec);
    for (const index of [0, 11, 12, good.data!.length - 17, good.data!.length - 1]) {
      const data = Buffer.from(good.data!);
      data[index] = data[index]! ^ 0x01;
      expect((await decryptionFailure(codec.decode([{ ...good, data }]))).details).toMatchObject({ keyId: 'c1', reason: 'authentication-failed' });
    }
    const relabelled = { data: good.data, metadata: { ...good.metadata, [PAYLOAD_CODEC_KEY_ID_METADATA]: Buffer.from('alias') } };
    expect((await decryptionFailure(codec.decode([relabelled]))).details).toMatchObject({ keyId: 'alias', reason: 'authentication-failed' });
    const unlabelled = { data: good.data, metadata: { [METADATA_ENCODING_KEY]: good.metadata![METADATA_ENCODING_KEY]! } };
    expect((await decryptionFailure(codec.decode([unlabelled]))).details).toMatchObject({ keyId: null, reason: 'missing-key-id' });
  });

  it('payloads that are not encrypted pass through decode unchanged (older history stays readable)', async () => {
    const codec = createPayloadCodec({ keyId: 'c1', key: k1 });
    const json = plainPayload();
    const nothing = defaultPayloadConverter.toPayload(undefined);
    const binary = defaultPayloadConverter.toPayload(new Uint8Array([1, 2, 3]));
    const bare: Payload = { data: Buffer.from('raw') };
    const decoded = await codec.decode([json, nothing, binary, bare]);
    expect(decoded[0]).toBe(json);
    expect(decoded[1]).toBe(nothing);
    expect(decoded[2]).toBe(binary);
    expect(decoded[3]).toBe(bare);
  });

  it('keys that are not 32 bytes, malformed key ids and one id with two keys are refused, naming the field and never the key', () => {
    const refused = (work: () => unknown): string => {
      try {
        work();
      } catch (error) {
        if (isCheckpointError(error, 'INVALID_ARGUMENT')) return error.message;
        throw error;
      }
      throw new Error('accepted');
    };
    expect(refused(() => createPayloadCodec({ keyId: 'c1', key: randomBytes(31) }))).toMatch(/key must be exactly 32 bytes/);
    expect(refused(() => createPayloadCodec({ keyId: 'c1', key: k1, olderKeys: { old: randomBytes(48) } }))).toMatch(/olderKeys\.old must be exactly 32 bytes/);
    expect(refused(() => createPayloadCodec({ keyId: 'bad id', key: k1 }))).toMatch(/key id/);
    const twice = refused(() => createPayloadCodec({ keyId: 'c1', key: k1, olderKeys: { c1: k2 } }));
    expect(twice).toMatch(/"c1" is given twice/);
    expect(twice).not.toContain(k2.toString('hex'));
  });
});
