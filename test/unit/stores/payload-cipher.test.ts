import { createPayloadCipher, isEncryptedPayload, type EncryptedPayload } from '../../../src/stores/payload-cipher';
import { RowCodec } from '../../../src/stores/row-codec';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimExecution, completeExecution } from '../../../src/checkpoint/transitions';
import { fingerprintInput } from '../../../src/checkpoint/digest';

const KEY = Buffer.alloc(32, 3);

function catchError(fn: () => unknown): { code: string; details: Record<string, unknown>; message: string } {
  try {
    fn();
  } catch (error) {
    return error as { code: string; details: Record<string, unknown>; message: string };
  }
  throw new Error('expected a throw');
}

describe('payload cipher (AES-256-GCM)', () => {
  const cipher = createPayloadCipher({ encryptionKey: KEY, encryptionKeyId: 'k1' })!;

  test('round trip: the envelope names the key id and decrypts to the exact payload', () => {
    const payload = { a: [1, 'é', null, { b: true }] };

    const envelope = cipher.encrypt(payload, 'row-1') as unknown as EncryptedPayload;

    expect(Object.keys(envelope).sort()).toEqual(['$enc', 'ct', 'iv', 'kid', 'tag']);
    expect(envelope).toMatchObject({ $enc: 'A256GCM', kid: 'k1' });
    expect(Buffer.from(envelope.iv, 'base64url')).toHaveLength(12);
    expect(Buffer.from(envelope.tag, 'base64url')).toHaveLength(16);
    expect(isEncryptedPayload(envelope)).toBe(true);
    expect(cipher.decrypt(envelope, 'row-1')).toEqual(payload);
  });

  test('every encryption uses a fresh IV', () => {
    const a = cipher.encrypt({ x: 1 }, 'row-1') as unknown as EncryptedPayload;
    const b = cipher.encrypt({ x: 1 }, 'row-1') as unknown as EncryptedPayload;

    expect(a.iv).not.toBe(b.iv);
    expect(a.ct).not.toBe(b.ct);
  });

  test('an altered ciphertext or an envelope moved to another row does not decrypt: DECRYPTION_FAILED', () => {
    const envelope = cipher.encrypt({ x: 1 }, 'row-1') as unknown as EncryptedPayload;
    const flipped = { ...envelope, ct: Buffer.from(Buffer.from(envelope.ct, 'base64url').map((b, i) => (i === 0 ? b ^ 1 : b))).toString('base64url') };

    expect(catchError(() => cipher.decrypt(flipped, 'row-1'))).toMatchObject({ code: 'DECRYPTION_FAILED', details: { keyId: 'k1', reason: 'authentication-failed' } });
    expect(catchError(() => cipher.decrypt(envelope, 'row-2'))).toMatchObject({ code: 'DECRYPTION_FAILED', details: { keyId: 'k1' } });
  });

  test('an unknown key id is DECRYPTION_FAILED naming it', () => {
    const other = createPayloadCipher({ encryptionKey: KEY, encryptionKeyId: 'k2' })!;
    const envelope = cipher.encrypt({ x: 1 }, 'row-1') as unknown as EncryptedPayload;

    const error = catchError(() => other.decrypt(envelope, 'row-1'));

    expect(error).toMatchObject({ code: 'DECRYPTION_FAILED', details: { keyId: 'k1', reason: 'unknown-key' } });
    expect(error.message).toContain('"k1"');
  });

  test('isEncryptedPayload accepts only the exact envelope shape', () => {
    expect(isEncryptedPayload({ $enc: 'A256GCM', kid: 'k', iv: 'a', tag: 'b', ct: 'c' })).toBe(true);
    expect(isEncryptedPayload({ $enc: 'A256GCM', kid: 'k', iv: 'a', tag: 'b', ct: 'c', extra: 1 })).toBe(false);
    expect(isEncryptedPayload({ $enc: 'A128GCM', kid: 'k', iv: 'a', tag: 'b', ct: 'c' })).toBe(false);
    expect(isEncryptedPayload([1])).toBe(false);
    expect(isEncryptedPayload(null)).toBe(false);
  });

  test.each([
    [{ encryptionKey: Buffer.alloc(16), encryptionKeyId: 'k' }, 'encryptionKey'],
    [{ encryptionKey: KEY }, 'encryptionKeyId'],
    [{ encryptionKeyId: 'k' }, 'encryptionKey'],
    [{ encryptionKeys: { old: Buffer.alloc(31) } }, 'encryptionKeys.old'],
    [{ encryptionKey: KEY, encryptionKeyId: 'k', encryptionKeys: { k: Buffer.alloc(32, 9) } }, 'encryptionKeys'],
  ])('bad options %# are INVALID_ARGUMENT naming %s', (options, field) => {
    expect(catchError(() => createPayloadCipher(options))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field } });
  });

  test('without any key there is no cipher', () => {
    expect(createPayloadCipher({})).toBeNull();
  });

  test('a plaintext payload shaped like an envelope cannot be stored without encryption: INVALID_ARGUMENT', () => {
    const binding = { namespace: 'n', callId: 'c', toolName: 't', toolRevision: '1', inputFingerprint: fingerprintInput({}) };
    const claimed = claimExecution(createCheckpoint(binding, { createdAt: '2030-01-01T00:00:00.000Z' }), { attemptId: 'a', at: '2030-01-01T00:00:00.000Z' }).next;
    const done = completeExecution(claimed, { attemptId: 'a', at: '2030-01-01T00:00:00.000Z', result: { $enc: 'A256GCM', kid: 'k', iv: 'a', tag: 'b', ct: 'c' } }).next;

    expect(catchError(() => new RowCodec().encode(done))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'result.payload' } });
    expect(new RowCodec({ encryptionKey: KEY, encryptionKeyId: 'k1' }).encode(done).body).not.toContain('"kid":"k"');
  });
});
