/**
 * `npm run bench:overhead`: what the fence costs per tool call, against honest
 * baselines, side by side in one run.
 *
 *  1. The same workflow with N sequential tool calls as plain activities and as fenced
 *     activities (SQLite store, PostgreSQL store), on two Temporal dev servers at once: one
 *     persistent (`--db-filename`, what `ttc dev` runs) and one in-memory (no database file,
 *     where a plain activity is fastest, so the store's share shows). Rounds are interleaved
 *     (every server × variant once per round) so drift hits all alike. Per server and variant:
 *     ms per call, ratio to plain on the same server, durable writes per fresh call (store
 *     operations that wrote: an insert that created, a compare-and-swap that won, a conversation
 *     append), transitions per fresh call (revision steps those writes carried: composed writes
 *     carry several), fsyncs per call the SQLite store counted, and store ms per call.
 *  2. The floor, in the same rounds: one fsync'd SQLite commit and one PostgreSQL autocommit
 *     insert (bench/durable-floor.ts); store ms per call is printed as a multiple of 2 × floor
 *     (a fresh call needs two durable writes: the claim and the result). And the floor in place:
 *     per store, the plain activity doing the protocol's own work (bench/protocol-work.ts) and
 *     making those two writes with the drivers alone before it returns, as a sequential variant of
 *     its own. Floor variants run the fenced call's workflow side (the same summary, input and a
 *     result shaped field for field like the fence's): only the activity's body differs. A
 *     fenced call can cost no less inside the worker; the floor stops a target when it misses the
 *     target by itself and the fenced call meets the target measured against the floor.
 *  3. Event-loop delay (`perf_hooks.monitorEventLoopDelay`, resolution 1 ms) of this process,
 *     which hosts the workers, and calls/s, while one worker runs 16 concurrent calls, per
 *     variant, in interleaved rounds (median round), beside a floor per store: the activity
 *     doing the protocol's work and a fresh call's two writes with the driver alone (bench:peers'
 *     raw floor, `bench/peers/raw-floors.ts`); then the fence alone (its activity through
 *     MockActivityEnvironment, no Temporal) and the store's two writes alone, at 16 concurrent
 *     calls. Each run's CPU per call by process (this one, the dev server, PostgreSQL:
 *     bench/process-cpu.ts), workflow tasks per call, and the CPU a fenced call may add to stay
 *     at 0.90 of plain's calls/s when every core is busy.
 *  4. Temporal requests per call: the in-memory server's `service_requests` counters (its
 *     Prometheus endpoint, `--metrics-port`) around one sequential workflow per variant.
 *  5. The performance targets (`TARGET_*` below), met or not.
 *
 * Options (environment): BENCH_CALLS calls per workflow (default 100), BENCH_ROUNDS (default 5),
 * BENCH_SERVERS (default `persistent,memory`), BENCH_FLOOR_WRITES floor samples per store per
 * round (default 100), BENCH_ELD_CALLS calls in the event-loop section (default 640),
 * BENCH_ELD_CONCURRENCY (default 16), BENCH_ELD_ROUNDS (interleaved rounds of it, default 3), BENCH_DEV_SERVER_ARGS (see
 * `DEV_SERVER_ARGS` below), BENCH_SKIP_POSTGRES=1, DATABASE_URL (else a private
 * PostgreSQL server is started), BENCH_MARKDOWN=1 (tables as Markdown, for docs/performance.md).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, openCheckpointStore, type CheckpointStore } from '../src';
import type { FencedToolResult, ToolCallInput } from '../src/activities/contract/contract';
import { startDevServer, type DevServer } from '../src/dev/dev-server';
import { createTestDatabase, startPostgres, type PostgresServer, type TestDatabase } from '../test/helpers/postgres';
import { freshCall } from './fresh-call';
import { protocolFresh } from './protocol-work';
import { floorWithProtocol, postgresFloor as rawPostgresFloor, sqliteFloor as rawSqliteFloor, type Contender } from './peers/raw-floors';
import { FLOOR_ROW_BYTES, postgresFloor, sqliteFloor, threadRoundTrip, timeEach, type FloorSampler } from './durable-floor';
import { fixed, heading, MARKDOWN, mean, median, printHeaderLines, runHeader, quantile, table, verdict } from './report';
import { freePort } from '../test/helpers/free-port';
import { countingStore, zero, type Counter } from './counting-store';
import { settledFrontendRequests, sum, WORKFLOW_TASK } from './frontend-requests';
import { machineBusyMs, postmasterPid, processCpuMs, processTreeCpuMs } from './process-cpu';

const CALLS = Number(process.env.BENCH_CALLS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SERVERS = (process.env.BENCH_SERVERS ?? 'persistent,memory').split(',').map((s) => s.trim()) as Array<'persistent' | 'memory'>;
const FLOOR_WRITES = Number(process.env.BENCH_FLOOR_WRITES ?? 100);
const ELD_CALLS = Number(process.env.BENCH_ELD_CALLS ?? 640);
const ELD_CONCURRENCY = Number(process.env.BENCH_ELD_CONCURRENCY ?? 16);
const ELD_ROUNDS = Number(process.env.BENCH_ELD_ROUNDS ?? 3);
const SKIP_POSTGRES = process.env.BENCH_SKIP_POSTGRES === '1';
/**
 * Diagnostic: wait this long before every store call, outside the timing (default 0). Store time
 * that drops with it was time the store call spent waiting for a CPU while the activity's start
 * kept the Temporal server and the worker busy, not time in the store.
 */
const STORE_DELAY_MS = Number(process.env.BENCH_STORE_DELAY_MS ?? 0);
/**
 * Extra arguments of `temporal server start-dev` for both servers, split on spaces. By default the
 * history service's transfer queue may read 1,000 times a second instead of 20: the dev server has
 * one history shard, and at 20 reads a second (burst 20) every sequential call waits up to 50 ms
 * for the read that hands the next workflow task to the worker, which hides what the fence costs
 * (docs/performance.md, bench:overhead). `BENCH_DEV_SERVER_ARGS=` (empty) runs the servers as
 * `ttc dev` does.
 */
const DEV_SERVER_ARGS = (process.env.BENCH_DEV_SERVER_ARGS ?? '--dynamic-config-value history.transferProcessorMaxPollRPS=1000').split(' ').filter((a) => a !== '');

