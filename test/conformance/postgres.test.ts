/**
 * The conformance suite against a real PostgreSQL server (the shared one jest's global setup
 * started, or DATABASE_URL), one fresh database per test; plus what only PostgreSQL has:
 * migrations under concurrent openers, a server that is down, and writes whose connection is
 * lost after sending (settled by re-reading, never assumed).
 */
import { Client } from 'pg';
import { createCheckpoint } from '../../src/checkpoint/record';
import { completeAndDeliver, createClaimed } from '../../src/checkpoint/compose';
import { claimExecution } from '../../src/checkpoint/transitions';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { checkpointKey } from '../../src/stores/checkpoint-key';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { RowCodec } from '../../src/stores/row-codec';
import { createTestDatabase, freshPostgresTarget, startPostgres, withClient, type PostgresServer } from '../helpers/postgres';
import { describeStoreConformance, driveTo, expectCode, makeBinding, type Outage, type StoreTarget } from './store-conformance';

const CREATED_AT = '2030-01-01T00:00:00.000Z';

function freshTarget(): Promise<StoreTarget> {
  return freshPostgresTarget();
}

/** A private server for outages, shared by the tests that stop it (started on first use). */
let privateServer: PostgresServer | undefined;
async function outageServer(): Promise<PostgresServer> {
  privateServer ??= await startPostgres();
  await privateServer.resume();
  return privateServer;
}
afterAll(async () => {
  await privateServer?.stop();
});

async function serverOutage(): Promise<Outage> {
  const server = await outageServer();
  const database = await createTestDatabase(server.url);
  const store = await openCheckpointStore(database.url, { connectTimeoutMs: 2_000 });
  return {
    store,
    begin: () => server.halt(),
    end: () => server.resume(),
    async dispose() {
      await store.close();
      await server.resume();
      await database.drop();
    },
  };
}

describeStoreConformance('PostgreSQL', { fresh: freshTarget, outage: serverOutage });

