/**
 * A 10,000-item batch through the fence (`ctx.forEachItem`) on a Temporal dev server,
 * SQLite and PostgreSQL, side by side in one run:
 * - one write per item: each item's claim goes into the same grouped write as the previous
 *   item's result (every tool's default, `groupSize` 1);
 * - 100 items per write: a provider that deduplicates by key (`groupSize` 100, its default).
 * Prints items/s, store writes per item (grouped writes plus single ones, counted at the store),
 * the run's history size (the item records live in the store, not in history) and the ratio.
 * Environment: BENCH_ITEMS (default 10,000), BENCH_SKIP_POSTGRES=1, DATABASE_URL (else a
 * PostgreSQL server is started from `test/helpers/postgres.ts`). `npm run bench:batch-items`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../src/activities';
import { startDevServer } from '../src/dev/dev-server';
import type { CheckpointStore } from '../src/stores/checkpoint-store';
import { openCheckpointStore } from '../src/stores/open-checkpoint-store';
import { createTestDatabase, startPostgres, type PostgresServer } from '../test/helpers/postgres';
import { fixed, heading, printRunHeader, table } from './report';

const ITEMS = Number(process.env.BENCH_ITEMS ?? 10_000);
const TASK_QUEUE = 'bench-batch-items';

/** Store calls that write, counted. */
interface Writes {
  grouped: number;
  single: number;
}

/** `store` with its writes counted into `writes`. */
function counting(store: CheckpointStore, writes: Writes): CheckpointStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (name === 'writeGroup') writes.grouped += 1;
        if (name === 'createIfAbsent' || name === 'compareAndSwap') writes.single += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** A batch tool sending to an in-memory provider; `byKey`: the provider deduplicates by key (100 items per write). */
function notify(name: string, byKey: boolean, sent: Map<string, string>) {
  return defineTool({
    name,
    revision: 'v1',
    batch: true,
    ...(byKey ? { dedupesByKey: true, keyRetentionMs: 86_400_000 } : {}),
    input: z.object({ count: z.number().int().positive() }).strict(),
    async execute(input, ctx) {
      const recipients = Array.from({ length: input.count }, (_, i) => `user-${i}`);
      const report = await ctx.forEachItem!(
        recipients,
        (to) => to,
        async (to, item) => {
          sent.set(item.idempotencyKey, to as string);
          return { output: { sent: to } };
        },
      );
      return { output: { applied: report.applied } };
    },
    async lookup(ctx) {
      const to = sent.get(ctx.idempotencyKey);
      return to === undefined ? { found: false } : { found: true, output: { sent: to } };
    },
  });
}

interface Row {
  store: string;
  mode: string;
  seconds: number;
  itemsPerSecond: number;
  writesPerItem: number;
  historyBytes: number;
}

async function benchStore(label: string, url: string, address: string, rows: Row[]): Promise<void> {
  const writes: Writes = { grouped: 0, single: 0 };
  const sent = new Map<string, string>();
  const store = await openCheckpointStore(url);
  const client = new Client({ connection: await Connection.connect({ address }) });
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address }),
    taskQueue: TASK_QUEUE,
    workflowsPath: require.resolve('./batch-bench-workflows'),
    activities: createToolActivities({ store: counting(store, writes), tools: [notify('notify_each', false, sent), notify('notify_by_key', true, sent)] }),
  });
  await worker.runUntil(async () => {
    for (const [mode, tool] of [
      ['one write per item (groupSize 1)', 'notify_each'],
      ['100 items per write (key dedupe)', 'notify_by_key'],
    ] as const) {
      writes.grouped = writes.single = 0;
      const workflowId = `${tool}-${Date.now()}`;
      const started = performance.now();
      const result = await client.workflow.execute('batchOnce', {
        taskQueue: TASK_QUEUE,
        workflowId,
        args: [{ tenant: 'bench', callId: 'batch-1', toolName: tool, input: { count: ITEMS } }],
      });
      const seconds = (performance.now() - started) / 1000;
      if ((result as { outcome: { output: { applied: number } } }).outcome.output.applied !== ITEMS) throw new Error(`${mode}: not every item was applied`);
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      rows.push({
        store: label,
        mode,
        seconds,
        itemsPerSecond: ITEMS / seconds,
        writesPerItem: (writes.grouped + writes.single) / ITEMS,
        historyBytes: temporal.api.history.v1.History.encode(history).finish().length,
      });
    }
  });
  await client.connection.close();
  await store.close();
}

async function main(): Promise<void> {
  printRunHeader('npm run bench:batch-items');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await startDevServer();
  const rows: Row[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'ttc-bench-batch-'));
  let postgres: PostgresServer | undefined;
  try {
    await benchStore('SQLite', `sqlite:${join(dir, 'checkpoints.db')}`, server.address, rows);
    if (process.env.BENCH_SKIP_POSTGRES !== '1') {
      let base = process.env.DATABASE_URL;
      if (!base) {
        postgres = await startPostgres();
        base = postgres.url;
      }
      const database = await createTestDatabase(base);
      await benchStore('PostgreSQL', database.url, server.address, rows);
      await database.drop();
    }
  } finally {
    await postgres?.stop();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  heading(`A batch of ${ITEMS.toLocaleString('en-US')} items, one activity, fsync on`);
  table(
    ['store', 'mode', 'seconds', 'items/s', 'store writes per item', 'history bytes'],
    rows.map((r) => [r.store, r.mode, fixed(r.seconds), fixed(r.itemsPerSecond, 0), fixed(r.writesPerItem, 3), r.historyBytes]),
  );
  for (const store of new Set(rows.map((r) => r.store))) {
    const [each, grouped] = rows.filter((r) => r.store === store);
    if (each && grouped) console.log(`${store}: 100 items per write is ${fixed(grouped.itemsPerSecond / each.itemsPerSecond)}x the items/s of one write per item`);
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
