/**
 * Keys from configuration. One strict format (`hex:`, `base64:`, or bare hex as
 * before), surrounding whitespace trimmed, exact lengths, low-entropy keys refused, each refusal
 * a typed INVALID_CONFIG naming the variable and never the key.
 */
import { randomBytes } from 'node:crypto';
import { isCheckpointError, type CheckpointError } from '../../src/checkpoint/errors';
import { resolveConfig } from '../../src/config';
import { parseKeyMaterial, parseKeyring } from '../../src/key-material';

/** A random key whose base64 holds "+" and "/" (so unpadded base64 is not also valid base64url). */
function randomKey(): Buffer {
  for (;;) {
    const key = randomBytes(32);
    if (/\+/.test(key.toString('base64')) && /\//.test(key.toString('base64'))) return key;
  }
}
const KEY = randomKey();
const HEX = KEY.toString('hex');
const B64 = KEY.toString('base64');
const B64URL = KEY.toString('base64url');

function refusal(run: () => unknown): CheckpointError {
  try {
    run();
  } catch (error) {
    if (isCheckpointError(error)) return error;
    throw error;
  }
  throw new Error('expected INVALID_CONFIG');
}

/** Asserts a typed refusal naming `variable` that shows none of `secrets` (message or details). */
function expectRefused(error: CheckpointError, variable: string, reason: string, secrets: string[]): void {
  expect(error.code).toBe('INVALID_CONFIG');
  expect(error.details).toMatchObject({ field: variable, reason });
  expect(error.message).toContain(variable);
  const shown = `${error.message}\n${JSON.stringify(error.details)}`;
  for (const secret of secrets) expect(shown).not.toContain(secret);
}

describe('keys from configuration', () => {
  test('a hex key with a trailing newline (or other surrounding whitespace) is the same 32 bytes, not a 48-byte base64 reading', () => {
    for (const text of [`${HEX}\n`, `  ${HEX}\r\n`, `\thex:${HEX} `, `base64:${B64}\n`]) {
      const config = resolveConfig({}, { TTC_HMAC_KEY: text, TTC_ENCRYPTION_KEY: text });
      expect(config.keys.hmacKey).toEqual(KEY);
      expect(config.keys.encryptionKey).toEqual(KEY);
    }
  });

  test('hex:, base64: (padded), base64: (base64url) and bare hex all decode to the same key', () => {
    for (const text of [`hex:${HEX}`, `hex:${HEX.toUpperCase()}`, `base64:${B64}`, `base64:${B64URL}`, HEX]) {
      expect(parseKeyMaterial('TTC_ENCRYPTION_KEY', text, { bytes: 32 })).toEqual(KEY);
    }
  });

  test.each<[string, string, string]>([
    ['a 0x prefix (49 bytes before)', `0x${HEX}`, 'format'],
    ['an odd number of hex digits', HEX.slice(1), 'format'],
    ['bare base64 (ambiguous with hex before)', B64, 'format'],
    ['base64 without its padding', `base64:${B64.replace(/=+$/, '')}`, 'format'],
    ['base64 with mixed alphabets', `base64:${B64.replace(/[A-Z]/, '-').replace(/[a-z]/, '+')}`, 'format'],
    ['base64 with whitespace inside', `base64:${B64.slice(0, 20)} ${B64.slice(20)}`, 'format'],
    ['hex with whitespace inside', `${HEX.slice(0, 32)} ${HEX.slice(32)}`, 'format'],
    ['base64 with non-zero trailing bits', `base64:${B64.slice(0, 42)}${B64[42] === 'B' ? 'C' : 'B'}=`, 'format'],
    ['an unknown prefix', `hex32:${HEX}`, 'format'],
    ['31 bytes', `hex:${HEX.slice(2)}`, 'length'],
    ['33 bytes', `hex:${HEX}ab`, 'length'],
  ])('item 6: %s is INVALID_CONFIG naming TTC_ENCRYPTION_KEY and TTC_HMAC_KEY, never the key', (_label, text, reason) => {
    const secrets = [HEX, B64, B64URL, text.trim()];
    expectRefused(
      refusal(() => resolveConfig({}, { TTC_ENCRYPTION_KEY: text })),
      'TTC_ENCRYPTION_KEY',
      reason,
      secrets,
    );
    if (reason === 'format')
      expectRefused(
        refusal(() => resolveConfig({}, { TTC_HMAC_KEY: text })),
        'TTC_HMAC_KEY',
        reason,
        secrets,
      );
  });

  test.each<[string, Buffer]>([
    ['all zero', Buffer.alloc(32)],
    ['one repeated byte', Buffer.alloc(32, 0x11)],
    ['an 8-byte pattern repeated', Buffer.from('8f03c1e7a95d2b64'.repeat(4), 'hex')],
    ['a passphrase (printable ASCII only)', Buffer.from('correct horse battery staple 42!', 'latin1')],
  ])('item 6: a low-entropy key (%s) is refused for every key variable', (_label, key) => {
    const hex = key.toString('hex');
    for (const variable of ['TTC_HMAC_KEY', 'TTC_ENCRYPTION_KEY']) {
      expectRefused(
        refusal(() => resolveConfig({}, { [variable]: `hex:${hex}` })),
        variable,
        'low-entropy',
        [hex],
      );
    }
    expectRefused(
      refusal(() => resolveConfig({}, { TTC_HMAC_KEY: HEX, TTC_HMAC_KEY_ID: 'k2', TTC_HMAC_KEYS: `k1:${hex}` })),
      'TTC_HMAC_KEYS',
      'low-entropy',
      [hex],
    );
    expectRefused(
      refusal(() => resolveConfig({}, { TTC_ENCRYPTION_KEYS: `e1:base64:${key.toString('base64')}` })),
      'TTC_ENCRYPTION_KEYS',
      'low-entropy',
      [hex, key.toString('base64')],
    );
  });

  test('key lists take the same formats, and an entry written key:id does not echo the key', () => {
    const other = randomBytes(32);
    const ring = parseKeyring('TTC_ENCRYPTION_KEYS', ` e1:hex:${HEX} ,e2:base64:${other.toString('base64')}\n`, { bytes: 32 });
    expect(ring).toEqual({ e1: KEY, e2: other });
    expectRefused(
      refusal(() => parseKeyring('TTC_ENCRYPTION_KEYS', `${HEX}:e1`, { bytes: 32 })),
      'TTC_ENCRYPTION_KEYS',
      'length',
      [HEX],
    );
    expectRefused(
      refusal(() => parseKeyring('TTC_ENCRYPTION_KEYS', `base64:${B64}`, { bytes: 32 })),
      'TTC_ENCRYPTION_KEYS',
      'key-id',
      [B64],
    );
    expectRefused(
      refusal(() => parseKeyring('TTC_ENCRYPTION_KEYS', `hex:${HEX}`, { bytes: 32 })),
      'TTC_ENCRYPTION_KEYS',
      'key-id',
      [HEX],
    );
  });
});
