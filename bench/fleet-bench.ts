/**
 * `npm run bench:fleet` ("how cost grows"): 1, 10, 100 and 1,000 concurrent agent runs
 * of 3 tool calls each on a fleet of 2 worker processes (`ttc worker`, spawned with
 * src/dev/worker-process.ts, tools from bench/fleet-tools.ts, the scripted model), against one
 * Temporal dev server and one side store. Every run is the real `agentWorkflow`: a scripted model
 * turn that calls the 3 tools (run concurrently, each a fenced tool activity), then a final turn.
 *
 * Per size it prints: tool calls/s (3 × runs over the wall time from the first run's start to
 * the last run's close, as the server recorded them), p50/p99 latency of a tool call from its
 * activity's schedule to its completion and from its start to its completion (server event
 * times in the histories), run latency p50/p99, store rows and bytes per tool call (the store's
 * tables before and after the size: checkpoint rows, conversation rows, the bytes of those rows,
 * and the bytes of their pages with indexes), history bytes per tool call (every run's
 * history fetched with the client and encoded as protobuf, summed), and CPU ms per tool call of
 * the worker processes and of the dev server (/proc/<pid>/stat before and after the size).
 *
 * Options (environment): FLEET_RUNS (default `1,10,100,1000`), FLEET_STORES (default
 * `sqlite,postgres`; PostgreSQL is DATABASE_URL or a private server), FLEET_SERVER (`memory`,
 * the default: `temporal server start-dev` without a database file; or `persistent`),
 * FLEET_WORKERS (default 2), FLEET_MAX_CONCURRENT_ACTIVITIES (per worker, default the SDK's 100),
 * FLEET_TOOL_MS (each tool waits this long, default 0), BENCH_MARKDOWN=1.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { buildAgentWorkflowBundle } from '../src/codec/workflow-bundle';
import { startDevServer } from '../src/dev/dev-server';
import { spawnWorker, type WorkerProcess } from '../src/dev/worker-process';
import { parseTranscript } from '../src/model/transcript';
import type { AgentWorkflowInput } from '../src/workflows/agent/types';
import { createTestDatabase, startPostgres, withClient, type PostgresServer } from '../test/helpers/postgres';
import { FLEET_TOOL_NAMES } from './fleet-tools';
import { fleetTranscript } from './fleet-transcript';
import { fixed, heading, MARKDOWN, printHeaderLines, runHeader, quantile, table } from './report';

const SIZES = (process.env.FLEET_RUNS ?? '1,10,100,1000')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
const STORES = (process.env.FLEET_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim()) as Array<'sqlite' | 'postgres'>;
const SERVER = (process.env.FLEET_SERVER ?? 'memory') as 'memory' | 'persistent';
const WORKERS = Number(process.env.FLEET_WORKERS ?? 2);
const MAX_ACTIVITIES = process.env.FLEET_MAX_CONCURRENT_ACTIVITIES ? Number(process.env.FLEET_MAX_CONCURRENT_ACTIVITIES) : undefined;
const CALLS_PER_RUN = FLEET_TOOL_NAMES.length;
/** Client requests in flight at once (starts, results, history fetches). */
const CLIENT_CONCURRENCY = 50;

/** Runs `fn` over `items` with at most `limit` in flight; results in order. */
async function mapPool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

/** What the store holds: rows and bytes of its two tables. */
interface StoreSize {
  checkpointRows: number;
  conversationRows: number;
  /** Bytes of the rows themselves (SQLite: record payload; PostgreSQL: pg_column_size of each row). */
  rowBytes: number;
  /** Bytes of the pages the tables and their indexes occupy (SQLite: dbstat; PostgreSQL: pg_total_relation_size, dead row versions included). */
  diskBytes: number;
}

interface StoreUnderTest {
  readonly kind: 'sqlite' | 'postgres';
  readonly url: string;
  size(): Promise<StoreSize>;
  close(): Promise<void>;
}

