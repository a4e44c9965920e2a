/**
 * Fleets reach PostgreSQL through a transaction-mode pooler. The conformance suite runs
 * a second time, through a real PgBouncer (Debian's package, 1.18 on bookworm) in
 * `pool_mode = transaction` with Debian's defaults (no `ignore_startup_parameters`) that this
 * file starts in front of the shared test server (`../helpers/pgbouncer`); its outages stop the
 * PostgreSQL server behind a running PgBouncer. Then what only a pooler shows:
 * - the user's report: 40 concurrent full lifecycles (2 of 40 completed; the rest failed on
 *   `42P05 prepared statement "ttc_insert" already exists`), with Debian's defaults and with
 *   `ignore_startup_parameters = options`;
 * - what PgBouncer 1.18 does with a startup `options` parameter (refuses it, or drops it when
 *   `ignore_startup_parameters` lists it);
 * - a statement the pooler refuses (08P01 `query_wait_timeout`) wrote nothing: STORE_UNAVAILABLE
 *   naming the pooler, never STORE_OUTCOME_UNKNOWN; the real 42P05 / 26000 a pooler causes are
 *   classified the same way;
 * - a connection lost through the pooler is still settled by re-reading;
 * - concurrent openers migrate once through the pooler (a session advisory lock would stay on
 *   one server connection and hang the next opener);
 * - no statement depends on the search_path (a pooler does not carry session state, and PgBouncer
 *   drops or refuses a startup `options` pin): a co-tenant's `public.convert_to(text, text)` and
 *   `=` (text, text), first in the role's search_path, are never called.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createCheckpoint } from '../../src/checkpoint/record';
import { claimDelivery, claimExecution, completeDelivery, completeExecution } from '../../src/checkpoint/transitions';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { checkpointKey } from '../../src/stores/checkpoint-key';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { classifyPgError } from '../../src/stores/pg-errors';
import { startPgBouncer, type PgBouncer, type StartPgBouncerOptions } from '../helpers/pgbouncer';
import { createTestDatabase, freshPostgresTarget, requireDatabaseUrl, startPostgres, withClient, type PostgresServer } from '../helpers/postgres';
import { describeStoreConformance, expectCode, makeBinding, type Outage } from './store-conformance';

const AT = '2030-01-01T00:00:00.000Z';
const suffix = randomBytes(4).toString('hex');
const APP = `ttc_pgb_app_${suffix}`;
const MALLORY = `ttc_pgb_mallory_${suffix}`;

/** PgBouncer with Debian's defaults in front of the shared server (DATABASE_URL). */
let bouncer: PgBouncer;
beforeAll(async () => {
  bouncer = await startPgBouncer(requireDatabaseUrl(), { users: [APP, MALLORY] });
}, 60_000);

/** A private server behind its own PgBouncer, for outages (started on first use). */
let outageEnv: { server: PostgresServer; bouncer: PgBouncer } | undefined;
afterAll(async () => {
  await bouncer?.stop();
  await outageEnv?.bouncer.stop();
  await outageEnv?.server.stop();
});

async function poolerOutage(): Promise<Outage> {
  if (outageEnv === undefined) {
    const server = await startPostgres();
    outageEnv = { server, bouncer: await startPgBouncer(server.url, { settings: { query_wait_timeout: 3 } }) };
  }
  const { server, bouncer: b } = outageEnv;
  await server.resume();
  const database = await createTestDatabase(server.url);
  const url = b.route(database.url);
  await b.ready(url);
  const store = await openCheckpointStore(url, { connectTimeoutMs: 2_000 });
  const end = async (): Promise<void> => {
    await server.resume();
    // PgBouncer refuses logins for server_login_retry after the server came back.
    await b.ready(url);
  };
  return {
    store,
    // The server goes away; PgBouncer stays up and answers for it.
    begin: () => server.halt(),
    end,
    async dispose() {
      await store.close();
      await end();
      await database.drop();
    },
  };
}

