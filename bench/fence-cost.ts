/**
 * What the fence costs above its store (`npm run bench:fence-cost`), without Temporal: CPU per
 * call and store requests per call, in one process, in interleaved rounds.
 *
 * Rows, each on an in-memory SQLite store (`:memory:`: runs on this thread, no fsync, no I/O):
 *  - `store operations alone`: what a fresh call writes (the claimed insert and one
 *    compare-and-swap, its records composed before the timing starts: store work only), and what a
 *    re-delivery reads (one `get`);
 *  - `activity harness alone`: `MockActivityEnvironment.run` of an activity that does nothing
 *    (the activity context the fence needs; a worker makes its own);
 *  - `worker-thread round trip alone`: one message shaped like a store request posted to a worker
 *    thread that posts it straight back (no database): the floor of what each request of a file
 *    store (BENCH_STORE_URL) crosses, beside that store's own rows;
 *  - `fenced call`: `runFencedTool` of a tool whose `execute` returns at once, fresh (attempt 1,
 *    a new call id) and re-delivered (attempt 2 of a delivered call); and fresh again with a tool
 *    that reads `ctx.signal` (as a tool that passes it to `fetch` does: the signal is then made).
 * CPU is `process.cpuUsage()` (user + system) per unit; rows run in a rotating order each round.
 * The fence's CPU above its store is fenced − harness − store alone, taken within each round
 * (paired), and the verdict is on the median of those per-round differences. Store requests per unit are the store's own
 * counter (`stats().requests`). Target (docs/performance.md): ≤ 0.3 ms of CPU above the store per
 * fresh call, with or without the signal read; 2 requests per fresh call and 1 per re-delivery.
 * Call ids carry the run's start time, so a run on an existing file (BENCH_STORE_URL) makes new calls.
 *
 * Environment: BENCH_UNITS (per row and round, default 2,000), BENCH_ROUNDS (default 5),
 * BENCH_ROWS (comma-separated row names, e.g. `fenced-fresh` to profile one; default all),
 * BENCH_STORE_URL (another store, e.g. `sqlite:/tmp/x.db` for a file on its thread; default
 * `sqlite::memory:`), BENCH_MARKDOWN=1 for Markdown.
 */
import { Worker } from 'node:worker_threads';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../src/activities';
import type { FencedToolInput, FencedToolResult } from '../src/activities/contract/contract';
import { openCheckpointStore } from '../src/stores/open-checkpoint-store';
import type { SqliteCheckpointStore } from '../src/stores/sqlite-store';
import { composeFreshCall, freshCall, writeFreshCall, type ComposedFreshCall } from './fresh-call';
import { fixed, heading, median, printRunHeader, table, verdict } from './report';

