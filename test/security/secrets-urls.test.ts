/**
 * No configuration or store message ever contains a database password. The
 * password holds each of `/ ? # @` (percent-encoded in a valid URL, raw in a malformed one), or
 * sits in `password=` / `sslpassword=`; checked in the error's message, its details and
 * everything `util.inspect` shows (the wrapped driver error included), for a malformed URL, a
 * refused connection and a real authentication failure (a PostgreSQL server with SCRAM auth).
 */
import { writeFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { inspect } from 'node:util';
import type { CheckpointError } from '../../src/checkpoint/errors';
import { resolveConfig } from '../../src/config';
import { maskUrl, openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { failure } from '../helpers/failure';
import { startPostgres, withClient, type PostgresServer } from '../helpers/postgres';

const A = 'Pw4aXq';
const B = 'Zr9bYt';
const SPECIALS = ['/', '?', '#', '@'] as const;

/** Everything a person or a log could be shown of an error. */
function shown(error: unknown): string {
  const e = error as CheckpointError;
  return [e.message, JSON.stringify(e.details), e.stack, inspect(error, { depth: 8, showHidden: false })].join('\n');
}

function expectNoSecret(text: string, parts: readonly string[] = [A, B]): void {
  for (const part of parts) expect(text).not.toContain(part);
}

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

describe('database passwords never reach a message', () => {
  test.each(SPECIALS)('maskUrl hides a password holding %s, raw (malformed URL) or percent-encoded (valid URL)', (c) => {
    const raw = `postgres://app:${A}${c}${B}@db.internal:5432/ttc?sslmode=require`;
    const encoded = `postgres://app:${A}${encodeURIComponent(c)}${B}@db.internal:5432/ttc?sslmode=require`;
    expectNoSecret(maskUrl(raw));
    expectNoSecret(maskUrl(encoded));
    expect(maskUrl(encoded)).toBe('postgres://app:***@db.internal:5432/ttc?sslmode=require');
  });

  test('maskUrl hides password= and sslpassword= parameters, also with a raw & or # in them', () => {
    for (const url of [
      `postgres://db/ttc?user=app&password=${A}&sslmode=require`,
      `postgres://db/ttc?sslpassword=${A}&sslkey=/k.pem`,
      `postgres://db/ttc?SSLPASSWORD=${A}`,
      `postgres://db/ttc?password=${A}&${B}&sslmode=require`,
      `postgres://db/ttc?password=${A}#${B}`,
    ]) {
      expectNoSecret(maskUrl(url));
    }
    expect(maskUrl(`postgres://db/ttc?sslpassword=${A}&sslmode=require`)).toBe('postgres://db/ttc?sslpassword=***&sslmode=require');
  });

  test.each(SPECIALS)('a malformed TTC_STORE_URL (password with a raw %s and a space) is INVALID_CONFIG without the password', async (c) => {
    const error = await failure(() => resolveConfig({}, { TTC_STORE_URL: `postgres://app:${A}${c} ${B}@db:5432/ttc` }));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.details.field).toBe('TTC_STORE_URL');
    expectNoSecret(shown(error));
  });

  test.each(['/', '?', '#'])('openCheckpointStore refuses a URL whose password holds a raw %s (INVALID_ARGUMENT) without showing it, cause included', async (c) => {
    const port = await closedPort();
    const error = await failure(() => openCheckpointStore(`postgres://app:${A}${c}${B}@127.0.0.1:${port}/ttc`, { connectTimeoutMs: 2_000 }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/percent-encode/);
    expectNoSecret(shown(error));
  });

  test('a raw @ in the password is unambiguous (the last @ ends the user part): STORE_UNAVAILABLE without the password', async () => {
    const port = await closedPort();
    const error = await failure(() => openCheckpointStore(`postgres://app:${A}@${B}@127.0.0.1:${port}/ttc`, { connectTimeoutMs: 2_000 }));
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toContain(`app:***@127.0.0.1:${port}/ttc`);
    expectNoSecret(shown(error));
  });

  test.each(SPECIALS)('STORE_UNAVAILABLE for a refused connection (password with %s, and an sslpassword) shows neither', async (c) => {
    const port = await closedPort();
    const error = await failure(() =>
      openCheckpointStore(`postgres://app:${A}${encodeURIComponent(c)}${B}@127.0.0.1:${port}/ttc?sslmode=disable&sslpassword=${B}${A}`, { connectTimeoutMs: 2_000 }),
    );
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expectNoSecret(shown(error), [A, B, `${B}${A}`]);
  });

  describe('against a PostgreSQL server with password (SCRAM) authentication', () => {
    let server: PostgresServer;
    const password = `${A}/?#@:${B}`;
    beforeAll(async () => {
      server = await startPostgres();
      await withClient(server.url, async (client) => {
        await client.query(`CREATE ROLE ttc_pw LOGIN PASSWORD '${password}'`);
        await client.query('CREATE DATABASE ttc_pw OWNER ttc_pw');
      });
      const hba = join(server.dir, 'data', 'pg_hba.conf');
      writeFileSync(hba, `host all ttc_pw 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);
      await withClient(server.url, (client) => client.query('SELECT pg_reload_conf()'));
    }, 120_000);
    afterAll(async () => server?.stop());

    const url = (pw: string): string => `postgres://ttc_pw:${encodeURIComponent(pw)}@127.0.0.1:${server.port}/ttc_pw`;

    test('the right password, percent-encoded, opens the store (the URL form the messages point to works)', async () => {
      const store = await openCheckpointStore(url(password), { connectTimeoutMs: 5_000 });
      await store.close();
    });

    test('an authentication failure is STORE_UNAVAILABLE naming the user and host, never the password tried', async () => {
      const wrong = `${B}@/#?${A}`;
      const error = await failure(() => openCheckpointStore(url(wrong), { connectTimeoutMs: 5_000 }));
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toMatch(/password authentication failed for user "ttc_pw"/);
      expect(error.message).toContain(`ttc_pw:***@127.0.0.1:${server.port}/ttc_pw`);
      expectNoSecret(shown(error), [A, B, encodeURIComponent(wrong)]);
    });
  });
});