describeStoreConformance('PostgreSQL through PgBouncer (pool_mode = transaction)', {
  fresh: () => freshPostgresTarget({ route: (url) => bouncer.route(url) }),
  outage: poolerOutage,
});

/** One call's whole lifecycle through `store`: create, claim, complete, a conversation entry, claim and complete the delivery. */
async function lifecycle(store: CheckpointStore, i: number): Promise<CheckpointRecord> {
  const binding = makeBinding(`life-${i}-${randomBytes(4).toString('hex')}`);
  let record = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: AT }))).record;
  const steps = [
    (r: CheckpointRecord) => claimExecution(r, { attemptId: `a${i}`, at: AT }),
    (r: CheckpointRecord) => completeExecution(r, { attemptId: `a${i}`, at: AT, result: { ticket: i } }),
    (r: CheckpointRecord) => claimDelivery(r, { deliveryId: `d${i}`, at: AT }),
    (r: CheckpointRecord) => completeDelivery(r, { deliveryId: `d${i}`, at: AT }),
  ];
  for (const [n, step] of steps.entries()) {
    const t = step(record);
    if (!(await store.compareAndSwap(t.expectedRevision, t.next, record))) throw new Error(`call ${i}: CAS to ${t.next.status} lost`);
    record = t.next;
    if (n === 1) await store.putConversationEntries(`log-${binding.callId}`, [{ key: `r/${binding.callId}`, value: { ticket: i } }]);
  }
  return record;
}

/** `url` with its `options` query parameter set. */
function withOptions(url: string, options: string): string {
  const u = new URL(url);
  u.searchParams.set('options', options);
  return u.toString();
}