const UNITS = Number(process.env.BENCH_UNITS ?? 2_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET_CPU_MS = 0.3;

type RowName = 'store-fresh' | 'store-redelivery' | 'harness' | 'thread-round-trip' | 'fenced-fresh' | 'fenced-fresh-signal' | 'fenced-redelivery';
const LABELS: Record<RowName, string> = {
  'store-fresh': 'store operations alone: a fresh call (insert + compare-and-swap)',
  'store-redelivery': 'store operations alone: a re-delivery (get)',
  harness: 'activity harness alone (MockActivityEnvironment, no-op activity)',
  'thread-round-trip': 'worker-thread round trip alone (postMessage there and back, no database)',
  'fenced-fresh': 'fenced call, fresh (attempt 1)',
  'fenced-fresh-signal': 'fenced call, fresh, the tool reads ctx.signal',
  'fenced-redelivery': 'fenced call, re-delivered (attempt 2 of a delivered call)',
};

async function main(): Promise<void> {
  printRunHeader(`BENCH_UNITS=${UNITS} BENCH_ROUNDS=${ROUNDS} npm run bench:fence-cost`);
  const storeUrl = process.env.BENCH_STORE_URL ?? 'sqlite::memory:';
  const store = (await openCheckpointStore(storeUrl)) as SqliteCheckpointStore;
  const tool = defineTool({
    name: 'create_ticket',
    revision: '1',
    input: z.object({ title: z.string(), priority: z.number().int() }),
    async execute(input) {
      return { output: { ticket: `T-${input.priority}` } };
    },
  });
  let signalsRead = 0;
  const readsSignal = defineTool({
    name: 'create_ticket_signal',
    revision: '1',
    input: z.object({ title: z.string(), priority: z.number().int() }),
    async execute(input, ctx) {
      if (!ctx.signal.aborted) signalsRead += 1;
      return { output: { ticket: `T-${input.priority}` } };
    },
  });
  const activities = createToolActivities({ store, tools: [tool, readsSignal] });
  const info = (attempt: number) =>
    ({ attempt, activityType: 'runFencedTool', workflowExecution: { workflowId: 'bench-wf', runId: 'bench-run' }, heartbeatTimeoutMs: 30_000 }) as never;
  const first = new MockActivityEnvironment(info(1));
  const retry = new MockActivityEnvironment(info(2));
  const runTag = Date.now().toString(36);
  const call = (n: number, toolName = 'create_ticket'): FencedToolInput => ({
    tenant: 'bench',
    callId: `call-${runTag}-${n}`,
    toolName,
    input: { title: `ticket ${n}`, priority: n % 5 },
  });

  let next = 0;
  // Delivered calls to re-deliver: by the fence (their inputs) and by the store alone (their bindings).
  const delivered: FencedToolInput[] = [];
  for (let i = 0; i < 200; i += 1) {
    const input = call((next += 1));
    await first.run(activities.runFencedTool, input);
    delivered.push(input);
  }
  const bindings = await Promise.all(Array.from({ length: 200 }, (_, i) => freshCall(store, 1, i)));
  // A fresh call's records for the store-alone row, composed before each round's timing starts.
  let composed: ComposedFreshCall[] = [];
  let composedRound = 0;
  const composeAhead = (count: number) => {
    composedRound += 1;
    composed = Array.from({ length: count }, (_, n) => composeFreshCall(composedRound, n));
  };
  // Posts every message straight back: the thread crossing of a store request, without the store.
  const echo = new Worker("const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => parentPort.postMessage(m));", { eval: true });
  const rows: Record<RowName, (n: number) => Promise<void>> = {
    'store-fresh': async (n) => {
      await writeFreshCall(store, composed[n]!);
    },
    'store-redelivery': async (n) => {
      if ((await store.get(bindings[n % bindings.length]!)) === null) throw new Error('a delivered call has no record');
    },
    harness: async () => {
      await first.run(async () => null);
    },
    'thread-round-trip': async (n) => {
      await new Promise((resolve) => {
        echo.once('message', resolve);
        echo.postMessage([{ id: n, op: 'get', key: `ck1-${'0'.repeat(64)}` }]);
      });
    },
    'fenced-fresh': async () => {
      const result = (await first.run(activities.runFencedTool, call((next += 1)))) as FencedToolResult;
      if (result.source !== 'executed') throw new Error(`a fresh call answered ${result.source}`);
    },
    'fenced-fresh-signal': async () => {
      const result = (await first.run(activities.runFencedTool, call((next += 1), 'create_ticket_signal'))) as FencedToolResult;
      if (result.source !== 'executed') throw new Error(`a fresh call answered ${result.source}`);
    },
    'fenced-redelivery': async (n) => {
      const result = (await retry.run(activities.runFencedTool, delivered[n % delivered.length]!)) as FencedToolResult;
      if (result.source !== 'store') throw new Error(`a re-delivery answered ${result.source}`);
    },
  };

  const cpu = Object.fromEntries(Object.keys(LABELS).map((name) => [name, [] as number[]])) as Record<RowName, number[]>;
  const requests = Object.fromEntries(Object.keys(LABELS).map((name) => [name, [] as number[]])) as Record<RowName, number[]>;
  // Warm-up: one short pass of every row (JIT, caches).
  composeAhead(200);
  for (const run of Object.values(rows)) for (let i = 0; i < 200; i += 1) await run(i);
  const only = process.env.BENCH_ROWS?.split(',');
  const names = (Object.keys(rows) as RowName[]).filter((name) => only === undefined || only.includes(name));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (let k = 0; k < names.length; k += 1) {
      const name = names[(round + k) % names.length]!;
      const run = rows[name];
      if (name === 'store-fresh') composeAhead(UNITS);
      const before = process.cpuUsage();
      const requestsBefore = store.stats().requests;
      for (let i = 0; i < UNITS; i += 1) await run(i);
      const used = process.cpuUsage(before);
      cpu[name].push((used.user + used.system) / 1_000 / UNITS);
      requests[name].push((store.stats().requests - requestsBefore) / UNITS);
    }
  }
  await store.close();
  await echo.terminate();

  heading(
    `bench:fence-cost: ${UNITS} units per row × ${ROUNDS} interleaved rounds, ${storeUrl === 'sqlite::memory:' ? 'in-memory SQLite store' : `store ${storeUrl}`}, one process`,
  );
  table(
    ['row', 'CPU ms per unit (median)', 'min', 'max', 'store requests per unit'],
    names.map((name) => [LABELS[name], fixed(median(cpu[name]), 3), fixed(Math.min(...cpu[name]), 3), fixed(Math.max(...cpu[name]), 3), fixed(median(requests[name]), 2)]),
  );
  if (names.length < Object.keys(rows).length) return; // a profile of some rows: no verdict
  const paired = (fenced: RowName, store: RowName) => median(cpu[fenced].map((ms, round) => ms - cpu.harness[round]! - cpu[store][round]!));
  const aboveFresh = paired('fenced-fresh', 'store-fresh');
  const aboveFreshSignal = paired('fenced-fresh-signal', 'store-fresh');
  const aboveRedelivery = paired('fenced-redelivery', 'store-redelivery');
  if (signalsRead === 0) throw new Error('the signal-reading tool never ran');
  console.log('');
  console.log(
    `fence CPU above its store (fenced − harness − store alone, within each round; median of ${ROUNDS} rounds), fresh call: ${fixed(aboveFresh, 3)} ms (the tool reads ctx.signal: ${fixed(aboveFreshSignal, 3)} ms); re-delivery: ${fixed(aboveRedelivery, 3)} ms`,
  );
  const worst = Math.max(aboveFresh, aboveFreshSignal);
  console.log(
    `CPU above the store per fresh call ≤ ${TARGET_CPU_MS} ms, with or without ctx.signal read: ${fixed(aboveFresh, 3)} / ${fixed(aboveFreshSignal, 3)} ms: ${verdict(worst <= TARGET_CPU_MS)}`,
  );
  const perFresh = median(requests['fenced-fresh']);
  const perRedelivery = median(requests['fenced-redelivery']);
  console.log(`store requests: 2 per fresh call, 1 per re-delivery: ${fixed(perFresh, 2)} / ${fixed(perRedelivery, 2)}: ${verdict(perFresh === 2 && perRedelivery === 1)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