describe('PostgreSQL specifics', () => {
  let target: StoreTarget;
  let store: CheckpointStore;

  beforeEach(async () => {
    target = await freshTarget();
    store = await target.open();
  });

  afterEach(async () => {
    await target.dispose();
  });

  test('eight stores opening one empty database at once migrate it exactly once (advisory lock)', async () => {
    const fresh = await createTestDatabase();
    try {
      const stores = await Promise.all(Array.from({ length: 8 }, () => openCheckpointStore(fresh.url, { poolSize: 1 })));
      await Promise.all(stores.map((s) => s.close()));

      const rows = await withClient(fresh.url, async (c) => (await c.query('SELECT version, name FROM ttc_schema_migrations ORDER BY version')).rows);
      expect(rows).toEqual([
        { version: 1, name: 'create ttc_checkpoints' },
        { version: 2, name: 'create ttc_conversation_entries' },
        { version: 3, name: 'add ttc_checkpoints.dedupe_key' },
        { version: 4, name: 'add ttc_checkpoints.dedupe_until' },
      ]);
    } finally {
      await fresh.drop();
    }
  });

  test('a database at schema version 2 is migrated on open: its records stay readable and new claims may carry a dedupe key and window', async () => {
    const older = await openCheckpointStore(target.url);
    const kept = await driveTo(older, makeBinding('kept'), 'delivered', 0);
    await older.close();
    // As the code before dedupe keys left it: version 2, no dedupe_key or dedupe_until column.
    await withClient(target.url, (c) =>
      c.query(
        'DROP INDEX ttc_checkpoints_dedupe_key; ALTER TABLE ttc_checkpoints DROP COLUMN dedupe_key, DROP COLUMN dedupe_until; DELETE FROM ttc_schema_migrations WHERE version >= 3',
      ),
    );

    const store = await openCheckpointStore(target.url);
    const first = await store.createIfAbsent(createCheckpoint(makeBinding('a'), { createdAt: '2030-01-01T00:00:00.000Z' }), { dedupeKey: 'same' });
    const second = await store.createIfAbsent(createCheckpoint(makeBinding('b'), { createdAt: '2030-01-01T00:00:00.000Z' }), { dedupeKey: 'same' });
    const delivered = completeAndDeliver(createClaimed(makeBinding('c'), { attemptId: 'c-1', at: '2030-01-01T00:00:00.000Z' }), {
      attemptId: 'c-1',
      deliveryId: 'c-d',
      at: '2030-01-01T00:00:00.000Z',
      result: { ok: true },
    }).next;
    const windowed = await store.createIfAbsent(delivered, { dedupeKey: 'window', dedupeUntil: '2030-01-01T00:00:01.000Z' });
    const takeover = await store.createIfAbsent(createCheckpoint(makeBinding('d'), { createdAt: '2030-01-01T00:00:01.000Z' }), { dedupeKey: 'window' });

    expect(await store.get(kept.binding)).toEqual(kept);
    expect([first.created, second.created]).toEqual([true, false]);
    expect(second.record).toEqual(first.record);
    expect([windowed.created, takeover.created]).toEqual([true, true]);
    await store.close();
  });

  test('a database migrated by newer code is refused: UNSUPPORTED_SCHEMA, nothing changed', async () => {
    await withClient(target.url, (c) => c.query("INSERT INTO ttc_schema_migrations (version, name) VALUES (9, 'from the future')"));

    const error = await expectCode(openCheckpointStore(target.url), 'UNSUPPORTED_SCHEMA');

    expect(error.details.actual).toBe(9);
  });

  test('the body column is text, so a stored row stays byte-exact (duplicate keys survive to be detected)', async () => {
    const type = await withClient(
      target.url,
      async (c) => (await c.query("SELECT data_type FROM information_schema.columns WHERE table_name = 'ttc_checkpoints' AND column_name = 'body'")).rows[0],
    );

    expect(type).toEqual({ data_type: 'text' });
  });

  test('while the server is down every call fails closed: STORE_UNAVAILABLE, reads included; it recovers after', async () => {
    const outage = await serverOutage();
    try {
      const binding = makeBinding();
      const record = (await outage.store.createIfAbsent(createCheckpoint(binding, { createdAt: CREATED_AT }))).record;
      await outage.begin();

      const read = await expectCode(outage.store.get(binding), 'STORE_UNAVAILABLE');
      await expectCode(outage.store.listByStatus(['ready']), 'STORE_UNAVAILABLE');
      await expectCode(outage.store.prune({ olderThan: CREATED_AT }), 'STORE_UNAVAILABLE');
      await outage.end();

      expect(read.message).toContain('nothing may be claimed or executed');
      expect(read.details.driverCode).toBe('ECONNREFUSED');
      expect((read as unknown as { cause: { code: string } }).cause.code).toBe('ECONNREFUSED');
      expect(await outage.store.get(binding)).toEqual(record);
    } finally {
      await outage.dispose();
    }
  }, 60_000);

  test('opening a server that is not running fails: STORE_UNAVAILABLE with the password masked', async () => {
    const server = await outageServer();
    await server.halt();
    try {
      const url = `postgres://postgres:hunter2@127.0.0.1:${server.port}/postgres`;

      const error = await expectCode(openCheckpointStore(url, { connectTimeoutMs: 2_000 }), 'STORE_UNAVAILABLE');

      expect(error.message).toContain(`postgres://postgres:***@127.0.0.1:${server.port}/postgres`);
      expect(error.message).not.toContain('hunter2');
      expect(error.details.driverCode).toBe('ECONNREFUSED');
    } finally {
      await server.resume();
    }
  }, 60_000);

  describe('a compare-and-swap whose connection is lost after sending is settled by re-reading', () => {
    /**
     * Holds the row lock in another transaction so the store's UPDATE waits on the server, then
     * terminates the store's backend: the store has sent its statement and loses the connection
     * without an answer. `whileBlocked` runs with the lock still held (the store's re-sent UPDATE
     * waits behind it), then the blocker commits.
     */
    async function loseConnectionDuringCas(
      expectedRevision: number,
      next: CheckpointRecord,
      whileBlocked: (blocker: Client) => Promise<void>,
      expected?: CheckpointRecord,
    ): Promise<boolean> {
      const key = checkpointKey(next.binding);
      const blocker = new Client({ connectionString: target.url });
      // pg_stat_activity is a per-transaction snapshot: watch it from outside the blocker's transaction.
      const monitor = new Client({ connectionString: target.url });
      await blocker.connect();
      await monitor.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query('SELECT 1 FROM ttc_checkpoints WHERE key = $1 FOR UPDATE', [key]);
        const cas = store.compareAndSwap(expectedRevision, next, expected);
        cas.catch(() => undefined); // awaited below; keep an early rejection from being reported as unhandled
        const pid = await waitForBlockedUpdate(monitor, []);
        await monitor.query('SELECT pg_terminate_backend($1)', [pid]);
        await waitForBlockedUpdate(monitor, [pid]); // the store re-read the row and re-sent its UPDATE
        await whileBlocked(blocker);
        await blocker.query('COMMIT');
        return await cas;
      } finally {
        await blocker.end();
        await monitor.end();
      }
    }

    async function waitForBlockedUpdate(monitor: Client, exclude: number[]): Promise<number> {
      for (let i = 0; i < 400; i += 1) {
        const { rows } = await monitor.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE %ttc_checkpoints%' AND datname = current_database()",
        );
        const blocked = rows.find((r) => !exclude.includes(r.pid));
        if (blocked !== undefined) return blocked.pid;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('the store never blocked on the row lock');
    }

    test('the row is still at the expected revision: the same conditional UPDATE is re-sent and wins (true)', async () => {
      const binding = makeBinding();
      const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: CREATED_AT }))).record;
      const claim = claimExecution(fresh, { attemptId: 'a1', at: CREATED_AT });

      const outcome = await loseConnectionDuringCas(0, claim.next, async () => undefined);

      expect(outcome).toBe(true);
      expect(await store.get(binding)).toEqual(claim.next);
    });

    test('with expected: the row is still at the expected revision and body: the re-sent UPDATE wins (true)', async () => {
      const binding = makeBinding();
      const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: CREATED_AT }))).record;
      const claim = claimExecution(fresh, { attemptId: 'a1', at: CREATED_AT });

      const outcome = await loseConnectionDuringCas(0, claim.next, async () => undefined, fresh);

      expect(outcome).toBe(true);
      expect(await store.get(binding)).toEqual(claim.next);
    });

    test('with expected: the body was damaged meanwhile, revision column intact: false, and the damaged row is not changed', async () => {
      const binding = makeBinding();
      const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: CREATED_AT }))).record;
      const claim = claimExecution(fresh, { attemptId: 'a1', at: CREATED_AT });
      const key = checkpointKey(binding);

      const outcome = await loseConnectionDuringCas(
        0,
        claim.next,
        async (blocker) => {
          await blocker.query("UPDATE ttc_checkpoints SET body = 'damaged' || body WHERE key = $1", [key]);
        },
        fresh,
      );

      expect(outcome).toBe(false);
      const raw = (await target.raw.row(key))!;
      expect(raw.revision).toBe(0);
      expect(raw.body.startsWith('damaged{')).toBe(true);
      await expectCode(store.get(binding), 'INVALID_CHECKPOINT');
    });

    test('another writer moved the record on meanwhile: false, and its record stays', async () => {
      const binding = makeBinding();
      const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: CREATED_AT }))).record;
      const mine = claimExecution(fresh, { attemptId: 'mine', at: CREATED_AT });
      const theirs = claimExecution(fresh, { attemptId: 'theirs', at: CREATED_AT });
      const row = new RowCodec().encode(theirs.next);

      const outcome = await loseConnectionDuringCas(0, mine.next, async (blocker) => {
        await blocker.query('UPDATE ttc_checkpoints SET status = $2, revision = $3, updated_at = $4, body = $5 WHERE key = $1', [
          row.key,
          row.status,
          row.revision,
          row.updatedAt,
          row.body,
        ]);
      });

      expect(outcome).toBe(false);
      expect(await store.get(binding)).toEqual(theirs.next);
    });

    test('the lost statement had in fact been applied (the stored record equals next): true', async () => {
      const binding = makeBinding();
      const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: CREATED_AT }))).record;
      const claim = claimExecution(fresh, { attemptId: 'a1', at: CREATED_AT });
      const row = new RowCodec().encode(claim.next);

      const outcome = await loseConnectionDuringCas(0, claim.next, async (blocker) => {
        await blocker.query('UPDATE ttc_checkpoints SET status = $2, revision = $3, updated_at = $4, body = $5 WHERE key = $1', [
          row.key,
          row.status,
          row.revision,
          row.updatedAt,
          row.body,
        ]);
      });

      expect(outcome).toBe(true);
      expect(await store.get(binding)).toEqual(claim.next);
    });

    test('the record moved two revisions on: the outcome cannot be known, STORE_OUTCOME_UNKNOWN', async () => {
      const binding = makeBinding();
      const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: CREATED_AT }))).record;
      const mine = claimExecution(fresh, { attemptId: 'mine', at: CREATED_AT });
      const { completeExecution } = await import('../../src/checkpoint/transitions');
      const done = completeExecution(mine.next, { attemptId: 'mine', at: CREATED_AT, result: { ok: true } });
      const row = new RowCodec().encode(done.next);

      const outcome = loseConnectionDuringCas(0, mine.next, async (blocker) => {
        await blocker.query('UPDATE ttc_checkpoints SET status = $2, revision = $3, updated_at = $4, body = $5 WHERE key = $1', [
          row.key,
          row.status,
          row.revision,
          row.updatedAt,
          row.body,
        ]);
      });

      const error = await expectCode(outcome, 'STORE_OUTCOME_UNKNOWN');
      expect(error.details.key).toBe(checkpointKey(binding));
      expect(await store.get(binding)).toEqual(done.next);
    });
  });
});
