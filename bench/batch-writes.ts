/**
 * Batch item writes benchmark (`npm run bench:batch-writes`): items are written in
 * groups so a batch is not 10,000 × 2 synchronous writes; this measures it and prints items/s. On each
 * store, a batch of BENCH_ITEMS (default 10,000) item checkpoints is claimed and completed twice,
 * side by side in one run:
 *  - one by one: per item, the claimed record inserted (`createIfAbsent(createClaimed(...))`) and
 *    its result stored by one compare-and-swap (`completeExecution`, with the record as
 *    `expected`): 2 synchronous writes (2 commits) per item, one item after the other;
 *  - in groups of BENCH_GROUP (default 100): `writeGroup` of the group's claimed inserts, then
 *    `writeGroup` of their compare-and-swaps: 2 transactions per group.
 * Each item has its own binding (as a batch item's child binding) and a ~100-byte result.
 *
 * PostgreSQL: DATABASE_URL when set, else a private server started with `test/helpers/postgres.ts`.
 * Environment: BENCH_ITEMS, BENCH_GROUP, BENCH_SKIP_POSTGRES=1, BENCH_MARKDOWN=1 (tables as Markdown).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClaimed } from '../src/checkpoint/compose';
import { fingerprintInput } from '../src/checkpoint/digest';
import { completeExecution } from '../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../src/checkpoint/types';
import type { CheckpointStore, GroupWriteResult } from '../src/stores/checkpoint-store';
import { openCheckpointStore } from '../src/stores/open-checkpoint-store';
import { createTestDatabase, startPostgres, type PostgresServer } from '../test/helpers/postgres';
import { printRunHeader, table } from './report';

const ITEMS = Number(process.env.BENCH_ITEMS ?? 10_000);
const GROUP = Number(process.env.BENCH_GROUP ?? 100);

interface Row {
  readonly store: string;
  readonly mode: 'one by one' | 'groups';
  readonly items: number;
  readonly seconds: number;
  /** Committed write transactions, when the store counts them (SQLite), else NaN. */
  readonly commits: number;
}

/** The item bindings of one batch call (`run` makes them unique per measurement). */
function items(run: string): Binding[] {
  return Array.from({ length: ITEMS }, (_, i) => ({
    namespace: 'bench',
    callId: `["ttc/item/1","${run}","item-${i}",1]`,
    toolName: 'send_notification',
    toolRevision: '1',
    inputFingerprint: fingerprintInput({ to: `user-${i}` }),
  }));
}

const now = (): string => new Date().toISOString();
const result = (i: number): { messageId: string; ok: true; to: string } => ({ messageId: `msg-${i}-${'x'.repeat(60)}`, ok: true, to: `user-${i}` });

/** Claims and completes every item with 2 single writes each, one item after the other. */
async function oneByOne(store: CheckpointStore, bindings: readonly Binding[]): Promise<void> {
  for (const [i, binding] of bindings.entries()) {
    const attemptId = `a-${i}`;
    const { created, record } = await store.createIfAbsent(createClaimed(binding, { attemptId, at: now() }));
    if (!created) throw new Error(`item ${i}: the claim found a record with no competitor`);
    const done = completeExecution(record, { attemptId, at: now(), result: result(i) });
    if (!(await store.compareAndSwap(done.expectedRevision, done.next, record))) throw new Error(`item ${i}: a compare-and-swap lost with no competitor`);
  }
}

/** Claims and completes the items GROUP at a time: one `writeGroup` of claims, one of completions. */
async function inGroups(store: CheckpointStore, bindings: readonly Binding[]): Promise<void> {
  for (let g = 0; g < bindings.length; g += GROUP) {
    const group = bindings.slice(g, g + GROUP);
    const claimed = await store.writeGroup(group.map((binding, j) => ({ kind: 'create', record: createClaimed(binding, { attemptId: `a-${g + j}`, at: now() }) })));
    const records = claimed.map((r, j) => created(r, g + j));
    const swapped = await store.writeGroup(
      records.map((record, j) => {
        const done = completeExecution(record, { attemptId: `a-${g + j}`, at: now(), result: result(g + j) });
        return { kind: 'cas', expectedRevision: done.expectedRevision, next: done.next, expected: record };
      }),
    );
    swapped.forEach((r, j) => {
      if (r.kind !== 'cas' || !r.swapped) throw new Error(`item ${g + j}: a compare-and-swap lost with no competitor`);
    });
  }
}

function created(r: GroupWriteResult, i: number): CheckpointRecord {
  if (r.kind !== 'create' || !r.created) throw new Error(`item ${i}: the claim found a record with no competitor`);
  return r.record;
}

/** Measures both modes on `store` (one by one first, then groups), each on fresh bindings. */
async function measure(name: string, store: CheckpointStore, rows: Row[]): Promise<void> {
  const stats = (store as { stats?: () => { commits: number } }).stats;
  const commits = (): number => (typeof stats === 'function' ? stats.call(store).commits : Number.NaN);
  // Warm-up: prepared statements, the pool, the WAL.
  await oneByOne(store, items(`${name}-warm`).slice(0, 200));
  await inGroups(store, items(`${name}-warm-groups`).slice(0, 200));
  for (const [mode, run] of [
    ['one by one', oneByOne],
    ['groups', inGroups],
  ] as const) {
    const bindings = items(`${name}-${mode}`);
    const before = commits();
    const started = process.hrtime.bigint();
    await run(store, bindings);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    rows.push({ store: name, mode, items: bindings.length, seconds, commits: commits() - before });
    console.error(`${name} ${mode}: ${bindings.length} items in ${seconds.toFixed(1)} s`);
  }
}

async function benchSqlite(rows: Row[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ttc-bench-batch-'));
  try {
    const store = await openCheckpointStore(`sqlite:${join(dir, 'batch.db')}`);
    await measure('SQLite (file, WAL, synchronous=FULL)', store, rows);
    await store.close();
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
    const database = await createTestDatabase(base);
    const store = await openCheckpointStore(database.url, { poolSize: 2 });
    await measure('PostgreSQL (fsync on)', store, rows);
    await store.close();
    await database.drop();
  } finally {
    await server?.stop();
  }
}

function print(rows: readonly Row[]): void {
  table(
    ['store', 'items written', 'items', 'seconds', 'items/s', 'commits', 'groups vs one by one'],
    rows.map((r) => {
      const single = rows.find((o) => o.store === r.store && o.mode === 'one by one')!;
      const rate = r.items / r.seconds;
      const ratio = r.mode === 'groups' ? `${(rate / (single.items / single.seconds)).toFixed(1)}×` : '1.0×';
      return [
        r.store,
        r.mode === 'groups' ? `in groups of ${GROUP} (writeGroup)` : 'one by one (createIfAbsent + compareAndSwap)',
        r.items.toLocaleString('en-US'),
        r.seconds.toFixed(1),
        Math.round(rate).toLocaleString('en-US'),
        Number.isFinite(r.commits) ? r.commits.toLocaleString('en-US') : '–',
        ratio,
      ];
    }),
  );
  console.log(
    `\nEach item: its claimed record inserted, then its result stored by a compare-and-swap (2 writes). One by one: 2 commits per item. In groups: 2 transactions per group of ${GROUP}. commits: the SQLite store's committed transactions (one fsync each).`,
  );
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  printRunHeader(`BENCH_ITEMS=${ITEMS} BENCH_GROUP=${GROUP} npm run bench:batch-writes`);
  console.log('');
  await benchSqlite(rows);
  if (process.env.BENCH_SKIP_POSTGRES !== '1') await benchPostgres(rows);
  print(rows);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
