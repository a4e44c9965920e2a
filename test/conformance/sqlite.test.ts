/**
 * The conformance suite against real SQLite files (WAL, synchronous = FULL), plus what only
 * SQLite has: file pragmas, `sqlite::memory:`, opening where no file can be, and the file's
 * schema version.
 */
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createCheckpoint } from '../../src/checkpoint/record';
import { completeAndDeliver, createClaimed } from '../../src/checkpoint/compose';
import type { CheckpointStore, CheckpointStoreOptions } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { SqliteCheckpointStore } from '../../src/stores/sqlite-store';
import { describeStoreConformance, driveTo, expectCode, makeBinding, type Outage, type RawRow, type StoreTarget } from './store-conformance';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** This process's umask (read by setting it and putting it back). */
function currentUmask(): number {
  const mask = process.umask(0o022);
  process.umask(mask);
  return mask;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ttc-sqlite-'));
  dirs.push(dir);
  return dir;
}

async function freshTarget(options: CheckpointStoreOptions = {}): Promise<StoreTarget> {
  const file = join(tempDir(), 'checkpoints.db');
  const url = `sqlite:${file}`;
  const stores: CheckpointStore[] = [];
  let raw: Database.Database | undefined;
  const db = (): Database.Database => (raw ??= new Database(file, { timeout: 10_000 }));
  return {
    url,
    async open(extra: CheckpointStoreOptions = {}) {
      const store = await openCheckpointStore(url, { ...options, ...extra });
      stores.push(store);
      return store;
    },
    raw: {
      async row(key) {
        const row = db().prepare('SELECT key, status, revision, updated_at AS updatedAt, body FROM ttc_checkpoints WHERE key = ?').get(key) as RawRow | undefined;
        return row ?? null;
      },
      async update(key, columns) {
        const sets = Object.keys(columns).map((c) => `${c} = @${c}`);
        db()
          .prepare(`UPDATE ttc_checkpoints SET ${sets.join(', ')} WHERE key = @key`)
          .run({ ...columns, key });
      },
      async count() {
        return (db().prepare('SELECT count(*) AS n FROM ttc_checkpoints').get() as { n: number }).n;
      },
      async integrity() {
        return db().pragma('integrity_check', { simple: true }) as string;
      },
      async entryBody(logId, key) {
        const row = db().prepare('SELECT body FROM ttc_conversation_entries WHERE log_id = ? AND entry_key = ?').get(logId, key) as { body: string } | undefined;
        return row?.body ?? null;
      },
      async updateEntry(logId, key, columns) {
        const sets = Object.entries({ body: columns.body, created_at: columns.createdAt }).filter(([, v]) => v !== undefined);
        db()
          .prepare(`UPDATE ttc_conversation_entries SET ${sets.map(([c]) => `${c} = @${c}`).join(', ')} WHERE log_id = @logId AND entry_key = @key`)
          .run({ ...Object.fromEntries(sets), logId, key });
      },
      async entryCount() {
        return (db().prepare('SELECT count(*) AS n FROM ttc_conversation_entries').get() as { n: number }).n;
      },
    },
    async dispose() {
      for (const store of stores) await store.close();
      raw?.close();
    },
  };
}

async function lockOutage(): Promise<Outage> {
  const file = join(tempDir(), 'locked.db');
  const store = await openCheckpointStore(`sqlite:${file}`, { busyTimeoutMs: 200 });
  const other = new Database(file);
  return {
    store,
    // Another process's long write transaction: the store waits busyTimeoutMs, then fails closed.
    async begin() {
      other.exec('BEGIN EXCLUSIVE');
    },
    async end() {
      other.exec('ROLLBACK');
    },
    async dispose() {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await store.close();
    },
  };
}

describeStoreConformance('SQLite', { fresh: () => freshTarget(), outage: lockOutage });

