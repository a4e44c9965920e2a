/**
 * Adversarial review: keys pasted into the wrong variable. A key id variable
 * (`TTC_HMAC_KEY_ID`, `TTC_ENCRYPTION_KEY_ID`) that holds a key in its `base64:` or `hex:` form
 * (the two variables sit next to each other) was refused with the whole value quoted, key
 * included, in the configuration error.
 */
import { randomBytes } from 'node:crypto';
import { isCheckpointError, type CheckpointError } from '../../src/checkpoint/errors';
import { resolveConfig } from '../../src/config';

const KEY = randomBytes(32);
const FORMS = [
  ['base64:', `base64:${KEY.toString('base64')}`],
  ['hex:', `hex:${KEY.toString('hex')}`],
  ['base64 with a trailing newline', `${KEY.toString('base64')}\n`],
] as const;

function configError(env: NodeJS.ProcessEnv): CheckpointError {
  try {
    resolveConfig({}, env);
  } catch (error) {
    if (isCheckpointError(error)) return error;
    throw error;
  }
  throw new Error('expected a CheckpointError');
}

function expectNoKey(error: CheckpointError): void {
  const text = `${error.message}\n${JSON.stringify(error.details)}`;
  for (const part of [KEY.toString('base64').slice(0, 16), KEY.toString('hex').slice(0, 16), KEY.toString('base64url').slice(0, 16)]) expect(text).not.toContain(part);
}

describe('a key in a key id variable is refused without being shown', () => {
  test.each(['TTC_HMAC_KEY_ID', 'TTC_ENCRYPTION_KEY_ID'])('%s holding a key', (variable) => {
    for (const [, value] of FORMS) {
      const error = configError({ TTC_STORE_URL: 'sqlite::memory:', [variable]: value });
      expect(error.code).toBe('INVALID_CONFIG');
      expect(error.details.field).toBe(variable);
      expectNoKey(error);
    }
  });

  test('a short malformed key id is still named, so a typo can be found', () => {
    const error = configError({ TTC_STORE_URL: 'sqlite::memory:', TTC_HMAC_KEY_ID: 'k 1' });
    expect(error.message).toContain('"k 1"');
  });
});
