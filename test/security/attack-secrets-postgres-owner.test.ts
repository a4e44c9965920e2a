/**
 * Adversarial review: the store's own schema, when another role may create in
 * it (`public` on PostgreSQL 14 and older, or a database upgraded from one, grants CREATE to
 * PUBLIC). Schema-qualified names and a pinned search_path do not help when the co-tenant creates
 * the store's tables there first: the store used a `ttc_checkpoints` table the co-tenant owns and
 * reads, and its migration, which runs with the store's schema first in the search_path, took a
 * co-tenant's type named `text` for its columns. The store now refuses store tables, and (before
 * it migrates) types, functions and operators in its schema, owned by a role it does not trust
 * (trusted: its own role and the roles it is a member of, the schema's owner, superusers).
 */
import { randomBytes } from 'node:crypto';
import { fingerprintInput } from '../../src/checkpoint/digest';
import { createCheckpoint } from '../../src/checkpoint/record';
import type { Binding } from '../../src/checkpoint/types';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { createTestDatabase, withClient, type TestDatabase } from '../helpers/postgres';

const AT = '2030-01-01T00:00:00.000Z';
const suffix = randomBytes(4).toString('hex');
const APP = `ttc_app_${suffix}`;
const MALLORY = `ttc_mallory_${suffix}`;
const BINDING: Binding = { namespace: 'tenant', callId: 'pay-1', toolName: 'send_payment', toolRevision: '1', inputFingerprint: fingerprintInput({ amount: 10 }) };

function urlAs(databaseUrl: string, role: string): string {
  const u = new URL(databaseUrl);
  u.username = role;
  return u.toString();
}

/** A database owned by the superuser whose `public` schema grants CREATE to PUBLIC (PostgreSQL ≤ 14's default). */
async function legacyPublicDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  await withClient(db.url, (c) => c.query('GRANT CREATE ON SCHEMA public TO PUBLIC'));
  return db;
}

describe('objects a co-tenant creates in the store schema', () => {
  beforeAll(async () => {
    const db = await createTestDatabase();
    try {
      await withClient(db.url, async (c) => {
        await c.query(`CREATE ROLE ${APP} LOGIN`);
        await c.query(`CREATE ROLE ${MALLORY} LOGIN`);
      });
    } finally {
      await db.drop();
    }
  });
  afterAll(async () => {
    const db = await createTestDatabase();
    try {
      await withClient(db.url, async (c) => {
        await c.query(`DROP ROLE IF EXISTS ${MALLORY}`);
        await c.query(`DROP ROLE IF EXISTS ${APP}`);
      });
    } finally {
      await db.drop();
    }
  });

  test('store tables a co-tenant created first are INVALID_CONFIG naming their owner; no record is written where the co-tenant reads it', async () => {
    const db = await legacyPublicDatabase();
    try {
      await withClient(urlAs(db.url, MALLORY), async (c) => {
        await c.query('CREATE TABLE public.ttc_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
        await c.query(`INSERT INTO public.ttc_schema_migrations (version, name) VALUES (1, 'create ttc_checkpoints')`);
        await c.query(
          'CREATE TABLE public.ttc_checkpoints (key text PRIMARY KEY, namespace text NOT NULL, call_id text NOT NULL, tool_name text NOT NULL, status text NOT NULL, revision bigint NOT NULL, updated_at timestamptz NOT NULL, body text NOT NULL)',
        );
        await c.query('CREATE UNIQUE INDEX ON public.ttc_checkpoints (namespace, call_id)');
        await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON public.ttc_checkpoints, public.ttc_schema_migrations TO ${APP}`);
      });

      // Before the fix the store opened on the co-tenant's tables: write a record there as a user would.
      const error = await openCheckpointStore(urlAs(db.url, APP)).then(
        async (store) => {
          await store.createIfAbsent(createCheckpoint(BINDING, { createdAt: AT }));
          await store.close();
          return null;
        },
        (e: unknown) => e,
      );
      const stolen = await withClient(urlAs(db.url, MALLORY), async (c) => (await c.query('SELECT body FROM public.ttc_checkpoints')).rowCount);
      expect(stolen).toBe(0);
      expect(error).toMatchObject({ code: 'INVALID_CONFIG', details: { field: 'postgresSchema', owner: MALLORY } });
    } finally {
      await db.drop();
    }
  }, 60_000);

  test('a co-tenant type named text in the store schema is INVALID_CONFIG before the migration creates any table', async () => {
    const db = await legacyPublicDatabase();
    try {
      await withClient(urlAs(db.url, MALLORY), (c) => c.query('CREATE DOMAIN public.text AS pg_catalog.text'));

      const error = await openCheckpointStore(urlAs(db.url, APP)).then(
        async (store) => {
          await store.close();
          return null;
        },
        (e: unknown) => e,
      );
      const bodyType = await withClient(
        db.url,
        async (c) =>
          (
            await c.query<{ t: string }>(
              `SELECT format_type(atttypid, NULL) AS t FROM pg_attribute WHERE attrelid = pg_catalog.to_regclass('public.ttc_checkpoints') AND attname = 'body'`,
            )
          ).rows[0]?.t ?? null,
      );
      expect(bodyType).toBeNull();
      expect(error).toMatchObject({ code: 'INVALID_CONFIG', details: { field: 'postgresSchema', owner: MALLORY } });
    } finally {
      await db.drop();
    }
  }, 60_000);

  test('the store still opens in its own schema and in a PUBLIC-writable public schema nobody else has used', async () => {
    const db = await legacyPublicDatabase();
    try {
      const store = await openCheckpointStore(urlAs(db.url, APP));
      await store.createIfAbsent(createCheckpoint(BINDING, { createdAt: AT }));
      await store.close();
      const again = await openCheckpointStore(urlAs(db.url, APP));
      expect((await again.get(BINDING))?.status).toBe('ready');
      await again.close();
    } finally {
      await db.drop();
    }
  }, 60_000);
});