function sqliteStore(dir: string): StoreUnderTest {
  const file = join(dir, 'checkpoints.db');
  return {
    kind: 'sqlite',
    url: `sqlite:${file}`,
    async size() {
      const Database = require('better-sqlite3') as typeof BetterSqlite3;
      const db = new Database(file, { readonly: true });
      try {
        const count = (tableName: string): number => (db.prepare(`SELECT COUNT(*) AS n FROM ${tableName}`).get() as { n: number }).n;
        // dbstat: one aggregate row per b-tree (table or index), with the bytes of its cells and of its pages.
        const trees = db
          .prepare(
            "SELECT name, payload, pgsize FROM dbstat WHERE aggregate = TRUE AND name IN (SELECT name FROM sqlite_schema WHERE tbl_name IN ('ttc_checkpoints', 'ttc_conversation_entries'))",
          )
          .all() as Array<{ name: string; payload: number; pgsize: number }>;
        return {
          checkpointRows: count('ttc_checkpoints'),
          conversationRows: count('ttc_conversation_entries'),
          rowBytes: trees.filter((t) => t.name === 'ttc_checkpoints' || t.name === 'ttc_conversation_entries').reduce((a, t) => a + t.payload, 0),
          diskBytes: trees.reduce((a, t) => a + t.pgsize, 0),
        };
      } finally {
        db.close();
      }
    },
    async close() {},
  };
}

async function postgresStore(): Promise<StoreUnderTest> {
  let server: PostgresServer | undefined;
  if (!process.env.DATABASE_URL) server = await startPostgres();
  const database = await createTestDatabase(process.env.DATABASE_URL ?? server!.url);
  return {
    kind: 'postgres',
    url: database.url,
    size: () =>
      withClient(database.url, async (c) => {
        const row = async (tableName: string): Promise<{ n: number; bytes: number; disk: number }> => {
          const r = await c.query<{ n: string; bytes: string | null; disk: string }>(
            `SELECT COUNT(*) AS n, SUM(pg_column_size(t.*)) AS bytes, pg_total_relation_size('${tableName}') AS disk FROM ${tableName} t`,
          );
          return { n: Number(r.rows[0]!.n), bytes: Number(r.rows[0]!.bytes ?? 0), disk: Number(r.rows[0]!.disk) };
        };
        const checkpoints = await row('ttc_checkpoints');
        const conversation = await row('ttc_conversation_entries');
        return {
          checkpointRows: checkpoints.n,
          conversationRows: conversation.n,
          rowBytes: checkpoints.bytes + conversation.bytes,
          diskBytes: checkpoints.disk + conversation.disk,
        };
      }),
    async close() {
      await database.drop().catch(() => undefined);
      await server?.stop();
    },
  };
}

/** Clock ticks per second of /proc/<pid>/stat. */
const CLOCK_TICKS = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) a live process has used so far, ms; NaN where /proc is not readable. */
function cpuMs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: state is field 3, utime 14 and stime 15 (1-based over the whole line).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** Milliseconds since the epoch of a protobuf Timestamp. */
function millis(ts: temporal.api.history.v1.IHistoryEvent['eventTime']): number {
  return Number(ts?.seconds ?? 0) * 1000 + (ts?.nanos ?? 0) / 1e6;
}

interface Row {
  store: string;
  runs: number;
  completed: number;
  seconds: number;
  scheduleToClose: number[];
  startToClose: number[];
  runLatency: number[];
  store0: StoreSize;
  store1: StoreSize;
  historyBytes: number;
  toolCalls: number;
  /** CPU ms the worker processes (together) and the dev server used during the size. */
  workerCpuMs: number;
  serverCpuMs: number;
}

