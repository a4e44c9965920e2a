/**
 * Adversarial review: store URLs whose password sits where the masking did not
 * look. A libpq key/value connection string (`host=… password=…`) has no `@`, `?` or `#`, and
 * neither has a `postgres://user:password` URL whose `@host` was forgotten; both were shown whole
 * in the configuration error, the store error and its details.
 */
import { inspect } from 'node:util';
import { isCheckpointError, type CheckpointError } from '../../src/checkpoint/errors';
import { resolveConfig } from '../../src/config';
import { maskUrl, openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { failure } from '../helpers/failure';

const SECRET = 'Hq7vPw2Zk';

/** Everything a person or a log could be shown of an error. */
function shown(error: CheckpointError): string {
  return [error.message, JSON.stringify(error.details), inspect(error, { depth: 8 })].join('\n');
}

const LEAKY = [
  ['a libpq key/value connection string', `host=db.internal port=5432 user=app password=${SECRET} dbname=ttc`],
  ['a key/value string with a quoted password', `host=db.internal password='${SECRET}' dbname=ttc`],
  ['a URL with user:password and no @host', `postgres://app:${SECRET}`],
  ['a URL with user:password, no @host, and a database', `postgres://app:${SECRET}/ttc`],
  ['a postgresql:// URL with user:password:port and no @', `postgresql://app:${SECRET}:5432/ttc`],
] as const;

describe('passwords outside the user part of a well-formed URL', () => {
  test.each(LEAKY)('maskUrl hides the password of %s', (_, url) => {
    expect(maskUrl(url)).not.toContain(SECRET);
  });

  test.each(LEAKY)('openCheckpointStore refuses %s without showing the password', async (_, url) => {
    const error = await failure(() => openCheckpointStore(url, { connectTimeoutMs: 200 }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(shown(error)).not.toContain(SECRET);
  });

  test.each(LEAKY)('TTC_STORE_URL set to %s: the configuration error or the store error never shows the password', async (_, url) => {
    let error: CheckpointError;
    try {
      const config = resolveConfig({}, { TTC_STORE_URL: url });
      error = await failure(() => openCheckpointStore(config.store.url, { connectTimeoutMs: 200 }));
    } catch (thrown) {
      if (!isCheckpointError(thrown)) throw thrown;
      error = thrown;
    }
    expect(shown(error)).not.toContain(SECRET);
  });

  test('what cannot hold a password is still shown: a path without a scheme, a URL without credentials', () => {
    expect(maskUrl('checkpoints.db')).toBe('checkpoints.db');
    expect(maskUrl('./data/checkpoints.db')).toBe('./data/checkpoints.db');
    expect(maskUrl('postgres://db.internal:5432/ttc')).toBe('postgres://db.internal:5432/ttc');
    expect(maskUrl('postgresql:///ttc')).toBe('postgresql:///ttc');
    expect(maskUrl('sqlite:./data/ttc.db')).toBe('sqlite:./data/ttc.db');
  });
});
