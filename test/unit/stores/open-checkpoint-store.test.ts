import { maskUrl, openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import type { CheckpointStoreOptions } from '../../../src/stores/checkpoint-store';

async function openError(url: string, options?: CheckpointStoreOptions): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
  try {
    const store = await openCheckpointStore(url, options);
    await store.close();
  } catch (error) {
    return error as { code: string; message: string; details: Record<string, unknown> };
  }
  throw new Error(`expected ${url} to fail`);
}

describe('openCheckpointStore URLs', () => {
  test.each([
    // A URL that is not a well-formed postgres:// URL shows only its scheme (where a password in it
    // ends is unknown).
    ['mysql://root:pw@localhost/db', 'unknown scheme "mysql"', 'mysql://***'],
    ['checkpoints.db', 'no scheme', 'checkpoints.db'],
    ['sqlite:', 'sqlite:<path>', 'sqlite:'],
    ['sqlite://host/db', 'sqlite:<path>', 'sqlite://host/db'],
    ['postgres://user:s3cret@db.internal:notaport/app', 'not a valid PostgreSQL connection URL', 'postgres://***'],
    ['postgresql:///app', 'names no host', 'postgresql:///app'],
  ])('%s is INVALID_ARGUMENT (%s), the message names the URL with any password masked', async (url, says, shown) => {
    const error = await openError(url);

    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain(says);
    expect(error.details.url).toBe(shown);
    expect(error.message).toContain(JSON.stringify(shown));
    expect(error.message).not.toContain('s3cret');
  });

  test('an empty or missing URL is INVALID_ARGUMENT', async () => {
    expect((await openError('')).code).toBe('INVALID_ARGUMENT');
    expect((await openError(undefined as unknown as string)).details.field).toBe('url');
  });

  test.each<[CheckpointStoreOptions, string]>([
    [{ hmacKey: Buffer.alloc(32) }, 'keyId'],
    [{ keyId: 'k' }, 'hmacKey'],
    [{ hmacKey: Buffer.alloc(16), keyId: 'k' }, 'hmacKey'],
    [{ hmacKeys: { old: Buffer.alloc(32) } }, 'hmacKey'],
    [{ encryptionKey: Buffer.alloc(31), encryptionKeyId: 'e' }, 'encryptionKey'],
    [{ busyTimeoutMs: -1 }, 'busyTimeoutMs'],
  ])('bad options %j are INVALID_ARGUMENT naming %s', async (options, field) => {
    const error = await openError('sqlite::memory:', options);

    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.details.field).toBe(field);
  });

  test('bad PostgreSQL pool options are INVALID_ARGUMENT before connecting', async () => {
    expect((await openError('postgres://u@127.0.0.1:1/db', { poolSize: 0 })).details.field).toBe('poolSize');
    expect((await openError('postgres://u@127.0.0.1:1/db', { connectTimeoutMs: 0 })).details.field).toBe('connectTimeoutMs');
  });

  test('maskUrl hides user passwords, password parameters and unknown parameters', () => {
    expect(maskUrl('postgres://app:p%40ss@db:5432/x?sslmode=require')).toBe('postgres://app:***@db:5432/x?sslmode=require');
    // An unknown parameter may be a piece of a password holding a raw "&": masked, name included.
    expect(maskUrl('postgresql://db/x?user=app&password=hunter2&x=1')).toBe('postgresql://db/x?user=app&password=***&***');
    expect(maskUrl('postgres://app@db/x')).toBe('postgres://app@db/x');
    expect(maskUrl('sqlite:/var/lib/ttc.db')).toBe('sqlite:/var/lib/ttc.db');
  });
});