async function main(): Promise<void> {
  const header = runHeader(`FLEET_RUNS=${SIZES.join(',')} FLEET_STORES=${STORES.join(',')} FLEET_SERVER=${SERVER}${MARKDOWN ? ' BENCH_MARKDOWN=1' : ''} npm run bench:fleet`);
  const dir = mkdtempSync(join(tmpdir(), 'ttc-bench-fleet-'));
  const cleanups: Array<() => Promise<unknown>> = [];
  const rows: Row[] = [];
  try {
    const server = await startDevServer(SERVER === 'persistent' ? { dbFile: join(dir, 'temporal.db') } : {});
    cleanups.push(() => server.stop({ signal: 'SIGKILL' }));
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    cleanups.push(() => client.connection.close());
    // One workflow bundle for every worker process (each would bundle at start otherwise).
    const bundle = join(dir, 'agent-workflow-bundle.js');
    writeFileSync(bundle, await buildAgentWorkflowBundle({ encodeFailures: false, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } }));
    const transcript = fleetTranscript();
    parseTranscript(transcript, 'fleet');
    const input: AgentWorkflowInput = {
      tenant: 'fleet',
      model: 'scripted',
      modelOptions: { transcript: transcript as never },
      prompt: 'Order O-1001 arrived damaged: open a ticket and tell the customer.',
      tools: [...FLEET_TOOL_NAMES],
      budget: { maxTurns: 2, maxToolCalls: CALLS_PER_RUN, deadlineMs: 30 * 60_000 },
    };

    for (const kind of STORES) {
      const store = kind === 'sqlite' ? sqliteStore(dir) : await postgresStore();
      const queue = `fleet-${kind}`;
      const workers: WorkerProcess[] = [];
      try {
        const env = {
          TEMPORAL_ADDRESS: server.address,
          TEMPORAL_NAMESPACE: server.namespace,
          TEMPORAL_TASK_QUEUE: queue,
          TTC_STORE_URL: store.url,
          TTC_WORKFLOW_BUNDLE: bundle,
        };
        for (let w = 0; w < WORKERS; w += 1) {
          workers.push(
            await spawnWorker({
              env,
              identity: `fleet-${kind}-${w + 1}`,
              toolsModule: resolve(__dirname, 'fleet-tools.ts'),
              models: 'scripted',
              ...(MAX_ACTIVITIES ? { maxConcurrentActivities: MAX_ACTIVITIES } : {}),
            }),
          );
        }
        // Warm-up: one run, not counted.
        await client.workflow.execute('agentWorkflow', { taskQueue: queue, workflowId: `fleet-${kind}-warmup-${Date.now()}`, args: [input] });
        for (const runs of SIZES) {
          const store0 = await store.size();
          const workerCpu0 = workers.reduce((a, w) => a + cpuMs(w.process.pid), 0);
          const serverCpu0 = cpuMs(server.process.pid);
          const tag = `fleet-${kind}-${runs}-${Date.now()}`;
          const handles: Array<WorkflowHandle> = await mapPool(
            Array.from({ length: runs }, (_, i) => i),
            CLIENT_CONCURRENCY,
            (i) => client.workflow.start('agentWorkflow', { taskQueue: queue, workflowId: `${tag}-${i}`, args: [input] }),
          );
          const results = await mapPool(handles, CLIENT_CONCURRENCY, (h) =>
            (h.result() as Promise<{ status: string }>).catch((error: unknown) => ({ status: `failed: ${(error as Error).message}` })),
          );
          const failures = results.filter((r) => r.status !== 'completed');
          if (failures.length > 0) console.error(`fleet: ${failures.length} of ${runs} runs did not complete, e.g. ${failures[0]!.status}`);
          const completed = results.filter((r) => r.status === 'completed').length;
          const workerCpuMs = workers.reduce((a, w) => a + cpuMs(w.process.pid), 0) - workerCpu0;
          const serverCpuMs = cpuMs(server.process.pid) - serverCpu0;
          const store1 = await store.size();
          const scheduleToClose: number[] = [];
          const startToClose: number[] = [];
          const runLatency: number[] = [];
          let historyBytes = 0;
          let first = Number.POSITIVE_INFINITY;
          let last = 0;
          let toolCalls = 0;
          await mapPool(handles, CLIENT_CONCURRENCY, async (h) => {
            const history = await h.fetchHistory();
            historyBytes += temporal.api.history.v1.History.encode(history).finish().length;
            const events = history.events ?? [];
            const scheduled = new Map<string, number>();
            const started = new Map<string, number>();
            const runStart = millis(events[0]?.eventTime);
            const runEnd = millis(events.at(-1)?.eventTime);
            first = Math.min(first, runStart);
            last = Math.max(last, runEnd);
            runLatency.push(runEnd - runStart);
            for (const e of events) {
              const id = String(e.eventId);
              const s = e.activityTaskScheduledEventAttributes;
              if (s && (FLEET_TOOL_NAMES as readonly string[]).includes(s.activityType?.name ?? '')) scheduled.set(id, millis(e.eventTime));
              const st = e.activityTaskStartedEventAttributes;
              if (st && scheduled.has(String(st.scheduledEventId))) started.set(String(st.scheduledEventId), millis(e.eventTime));
              const done = e.activityTaskCompletedEventAttributes;
              if (done && scheduled.has(String(done.scheduledEventId))) {
                const key = String(done.scheduledEventId);
                scheduleToClose.push(millis(e.eventTime) - scheduled.get(key)!);
                if (started.has(key)) startToClose.push(millis(e.eventTime) - started.get(key)!);
                toolCalls += 1;
              }
            }
          });
          rows.push({
            store: kind === 'sqlite' ? 'SQLite' : 'PostgreSQL',
            runs,
            completed,
            seconds: (last - first) / 1000,
            scheduleToClose,
            startToClose,
            runLatency,
            store0,
            store1,
            historyBytes,
            toolCalls,
            workerCpuMs,
            serverCpuMs,
          });
          console.error(`fleet: ${kind} ${runs} runs done (${completed} completed, ${toolCalls} tool calls, ${((last - first) / 1000).toFixed(1)} s)`);
        }
      } finally {
        await Promise.all(workers.map((w) => w.stop()));
        await store.close();
      }
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => console.error('cleanup:', error));
    rmSync(dir, { recursive: true, force: true });
  }

  heading(
    `bench:fleet: concurrent agent runs of ${CALLS_PER_RUN} tool calls each on ${WORKERS} worker processes (ttc worker), one ${SERVER === 'memory' ? 'in-memory' : 'persistent'} dev server, one store`,
  );
  printHeaderLines(header);
  console.log('');
  table(
    [
      'store',
      'runs',
      'completed',
      'tool calls',
      'wall s',
      'tool calls/s',
      'call p50 ms (scheduled→done)',
      'call p99 ms (scheduled→done)',
      'call p50 ms (started→done)',
      'call p99 ms (started→done)',
      'run p50 ms',
      'run p99 ms',
      'checkpoint rows per call',
      'conversation rows per call',
      'store row bytes per call',
      'store page bytes per call',
      'history bytes per call',
      'worker CPU ms per call',
      'dev server CPU ms per call',
    ],
    rows.map((r) => {
      const per = (n: number): string => fixed(n / r.toolCalls, 0);
      return [
        r.store,
        r.runs,
        r.completed,
        r.toolCalls,
        fixed(r.seconds, 1),
        fixed(r.toolCalls / r.seconds, 0),
        fixed(quantile(r.scheduleToClose, 0.5), 0),
        fixed(quantile(r.scheduleToClose, 0.99), 0),
        fixed(quantile(r.startToClose, 0.5), 0),
        fixed(quantile(r.startToClose, 0.99), 0),
        fixed(quantile(r.runLatency, 0.5), 0),
        fixed(quantile(r.runLatency, 0.99), 0),
        fixed((r.store1.checkpointRows - r.store0.checkpointRows) / r.toolCalls, 2),
        fixed((r.store1.conversationRows - r.store0.conversationRows) / r.toolCalls, 2),
        per(r.store1.rowBytes - r.store0.rowBytes),
        per(r.store1.diskBytes - r.store0.diskBytes),
        per(r.historyBytes),
        fixed(r.workerCpuMs / r.toolCalls, 1),
        fixed(r.serverCpuMs / r.toolCalls, 1),
      ];
    }),
  );
  console.log(
    "\nwall s: first run started to last run closed (server event times). call latency: a tool activity from ActivityTaskScheduled (or Started) to ActivityTaskCompleted. run: WorkflowExecutionStarted to the close event. Rows and bytes per call: the store tables after the size minus before, over its tool calls (conversation rows are the runs' conversations kept in the store). History bytes: the runs' histories as stored by the server, protobuf-encoded, over their tool calls. CPU ms per call: user + system time of the worker processes (both) and of the dev server while the size ran (/proc), over its tool calls: the whole run's work (model turns, workflow tasks) is charged to its 3 tool calls.",
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
