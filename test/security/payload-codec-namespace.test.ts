/**
 * The payload codec binds a payload to its Temporal namespace: new payloads carry the
 * `encryption-format: namespace-bound/2` marker and the namespace is part of the AES-GCM
 * additional authenticated data, so a payload of namespace A does not decrypt under namespace B
 * with the same key (in the codec and through the codec server, whatever header is sent). The
 * codec server requires `X-Namespace` (400 without it). Payloads written before the binding
 * (format 1: no marker) still decode by their key id. Workers and clients bind their codec to
 * their configured namespace.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import { defaultPayloadConverter, METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import fc from 'fast-check';
import { isCheckpointError } from '../../src/checkpoint/errors';
import { codecFromEnv } from '../../src/codec/codec-config';
import { startCodecServer, type RunningCodecServer } from '../../src/codec/codec-server';
import { codecDataConverter } from '../../src/codec/data-converter';
import { payloadsToJson } from '../../src/codec/json-payloads';
import {
  createPayloadCodec,
  PAYLOAD_CODEC_ENCODING,
  PAYLOAD_CODEC_FORMAT_METADATA,
  PAYLOAD_CODEC_KEY_ID_METADATA,
  PAYLOAD_CODEC_NAMESPACE_BOUND_FORMAT,
  type AesGcmPayloadCodec,
} from '../../src/codec/payload-codec';

jest.setTimeout(60_000);

const key = randomBytes(32);
const SECRET = { receipt: 'rcpt_namespace_bound_0077' };
const codec = createPayloadCodec({ keyId: 'ns-key-1', key });
const inA = codec.forNamespace('billing');
const inB = codec.forNamespace('support');
const utf8 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? new Uint8Array(0)).toString('utf8');

/** A payload as the codec wrote it before namespaces were bound (format 1), encrypted by hand. */
function formatOnePayload(value: unknown, keyId = 'ns-key-1'): Payload {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(`ttc/temporal-payload/1\n${keyId}`, 'utf8'));
  const ct = Buffer.concat([cipher.update(temporal.api.common.v1.Payload.encode(defaultPayloadConverter.toPayload(value)).finish()), cipher.final()]);
  return {
    metadata: { [METADATA_ENCODING_KEY]: Buffer.from(PAYLOAD_CODEC_ENCODING), [PAYLOAD_CODEC_KEY_ID_METADATA]: Buffer.from(keyId) },
    data: Buffer.concat([iv, ct, cipher.getAuthTag()]),
  };
}

/** The DECRYPTION_FAILED reason `work` rejects with (fails the test when it decodes). */
async function refusal(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    if (isCheckpointError(error, 'DECRYPTION_FAILED')) return String(error.details.reason);
    throw error;
  }
  throw new Error('decoded a payload that should not decode');
}

const decodeOne = async (c: AesGcmPayloadCodec, payload: Payload) => defaultPayloadConverter.fromPayload((await c.decode([payload]))[0]!);

describe('namespace-bound payloads', () => {
  it('a payload encoded for namespace A decodes in A and not in B with the same key (authentication-failed), nor in a codec bound to no namespace', async () => {
    const [encoded] = await inA.encode([defaultPayloadConverter.toPayload(SECRET)]);
    expect(utf8(encoded!.metadata?.[PAYLOAD_CODEC_FORMAT_METADATA])).toBe(PAYLOAD_CODEC_NAMESPACE_BOUND_FORMAT);
    expect(await decodeOne(inA, encoded!)).toEqual(SECRET);
    expect(await refusal(inB.decode([encoded!]))).toBe('authentication-failed');
    expect(await refusal(codec.decode([encoded!]))).toBe('no-namespace');
  });

  it('the format marker cannot be stripped or changed: a namespace-bound payload without it, or with another value, does not decode', async () => {
    const [encoded] = await inA.encode([defaultPayloadConverter.toPayload(SECRET)]);
    const { [PAYLOAD_CODEC_FORMAT_METADATA]: _marker, ...stripped } = encoded!.metadata!;
    expect(await refusal(inA.decode([{ ...encoded!, metadata: stripped }]))).toBe('authentication-failed');
    expect(await refusal(inA.decode([{ ...encoded!, metadata: { ...encoded!.metadata, [PAYLOAD_CODEC_FORMAT_METADATA]: Buffer.from('namespace-bound/3') } }]))).toBe(
      'unknown-format',
    );
  });

  it('an old-format payload (no format marker: key id bound only) still decodes by its key id in every namespace', async () => {
    const old = formatOnePayload(SECRET);
    for (const c of [inA, inB, codec]) expect(await decodeOne(c, old)).toEqual(SECRET);
  });

  it('workers and clients bind the codec to their configured namespace: codecDataConverter binds an unbound codec and refuses one bound to another namespace (INVALID_CONFIG)', async () => {
    const converter = codecDataConverter(codecFromEnv({ TTC_PAYLOAD_CODEC_KEY: `hex:${key.toString('hex')}`, TTC_PAYLOAD_CODEC_KEY_ID: 'ns-key-1' }), 'billing')!;
    const bound = converter.payloadCodecs![0] as AesGcmPayloadCodec;
    expect(bound.namespace).toBe('billing');
    const [encoded] = await bound.encode([defaultPayloadConverter.toPayload(SECRET)]);
    expect(await decodeOne(inA, encoded!)).toEqual(SECRET);
    expect(await refusal(inB.decode([encoded!]))).toBe('authentication-failed');
    expect(codecFromEnv({ TTC_PAYLOAD_CODEC_KEY: `hex:${key.toString('hex')}` }, 'billing')?.namespace).toBe('billing');
    let refused: unknown = null;
    try {
      codecDataConverter(inA, 'support');
    } catch (error) {
      refused = error;
    }
    expect(isCheckpointError(refused, 'INVALID_CONFIG') && refused.details.reason).toBe('namespace');
  });

  it('for any two namespaces and any value, a payload bound to one decodes only there, and an old-format payload decodes in both (property)', async () => {
    const namespaceName = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$/);
    await fc.assert(
      fc.asyncProperty(namespaceName, namespaceName, fc.jsonValue(), async (a, b, value) => {
        fc.pre(a !== b);
        const [encoded] = await codec.forNamespace(a).encode([defaultPayloadConverter.toPayload(value)]);
        const roundTrip = JSON.stringify(defaultPayloadConverter.fromPayload(defaultPayloadConverter.toPayload(value)));
        expect(JSON.stringify(await decodeOne(codec.forNamespace(a), encoded!))).toBe(roundTrip);
        expect(await refusal(codec.forNamespace(b).decode([encoded!]))).toBe('authentication-failed');
        const old = formatOnePayload(value);
        for (const ns of [a, b]) expect(JSON.stringify(await decodeOne(codec.forNamespace(ns), old))).toBe(roundTrip);
      }),
      { numRuns: 200 },
    );
  });
});