describe.each<[string, StartPgBouncerOptions, (url: string) => string]>([
  ["Debian's defaults", {}, (url) => url],
  ['ignore_startup_parameters = options, the URL carrying its own options', { ignoreStartupParameters: 'options' }, (url) => withOptions(url, '-c statement_timeout=60000')],
])('PgBouncer in transaction mode, %s', (_name, options, urlOf) => {
  let local: PgBouncer;
  beforeAll(async () => {
    local = await startPgBouncer(requireDatabaseUrl(), { ...options, defaultPoolSize: 10 });
  }, 60_000);
  afterAll(async () => {
    await local?.stop();
  });

  test("the user's report: 40 concurrent full lifecycles from two workers (20 client connections, 10 server connections) all complete", async () => {
    const db = await createTestDatabase();
    const stores: CheckpointStore[] = [];
    try {
      const url = urlOf(local.route(db.url));
      stores.push(await openCheckpointStore(url), await openCheckpointStore(url));

      const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => lifecycle(stores[i % 2]!, i)));

      const failures = results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error).message)] : []));
      expect(failures).toEqual([]);
      const delivered = await stores[1]!.listByStatus(['delivered'], { limit: 100 });
      expect(delivered).toHaveLength(40);
      expect(new Set(delivered.map((r) => (r.result as { payload?: { ticket?: number } } | null)?.payload?.ticket)).size).toBe(40);
      expect(Number((await withClient(db.url, (c) => c.query<{ n: string }>('SELECT count(*) AS n FROM ttc_conversation_entries'))).rows[0]!.n)).toBe(40);
    } finally {
      for (const store of stores) await store.close();
      await db.drop();
    }
  }, 120_000);

  test('eight stores opening one empty database at once migrate it exactly once, and a ninth opens it after (transaction-scoped advisory lock)', async () => {
    const db = await createTestDatabase();
    try {
      const url = urlOf(local.route(db.url));
      const stores = await Promise.all(Array.from({ length: 8 }, () => openCheckpointStore(url, { poolSize: 1 })));
      await Promise.all(stores.map((s) => s.close()));
      const ninth = await openCheckpointStore(url, { poolSize: 1, connectTimeoutMs: 5_000 });
      await ninth.close();

      const rows = await withClient(db.url, async (c) => (await c.query('SELECT version, name FROM ttc_schema_migrations ORDER BY version')).rows);
      expect(rows).toEqual([
        { version: 1, name: 'create ttc_checkpoints' },
        { version: 2, name: 'create ttc_conversation_entries' },
        { version: 3, name: 'add ttc_checkpoints.dedupe_key' },
        { version: 4, name: 'add ttc_checkpoints.dedupe_until' },
      ]);
      // No advisory lock left behind on any server connection.
      expect((await withClient(db.url, (c) => c.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"))).rowCount).toBe(0);
    } finally {
      await db.drop();
    }
  }, 60_000);
});

describe('pooler errors are refusals: nothing was written', () => {
  /** One server connection only, and a short wait for it: a client holding it in a transaction starves every other. */
  let narrow: PgBouncer;
  beforeAll(async () => {
    // ignore_startup_parameters = options so that a store which still sends a startup options pin
    // (as earlier development builds did) gets this far and shows how it classifies the refusal.
    narrow = await startPgBouncer(requireDatabaseUrl(), { defaultPoolSize: 1, ignoreStartupParameters: 'options', settings: { query_wait_timeout: 2 } });
  }, 60_000);
  afterAll(async () => {
    await narrow?.stop();
  });

  test('a statement PgBouncer refuses (FATAL 08P01 query_wait_timeout) is STORE_UNAVAILABLE naming the pooler and the SQLSTATE, never STORE_OUTCOME_UNKNOWN; nothing was written, and the same calls succeed after', async () => {
    const db = await createTestDatabase();
    const url = narrow.route(db.url);
    const blocker = new Client({ connectionString: url });
    blocker.on('error', () => undefined);
    const store = await openCheckpointStore(url, { poolSize: 2 });
    try {
      const binding = makeBinding();
      const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: AT }))).record;
      const claim = claimExecution(fresh, { attemptId: 'a1', at: AT });
      const absent = makeBinding();
      await blocker.connect();
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1'); // holds the pool's only server connection

      // Both wait in PgBouncer's queue at once (the store's pool has two connections) and time out together.
      const [cas, create] = await Promise.all([
        expectCode(store.compareAndSwap(0, claim.next, fresh), 'STORE_UNAVAILABLE'),
        expectCode(store.createIfAbsent(createCheckpoint(absent, { createdAt: AT })), 'STORE_UNAVAILABLE'),
      ]);
      await blocker.query('COMMIT');

      for (const error of [cas, create]) {
        expect(error.details.driverCode).toBe('08P01');
        expect(String(error.details.pooler)).toContain('query_wait_timeout');
        expect(error.message).toContain('nothing was written');
      }
      expect(await store.get(absent)).toBeNull();
      expect(await store.get(binding)).toEqual(fresh);
      expect(await store.compareAndSwap(0, claim.next, fresh)).toBe(true);
      expect((await store.createIfAbsent(createCheckpoint(absent, { createdAt: AT }))).created).toBe(true);
    } finally {
      await blocker.end().catch(() => undefined);
      await store.close();
      await db.drop();
    }
  }, 60_000);

  test("startup options (PgBouncer 1.18): refused with Debian's defaults, so a URL carrying them is STORE_UNAVAILABLE naming the fix (the store sends none of its own and opens); dropped with ignore_startup_parameters = options, so a search_path pin in them never reaches the server", async () => {
    const db = await createTestDatabase();
    try {
      const pinned = (url: string): string => withOptions(url, '-c search_path=pg_catalog');
      const refused = await expectCode(openCheckpointStore(pinned(bouncer.route(db.url)), { connectTimeoutMs: 5_000 }), 'STORE_UNAVAILABLE');
      expect(refused.details.driverCode).toBe('08P01');
      expect(String(refused.details.pooler)).toMatch(/unsupported startup parameter: options.*ignore_startup_parameters/);
      await (await openCheckpointStore(bouncer.route(db.url))).close();

      const dropped = await withClient(pinned(narrow.route(db.url)), async (c) => (await c.query<{ search_path: string }>('SHOW search_path')).rows[0]!.search_path);
      const direct = await withClient(pinned(db.url), async (c) => (await c.query<{ search_path: string }>('SHOW search_path')).rows[0]!.search_path);
      expect([dropped, direct]).toEqual(['"$user", public', 'pg_catalog']);
    } finally {
      await db.drop();
    }
  }, 60_000);

  test('the errors named statements get through a transaction pooler, as the pg driver reports them (42P05, 26000), are refusals naming the pooler', async () => {
    const db = await createTestDatabase();
    const url = narrow.route(db.url);
    const a = new Client({ connectionString: url });
    const b = new Client({ connectionString: url });
    for (const c of [a, b]) c.on('error', () => undefined);
    try {
      await a.connect();
      await b.connect();
      // Both clients share the one server connection: b's statement of a's name collides.
      await a.query({ name: 'ttc_insert', text: 'SELECT 1' });
      const duplicate = await b.query({ name: 'ttc_insert', text: 'SELECT 2' }).then(
        () => null,
        (error: unknown) => error,
      );
      // b prepared its own; a DEALLOCATE on the shared server connection removes it behind b's back.
      await b.query({ name: 'ttc_cas', text: 'SELECT 3' });
      await a.query('DEALLOCATE ALL');
      const missing = await b.query({ name: 'ttc_cas', text: 'SELECT 3' }).then(
        () => null,
        (error: unknown) => error,
      );

      expect(duplicate).toMatchObject({ code: '42P05', severity: 'ERROR' });
      expect(missing).toMatchObject({ code: '26000', severity: 'ERROR' });
      for (const error of [duplicate, missing]) {
        const failure = classifyPgError(error);
        expect(failure.kind).toBe('refused');
        expect(failure.pooler).toMatch(/transaction-mode connection pooler/);
      }
    } finally {
      await a.end().catch(() => undefined);
      await b.end().catch(() => undefined);
      await db.drop();
    }
  }, 60_000);
});

