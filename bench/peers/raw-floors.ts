/**
 * The raw floor of each database, as bench:peers and bench:overhead measure it: two single-row
 * writes (insert, then update) with the driver alone for a fresh call, one read for a re-delivery;
 * and a floor with the protocol's own work added (`../protocol-work`). Kept apart from the peers'
 * contenders so a benchmark can use the floors without loading DBOS or Powertools.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { openFloorDatabase } from '../durable-floor';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { writeFreshCall } from '../fresh-call';
import { protocolFresh, protocolFreshRecords, protocolRedelivery, protocolRedeliveryBinding } from '../protocol-work';

/** The databases the contenders write to. */
export type DatabaseName = 'PostgreSQL' | 'SQLite' | 'Redis';

/** One contender: a fresh call (returns what re-delivers it) and its re-delivery. */
export interface Contender {
  readonly name: string;
  readonly database: DatabaseName;
  /** True for the raw floor of its database. */
  readonly floor: boolean;
  fresh(): Promise<string>;
  redeliver(id: string): Promise<void>;
  close(): Promise<void>;
}

/** Connections each contender keeps (sized for 16 clients). */
export const CONNECTIONS = 16;

/** The effect every contender records: a ticket, returned at once. */
export function effect(n: string): { ticket: string } {
  return { ticket: `T-${n}` };
}

/** PostgreSQL's floor on `url`: INSERT then UPDATE (autocommit each), one SELECT to re-deliver. */
export async function postgresFloor(url: string): Promise<Contender> {
  const pool = new Pool({ connectionString: url, max: CONNECTIONS });
  await pool.query('CREATE TABLE IF NOT EXISTS floor (id text PRIMARY KEY, body text NOT NULL)');
  return {
    name: 'raw floor (PostgreSQL)',
    database: 'PostgreSQL',
    floor: true,
    async fresh() {
      const id = randomUUID();
      await pool.query('INSERT INTO floor (id, body) VALUES ($1, $2)', [id, 'claimed']);
      await pool.query('UPDATE floor SET body = $2 WHERE id = $1', [id, JSON.stringify(effect(id))]);
      return id;
    },
    async redeliver(id) {
      if ((await pool.query('SELECT body FROM floor WHERE id = $1', [id])).rowCount !== 1) throw new Error('floor: no row');
    },
    close: () => pool.end(),
  };
}

/** SQLite's floor: a file in `dir` with the store's settings (WAL, synchronous = FULL); INSERT then UPDATE, one SELECT to re-deliver. */
export function sqliteFloor(dir: string): Contender & { writes: () => number; statements: () => number } {
  const db = openFloorDatabase(dir);
  db.exec('CREATE TABLE IF NOT EXISTS floor (id TEXT PRIMARY KEY, body TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO floor (id, body) VALUES (?, ?)');
  const update = db.prepare('UPDATE floor SET body = ? WHERE id = ?');
  const select = db.prepare('SELECT body FROM floor WHERE id = ?');
  let writes = 0;
  let statements = 0;
  return {
    name: 'raw floor (SQLite)',
    database: 'SQLite',
    floor: true,
    writes: () => writes,
    statements: () => statements,
    async fresh() {
      const id = randomUUID();
      insert.run(id, 'claimed');
      update.run(JSON.stringify(effect(id)), id);
      writes += 2;
      statements += 2;
      return id;
    },
    async redeliver(id) {
      statements += 1;
      if (select.get(id) === undefined) throw new Error('floor: no row');
    },
    async close() {
      db.close();
    },
  };
}

/**
 * `floor` with the fence's own work added (`../protocol-work`: no store, no encoding): per fresh
 * call the protocol's derivations and records, then the floor's two writes; per re-delivery its
 * derivations, then the floor's read. Where even this is under a ratio of the floor, the floor
 * stops that ratio.
 */
export function floorWithProtocol(floor: Contender): Contender {
  return {
    name: `${floor.name} + the protocol's work`,
    database: floor.database,
    floor: false,
    async fresh() {
      protocolFresh(randomUUID());
      return floor.fresh();
    },
    async redeliver(id) {
      protocolRedelivery(id);
      await floor.redeliver(id);
    },
    close: async () => undefined,
  };
}

/**
 * The fence's own store under the protocol's work, without the fence: per fresh call the
 * protocol's derivations and records (`../protocol-work`), then the store's claimed insert and
 * compare-and-swap of them; per re-delivery the derivations, then the store's read. Between the
 * floor plus the protocol's work and the fence, it shows what the store (row encoding and
 * checks, its connections or thread) costs apart from what the fence does around it.
 */
export function storeWithProtocol(database: DatabaseName, store: CheckpointStore): Contender {
  return {
    name: `the fence's store alone (${database}) + the protocol's work`,
    database,
    floor: false,
    async fresh() {
      const id = randomUUID();
      await writeFreshCall(store, protocolFreshRecords(id));
      return id;
    },
    async redeliver(id) {
      if ((await store.get(protocolRedeliveryBinding(id))) === null) throw new Error('store alone: no record');
    },
    close: async () => undefined,
  };
}
