/**
 * Side-store benchmark (`npm run bench:store`): call lifecycles per second for SQLite (a file
 * with crash-safe settings: WAL, synchronous = FULL) and PostgreSQL (fsync on), at 1, 4 and 16
 * concurrent clients in one process, plus durable writes per lifecycle: fsynced commits (SQLite:
 * the store's commit count; PostgreSQL: `pg_stat_wal.wal_sync`, read after the measured pool
 * has closed, since backends report it late).
 *
 * Two lifecycles (docs/protocol.md#cost):
 *  - `fresh call (2 writes)`, what the fence does for a fresh call now: insert the claimed record
 *    (`createClaimed`: create + claimExecution, revision 1), then one compare-and-swap of
 *    `completeAndDeliver` (completeExecution + claimDelivery + completeDelivery, revision 4),
 *    passing the record read as `expected`, as the fence does;
 *  - `5 writes (one per transition)`, for comparison: create → claim → complete → claim delivery →
 *    complete delivery, one write each.
 *
 * PostgreSQL: DATABASE_URL when set, else a private server started with
 * `test/helpers/postgres.ts`. Environment: BENCH_SECONDS (per row, default 3),
 * BENCH_SKIP_POSTGRES=1 to measure SQLite only, BENCH_SKIP_OLD=1 to skip the 5-write rows,
 * BENCH_MARKDOWN=1 to print the table as Markdown.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fingerprintInput } from '../src/checkpoint/digest';
import { createCheckpoint } from '../src/checkpoint/record';
import { claimDelivery, claimExecution, completeDelivery, completeExecution } from '../src/checkpoint/transitions';
import type { CheckpointStore, CheckpointStoreOptions } from '../src/stores/checkpoint-store';
import { openCheckpointStore } from '../src/stores/open-checkpoint-store';
import { createTestDatabase, startPostgres, withClient, type PostgresServer } from '../test/helpers/postgres';
import { freshCall } from './fresh-call';
import { printRunHeader, table, verdict } from './report';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CLIENTS = [1, 4, 16] as const;
const SKIP_OLD = process.env.BENCH_SKIP_OLD === '1';
const SEALED: CheckpointStoreOptions = { hmacKey: Buffer.alloc(32, 1), keyId: 'bench-seal', encryptionKey: Buffer.alloc(32, 2), encryptionKeyId: 'bench-enc' };

type Kind = 'fresh' | 'five';
const KINDS: Record<Kind, { label: string; writes: number; run: (store: CheckpointStore, client: number, n: number) => Promise<unknown> }> = {
  fresh: { label: 'fresh call (2 writes)', writes: 2, run: freshCall },
  five: { label: '5 writes (one per transition)', writes: 5, run: lifecycle },
};

/** The rows to measure per store: the fresh-call lifecycle at every client count and sealed + encrypted at 16; the old one at 1 and 16. */
const PLAN: ReadonlyArray<readonly [Kind, number, CheckpointStoreOptions, string]> = [
  ...CLIENTS.map((c) => ['fresh', c, {}, 'plain'] as const),
  ['fresh', 16, SEALED, 'sealed+encrypted'] as const,
  ...(SKIP_OLD ? [] : ([1, 16] as const).map((c) => ['five', c, {}, 'plain'] as const)),
];

interface Row {
  store: string;
  kind: Kind;
  clients: number;
  options: string;
  lifecycles: number;
  seconds: number;
  durableWrites: number;
}

/** The lifecycle of one write per transition, as the fence made it before composed writes: five writes (create, then four compare-and-swaps); throws if any compare-and-swap loses (nothing competes here). */
async function lifecycle(store: CheckpointStore, client: number, n: number): Promise<void> {
  const binding = {
    namespace: 'bench',
    callId: `c${client}-${n}-${process.hrtime.bigint()}`,
    toolName: 'create_ticket',
    toolRevision: '1',
    inputFingerprint: fingerprintInput({ client, n }),
  };
  const now = (): string => new Date().toISOString();
  const { record } = await store.createIfAbsent(createCheckpoint(binding, { createdAt: now() }));
  let t = claimExecution(record, { attemptId: `a${client}-${n}`, at: now() });
  for (const step of [
    (r: typeof record) => completeExecution(r, { attemptId: `a${client}-${n}`, at: now(), result: { ticket: `T-${n}`, ok: true } }),
    (r: typeof record) => claimDelivery(r, { deliveryId: `d${client}-${n}`, at: now() }),
    (r: typeof record) => completeDelivery(r, { deliveryId: `d${client}-${n}`, at: now() }),
    null,
  ]) {
    if (!(await store.compareAndSwap(t.expectedRevision, t.next))) throw new Error('a compare-and-swap lost with no competitor');
    if (step === null) break;
    t = step(t.next);
  }
}

