/**
 * Configuration: the payload codec's keys come from TTC_PAYLOAD_CODEC_KEY,
 * TTC_PAYLOAD_CODEC_KEY_ID and TTC_PAYLOAD_CODEC_KEYS in the strict key formats (hex:, base64:,
 * bare hex; exactly 32 random bytes); errors name the variable, never the key.
 */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { isCheckpointError } from '../../src/checkpoint/errors';
import { codecFromEnv, requireCodecFromEnv } from '../../src/codec/codec-config';

const hex = (key: Buffer): string => `hex:${key.toString('hex')}`;

function configError(work: () => unknown): { message: string; field: unknown } {
  try {
    work();
  } catch (error) {
    if (isCheckpointError(error, 'INVALID_CONFIG')) return { message: error.message, field: error.details.field };
    throw error;
  }
  throw new Error('accepted');
}

describe('payload codec configuration', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('no TTC_PAYLOAD_CODEC_KEY means no codec; a key gives one under TTC_PAYLOAD_CODEC_KEY_ID (default c1), its trailing newline trimmed', () => {
    expect(codecFromEnv({})).toBeNull();
    expect(codecFromEnv({ TTC_PAYLOAD_CODEC_KEY: '  ' })).toBeNull();
    expect(codecFromEnv({ TTC_PAYLOAD_CODEC_KEY: `${hex(k1)}\n` })?.keyIds).toEqual(['c1']);
    expect(codecFromEnv({ TTC_PAYLOAD_CODEC_KEY: `base64:${k1.toString('base64')}`, TTC_PAYLOAD_CODEC_KEY_ID: 'blue-2' })?.currentKeyId).toBe('blue-2');
  });

  it('rotation from the environment: the new current key encrypts, TTC_PAYLOAD_CODEC_KEYS keys still decrypt', async () => {
    const before = codecFromEnv({ TTC_PAYLOAD_CODEC_KEY: hex(k1), TTC_PAYLOAD_CODEC_KEY_ID: 'c1' })!;
    const after = codecFromEnv({ TTC_PAYLOAD_CODEC_KEY: hex(k2), TTC_PAYLOAD_CODEC_KEY_ID: 'c2', TTC_PAYLOAD_CODEC_KEYS: ` c1:${hex(k1)} ` })!;
    const old = await before.encode([defaultPayloadConverter.toPayload({ a: 1 })]);
    expect(defaultPayloadConverter.fromPayload((await after.decode(old))[0]!)).toEqual({ a: 1 });
    expect(after.keyIds).toEqual(['c2', 'c1']);
  });

  it('malformed, short, low-entropy or conflicting codec keys are refused naming the variable, never the key', () => {
    const cases: [NodeJS.ProcessEnv, string][] = [
      [{ TTC_PAYLOAD_CODEC_KEY: k1.toString('hex').slice(0, 62) }, 'TTC_PAYLOAD_CODEC_KEY'],
      [{ TTC_PAYLOAD_CODEC_KEY: `0x${k1.toString('hex')}` }, 'TTC_PAYLOAD_CODEC_KEY'],
      [{ TTC_PAYLOAD_CODEC_KEY: k1.toString('base64') }, 'TTC_PAYLOAD_CODEC_KEY'],
      [{ TTC_PAYLOAD_CODEC_KEY: `hex:${'00'.repeat(32)}` }, 'TTC_PAYLOAD_CODEC_KEY'],
      [{ TTC_PAYLOAD_CODEC_KEY: hex(k1), TTC_PAYLOAD_CODEC_KEY_ID: 'no spaces' }, 'TTC_PAYLOAD_CODEC_KEY_ID'],
      [{ TTC_PAYLOAD_CODEC_KEY: hex(k1), TTC_PAYLOAD_CODEC_KEYS: `c1:${hex(k2)}` }, 'TTC_PAYLOAD_CODEC_KEYS'],
      [{ TTC_PAYLOAD_CODEC_KEY: hex(k1), TTC_PAYLOAD_CODEC_KEYS: `old:${k2.toString('hex').slice(2)}` }, 'TTC_PAYLOAD_CODEC_KEYS'],
      // Older keys alone would decrypt but send new payloads in plaintext: refused.
      [{ TTC_PAYLOAD_CODEC_KEYS: `c1:${hex(k1)}` }, 'TTC_PAYLOAD_CODEC_KEYS'],
    ];
    for (const [env, variable] of cases) {
      const error = configError(() => codecFromEnv(env));
      expect([variable, error.field]).toEqual([variable, variable]);
      expect(error.message).toContain(variable);
      for (const key of [k1, k2]) expect(error.message).not.toContain(key.toString('hex').slice(2, 40));
    }
  });

  it('the codec server needs a codec key: without one requireCodecFromEnv is INVALID_CONFIG naming TTC_PAYLOAD_CODEC_KEY', () => {
    expect(configError(() => requireCodecFromEnv({}))).toEqual({ message: expect.stringContaining('TTC_PAYLOAD_CODEC_KEY is not set'), field: 'TTC_PAYLOAD_CODEC_KEY' });
    expect(requireCodecFromEnv({ TTC_PAYLOAD_CODEC_KEY: hex(k1) }).currentKeyId).toBe('c1');
  });
});
