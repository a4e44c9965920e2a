/**
 * Side-store benchmark (`npm run bench:store`): full call lifecycles per second (create →
 * claim → complete → claim delivery → complete delivery, five durable writes each) for SQLite
 * (a file with crash-safe settings: WAL, synchronous = FULL) and PostgreSQL (fsync on), at 1,
 * 4 and 16 concurrent clients in one process, plus durable writes per lifecycle: fsynced
 * commits (SQLite: the store's commit count; PostgreSQL: `pg_stat_wal.wal_sync`).
 *
 * PostgreSQL: DATABASE_URL when set, else a private server started with
 * `test/helpers/postgres.ts`. Environment: BENCH_SECONDS (per row, default 3),
 * BENCH_SKIP_POSTGRES=1 to measure SQLite only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fingerprintInput } from '../src/checkpoint/digest';
import { createCheckpoint } from '../src/checkpoint/record';
import { claimDelivery, claimExecution, completeDelivery, completeExecution } from '../src/checkpoint/transitions';
import type { CheckpointStore, CheckpointStoreOptions } from '../src/stores/checkpoint-store';
import { openCheckpointStore } from '../src/stores/open-checkpoint-store';
import type { SqliteCheckpointStore } from '../src/stores/sqlite-store';
import { createTestDatabase, startPostgres, withClient, type PostgresServer } from '../test/helpers/postgres';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CLIENTS = [1, 4, 16] as const;
const SEALED: CheckpointStoreOptions = { hmacKey: Buffer.alloc(32, 1), keyId: 'bench-seal', encryptionKey: Buffer.alloc(32, 2), encryptionKeyId: 'bench-enc' };

interface Row {
  store: string;
  clients: number;
  options: string;
  lifecycles: number;
  seconds: number;
  durableWrites: number;
}

/** One full lifecycle through the store; throws if any compare-and-swap loses (nothing competes here). */
async function lifecycle(store: CheckpointStore, client: number, n: number): Promise<void> {
  const binding = { namespace: 'bench', callId: `c${client}-${n}-${process.hrtime.bigint()}`, toolName: 'create_ticket', toolRevision: '1', inputFingerprint: fingerprintInput({ client, n }) };
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
async function drive(store: CheckpointStore, clients: number, seconds: number): Promise<{ lifecycles: number; seconds: number }> {
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(Math.round(seconds * 1e9));
  let lifecycles = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; process.hrtime.bigint() < deadline; n += 1) {
        await lifecycle(store, client, n);
        lifecycles += 1;
      }
    }),
  );
  return { lifecycles, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

async function benchSqlite(rows: Row[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ttc-bench-'));
  try {
    for (const [clients, options, label] of [...CLIENTS.map((c) => [c, {}, 'plain'] as const), [16, SEALED, 'sealed+encrypted'] as const]) {
      const store = (await openCheckpointStore(`sqlite:${join(dir, `bench-${clients}-${label}.db`)}`, options)) as SqliteCheckpointStore;
      await drive(store, clients, 0.3);
      const before = store.stats().commits;
      const run = await drive(store, clients, SECONDS);
      rows.push({ store: 'SQLite (file, WAL, synchronous=FULL)', clients, options: label, ...run, durableWrites: (store.stats().commits - before) / run.lifecycles });
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
    for (const [clients, options, label] of [...CLIENTS.map((c) => [c, {}, 'plain'] as const), [16, SEALED, 'sealed+encrypted'] as const]) {
      const database = await createTestDatabase(base);
      const store = await openCheckpointStore(database.url, { ...options, poolSize: clients });
      await drive(store, clients, 0.3);
      const walSyncs = async (): Promise<number> => withClient(database.url, async (c) => Number((await c.query<{ n: string }>('SELECT wal_sync AS n FROM pg_stat_wal')).rows[0]!.n));
      const before = await walSyncs();
      const run = await drive(store, clients, SECONDS);
      const after = await walSyncs();
      rows.push({ store: 'PostgreSQL (pool, fsync on)', clients, options: label, ...run, durableWrites: (after - before) / run.lifecycles });
      await store.close();
      await database.drop();
    }
  } finally {
    await server?.stop();
  }
}

function print(rows: Row[]): void {
  const header = ['store', 'clients', 'records', 'lifecycles/s', 'writes/s', 'durable writes/lifecycle'];
  const body = rows.map((r) => [r.store, String(r.clients), r.options, Math.round(r.lifecycles / r.seconds).toLocaleString('en-US'), Math.round((5 * r.lifecycles) / r.seconds).toLocaleString('en-US'), r.durableWrites.toFixed(2)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 || i === 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  body.forEach((b) => console.log(line(b)));
  console.log(`\n${SECONDS}s per row after a 0.3s warm-up; a lifecycle is 5 store writes (1 insert + 4 compare-and-swaps); durable writes = fsynced commits (SQLite: group commits of the store; PostgreSQL: pg_stat_wal.wal_sync).`);
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  await benchSqlite(rows);
  if (process.env.BENCH_SKIP_POSTGRES !== '1') await benchPostgres(rows);
  print(rows);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