/** Runs `clients` concurrent loops for `seconds`; returns lifecycles completed and the elapsed time. */
async function drive(store: CheckpointStore, kind: Kind, clients: number, seconds: number): Promise<{ lifecycles: number; seconds: number }> {
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(Math.round(seconds * 1e9));
  let lifecycles = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; process.hrtime.bigint() < deadline; n += 1) {
        await KINDS[kind].run(store, client, n);
        lifecycles += 1;
      }
    }),
  );
  return { lifecycles, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

async function benchSqlite(rows: Row[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ttc-bench-'));
  try {
    for (const [kind, clients, options, label] of PLAN) {
      const store = await openCheckpointStore(`sqlite:${join(dir, `bench-${kind}-${clients}-${label}.db`)}`, options);
      // The store's commit counter (SqliteCheckpointStore.stats), when this version of the store has one.
      const stats = (store as { stats?: () => { commits: number } }).stats;
      const commits = (): number => (typeof stats === 'function' ? stats.call(store).commits : Number.NaN);
      await drive(store, kind, clients, 0.3);
      const before = commits();
      const run = await drive(store, kind, clients, SECONDS);
      rows.push({ store: 'SQLite (file, WAL, synchronous=FULL)', kind, clients, options: label, ...run, durableWrites: (commits() - before) / run.lifecycles });
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchPostgres(rows: Row[]): Promise<void> {
  let server: PostgresServer | undefined;
  let base = process.env.DATABASE_URL;
  if (!base) {
    server = await startPostgres();
    base = server.url;
  }
  try {
    for (const [kind, clients, options, label] of PLAN) {
      const database = await createTestDatabase(base);
      // Backends report their WAL statistics late (when idle for a while, or at exit): warm up on
      // one pool, close it, and read pg_stat_wal only after the measured pool has closed too.
      const walSyncs = async (): Promise<number> => {
        await new Promise((r) => setTimeout(r, 500));
        return withClient(database.url, async (c) => Number((await c.query<{ n: string }>('SELECT wal_sync AS n FROM pg_stat_wal')).rows[0]!.n));
      };
      const warm = await openCheckpointStore(database.url, { ...options, poolSize: clients });
      await drive(warm, kind, clients, 0.3);
      await warm.close();
      const store = await openCheckpointStore(database.url, { ...options, poolSize: clients });
      const before = await walSyncs();
      const run = await drive(store, kind, clients, SECONDS);
      await store.close();
      const after = await walSyncs();
      rows.push({ store: 'PostgreSQL (pool, fsync on)', kind, clients, options: label, ...run, durableWrites: (after - before) / run.lifecycles });
      await database.drop();
    }
  } finally {
    await server?.stop();
  }
}

/** Performance targets: lifecycles/s of a fresh call at 1 and 16 clients, sealed + encrypted within 1.5× of plain. */
const TARGETS: Record<string, { 1: number; 16: number }> = { SQLite: { 1: 1_500, 16: 5_000 }, PostgreSQL: { 1: 500, 16: 2_000 } };

function print(rows: Row[]): void {
  table(
    ['store', 'lifecycle', 'clients', 'records', 'lifecycles/s', 'writes/s', 'durable writes/lifecycle (database)'],
    rows.map((r) => [
      r.store,
      KINDS[r.kind].label,
      r.clients,
      r.options,
      Math.round(r.lifecycles / r.seconds).toLocaleString('en-US'),
      Math.round((KINDS[r.kind].writes * r.lifecycles) / r.seconds).toLocaleString('en-US'),
      Number.isFinite(r.durableWrites) ? r.durableWrites.toFixed(2) : '–',
    ]),
  );
  console.log(
    `\n${SECONDS}s per row after a 0.3s warm-up. A fresh call is 2 store writes (the claimed insert, one compare-and-swap); the old lifecycle 5 (1 insert + 4 compare-and-swaps). durable writes = fsynced commits (SQLite: group commits of the store; PostgreSQL: pg_stat_wal.wal_sync read after the pool closed, server-wide: includes the WAL writer's background syncs).\n`,
  );
  const targets: Array<[string, string, boolean]> = [];
  const rate = (r: Row): number => r.lifecycles / r.seconds;
  for (const [store, byClients] of Object.entries(TARGETS)) {
    const of = (clients: number, options: string): Row | undefined =>
      rows.find((r) => r.store.startsWith(store) && r.kind === 'fresh' && r.clients === clients && r.options === options);
    for (const clients of [1, 16] as const) {
      const row = of(clients, 'plain');
      if (row)
        targets.push([
          `${store}: ≥ ${byClients[clients].toLocaleString('en-US')} fresh-call lifecycles/s at ${clients} client${clients === 1 ? '' : 's'}`,
          Math.round(rate(row)).toLocaleString('en-US'),
          rate(row) >= byClients[clients],
        ]);
    }
    const plain = of(16, 'plain');
    const sealed = of(16, 'sealed+encrypted');
    if (plain && sealed)
      targets.push([`${store}: sealed + encrypted within 1.5× of plain (16 clients)`, `${(rate(plain) / rate(sealed)).toFixed(2)}×`, rate(plain) / rate(sealed) <= 1.5]);
  }
  table(
    ['target', 'measured', 'verdict'],
    targets.map(([t, m, ok]) => [t, m, verdict(ok)]),
  );
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  printRunHeader(`BENCH_SECONDS=${SECONDS} npm run bench:store`);
  console.log('');
  await benchSqlite(rows);
  if (process.env.BENCH_SKIP_POSTGRES !== '1') await benchPostgres(rows);
  print(rows);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