/** The performance targets: what a fenced call may cost (docs/performance.md). */
const TARGET_RATIO_MEMORY = 1.1;
const TARGET_STORE_MS = { sqlite: 1.0, postgres: 2.0 } as const;
/** "never blocks the worker's event loop for longer than a few milliseconds": read as p99 ≤ 5 ms beyond the sampling tick. */
const TARGET_ELD_P99_MS = 5;
const TARGET_CONCURRENT_RATIO = 0.9;
/** Temporal requests per call the fence may add (any operation): a request on 1 call in 10 shows. */
const MAX_EXTRA_REQUESTS = 0.1;
/** Requests a worker makes for as long as it runs (task polls, its worker heartbeat), not per call. */
const WORKER_OPERATION = /^(Poll|RecordWorkerHeartbeat$)/;
/** monitorEventLoopDelay's sampling interval, ms: a sample is the time between two ticks, so an unblocked loop reads about this much. */
const ELD_RESOLUTION_MS = 1;

type StoreKind = 'sqlite' | 'postgres';

const storeName = (kind: StoreKind): string => (kind === 'sqlite' ? 'SQLite' : 'PostgreSQL');

/** What a row of the 16-in-flight section runs: the Temporal worker, the fence alone (no Temporal), or the store's two writes alone. */
type EldRole = 'temporal' | 'floor' | 'fence' | 'store';

/** CPU ms per call, by process: this one (workers, client, SQLite thread), the Temporal dev server, PostgreSQL (its postmaster and backends; NaN when not ours). */
interface CpuPerCall {
  readonly worker: number;
  readonly server: number;
  readonly postgres: number;
  /** Cores of the whole machine busy during the run (every process, ours or not). */
  readonly machineCores: number;
}

interface Variant {
  readonly server: 'persistent' | 'memory';
  readonly name: string;
  readonly kind: StoreKind | null;
  readonly queue: string;
  readonly counter: Counter;
  /** ms per call of each round. */
  readonly samples: number[];
  /** fsyncs the database saw during the measured rounds. */
  fsyncs: number;
  readonly client: Client;
  /** ms of the activity's own work (the fence, or the floor's writes) per call of the measured rounds, timed inside the worker; empty for plain. */
  readonly inActivity: number[];
}

interface StoreUnderTest {
  readonly kind: StoreKind;
  readonly store: CheckpointStore;
  /** fsyncs the database has done so far (SQLite: the store's commits; PostgreSQL: pg_stat_wal.wal_sync), or null when unknown. */
  fsyncs(): Promise<number | null>;
  readonly floor: FloorSampler;
  readonly floorSamples: number[];
  /** ms per fresh fenced call without Temporal, one at a time (the fence's activity through MockActivityEnvironment). */
  readonly fenceSamples: number[];
}