describe('SQLite specifics', () => {
  test('a file store uses WAL, synchronous = FULL and the busy timeout', async () => {
    const dir = tempDir();
    const store = await SqliteCheckpointStore.open(join(dir, 'settings.db'), { busyTimeoutMs: 1_234 });

    // As the store's own connection (on its worker thread) reports them.
    expect(await store.settings()).toEqual({ journalMode: 'wal', synchronous: 2, busyTimeoutMs: 1_234, userVersion: 4 });
    await store.close();
  });

  test('sqlite::memory: is a private database that works like a file', async () => {
    const store = await openCheckpointStore('sqlite::memory:');
    const binding = makeBinding();
    const record = createCheckpoint(binding, { createdAt: '2030-01-01T00:00:00.000Z' });

    expect(await store.createIfAbsent(record)).toEqual({ created: true, record });
    expect(await store.get(binding)).toEqual(record);
    await store.close();
  });

  test('a path whose directories do not exist: they are created (owner only) and the store keeps records', async () => {
    const base = tempDir();
    const path = join(base, 'missing', 'dir', 'checkpoints.db');

    const store = await openCheckpointStore(`sqlite:${path}`);
    const binding = makeBinding();
    const record = createCheckpoint(binding, { createdAt: '2030-01-01T00:00:00.000Z' });
    expect(await store.createIfAbsent(record)).toEqual({ created: true, record });
    await store.close();

    expect(statSync(join(base, 'missing')).mode & 0o777).toBe(0o700 & ~currentUmask());
    expect(statSync(join(base, 'missing', 'dir')).mode & 0o777).toBe(0o700 & ~currentUmask());
    const again = await openCheckpointStore(`sqlite:${path}`);
    expect(await again.get(binding)).toEqual(record);
    await again.close();
  });

  test('a relative path such as sqlite:.data/checkpoints.db creates .data in the working directory', async () => {
    const base = tempDir();
    const cwd = process.cwd();
    process.chdir(base);
    try {
      const store = await openCheckpointStore('sqlite:.data/checkpoints.db');
      await store.close();
    } finally {
      process.chdir(cwd);
    }

    expect(statSync(join(base, '.data', 'checkpoints.db')).isFile()).toBe(true);
  });

  test('a path whose directory cannot be created (a parent is a file): STORE_UNAVAILABLE naming the path and the directory', async () => {
    const base = tempDir();
    writeFileSync(join(base, 'plain-file'), 'not a directory');
    const path = join(base, 'plain-file', 'dir', 'checkpoints.db');

    const error = await expectCode(openCheckpointStore(`sqlite:${path}`), 'STORE_UNAVAILABLE');

    expect(error.message).toContain(path);
    expect(error.message).toContain(`its directory ${join(base, 'plain-file', 'dir')} could not be created`);
    expect(error.details.driverCode).toBe('ENOTDIR');
    expect((error as unknown as { cause: { code: string } }).cause.code).toBe('ENOTDIR');
    expect(existsSync(join(base, 'plain-file', 'dir'))).toBe(false);
  });

  test('a path that is a directory cannot be opened: STORE_UNAVAILABLE with SQLITE_CANTOPEN as cause', async () => {
    const path = tempDir();

    const error = await expectCode(openCheckpointStore(`sqlite:${path}`), 'STORE_UNAVAILABLE');

    expect(error.details.driverCode).toBe('SQLITE_CANTOPEN');
    expect((error as unknown as { cause: { code: string } }).cause.code).toBe('SQLITE_CANTOPEN');
  });

  test('a file that is not a database cannot be opened: STORE_UNAVAILABLE', async () => {
    const path = join(tempDir(), 'not-a-db.db');
    writeFileSync(path, 'this is a text file, not SQLite'.repeat(100));

    const error = await expectCode(openCheckpointStore(`sqlite:${path}`), 'STORE_UNAVAILABLE');

    expect(error.details.driverCode).toBe('SQLITE_NOTADB');
  });

  test('a file migrated by newer code is refused: UNSUPPORTED_SCHEMA, file untouched', async () => {
    const path = join(tempDir(), 'newer.db');
    const db = new Database(path);
    db.pragma('user_version = 7');
    db.close();

    const error = await expectCode(openCheckpointStore(`sqlite:${path}`), 'UNSUPPORTED_SCHEMA');

    expect(error.details.actual).toBe(7);
    const after = new Database(path);
    expect(after.pragma('user_version', { simple: true })).toBe(7);
    expect(after.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'ttc_checkpoints'").get()).toEqual({ n: 0 });
    after.close();
  });

  test('a file at schema version 2 is migrated on open: its records stay readable and new claims may carry a dedupe key and window', async () => {
    const path = join(tempDir(), 'version-2.db');
    const older = await openCheckpointStore(`sqlite:${path}`);
    const kept = await driveTo(older, makeBinding('kept'), 'delivered', 0);
    await older.close();
    // As the code before dedupe keys left it: version 2, no dedupe_key or dedupe_until column.
    const db = new Database(path);
    db.exec('DROP INDEX ttc_checkpoints_dedupe_key; ALTER TABLE ttc_checkpoints DROP COLUMN dedupe_key; ALTER TABLE ttc_checkpoints DROP COLUMN dedupe_until');
    db.pragma('user_version = 2');
    db.close();

    const store = await openCheckpointStore(`sqlite:${path}`);
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
    expect((await (store as SqliteCheckpointStore).settings()).userVersion).toBe(4);
    await store.close();
  });

  test('while another connection holds the write lock, reads still work (WAL) and writes fail closed', async () => {
    const outage = await lockOutage();
    const binding = makeBinding();
    const record = await driveTo(outage.store, binding, 'delivered', 0);
    const ready = makeBinding();
    await outage.store.createIfAbsent(createCheckpoint(ready, { createdAt: '2030-01-01T00:00:00.000Z' }));
    await outage.begin();

    expect(await outage.store.get(binding)).toEqual(record);
    // prune reads and decodes its candidates without the lock; only its delete needs it.
    expect(await outage.store.prune({ olderThan: '2029-01-01T00:00:00.000Z' })).toBe(0);
    const error = await expectCode(outage.store.prune({ olderThan: '2031-01-01T00:00:00.000Z' }), 'STORE_UNAVAILABLE');

    expect(error.details.driverCode).toBe('SQLITE_BUSY');
    expect(error.message).toContain('busyTimeoutMs=200');
    await outage.end();
    expect(await outage.store.get(binding)).toEqual(record);
    await outage.dispose();
  });

  test('a closed store refuses calls: STORE_UNAVAILABLE', async () => {
    const store = await openCheckpointStore('sqlite::memory:');
    await store.close();
    await store.close();

    expect((await expectCode(store.get(makeBinding()), 'STORE_UNAVAILABLE')).details.reason).toBe('closed');
  });
});
