/**
 * Schema-qualified SQL: a co-tenant with CREATE on the database cannot shadow the
 * store's tables. Real PostgreSQL: the store's role `app` owns the database (its tables in
 * `public`); the co-tenant `mallory` creates a schema named after `app` (first in the default
 * search_path `"$user", public`), a `ttc_checkpoints` table in it holding a forged completed
 * record, and grants `app` access. Unqualified names read the forgery; the store schema-qualifies
 * everything it uses (no session search_path, which a transaction-mode pooler would not keep), so
 * it reads its own row.
 */
import { randomBytes } from 'node:crypto';
import { fingerprintInput } from '../../src/checkpoint/digest';
import { serializeCheckpoint } from '../../src/checkpoint/codec';
import { createCheckpoint } from '../../src/checkpoint/record';
import { claimExecution, completeExecution } from '../../src/checkpoint/transitions';
import type { Binding } from '../../src/checkpoint/types';
import { checkpointKey } from '../../src/stores/checkpoint-key';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { createTestDatabase, requireDatabaseUrl, withClient, withDatabase, type TestDatabase } from '../helpers/postgres';

const AT = '2030-01-01T00:00:00.000Z';
const suffix = randomBytes(4).toString('hex');
const APP = `ttc_app_${suffix}`;
const MALLORY = `ttc_mallory_${suffix}`;

function urlAs(databaseUrl: string, role: string): string {
  const u = new URL(databaseUrl);
  u.username = role;
  return u.toString();
}

const BINDING: Binding = { namespace: 'tenant', callId: 'pay-1', toolName: 'send_payment', toolRevision: '1', inputFingerprint: fingerprintInput({ amount: 10 }) };

describe('PostgreSQL tables cannot be shadowed by a co-tenant', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    await withClient(requireDatabaseUrl(), async (c) => {
      await c.query(`CREATE ROLE ${APP} LOGIN`);
      await c.query(`CREATE ROLE ${MALLORY} LOGIN`);
    });
    db = await createTestDatabase();
    await withClient(db.url, async (c) => {
      await c.query(`ALTER DATABASE ${db.name} OWNER TO ${APP}`);
      await c.query(`ALTER SCHEMA public OWNER TO ${APP}`);
      await c.query(`GRANT CREATE ON DATABASE ${db.name} TO ${MALLORY}`);
    });
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
    await withClient(requireDatabaseUrl(), async (c) => {
      await c.query(`DROP ROLE IF EXISTS ${MALLORY}`);
      await c.query(`DROP ROLE IF EXISTS ${APP}`);
    });
  });

  test('a table a co-tenant creates in a schema earlier in the search_path is never read; the store reads its own row', async () => {
    const appUrl = urlAs(db.url, APP);
    const store = await openCheckpointStore(appUrl);
    const created = (await store.createIfAbsent(createCheckpoint(BINDING, { createdAt: AT }))).record;
    const claim = claimExecution(created, { attemptId: 'a1', at: AT });
    expect(await store.compareAndSwap(claim.expectedRevision, claim.next, created)).toBe(true);
    await store.close();

    // The co-tenant: a schema named after the store's role, with tables the store's role may use.
    const forged = completeExecution(claim.next, { attemptId: 'a1', at: AT, result: { paid: true, note: 'forged by mallory' } }).next;
    await withClient(urlAs(db.url, MALLORY), async (c) => {
      await c.query(`CREATE SCHEMA ${APP}`);
      await c.query(`CREATE TABLE ${APP}.ttc_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await c.query(`INSERT INTO ${APP}.ttc_schema_migrations (version, name) VALUES (1, 'create ttc_checkpoints')`);
      await c.query(
        `CREATE TABLE ${APP}.ttc_checkpoints (key text PRIMARY KEY, namespace text NOT NULL, call_id text NOT NULL, tool_name text NOT NULL, status text NOT NULL, revision bigint NOT NULL, updated_at timestamptz NOT NULL, body text NOT NULL)`,
      );
      await c.query(`INSERT INTO ${APP}.ttc_checkpoints VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
        checkpointKey(BINDING),
        BINDING.namespace,
        BINDING.callId,
        BINDING.toolName,
        forged.status,
        forged.revision,
        forged.updatedAt,
        serializeCheckpoint(forged),
      ]);
      await c.query(`GRANT USAGE, CREATE ON SCHEMA ${APP} TO ${APP}`);
      await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${APP} TO ${APP}`);
    });
    // What an unqualified name resolves to for the store's role: the forgery.
    const shadowed = await withClient(appUrl, async (c) => (await c.query<{ status: string }>('SELECT status FROM ttc_checkpoints')).rows[0]?.status);
    expect(shadowed).toBe('completed');

    const reopened = await openCheckpointStore(appUrl);
    try {
      const read = await reopened.get(BINDING);
      expect(read?.status).toBe('executing');
      expect(read?.result).toBeNull();
      expect(await reopened.listByStatus(['completed'])).toEqual([]);
    } finally {
      await reopened.close();
    }
  }, 60_000);

  test('a store table this role owns in another schema (where an earlier version created it) is INVALID_CONFIG, not a fresh empty store', async () => {
    const other = await createTestDatabase();
    try {
      await withClient(other.url, async (c) => {
        await c.query(`ALTER DATABASE ${other.name} OWNER TO ${APP}`);
        await c.query(`CREATE SCHEMA app_data AUTHORIZATION ${APP}`);
      });
      const appUrl = urlAs(withDatabase(other.url, other.name), APP);
      const first = await openCheckpointStore(appUrl, { postgresSchema: 'app_data' });
      await first.createIfAbsent(createCheckpoint(BINDING, { createdAt: AT }));
      await first.close();

      await expect(openCheckpointStore(appUrl)).rejects.toMatchObject({ code: 'INVALID_CONFIG', details: { field: 'postgresSchema', found: 'app_data' } });
      await expect(openCheckpointStore(appUrl, { postgresSchema: 'missing_schema' })).rejects.toMatchObject({ code: 'INVALID_CONFIG', details: { field: 'postgresSchema' } });
      const again = await openCheckpointStore(appUrl, { postgresSchema: 'app_data' });
      expect((await again.get(BINDING))?.status).toBe('ready');
      await again.close();
    } finally {
      await other.drop();
    }
  }, 60_000);
});