async function main(): Promise<void> {
  const header = runHeader(`BENCH_CALLS=${CALLS} BENCH_ROUNDS=${ROUNDS}${MARKDOWN ? ' BENCH_MARKDOWN=1' : ''} npm run bench:overhead`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = mkdtempSync(join(tmpdir(), 'ttc-bench-overhead-'));
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    // Side stores and their floors.
    const stores: StoreUnderTest[] = [];
    const sqlite = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    cleanups.push(() => sqlite.close());
    const sqliteStats = (sqlite as unknown as { stats?: () => { commits: number } }).stats;
    const sqliteFloorSampler = sqliteFloor(dir);
    cleanups.push(() => sqliteFloorSampler.close());
    stores.push({
      kind: 'sqlite',
      store: sqlite,
      fsyncs: async () => (typeof sqliteStats === 'function' ? sqliteStats.call(sqlite).commits : null),
      floor: sqliteFloorSampler,
      floorSamples: [],
      fenceSamples: [],
    });
    let pgDatabaseUrl: string | undefined;
    /** The private PostgreSQL server's postmaster (its CPU is accounted per call), null with DATABASE_URL. */
    let pgPid: number | null = null;
    if (!SKIP_POSTGRES) {
      let pgServer: PostgresServer | undefined;
      if (!process.env.DATABASE_URL) {
        pgServer = await startPostgres();
        cleanups.push(() => pgServer!.stop());
        pgPid = postmasterPid(join(pgServer.dir, 'data'));
      }
      const database: TestDatabase = await createTestDatabase(process.env.DATABASE_URL ?? pgServer!.url);
      cleanups.push(() => database.drop());
      pgDatabaseUrl = database.url;
      const postgres = await openCheckpointStore(database.url, { poolSize: ELD_CONCURRENCY });
      cleanups.push(() => postgres.close());
      const floor = await postgresFloor(database.url);
      cleanups.push(() => floor.close());
      // pg_stat_wal is reported by backends late (when idle a while, or at exit): not attributable to one round, so not counted here (bench:store reads it after closing its pool).
      stores.push({ kind: 'postgres', store: postgres, fsyncs: async () => null, floor, floorSamples: [], fenceSamples: [] });
    }

    /** bench:peers' raw floor of each store's database (two single-row writes with the driver alone), opened once. */
    const driverFloors = new Map<StoreKind, Contender>();
    const driverFloor = async (kind: StoreKind): Promise<Contender> => {
      let floor = driverFloors.get(kind);
      if (floor === undefined) {
        floor = kind === 'sqlite' ? rawSqliteFloor(mkdtempSync(join(dir, 'driver-floor-'))) : await rawPostgresFloor(pgDatabaseUrl!);
        driverFloors.set(kind, floor);
        cleanups.push(() => floor!.close());
      }
      return floor;
    };

    const echo = defineTool({
      name: 'echo',
      revision: 'v1',
      input: z.object({ i: z.number().int() }),
      async execute(input) {
        return { output: { i: input.i } };
      },
    });

    // The fence without Temporal, one fresh call at a time: the latency a fenced call adds at the least.
    const harness = new MockActivityEnvironment({ attempt: 1, activityType: 'echo', heartbeatTimeoutMs: 10_000 } as never);
    let fenceAloneCalls = 0;
    const fenceAlone = new Map(
      stores.map((s) => {
        const { echo: activity } = createToolActivities({ store: s.store, tools: [echo] }) as unknown as Record<'echo', (input: object) => Promise<unknown>>;
        return [
          s.kind,
          (n: number): Promise<number[]> =>
            timeEach(n, () => harness.run(activity, { tenant: 'bench', callId: `fence-alone-${(fenceAloneCalls += 1)}`, input: { i: fenceAloneCalls } })),
        ] as const;
      }),
    );
    const hop = threadRoundTrip();
    cleanups.push(() => hop.close());
    const hopSamples: number[] = [];

    // Dev servers, each with one worker per variant.
    const servers = new Map<string, DevServer>();
    const metricsUrls = new Map<string, string>();
    const variants: Variant[] = [];
    /** Sequential rounds only: per variant, the store whose floor writes its plain activity makes. */
    const floorVariants = new Map<Variant, StoreUnderTest>();
    /** Sequential rounds only, in-memory server: the fence's activity making a second fresh call after the first (ms of each, timed in place). */
    const againVariants: Array<{ variant: Variant; kind: StoreKind; second: number[] }> = [];
    /** Event-loop section only: per store, the activity doing the protocol's work and a fresh call's two writes with the driver alone. */
    const concurrentFloors: Array<{ variant: Variant; kind: StoreKind }> = [];
    /** While false (warm-up), calls timed in place are not recorded. */
    let recording = false;
    const timedInPlace = (activities: object, into: number[]) => {
      const activity = (activities as Record<'echo', (input: ToolCallInput) => Promise<unknown>>).echo;
      return async (input: ToolCallInput): Promise<unknown> => {
        const started = performance.now();
        try {
          return await activity(input);
        } finally {
          if (recording) into.push(performance.now() - started);
        }
      };
    };
    const workers: Worker[] = [];
    /** The workers of the sequential-only variants: shut down after the sequential rounds, so they do not share the event-loop section's process as idle pollers. */
    const sequentialWorkers: Worker[] = [];
    /** The workers of the event-loop section's floor variants: shut down after it, so their idle polls do not land in the request counts. */
    const floorWorkers: Worker[] = [];
    let current: Map<Variant, Counter> | null = null;
    for (const label of SERVERS) {
      const metricsPort = await freePort();
      const server = await startDevServer({
        ...(label === 'persistent' ? { dbFile: join(dir, 'temporal.db') } : {}),
        extraArgs: [...DEV_SERVER_ARGS, '--metrics-port', String(metricsPort)],
      });
      metricsUrls.set(label, `http://127.0.0.1:${metricsPort}/metrics`);
      cleanups.push(() => server.stop({ signal: 'SIGKILL' }));
      servers.set(label, server);
      const connection = await NativeConnection.connect({ address: server.address });
      cleanups.push(() => connection.close());
      const client = new Client({ connection: await Connection.connect({ address: server.address }) });
      cleanups.push(() => client.connection.close());
      const variantOf = (name: string, kind: StoreKind | null, queue: string): Variant => ({
        server: label,
        name,
        kind,
        queue: `bench-${label}-${queue}`,
        counter: zero(),
        samples: [],
        fsyncs: 0,
        client,
        inActivity: [],
      });
      const workerFor = (variant: Variant, activities: object): Promise<Worker> =>
        Worker.create({ connection, taskQueue: variant.queue, workflowsPath: require.resolve('./overhead-workflows'), activities });
      for (const s of stores) {
        // The floor in place: a plain activity that does the protocol's own work (no store) and makes the two durable writes of a fresh call with the drivers alone.
        const variant = variantOf(`plain + protocol + 2 floor writes (${storeName(s.kind)})`, null, `floor-${s.kind}`);
        floorVariants.set(variant, s);
        let n = 0;
        sequentialWorkers.push(
          await workerFor(variant, {
            echo: async (input: ToolCallInput) => {
              protocolFresh(`floor-${s.kind}-${(n += 1)}`);
              const started = performance.now();
              await s.floor.sample(2);
              if (recording) variant.inActivity.push(performance.now() - started);
              return resultShapedLikeTheFence(input);
            },
          }),
        );
      }
      for (const s of label === (SERVERS.includes('memory') ? 'memory' : SERVERS[0]) ? stores : []) {
        // The floor at 16 in flight: the protocol's work and a fresh call's two writes with the drivers alone (bench:peers' raw floor), in a plain activity.
        const variant = variantOf(`plain + protocol + 2 driver writes (${storeName(s.kind)})`, null, `driver-floor-${s.kind}`);
        concurrentFloors.push({ variant, kind: s.kind });
        const floor = floorWithProtocol(await driverFloor(s.kind));
        floorWorkers.push(
          await workerFor(variant, {
            echo: async (input: ToolCallInput) => {
              await floor.fresh();
              return resultShapedLikeTheFence(input);
            },
          }),
        );
      }
      for (const s of label === 'memory' ? stores : []) {
        // The fence warm: after the call the workflow asked for, a second fresh call in the same activity.
        const variant = variantOf(`fenced, then a second fresh call (${storeName(s.kind)})`, null, `again-${s.kind}`);
        const again = { variant, kind: s.kind, second: [] as number[] };
        againVariants.push(again);
        const fenced = createToolActivities({ store: s.store, tools: [echo] });
        const first = timedInPlace(fenced, variant.inActivity);
        const second = timedInPlace(fenced, again.second);
        sequentialWorkers.push(
          await workerFor(variant, {
            echo: async (input: ToolCallInput) => {
              const result = await first(input);
              await second({ ...input, callId: `${input.callId}-again` });
              return result;
            },
          }),
        );
      }
      for (const s of [null, ...stores]) {
        const variant = variantOf(s === null ? 'plain activity' : `fenced (${storeName(s.kind)})`, s?.kind ?? null, s?.kind ?? 'plain');
        variants.push(variant);
        const counted = s === null ? null : countingStore(s.store, () => current?.get(variant) ?? variant.counter, STORE_DELAY_MS);
        workers.push(
          await workerFor(variant, {
            plainTool: async (input: { i: number }) => ({ ok: true as const, output: { i: input.i } }),
            ...(counted ? { echo: timedInPlace(createToolActivities({ store: counted, tools: [echo] }), variant.inActivity) } : {}),
          }),
        );
      }
    }
    const running = workers.map((w) => w.run());
    const sequentialRunning = sequentialWorkers.map((w) => w.run());
    const floorRunning = floorWorkers.map((w) => w.run());
    const shutDown = async (these: Worker[], runs: Array<Promise<void>>): Promise<void> => {
      for (const w of these) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(runs);
    };
    cleanups.push(() => shutDown(workers, running));
    cleanups.push(() => shutDown(sequentialWorkers, sequentialRunning));
    cleanups.push(() => shutDown(floorWorkers, floorRunning));

    const runWorkflow = async (v: Variant, type: 'sequentialCalls' | 'concurrentCalls', args: unknown[], tag: string): Promise<number> => {
      const started = performance.now();
      await v.client.workflow.execute(type, {
        taskQueue: v.queue,
        workflowId: `${v.queue}-${tag}-${Date.now()}`,
        // Floor variants run the fenced call's workflow side (its summary, input and result shapes); only the activity's body differs.
        args: [
          v.kind !== null || againVariants.some((a) => a.variant === v) || floorVariants.has(v) || concurrentFloors.some((f) => f.variant === v) ? 'fenced' : 'plain',
          ...args,
        ],
      });
      return performance.now() - started;
    };

    // Warm-up (workflow bundle, connections, JIT), then the interleaved rounds.
    const scratch = new Map<Variant, Counter>(variants.map((v) => [v, zero()]));
    current = scratch;
    const sequentialOnly = [...floorVariants.keys(), ...againVariants.map((a) => a.variant)];
    for (const v of [...variants, ...sequentialOnly, ...concurrentFloors.map((f) => f.variant)]) await runWorkflow(v, 'sequentialCalls', [10], 'warmup');
    for (const s of stores) await s.floor.sample(10);
    for (const s of stores) await fenceAlone.get(s.kind)!(10);
    await hop.sample(10);
    current = null;
    recording = true;
    for (let round = 0; round < ROUNDS; round += 1) {
      // Each round starts at another variant (the floor and "again" variants among them), so none always runs first or last.
      for (const v of rotated([...variants, ...sequentialOnly], round)) {
        const counted = variants.includes(v);
        const store = counted ? stores.find((s) => s.kind === v.kind) : undefined;
        const before = await store?.fsyncs();
        v.samples.push((await runWorkflow(v, 'sequentialCalls', [CALLS], `r${round}`)) / CALLS);
        const after = await store?.fsyncs();
        if (!counted) continue;
        if (typeof before === 'number' && typeof after === 'number') v.fsyncs += after - before;
        else v.fsyncs = Number.NaN;
      }
      for (const s of stores) s.floorSamples.push(...(await s.floor.sample(FLOOR_WRITES)));
      for (const s of stores) s.fenceSamples.push(...(await fenceAlone.get(s.kind)!(FLOOR_WRITES)));
      hopSamples.push(...(await hop.sample(FLOOR_WRITES)));
    }

    recording = false;
    await shutDown(sequentialWorkers, sequentialRunning);

    // Event-loop delay under 16 concurrent calls, on the in-memory server when there is one; then
    // the stores alone (16 concurrent fresh calls' writes, no Temporal), which isolates the store.
    const eldServer = SERVERS.includes('memory') ? 'memory' : SERVERS[0]!;
    const eld: Array<{
      name: string;
      role: EldRole;
      kind: StoreKind | null;
      callsPerSecond: number;
      p50: number;
      p99: number;
      max: number;
      storeMs: number;
      cpu: CpuPerCall;
      workflowTasks: number;
    }> = [];
    const serverPid = servers.get(eldServer)!.process.pid!;
    const measureDelay = async (work: () => Promise<void>): Promise<{ ms: number; p50: number; p99: number; max: number; cpu: CpuPerCall }> => {
      const histogram = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
      const cpuBefore = { worker: process.cpuUsage(), server: processCpuMs(serverPid), postgres: pgPid === null ? 0 : processTreeCpuMs(pgPid), machine: machineBusyMs() };
      histogram.enable();
      const started = performance.now();
      await work();
      const ms = performance.now() - started;
      histogram.disable();
      const worker = process.cpuUsage(cpuBefore.worker);
      const cpu: CpuPerCall = {
        worker: (worker.user + worker.system) / 1000 / ELD_CALLS,
        server: (processCpuMs(serverPid) - cpuBefore.server) / ELD_CALLS,
        postgres: pgPid === null ? Number.NaN : (processTreeCpuMs(pgPid) - cpuBefore.postgres) / ELD_CALLS,
        machineCores: (machineBusyMs() - cpuBefore.machine) / ms,
      };
      return { ms, p50: histogram.percentile(50) / 1e6, p99: histogram.percentile(99) / 1e6, max: histogram.max / 1e6, cpu };
    };
    // Interleaved rounds (every variant once per round); per variant the median round of calls/s and of the delay.
    const eldRounds = new Map<Variant, Array<{ callsPerSecond: number; p50: number; p99: number; max: number; storeMs: number; cpu: CpuPerCall; workflowTasks: number }>>();
    const eldVariants = [...variants.filter((x) => x.server === eldServer), ...concurrentFloors.map((f) => f.variant)];
    for (let round = 0; round < ELD_ROUNDS; round += 1) {
      for (const v of rotated(eldVariants, round)) {
        const counter = zero();
        const tasksBefore = await settledFrontendRequests(metricsUrls.get(eldServer)!);
        current = new Map([[v, counter]]);
        const d = await measureDelay(async () => void (await runWorkflow(v, 'concurrentCalls', [ELD_CALLS, ELD_CONCURRENCY], `eld${round}`)));
        current = null;
        const tasksAfter = await settledFrontendRequests(metricsUrls.get(eldServer)!);
        const workflowTasks = ((tasksAfter.get(WORKFLOW_TASK) ?? 0) - (tasksBefore.get(WORKFLOW_TASK) ?? 0)) / ELD_CALLS;
        eldRounds.set(v, [
          ...(eldRounds.get(v) ?? []),
          { callsPerSecond: ELD_CALLS / (d.ms / 1000), p50: d.p50, p99: d.p99, max: d.max, storeMs: counter.storeMs / ELD_CALLS, cpu: d.cpu, workflowTasks },
        ]);
      }
    }
    for (const v of eldVariants) {
      const rounds = eldRounds.get(v)!;
      const floor = concurrentFloors.find((f) => f.variant === v);
      eld.push({
        name: `${v.name}, Temporal worker`,
        role: floor === undefined ? 'temporal' : 'floor',
        kind: floor?.kind ?? v.kind,
        callsPerSecond: median(rounds.map((r) => r.callsPerSecond)),
        p50: median(rounds.map((r) => r.p50)),
        p99: median(rounds.map((r) => r.p99)),
        max: Math.max(...rounds.map((r) => r.max)),
        storeMs: median(rounds.map((r) => r.storeMs)),
        cpu: {
          worker: median(rounds.map((r) => r.cpu.worker)),
          server: median(rounds.map((r) => r.cpu.server)),
          postgres: median(rounds.map((r) => r.cpu.postgres)),
          machineCores: median(rounds.map((r) => r.cpu.machineCores)),
        },
        workflowTasks: median(rounds.map((r) => r.workflowTasks)),
      });
    }
    await shutDown(floorWorkers, floorRunning);
    // Temporal requests per call: the in-memory server's frontend request counters around one sequential workflow per variant.
    const requests = new Map<Variant, Map<string, number>>();
    for (const v of eldVariants.filter((x) => variants.includes(x))) {
      const before = await settledFrontendRequests(metricsUrls.get(eldServer)!);
      current = new Map([[v, zero()]]); // not counted as the rounds' store work
      await runWorkflow(v, 'sequentialCalls', [CALLS], 'requests');
      current = null;
      const after = await settledFrontendRequests(metricsUrls.get(eldServer)!);
      requests.set(v, new Map([...after].map(([op, n]) => [op, (n - (before.get(op) ?? 0)) / CALLS])));
    }
    // Without Temporal, 16 concurrent fresh calls: the fence (the same tool's activity through
    // MockActivityEnvironment), then the store's two writes alone.
    const withoutTemporal = async (
      s: StoreUnderTest,
      role: EldRole,
      name: string,
      start: (store: CheckpointStore) => (client: number, i: number) => Promise<unknown>,
    ): Promise<void> => {
      const counter = zero();
      const call = start(countingStore(s.store, () => counter, STORE_DELAY_MS));
      let next = 0;
      const d = await measureDelay(async () => {
        await Promise.all(
          Array.from({ length: ELD_CONCURRENCY }, async (_, client) => {
            while (next < ELD_CALLS) await call(client, next++);
          }),
        );
      });
      eld.push({
        name: `${storeName(s.kind)}${name}`,
        role,
        kind: s.kind,
        callsPerSecond: ELD_CALLS / (d.ms / 1000),
        p50: d.p50,
        p99: d.p99,
        max: d.max,
        storeMs: counter.storeMs / ELD_CALLS,
        cpu: d.cpu,
        workflowTasks: Number.NaN,
      });
    };
    for (const s of stores) {
      await withoutTemporal(s, 'fence', ': the fence alone (fresh calls through the activity, no Temporal)', (store) => {
        const { echo: fenced } = createToolActivities({ store, tools: [echo] }) as unknown as Record<'echo', (input: object) => Promise<unknown>>;
        return (_, i) => harness.run(fenced, { tenant: 'bench', callId: `fence-alone-${s.kind}-${i}`, input: { i } });
      });
    }
    for (const s of stores) {
      await withoutTemporal(s, 'store', ' store alone (the 2 writes of a fresh call, no Temporal)', (store) => (client, i) => freshCall(store, client, i));
    }

    // Report.
    const floorVariantOf = (server: Variant['server'], kind: StoreKind): Variant => [...floorVariants].find(([v, st]) => v.server === server && st.kind === kind)![0];
    const calls = CALLS * ROUNDS;
    const floorOf = new Map(stores.map((s) => [s.kind, mean(s.floorSamples)]));
    heading(
      `bench:overhead: ${CALLS} sequential tool calls per workflow × ${ROUNDS} interleaved rounds on ${SERVERS.map((s) => `${s === 'memory' ? 'an in-memory' : 'a persistent'} dev server (${servers.get(s)!.address})`).join(' and ')}`,
    );
    printHeaderLines(header);
    console.log(`- dev server arguments: ${DEV_SERVER_ARGS.length > 0 ? DEV_SERVER_ARGS.join(' ') : '(none: as `ttc dev` runs it)'}`);
    console.log('');
    table(
      [
        'server',
        'variant',
        'ms per call (median of rounds)',
        'min',
        'max',
        'ratio to plain',
        'durable writes per fresh call',
        'transitions per fresh call',
        'fsyncs per call (SQLite commits)',
        'store ms per call',
        'store ms ÷ (2 × floor)',
      ],
      [...variants, ...sequentialOnly].map((v) => {
        const plain = median(variants.find((p) => p.server === v.server && p.kind === null)!.samples);
        const floor = v.kind ? floorOf.get(v.kind)! : Number.NaN;
        const floorWrites = floorVariants.get(v);
        const again = againVariants.find((a) => a.variant === v);
        if (floorWrites !== undefined || again !== undefined) {
          const ms = median(v.samples);
          const name = v.server === 'memory' ? 'in-memory' : 'persistent';
          const writes = floorWrites !== undefined ? '2' : '4';
          return [name, v.name, fixed(ms), fixed(Math.min(...v.samples)), fixed(Math.max(...v.samples)), fixed(ms / plain, 3), writes, '–', '–', '–', '–'];
        }
        return [
          v.server === 'memory' ? 'in-memory' : 'persistent',
          v.name,
          fixed(median(v.samples)),
          fixed(Math.min(...v.samples)),
          fixed(Math.max(...v.samples)),
          fixed(median(v.samples) / plain, 3),
          v.kind ? fixed(v.counter.writes / calls) : '0',
          v.kind ? fixed(v.counter.transitions / calls) : '0',
          v.kind ? fixed(v.fsyncs / calls) : '0',
          v.kind ? fixed(v.counter.storeMs / calls, 3) : '0',
          v.kind ? `${fixed(v.counter.storeMs / calls / (2 * floor), 2)}×` : '–',
        ];
      }),
    );
    console.log(
      `\nplain + protocol + 2 floor writes: the plain activity, doing first the protocol's own work for a fresh call (bench/protocol-work.ts: no store, no encoding) and then the two durable writes of a fresh call with the drivers alone (bench/durable-floor.ts): less than a fenced call can cost inside the worker. store ms per call: wall time inside store calls (reads included) per call; every call is fresh (a new call id). durable writes: an insert that created, a compare-and-swap that won, a conversation append. transitions: the revision steps they carried. fsyncs (database): SQLite commits the store counted (– for PostgreSQL: pg_stat_wal is reported late, see bench:store).`,
    );

    heading('Where store time goes: per store method, per fresh call (all servers, measured rounds)');
    const profile: Array<Array<string | number>> = [];
    for (const kind of stores.map((x) => x.kind)) {
      const merged = new Map<string, { calls: number; ms: number }>();
      let n = 0;
      for (const v of variants.filter((x) => x.kind === kind)) {
        n += calls;
        for (const [name, m] of v.counter.byMethod) {
          const into = merged.get(name) ?? { calls: 0, ms: 0 };
          into.calls += m.calls;
          into.ms += m.ms;
          merged.set(name, into);
        }
      }
      for (const [name, m] of [...merged].sort((a, b) => b[1].ms - a[1].ms)) {
        profile.push([storeName(kind), name, fixed(m.calls / n), fixed(m.ms / m.calls, 3), fixed(m.ms / n, 3), `${fixed(m.ms / m.calls / floorOf.get(kind)!, 2)}×`]);
      }
    }
    table(['store', 'method', 'calls per fresh call', 'ms per method call', 'ms per fresh call', 'method call ÷ floor'], profile);

    heading(
      `The floor: one durable write on this machine (${FLOOR_WRITES} writes per store per round, ${ROUNDS} rounds, interleaved with the rounds above; ${FLOOR_ROW_BYTES}-byte rows)`,
    );
    table(
      ['write', 'mean ms', 'p50 ms', 'p99 ms', '2 × floor (mean) ms'],
      stores.map((s) => [
        s.floor.label,
        fixed(mean(s.floorSamples), 3),
        fixed(median(s.floorSamples), 3),
        fixed(quantile(s.floorSamples, 0.99), 3),
        fixed(2 * mean(s.floorSamples), 3),
      ]),
    );
    table(
      ['round trip', 'mean ms', 'p50 ms', 'p99 ms', '2 × (mean) ms'],
      [[hop.label, fixed(mean(hopSamples), 3), fixed(median(hopSamples), 3), fixed(quantile(hopSamples, 0.99), 3), fixed(2 * mean(hopSamples), 3)]],
    );

    heading(`A fresh fenced call without Temporal, one at a time (${FLOOR_WRITES} calls per store per round, interleaved with the rounds above)`);
    const plainMemory = variants.find((v) => v.server === 'memory' && v.kind === null);
    table(
      [
        'store',
        'ms per call (mean)',
        'p50 ms',
        'its floor: 2 writes + 2 thread round trips, ms',
        'the rest (codec, fence, activity), ms',
        'fenced − plain on the in-memory server, ms',
        'plain + protocol + 2 floor writes − plain there, ms',
      ],
      stores.map((s) => {
        const floor = 2 * mean(s.floorSamples) + (s.kind === 'sqlite' ? 2 * mean(hopSamples) : 0);
        const fenced = variants.find((v) => v.server === 'memory' && v.kind === s.kind);
        return [
          storeName(s.kind),
          fixed(mean(s.fenceSamples), 3),
          fixed(median(s.fenceSamples), 3),
          fixed(floor, 3),
          fixed(mean(s.fenceSamples) - floor, 3),
          fenced && plainMemory ? fixed(median(fenced.samples) - median(plainMemory.samples), 3) : '–',
          plainMemory ? fixed(median(floorVariantOf('memory', s.kind).samples) - median(plainMemory.samples), 3) : '–',
        ];
      }),
    );
    if (plainMemory !== undefined) {
      heading(`The fence inside the worker (in-memory server, the sequential rounds above; ms per call, mean)`);
      table(
        [
          'store',
          'the fence alone, no Temporal',
          "the fenced activity's function, timed inside the worker",
          'in the same activity, a second fresh call: first / second',
          "the floor's 2 writes, timed inside the worker",
          'fenced − plain',
          'plain + protocol + 2 floor writes − plain',
        ],
        stores.map((s) => {
          const fenced = variants.find((v) => v.server === 'memory' && v.kind === s.kind)!;
          const again = againVariants.find((a) => a.kind === s.kind)!;
          return [
            storeName(s.kind),
            fixed(mean(s.fenceSamples), 3),
            fixed(mean(fenced.inActivity), 3),
            `${fixed(mean(again.variant.inActivity), 3)} / ${fixed(mean(again.second), 3)}`,
            fixed(mean(floorVariantOf('memory', s.kind).inActivity), 3),
            fixed(median(fenced.samples) - median(plainMemory.samples), 3),
            fixed(median(floorVariantOf('memory', s.kind).samples) - median(plainMemory.samples), 3),
          ];
        }),
      );
      console.log(
        `\nThe first fresh call of an activity runs where the worker has just handled the workflow task that scheduled it and the dev server the activity's start; a second fresh call in the same activity, right after, runs the same code warm. plain + protocol + 2 floor writes: less than a fenced call adds inside the worker.`,
      );
      console.log(
        `\nfenced/plain ≤ ${TARGET_RATIO_MEMORY.toFixed(2)} on the in-memory server allows a fenced call ${fixed((TARGET_RATIO_MEMORY - 1) * median(plainMemory.samples), 3)} ms more than plain's ${fixed(median(plainMemory.samples), 3)} ms; the two floor writes alone, made inside the worker's activity, take ${stores.map((s) => `${fixed(mean(floorVariantOf('memory', s.kind).inActivity), 3)} ms (${storeName(s.kind)})`).join(', ')} there, and with the protocol's work they add ${stores.map((s) => `${fixed(median(floorVariantOf('memory', s.kind).samples) - median(plainMemory.samples), 3)} ms`).join(', ')} to a call.`,
      );
    }

    heading(
      `Event-loop delay of the worker process under ${ELD_CONCURRENCY} concurrent calls (${ELD_CALLS} calls; Temporal rows on the ${eldServer === 'memory' ? 'in-memory' : 'persistent'} dev server; monitorEventLoopDelay of this process, which hosts the workers of the plain and fenced variants and the client; a sample is the interval between two 1 ms ticks, so an unblocked loop reads about 1 ms)`,
    );
    table(
      ['what runs', 'calls/s', 'store ms per call (overlapping calls)', 'tick interval p50 ms', 'p99 ms', 'max ms', 'delay p99 ms (beyond the 1 ms tick)'],
      eld.map((e) => [
        e.name,
        fixed(e.callsPerSecond, 0),
        e.role === 'floor' ? '–' : e.kind ? fixed(e.storeMs, 3) : '0',
        fixed(e.p50),
        fixed(e.p99),
        fixed(e.max),
        fixed(e.p99 - ELD_RESOLUTION_MS),
      ]),
    );

    heading(
      `CPU per call under ${ELD_CONCURRENCY} concurrent calls, by process (the runs above; /proc/<pid>/stat of the dev server and of PostgreSQL's postmaster and backends, process.cpuUsage of this one)`,
    );
    const allCpu = (c: CpuPerCall): number => c.worker + c.server + (Number.isNaN(c.postgres) ? 0 : c.postgres);
    table(
      ['what runs', 'calls/s', 'workflow tasks per call', 'this process ms', 'dev server ms', 'PostgreSQL ms', 'all ms', 'cores busy (these)', 'cores busy (machine)'],
      eld.map((e) => [
        e.name,
        fixed(e.callsPerSecond, 0),
        Number.isNaN(e.workflowTasks) ? '–' : fixed(e.workflowTasks),
        fixed(e.cpu.worker, 3),
        e.role === 'temporal' || e.role === 'floor' ? fixed(e.cpu.server, 3) : '–',
        Number.isNaN(e.cpu.postgres) ? '–' : fixed(e.cpu.postgres, 3),
        fixed(allCpu(e.cpu), 3),
        fixed((allCpu(e.cpu) * e.callsPerSecond) / 1000, 2),
        fixed(e.cpu.machineCores, 2),
      ]),
    );
    const cpuPlain = eld.find((x) => x.kind === null && x.role === 'temporal');
    if (cpuPlain !== undefined) {
      // Where every core is busy, calls/s is cores ÷ CPU per call: reaching a ratio r of plain's calls/s allows plain's CPU per call × (1/r − 1) more.
      const budget = allCpu(cpuPlain.cpu) * (1 / TARGET_CONCURRENT_RATIO - 1);
      console.log(
        `\nWith every core busy, ≥ ${TARGET_CONCURRENT_RATIO.toFixed(2)} of plain's calls/s allows a fenced call ${fixed(budget, 3)} ms more CPU than a plain one (all processes; plain: ${fixed(allCpu(cpuPlain.cpu), 3)} ms at ${fixed((allCpu(cpuPlain.cpu) * cpuPlain.callsPerSecond) / 1000, 2)} cores busy).`,
      );
      for (const e of eld.filter((x) => x.kind !== null && x.role === 'temporal')) {
        const fence = eld.find((x) => x.kind === e.kind && x.role === 'fence');
        const store = eld.find((x) => x.kind === e.kind && x.role === 'store');
        console.log(
          `- ${e.name}: ${fixed(allCpu(e.cpu) - allCpu(cpuPlain.cpu), 3)} ms more; without Temporal, the fence on the same store costs ${fixed(allCpu(fence!.cpu), 3)} ms per call, its two writes alone ${fixed(allCpu(store!.cpu), 3)} ms${allCpu(fence!.cpu) > budget ? ': the fence alone is over the budget' : ''}.`,
        );
      }
    }

    heading(`Temporal frontend requests per call (in-memory server's service_requests, one workflow of ${CALLS} sequential calls per variant)`);
    const requestVariants = [...requests.keys()];
    const operations = [...new Set(requestVariants.flatMap((v) => [...requests.get(v)!].filter(([, n]) => n > 0).map(([op]) => op)))].sort();
    table(
      ['operation', ...requestVariants.map((v) => v.name)],
      [...operations.map((op) => [op, ...requestVariants.map((v) => fixed(requests.get(v)!.get(op) ?? 0))]), ['all', ...requestVariants.map((v) => fixed(sum(requests.get(v)!)))]],
    );

    heading('Targets');
    /** [target, measured, met, what stops it when a measured floor is over the target]. */
    const targets: Array<[string, string, boolean, string?]> = [];
    const memoryPlain = variants.find((v) => v.server === 'memory' && v.kind === null);
    for (const v of variants.filter((x) => x.kind !== null)) {
      if (v.server === 'memory' && memoryPlain) {
        const ratio = median(v.samples) / median(memoryPlain.samples);
        const floorRatio = median(floorVariantOf('memory', v.kind!).samples) / median(memoryPlain.samples);
        targets.push([
          `${v.name}: fenced/plain ≤ ${TARGET_RATIO_MEMORY.toFixed(2)} on the in-memory server`,
          `${fixed(ratio, 3)} (plain + protocol + 2 floor writes: ${fixed(floorRatio, 3)})`,
          ratio <= TARGET_RATIO_MEMORY,
          floorRatio <= TARGET_RATIO_MEMORY
            ? undefined
            : ratio <= floorRatio * TARGET_RATIO_MEMORY
              ? `floor shown: the protocol's work and the two writes alone are over it, and the fenced call is within ${TARGET_RATIO_MEMORY.toFixed(2)}× of them (${fixed(ratio / floorRatio, 3)})`
              : `no floor shown: plain + protocol + 2 writes (${fixed(floorRatio, 3)}) is over the target, but the fenced call is ${fixed(ratio / floorRatio, 3)}× of it`,
        ]);
      }
    }
    for (const v of variants.filter((x) => x.kind !== null && x.server === (SERVERS.includes('memory') ? 'memory' : SERVERS[0]))) {
      const storeMs = v.counter.storeMs / calls;
      targets.push([`${v.name}: store ms per fresh call ≤ ${TARGET_STORE_MS[v.kind!].toFixed(1)}`, fixed(storeMs, 3), storeMs <= TARGET_STORE_MS[v.kind!]]);
      const writes = v.counter.writes / calls;
      targets.push([`${v.name}: ≤ 2 durable writes per fresh call`, fixed(writes), writes <= 2]);
    }
    const eldPlain = eld.find((x) => x.kind === null && x.role === 'temporal');
    for (const e of eld.filter((x) => x.kind !== null && x.role === 'temporal')) {
      if (eldPlain === undefined) break;
      const ratio = e.callsPerSecond / eldPlain.callsPerSecond;
      const floor = eld.find((x) => x.kind === e.kind && x.role === 'floor');
      const floorRatio = floor === undefined ? Number.NaN : floor.callsPerSecond / eldPlain.callsPerSecond;
      targets.push([
        `${e.name}: ≥ ${TARGET_CONCURRENT_RATIO.toFixed(2)} of plain's calls/s with ${ELD_CONCURRENCY} in flight`,
        `${fixed(ratio, 3)} (plain + protocol + 2 driver writes: ${fixed(floorRatio, 3)})`,
        ratio >= TARGET_CONCURRENT_RATIO,
        !(floorRatio < TARGET_CONCURRENT_RATIO)
          ? undefined
          : ratio >= floorRatio * TARGET_CONCURRENT_RATIO
            ? `floor shown: the protocol's work and two driver writes alone are under it, and the fenced call reaches ${fixed(ratio / floorRatio, 3)} of them (≥ ${TARGET_CONCURRENT_RATIO.toFixed(2)})`
            : `no floor shown: plain + protocol + 2 driver writes (${fixed(floorRatio, 3)}) is under the target, but the fenced call reaches only ${fixed(ratio / floorRatio, 3)} of it`,
      ]);
    }
    const plainRequests = requestVariants.find((v) => v.kind === null);
    // A call's own requests: a worker's polls and its worker heartbeat come with the time it runs, not with what a call does.
    const callOperations = operations.filter((op) => !WORKER_OPERATION.test(op));
    for (const v of requestVariants.filter((x) => x.kind !== null)) {
      if (plainRequests === undefined) break;
      const more = (op: string) => (requests.get(v)!.get(op) ?? 0) - (requests.get(plainRequests)!.get(op) ?? 0);
      const extra = callOperations.reduce((total, op) => total + more(op), 0);
      const extraOps = callOperations.filter((op) => more(op) >= MAX_EXTRA_REQUESTS);
      const workerExtra = sum(requests.get(v)!) - sum(requests.get(plainRequests)!) - extra;
      targets.push([
        `${v.name}: no Temporal request per call beyond the plain activity's (at most ${MAX_EXTRA_REQUESTS} more per call, any operation but the worker's polls and heartbeat)`,
        `${fixed(extra, 2)} more per call${extraOps.length > 0 ? ` (${extraOps.join(', ')})` : ''}; polls and worker heartbeats ${fixed(workerExtra, 2)} more`,
        extra < MAX_EXTRA_REQUESTS && extraOps.length === 0,
      ]);
    }
    const plainDelay = eldPlain === undefined ? Number.NaN : eldPlain.p99 - ELD_RESOLUTION_MS;
    for (const e of eld.filter((x) => x.kind !== null && x.role !== 'floor')) {
      const delay = e.p99 - ELD_RESOLUTION_MS;
      // The floor of a Temporal row: a worker doing the protocol's work and two driver writes on the same database (its processes
      // compete for the same cores). Not for SQLite: its driver commits on the calling thread, so its fsyncs hold the loop, which a
      // fence need not do (the store commits on its own thread); a plain worker is the only floor there.
      const driverFloor = eld.find((x) => x.kind === e.kind && x.role === 'floor');
      const floor = e.kind === 'sqlite' ? undefined : driverFloor;
      const floorDelay = floor === undefined ? plainDelay : floor.p99 - ELD_RESOLUTION_MS;
      const floorName = floor === undefined ? 'a worker of plain activities' : "a worker of the protocol's work and two driver writes";
      targets.push([
        `${e.name}: event-loop delay p99 ≤ ${TARGET_ELD_P99_MS} ms under ${ELD_CONCURRENCY} concurrent calls ("a few milliseconds")`,
        `${fixed(delay)} ms (max ${fixed(e.max - ELD_RESOLUTION_MS)} ms)${e.role === 'temporal' ? ` (plain: ${fixed(plainDelay)} ms; plain + protocol + 2 driver writes: ${fixed((driverFloor?.p99 ?? Number.NaN) - ELD_RESOLUTION_MS)} ms)` : ''}`,
        delay <= TARGET_ELD_P99_MS,
        e.role !== 'temporal' || !(floorDelay > TARGET_ELD_P99_MS)
          ? undefined
          : delay <= floorDelay * TARGET_RATIO_MEMORY
            ? `floor shown: ${floorName} is at ${fixed(floorDelay)} ms, and the fenced worker within ${TARGET_RATIO_MEMORY.toFixed(2)}× of it (${fixed(delay / floorDelay, 2)})`
            : `no floor shown: ${floorName} is at ${fixed(floorDelay)} ms, but the fenced worker is ${fixed(delay / floorDelay, 2)}× of it`,
      ]);
    }
    table(
      ['target', 'measured', 'verdict'],
      targets.map(([t, m, ok, stoppedBy]) => [t, m, ok || stoppedBy === undefined ? verdict(ok) : `${verdict(ok)}; ${stoppedBy}`]),
    );
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => console.error('cleanup:', error));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What a floor variant's `echo` returns: a fresh fenced call's result, field for field (digests of their real length), so its payload costs what the fence's does. */
function resultShapedLikeTheFence(input: ToolCallInput): FencedToolResult {
  const digest = `sha256:${createHash('sha256').update(input.callId).digest('hex')}`;
  return {
    callId: input.callId,
    toolName: 'echo',
    toolRevision: 'v1',
    source: 'executed',
    outcome: { ok: true, output: input.input, receipt: null },
    idempotencyKey: `ttc2-${digest.slice(7)}`,
    intentDigest: digest,
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

/** `items` starting at index `round` mod its length (the order of a round in interleaved rounds). */
function rotated<T>(items: readonly T[], round: number): T[] {
  const k = round % Math.max(1, items.length);
  return [...items.slice(k), ...items.slice(0, k)];
}
