// Temporal visibility of agent runs: on a real dev server (which registers the run
// search attributes by default), a run started by `startAgentRun` carries TtcNeedsPerson /
// TtcWaitingCalls and upserts them as calls start and stop waiting for a person, so the SDK's
// list, `temporal workflow list --query 'TtcNeedsPerson = true'` and `ttc pending` (spawned as a
// user would) find it; a continued run (continue-as-new) does the same; a run started without them,
// or on a namespace without them, upserts nothing and still completes. Visibility is eventually
// consistent: the tests poll it.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, type WorkflowExecutionInfo, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { startAgentRun } from '../../src/client';
import { resolveConfig, type Config } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { onFreePort } from '../helpers/free-port';
import { temporalCliPath } from '../../src/dev/temporal-binaries';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { listWaitingRuns } from '../../src/operator/waiting-runs';
import { hasRunSearchAttributes, registerRunSearchAttributes } from '../../src/visibility/namespace-search-attributes';
import { approveCallUpdate, resolveOutcomeUpdate, runStatusQuery, type agentWorkflow } from '../../src/workflows';
import { RUN_SEARCH_ATTRIBUTES_PATCH } from '../../src/workflows/agent/run-search-attributes';
import { TTC_NEEDS_PERSON, TTC_WAITING_CALLS } from '../../src/workflows/agent/search-attributes';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import { activitiesOf, baseInput, call, endTurn, fakeTools, outcomeUnknown, toolTurn, waitForStatus, currentPauseId } from '../helpers/agent-harness';
import { ROOT, runCli } from '../helpers/cli';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { releaseReplayHooks } from '../helpers/replay-hooks';

// Replays leave a process-wide promise hook that slows every later suite (see the helper).
afterEach(releaseReplayHooks);

// ERROR: the OUTCOME_UNKNOWN tool failure is logged at WARN by the worker on purpose.
installQuietTemporalRuntime('ERROR');
jest.setTimeout(60_000);

type Handle = WorkflowHandle<typeof agentWorkflow>;
type History = temporal.api.history.v1.IHistory;

const TASK_QUEUE = 'visibility';
const WEEK_MS = 7 * 24 * 3_600_000;
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

/** The model answers turn n with `modelOptions.script[n]` (the end when the script runs out). */
const model = {
  requests: [] as ModelTurnInput[],
  async runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
    const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
    return script[input.turn] ?? endTurn('Done.');
  },
};
/** Tools: a call whose input says `unknown: true` fails OUTCOME_UNKNOWN (the run pauses); others complete. */
const tools = fakeTools(async (input) => {
  if ((input.input as { unknown?: boolean }).unknown === true) throw outcomeUnknown();
  return undefined;
});

function runInput(script: readonly ModelTurnResult[], overrides: Partial<AgentWorkflowInput> = {}): AgentWorkflowInput {
  return baseInput({ modelOptions: { script } as never, approvalRequired: { refund: { expiresAfterMs: WEEK_MS } }, ...overrides });
}