test('a lost connection through the pooler is still settled by re-reading: the PostgreSQL backend running a CAS is terminated while it waits for a row lock; the re-sent conditional UPDATE wins (true)', async () => {
  const db = await createTestDatabase();
  const store = await openCheckpointStore(bouncer.route(db.url));
  const blocker = new Client({ connectionString: db.url });
  const monitor = new Client({ connectionString: db.url });
  try {
    await blocker.connect();
    await monitor.connect();
    const binding = makeBinding();
    const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: AT }))).record;
    const claim = claimExecution(fresh, { attemptId: 'a1', at: AT });
    const blockedUpdate = async (exclude: number[]): Promise<number> => {
      for (let i = 0; i < 400; i += 1) {
        const { rows } = await monitor.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE %ttc_checkpoints%' AND datname = current_database()",
        );
        const found = rows.find((r) => !exclude.includes(r.pid));
        if (found !== undefined) return found.pid;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('the store never blocked on the row lock');
    };
    await blocker.query('BEGIN');
    await blocker.query('SELECT 1 FROM ttc_checkpoints WHERE key = $1 FOR UPDATE', [checkpointKey(binding)]);
    const cas = store.compareAndSwap(0, claim.next, fresh);
    cas.catch(() => undefined);
    const pid = await blockedUpdate([]);
    await monitor.query('SELECT pg_terminate_backend($1)', [pid]);
    await blockedUpdate([pid]); // re-read through the pooler, and the same conditional UPDATE re-sent
    await blocker.query('COMMIT');

    expect(await cas).toBe(true);
    expect(await store.get(binding)).toEqual(claim.next);
  } finally {
    await blocker.end().catch(() => undefined);
    await monitor.end().catch(() => undefined);
    await store.close();
    await db.drop();
  }
}, 60_000);

