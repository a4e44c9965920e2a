/**
 * `npm run bench:overhead` (issue 4): the same workflow with N sequential tool calls, as plain
 * activities and as fenced activities (SQLite store, PostgreSQL store), on one Temporal dev
 * server in one run. Prints latency per call, the fenced/plain ratio, and durable writes per
 * fresh call. Rounds are interleaved (plain, sqlite, postgres, plain, …) so drift hits all
 * three alike. Options: BENCH_CALLS (default 100), BENCH_ROUNDS (default 5).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, openCheckpointStore, type CheckpointRecord, type CheckpointStore } from '../src';
import { startDevServer } from '../src/dev/dev-server';
import { startPostgres } from '../test/helpers/postgres';
import { printTable } from '../src/cli/table';

const CALLS = Number(process.env.BENCH_CALLS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

interface Counter {
  writes: number;
  /** Wall time spent inside store calls, ms. */
  storeMs: number;
}

/** Counts durable writes (create-if-absent that created, successful compare-and-swaps) and time spent in the store. */
function countingStore(store: CheckpointStore, counter: Counter): CheckpointStore {
  const timed = async <T>(work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work();
    } finally {
      counter.storeMs += performance.now() - started;
    }
  };
  return {
    createIfAbsent: async (record: CheckpointRecord) => {
      const r = await timed(() => store.createIfAbsent(record));
      if (r.created) counter.writes += 1;
      return r;
    },
    compareAndSwap: async (expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord) => {
      const ok = await timed(() => store.compareAndSwap(expectedRevision, next, expected));
      if (ok) counter.writes += 1;
      return ok;
    },
    get: (b) => store.get(b),
    listByStatus: (s, o) => store.listByStatus(s, o),
    prune: (o) => store.prune(o),
    close: () => store.close(),
  } as CheckpointStore;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = mkdtempSync(join(tmpdir(), 'ttc-bench-overhead-'));
  const server = await startDevServer();
  const pg = process.env.DATABASE_URL ? null : await startPostgres();
  const pgUrl = process.env.DATABASE_URL ?? pg!.url;
  const echo = defineTool({ name: 'echo', revision: 'v1', input: z.object({ i: z.number().int() }), async execute(input) {
    return { output: { i: input.i } };
  } });
  const connection = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection: await (await import('@temporalio/client')).Connection.connect({ address: server.address }) });
  const variants: Array<{ name: string; queue: string; counter: Counter; store?: CheckpointStore }> = [
    { name: 'plain activity', queue: 'bench-plain', counter: { writes: 0, storeMs: 0 } },
    { name: 'fenced (SQLite)', queue: 'bench-sqlite', counter: { writes: 0, storeMs: 0 }, store: await openCheckpointStore(`sqlite:${join(dir, 'bench.db')}`) },
    { name: 'fenced (PostgreSQL)', queue: 'bench-postgres', counter: { writes: 0, storeMs: 0 }, store: await openCheckpointStore(pgUrl) },
  ];
  const workers = await Promise.all(
    variants.map((v) =>
      Worker.create({
        connection,
        taskQueue: v.queue,
        workflowsPath: require.resolve('./overhead-workflows'),
        activities: {
          plainTool: async (input: { i: number }) => ({ ok: true as const, output: { i: input.i } }),
          ...(v.store ? createToolActivities({ store: countingStore(v.store, v.counter), tools: [echo] }) : {}),
        },
      }),
    ),
  );
  const running = workers.map((w) => w.run());
  const samples = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  try {
    const runOnce = async (v: (typeof variants)[number], n: number, tag: string): Promise<number> => {
      const started = performance.now();
      await client.workflow.execute('sequentialCalls', { taskQueue: v.queue, workflowId: `${v.queue}-${tag}-${Date.now()}`, args: [v.store ? 'fenced' : 'plain', n] });
      return (performance.now() - started) / n;
    };
    for (const v of variants) await runOnce(v, 10, 'warmup');
    for (const v of variants) Object.assign(v.counter, { writes: 0, storeMs: 0 });
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const v of variants) samples.get(v.name)!.push(await runOnce(v, CALLS, `r${round}`));
    }
  } finally {
    for (const w of workers) w.shutdown();
    await Promise.all(running);
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const plain = median(samples.get('plain activity')!);
  console.log(`\n${CALLS} sequential tool calls per workflow, ${ROUNDS} interleaved rounds, one dev server (${server.address}); median per call:\n`);
  printTable(
    ['variant', 'ms per call (median)', 'min', 'max', 'ratio to plain', 'durable writes per fresh call', 'store ms per call'],
    variants.map((v) => {
      const xs = samples.get(v.name)!;
      return [v.name, median(xs).toFixed(2), Math.min(...xs).toFixed(2), Math.max(...xs).toFixed(2), (median(xs) / plain).toFixed(3), v.store ? (v.counter.writes / (CALLS * ROUNDS)).toFixed(2) : '0', v.store ? (v.counter.storeMs / (CALLS * ROUNDS)).toFixed(2) : '0'];
    }),
  );
  for (const v of variants) await v.store?.close();
  await connection.close();
  await client.connection.close();
  await server.stop({ signal: 'SIGKILL' });
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
