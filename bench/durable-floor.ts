/**
 * The physical floor of one durable write on this machine, measured with the drivers alone (no
 * store code): one SQLite commit of a one-row insert in its own transaction on a file with the
 * store's settings (WAL, synchronous = FULL: every commit fsyncs the WAL), and one PostgreSQL
 * single-row INSERT in autocommit (one round trip; the server fsyncs its WAL before it answers).
 * A fresh fenced call needs at least two such writes (the claim before the effect, the result
 * after it), so 2 × this floor is the least store time a fresh call can take.
 */
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type { Client as PgClient } from 'pg';

/** Bytes of the body column of a floor row (about the size of a small checkpoint row). */
export const FLOOR_ROW_BYTES = 1_000;

/** One durable-write sampler: `sample(n)` performs n writes, one at a time, and returns their durations in ms. */
export interface FloorSampler {
  readonly label: string;
  sample(n: number): Promise<number[]>;
  close(): Promise<void>;
}

/** Runs `once` `count` times, one at a time, and returns each run's duration in ms; `between` runs after each, outside the timing. */
export async function timeEach(count: number, once: () => unknown, between?: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    await once();
    out.push(performance.now() - started);
    await between?.();
  }
  return out;
}

/** Opens `floor.db` in `dir` with the store's settings: WAL, synchronous = FULL (every commit fsyncs the WAL). */
export function openFloorDatabase(dir: string): BetterSqlite3.Database {
  const Database = require('better-sqlite3') as typeof BetterSqlite3;
  const db = new Database(join(dir, 'floor.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

/** A SQLite file `floor.db` in `dir` with the store's settings. */
export function sqliteFloor(dir: string): FloorSampler {
  const db = openFloorDatabase(dir);
  db.exec('CREATE TABLE IF NOT EXISTS floor (k TEXT PRIMARY KEY, body TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO floor (k, body) VALUES (?, ?)');
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const body = 'x'.repeat(FLOOR_ROW_BYTES);
  let n = 0;
  return {
    label: 'SQLite: one-row INSERT, own transaction, WAL + synchronous=FULL',
    sample: (count) =>
      timeEach(
        count,
        () => {
          begin.run();
          insert.run(`k${n++}`, body);
          commit.run();
        },
        // Yield between commits, as the event loop would between calls.
        () => new Promise<void>((r) => setImmediate(r)),
      ),
    async close() {
      db.close();
    },
  };
}

/** A table `ttc_bench_floor` in the database at `url`, written through one `pg` client. */
export async function postgresFloor(url: string): Promise<FloorSampler> {
  const pg = require('pg') as typeof import('pg');
  const client: PgClient = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('CREATE TABLE IF NOT EXISTS ttc_bench_floor (k text PRIMARY KEY, body text NOT NULL)');
  const settings = await client.query<{ name: string; setting: string }>("SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method')");
  const described = settings.rows.map((r) => `${r.name}=${r.setting}`).join(', ');
  const body = 'x'.repeat(FLOOR_ROW_BYTES);
  let n = 0;
  const prefix = `${process.pid}-${Date.now()}-`;
  return {
    label: `PostgreSQL: one-row INSERT, autocommit (${described})`,
    sample: (count) => timeEach(count, () => client.query('INSERT INTO ttc_bench_floor (k, body) VALUES ($1, $2)', [`${prefix}${n++}`, body])),
    async close() {
      await client.query('DROP TABLE IF EXISTS ttc_bench_floor').catch(() => undefined);
      await client.end();
    },
  };
}

/**
 * A message to a worker thread and back, the way the SQLite store sends a request to its thread
 * (`src/stores/sqlite-thread.ts`: sent at the end of an event-loop turn, answered at the end of
 * one of the thread's): the least a request through the thread adds to the write itself.
 */
export function threadRoundTrip(): FloorSampler {
  const { Worker } = require('node:worker_threads') as typeof import('node:worker_threads');
  const worker = new Worker("require('node:worker_threads').parentPort.on('message', (m) => setImmediate(() => require('node:worker_threads').parentPort.postMessage(m)));", {
    eval: true,
  });
  const request = [{ id: 1, op: 'get', key: `ck1-${'0'.repeat(64)}` }];
  const once = (): Promise<void> =>
    new Promise<void>((resolve) => {
      worker.once('message', () => resolve());
      setImmediate(() => worker.postMessage(request));
    });
  return {
    label: 'a message to a worker thread and back (the hop of the SQLite store, no database)',
    sample: (count) => timeEach(count, once),
    async close() {
      await worker.terminate();
    },
  };
}