/** Polls visibility until `query` lists the run (visibility is eventually consistent). */
async function listedBy(client: Client, query: string, workflowId: string, timeoutMs = 15_000): Promise<WorkflowExecutionInfo> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    for await (const execution of client.workflow.list({ query: `${query} AND WorkflowId = '${workflowId}'` })) return execution;
    if (Date.now() > until) throw new Error(`visibility never listed ${workflowId} for ${query}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * `[TtcNeedsPerson, TtcWaitingCalls]` of every UpsertWorkflowSearchAttributes event that sets
 * them, in order (sdk-core upserts `TemporalChangeVersion` for each patch on its own).
 */
function upserts(history: History): [unknown, unknown][] {
  const decode = (p: temporal.api.common.v1.IPayload | null | undefined): unknown => (p?.data ? JSON.parse(Buffer.from(p.data).toString('utf8')) : undefined);
  return (history.events ?? []).flatMap((e) => {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    const ours = fields && (TTC_NEEDS_PERSON.name in fields || TTC_WAITING_CALLS.name in fields);
    return ours ? [[decode(fields[TTC_NEEDS_PERSON.name]), decode(fields[TTC_WAITING_CALLS.name])] as [unknown, unknown]] : [];
  });
}

function patchMarkers(history: History): number {
  return (history.events ?? []).filter(
    (e) =>
      e.markerRecordedEventAttributes?.markerName === 'core_patch' &&
      JSON.stringify(e.markerRecordedEventAttributes.details?.['patch-data']?.payloads?.map((p) => Buffer.from(p.data ?? []).toString('utf8'))).includes(
        RUN_SEARCH_ATTRIBUTES_PATCH,
      ),
  ).length;
}

async function approve(handle: Handle, callId: string): Promise<void> {
  const status = await waitForStatus(handle, (s) => s.pendingCalls.some((c) => c.callId === callId && c.status === 'awaiting-approval'));
  const pending = status.pendingCalls.find((c) => c.callId === callId)!;
  await handle.executeUpdate(approveCallUpdate, { args: [{ callId, intentDigest: pending.intentDigest!, stateVersion: status.stateVersion }] });
}

/** `ttc dev` as a user starts it, on `address`; `ready` resolves with its banner once it printed 'Press Ctrl-C'. */
interface TtcDev {
  readonly ready: Promise<{ address: string; stdout: string }>;
  stop(): Promise<void>;
}

function spawnTtcDev(address: string, dir: string): TtcDev {
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), join(ROOT, 'src/cli/index.ts'), 'dev', '--db', join(dir, 'dev.db')], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '', TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default', TTC_STORE_URL: `sqlite:${join(dir, 'dev-store.db')}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const ready = new Promise<{ address: string; stdout: string }>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString('utf8');
      if (stdout.includes('Press Ctrl-C')) resolve({ address, stdout });
    });
    void exited.then((code) => reject(new Error(`ttc dev exited (${code}) before it was ready: ${stderr}`)));
  });
  ready.catch(() => undefined); // reported by the test that awaits it
  return {
    ready,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `ttc dev` on a free port, started again on another one when its port was taken before it bound it. */
function startTtcDev(dir: string): TtcDev {
  let current: TtcDev | undefined;
  const ready = onFreePort((port, attempt) => {
    const own = join(dir, `attempt-${attempt}`);
    mkdirSync(own, { recursive: true });
    current = spawnTtcDev(`127.0.0.1:${port}`, own);
    return current.ready;
  });
  ready.catch(() => undefined); // reported by the test that awaits it
  return { ready, stop: async () => current?.stop() };
}

describe('agent runs in Temporal visibility (TtcNeedsPerson, TtcWaitingCalls)', () => {
  let env: LocalTestEnv;
  let bare: DevServer;
  let bundle: WorkflowBundleWithSourceMap;
  let config: Config;
  let dir: string;
  let worker: Worker;
  let running: Promise<void>;
  let ttcDev: TtcDev;
  let seq = 0;
  const nextId = (name: string) => `visibility-${name}-${++seq}-${Date.now()}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-visibility-'));
    // Started first: its tsx start-up overlaps the bundling below (awaited in its own test).
    ttcDev = startTtcDev(dir);
    [env, bare, bundle] = await Promise.all([
      createLocalEnv(),
      startDevServer({ searchAttributes: false }),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
    ]);
    config = resolveConfig(
      {},
      {
        TEMPORAL_ADDRESS: env.devServer.address,
        TEMPORAL_NAMESPACE: env.devServer.namespace,
        TEMPORAL_TASK_QUEUE: TASK_QUEUE,
        TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}`,
      },
    );
    worker = await Worker.create({ connection: env.nativeConnection, taskQueue: TASK_QUEUE, workflowBundle: bundle, activities: activitiesOf(model, tools) });
    running = worker.run();
  }, 120_000);

  afterAll(async () => {
    await ttcDev?.stop();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await env?.teardown();
    await bare?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  it('a run waiting for approval, then on an unknown outcome, is TtcNeedsPerson = true with that call id, found by the SDK, `temporal workflow list` and `ttc pending`; each decision sets it back to false / empty', async () => {
    const id = nextId('waits');
    const script = [
      toolTurn('Refunding.', call('r1', 'refund', { amount: 5 })),
      toolTurn('Emailing.', call('e1', 'send_email', { unknown: true })),
      endTurn('Refunded and emailed.'),
    ];
    const handle = await startAgentRun(env.client, config, runInput(script), id);

    // Awaiting approval: the SDK's list finds it by both attributes and reads them back.
    const listed = await listedBy(env.client, `TtcNeedsPerson = true AND TtcWaitingCalls = 'r1'`, id);
    expect([listed.typedSearchAttributes.get(TTC_NEEDS_PERSON), listed.typedSearchAttributes.get(TTC_WAITING_CALLS)]).toEqual([true, ['r1']]);

    // The temporal CLI and `ttc pending`, as a user runs them, list exactly this run.
    const cliEnv = { ...process.env, TEMPORAL_ADDRESS: env.devServer.address, TEMPORAL_NAMESPACE: env.devServer.namespace, TTC_STORE_URL: config.store.url };
    const [byCli, pending] = await Promise.all([
      promisify(execFile)(temporalCliPath(), [
        'workflow',
        'list',
        '--address',
        env.devServer.address,
        '--namespace',
        env.devServer.namespace,
        '--query',
        'TtcNeedsPerson = true',
        '--output',
        'json',
      ]),
      runCli(['pending'], cliEnv),
    ]);
    expect((JSON.parse(byCli.stdout) as { execution: { workflowId: string } }[]).map((e) => e.execution.workflowId)).toEqual([id]);
    expect([pending.code, pending.stderr]).toEqual([0, '']);
    const pendingRows = pending.stdout.split('\n').filter((line) => line.startsWith('temporal'));
    expect(pendingRows).toEqual([expect.stringMatching(new RegExp(`^temporal +acme +awaiting-approval +${id}/r1 +refund `))]);

    // Approved: r1 runs; then e1's outcome is unknown and the run pauses on it.
    await approve(handle, 'r1');
    const paused = await listedBy(env.client, `TtcNeedsPerson = true AND TtcWaitingCalls = 'e1'`, id);
    expect(paused.typedSearchAttributes.get(TTC_WAITING_CALLS)).toEqual(['e1']);
    const waiting = (await listWaitingRuns(env.client)).filter((run) => run.workflowId === id);
    expect(waiting.map((run) => ('waiting' in run ? run.waiting.map((c) => [c.callId, c.status]) : run.error))).toEqual([[['e1', 'paused']]]);

    await handle.executeUpdate(resolveOutcomeUpdate, {
      args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'applied', result: { sent: true }, reason: 'seen in the outbox' }],
    });
    const result = await handle.result();
    expect(result.status).toBe('completed');

    // Each change was one upsert, in order, behind the patch marker; the run ends false / empty.
    const history = await handle.fetchHistory();
    expect(upserts(history)).toEqual([
      [true, ['r1']],
      [false, []],
      [true, ['e1']],
      [false, []],
    ]);
    expect(patchMarkers(history)).toBe(1);
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(TTC_NEEDS_PERSON)).toBe(false);
    expect(described.typedSearchAttributes.get(TTC_WAITING_CALLS) ?? []).toEqual([]);
    await Worker.runReplayHistory({ workflowBundle: bundle }, history, id);
  });

  it('a continued run (continue-as-new) carries the attributes and upserts them when its call awaits approval', async () => {
    const id = nextId('continued');
    const script = [toolTurn('Look.', call('l0', 'lookup')), toolTurn('Look again.', call('l1', 'lookup')), toolTurn('Refund.', call('r2', 'refund', { amount: 2 }))];
    const handle = await startAgentRun(env.client, config, runInput(script, { limits: { continueAsNewAfterEvents: 20 } }), id);

    await listedBy(env.client, `TtcNeedsPerson = true AND TtcWaitingCalls = 'r2'`, id);
    const status = await handle.query(runStatusQuery);
    expect(status.continuations).toBeGreaterThanOrEqual(1);
    const latest = env.client.workflow.getHandle<typeof agentWorkflow>(id);
    await approve(latest, 'r2');
    expect((await latest.result()).status).toBe('completed');
    expect((await latest.describe()).typedSearchAttributes.get(TTC_NEEDS_PERSON)).toBe(false);
  });

  it('a run cancelled through Temporal (handle.cancel) while a call awaits approval closes with TtcNeedsPerson = false and no waiting calls', async () => {
    const id = nextId('temporal-cancel');
    const handle = await startAgentRun(env.client, config, runInput([toolTurn('Refund.', call('r9', 'refund', { amount: 9 }))]), id);
    await listedBy(env.client, `TtcNeedsPerson = true AND TtcWaitingCalls = 'r9'`, id);
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow();
    const described = await handle.describe();
    expect([described.status.name, described.typedSearchAttributes.get(TTC_NEEDS_PERSON), described.typedSearchAttributes.get(TTC_WAITING_CALLS) ?? []]).toEqual([
      'CANCELLED',
      false,
      [],
    ]);
  });

  it('a run started without the attributes (the client told they are absent) upserts nothing and still completes; listWaitingRuns still finds it while it waits', async () => {
    const id = nextId('without');
    const handle = await startAgentRun(env.client, config, runInput([toolTurn('Refunding.', call('r1', 'refund', { amount: 1 }))]), id, { searchAttributes: false });

    await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
    const waiting = (await listWaitingRuns(env.client)).filter((run) => run.workflowId === id);
    expect(waiting.map((run) => ('waiting' in run ? run.waiting.map((c) => c.callId) : run.error))).toEqual([['r1']]);
    await approve(handle, 'r1');
    expect((await handle.result()).status).toBe('completed');

    const history = await handle.fetchHistory();
    expect(upserts(history)).toEqual([]);
    expect(patchMarkers(history)).toBe(0);
    expect((await handle.describe()).typedSearchAttributes.get(TTC_NEEDS_PERSON)).toBeUndefined();
  });

  it('on a namespace without the attributes, startAgentRun starts the run without them; it waits, is listed by scanning, and completes', async () => {
    const [connection, nativeConnection] = await Promise.all([Connection.connect({ address: bare.address }), NativeConnection.connect({ address: bare.address })]);
    const bareWorker = await Worker.create({ connection: nativeConnection, taskQueue: TASK_QUEUE, workflowBundle: bundle, activities: activitiesOf(model, tools) });
    try {
      await bareWorker.runUntil(async () => {
        const client = new Client({ connection });
        expect(await hasRunSearchAttributes(client)).toBe(false);
        const id = nextId('bare');
        const handle = await startAgentRun(client, config, runInput([toolTurn('Refunding.', call('r1', 'refund', { amount: 1 }))]), id);

        await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
        const waiting = await listWaitingRuns(client);
        expect(waiting.map((run) => [run.workflowId, 'waiting' in run ? run.waiting.map((c) => c.callId) : run.error])).toEqual([[id, ['r1']]]);
        await approve(handle, 'r1');
        expect((await handle.result()).status).toBe('completed');
        expect(upserts(await handle.fetchHistory())).toEqual([]);
      });
    } finally {
      await Promise.all([connection.close(), nativeConnection.close()]);
    }
  });

  it('registerRunSearchAttributes registers both on an existing server, and again without error', async () => {
    const connection = await Connection.connect({ address: bare.address });
    try {
      expect(await hasRunSearchAttributes(new Client({ connection }))).toBe(false);
      await registerRunSearchAttributes(connection, bare.namespace);
      await registerRunSearchAttributes(connection, bare.namespace);
      expect(await hasRunSearchAttributes(new Client({ connection }))).toBe(true);
    } finally {
      await connection.close();
    }
  });

  it('`ttc dev` starts a dev server with both registered and prints the commands for other servers', async () => {
    const { address, stdout } = await ttcDev.ready;
    expect(stdout).toContain('Search attributes TtcNeedsPerson, TtcWaitingCalls registered');
    expect(stdout).toContain('  temporal operator search-attribute create --namespace default --name TtcNeedsPerson --type Bool\n');
    expect(stdout).toContain('  temporal operator search-attribute create --namespace default --name TtcWaitingCalls --type KeywordList\n');
    const connection = await Connection.connect({ address });
    try {
      expect(await hasRunSearchAttributes(new Client({ connection }))).toBe(true);
    } finally {
      await connection.close();
    }
  });
});