describe('the codec server and the namespace', () => {
  let pinned: RunningCodecServer;
  let any: RunningCodecServer;
  beforeAll(async () => {
    [pinned, any] = await Promise.all([startCodecServer({ codec, port: 0, namespace: 'billing' }), startCodecServer({ codec, port: 0 })]);
  });
  afterAll(async () => Promise.all([pinned?.close(), any?.close()]));

  async function post(server: RunningCodecServer, path: string, payloads: Payload[], headers: Record<string, string>) {
    const response = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(payloadsToJson(payloads)),
    });
    return { status: response.status, text: await response.text() };
  }

  it('a /decode or /encode without X-Namespace is refused with 400 NAMESPACE_REQUIRED and no plaintext, on a pinned server and on one serving any namespace', async () => {
    const old = formatOnePayload(SECRET);
    const [bound] = await inA.encode([defaultPayloadConverter.toPayload(SECRET)]);
    for (const server of [pinned, any]) {
      for (const [path, payload] of [
        ['/decode', old],
        ['/decode', bound!],
        ['/encode', defaultPayloadConverter.toPayload(SECRET)],
      ] as const) {
        for (const headers of [{}, { 'X-Namespace': '' }] as Record<string, string>[]) {
          const answer = await post(server, path, [payload], headers);
          expect([path, answer.status, JSON.parse(answer.text).code]).toEqual([path, 400, 'NAMESPACE_REQUIRED']);
          expect(answer.text).not.toContain('rcpt_');
          expect(answer.text).not.toContain(Buffer.from(JSON.stringify(SECRET)).toString('base64').slice(0, 16));
        }
      }
    }
  });

  it("a server serving any namespace decodes a payload only for its own namespace: namespace A's payload asked for as B is 400 DECRYPTION_FAILED", async () => {
    const [bound] = await inA.encode([defaultPayloadConverter.toPayload(SECRET)]);
    const asB = await post(any, '/decode', [bound!], { 'X-Namespace': 'support' });
    expect([asB.status, JSON.parse(asB.text).code]).toEqual([400, 'DECRYPTION_FAILED']);
    expect(asB.text).not.toContain('rcpt_');
    const asA = await post(any, '/decode', [bound!], { 'X-Namespace': 'billing' });
    expect(asA.status).toBe(200);
    expect(asA.text).not.toContain('DECRYPTION_FAILED');
  });

  it('the server encodes for the namespace the request names, and decodes old-format payloads by key id', async () => {
    const encoded = await post(pinned, '/encode', [defaultPayloadConverter.toPayload(SECRET)], { 'X-Namespace': 'billing' });
    expect(encoded.status).toBe(200);
    const payload = JSON.parse(encoded.text).payloads[0] as { metadata: Record<string, string>; data: string };
    const wire: Payload = {
      metadata: Object.fromEntries(Object.entries(payload.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
      data: Buffer.from(payload.data, 'base64'),
    };
    expect(await decodeOne(inA, wire)).toEqual(SECRET);
    expect(await refusal(inB.decode([wire]))).toBe('authentication-failed');

    const old = await post(pinned, '/decode', [formatOnePayload(SECRET)], { 'X-Namespace': 'billing' });
    expect(old.status).toBe(200);
    const data = (JSON.parse(old.text) as { payloads: { data: string }[] }).payloads[0]!.data;
    expect(JSON.parse(Buffer.from(data, 'base64').toString('utf8'))).toEqual(SECRET);
  });
});