describe.each<[string, (url: string) => string]>([
  ['through PgBouncer', (url) => bouncer.route(url)],
  ['directly', (url) => url],
])('no statement depends on the search_path, %s', (_name, route) => {
  beforeAll(async () => {
    await withClient(requireDatabaseUrl(), async (c) => {
      await c.query(`DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${APP}') THEN CREATE ROLE ${APP} LOGIN; END IF; END $$`);
      await c.query(`DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${MALLORY}') THEN CREATE ROLE ${MALLORY} LOGIN; END IF; END $$`);
    });
  });

  test("a co-tenant's public.convert_to(text, text) and = (text, text), first in the role's search_path, are never called", async () => {
    const db = await createTestDatabase();
    const urlAs = (url: string, role: string): string => {
      const u = new URL(url);
      u.username = role;
      return u.toString();
    };
    const appUrl = urlAs(route(db.url), APP);
    try {
      await withClient(db.url, async (c) => {
        await c.query(`ALTER DATABASE ${db.name} OWNER TO ${APP}`);
        await c.query(`GRANT CREATE ON SCHEMA public TO ${MALLORY}`); // as PostgreSQL 14 and older grant it to PUBLIC
        // A DBA's setting the old startup pin overrode, and which a pooler's server connections all carry.
        await c.query(`ALTER ROLE ${APP} IN DATABASE ${db.name} SET search_path = public, pg_catalog`);
      });
      // The store creates its tables before the co-tenant's objects exist (a migration refuses them: test/security).
      await (await openCheckpointStore(appUrl)).close();
      await withClient(urlAs(db.url, MALLORY), async (c) => {
        await c.query(`CREATE FUNCTION public.convert_to(text, text) RETURNS bytea LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow convert_to called'; END $$`);
        await c.query(`CREATE FUNCTION public.shadow_eq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow = called'; END $$`);
        await c.query('CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.shadow_eq)');
        await c.query(`GRANT EXECUTE ON FUNCTION public.convert_to(text, text), public.shadow_eq(text, text) TO ${APP}`);
      });
      // What unqualified names resolve to for the store's role: the shadows.
      await expect(withClient(appUrl, (c) => c.query("SELECT encode(sha256(convert_to('x', 'UTF8')), 'hex')"))).rejects.toThrow('shadow convert_to called');
      await expect(withClient(appUrl, (c) => c.query("SELECT 1 WHERE 'a'::text = $1", ['a']))).rejects.toThrow('shadow = called');

      const store = await openCheckpointStore(appUrl);
      try {
        const done = await lifecycle(store, 1);
        const again = await store.createIfAbsent(createCheckpoint(done.binding, { createdAt: AT }));
        expect(again).toEqual({ created: false, record: done });
        expect(await store.get(done.binding)).toEqual(done);
        expect(await store.getByCall(done.binding.namespace, done.binding.callId)).toEqual(done);
        expect(await store.listByStatus(['delivered'], { olderThan: '2031-01-01T00:00:00.000Z' })).toEqual([done]);
        expect(await store.listQuarantined()).toEqual([]);
        expect(await store.getConversationEntries(`log-${done.binding.callId}`, [`r/${done.binding.callId}`])).toEqual([{ ticket: 1 }]);
        expect(await store.prune({ olderThan: '2031-01-01T00:00:00.000Z', conversationsOlderThan: '2999-01-01T00:00:00.000Z' })).toBe(2);
        expect(await store.get(done.binding)).toBeNull();
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  }, 60_000);

  afterAll(async () => {
    await withClient(requireDatabaseUrl(), async (c) => {
      await c.query(`DROP ROLE IF EXISTS ${MALLORY}`);
      await c.query(`DROP ROLE IF EXISTS ${APP}`);
    }).catch(() => undefined);
  });
});
