/**
 * The console's list stays answerable when runs do not answer: three agent runs on a task queue no
 * worker polls (started by a client that set no search attributes, so the waiting-runs query lists
 * them) never answer their status query, since the server holds a query until a worker takes it.
 * Each query is bounded (here 1 s, `temporalOperations`' `queryTimeoutMs`) and asked in parallel,
 * so the page answers, marks each of those runs as not answering, and still shows the run that
 * answered with its forms. Real dev server, real worker on the bundled agent workflow, real
 * console over HTTP (Bearer token).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { startAgentRun } from '../../src/client';
import { resolveConfig, type Config } from '../../src/config';
import { temporalOperations } from '../../src/console/operations';
import { startConsoleServer, type RunningConsole } from '../../src/console/server';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { WAITING_RUNS_QUERY } from '../../src/operator/waiting-runs';
import { cancelRunSignal } from '../../src/workflows';
import { activitiesOf, baseInput, call, endTurn, fakeTools, toolTurn, waitForStatus } from '../helpers/agent-harness';
import { formsOf, send } from '../helpers/console-http';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(180_000);

const POLLED_QUEUE = 'console-unanswered-polled';
const UNPOLLED_QUEUE = 'console-unanswered-nobody-polls';
const TOKEN = 'unanswered-runs-console-token-0123456789';
const QUERY_TIMEOUT_MS = 1_000;
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

const model = {
  async runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
    const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
    return script[input.turn] ?? endTurn('Done.');
  },
};

describe('the console with runs that do not answer their status query', () => {
  let env: LocalTestEnv;
  let dir: string;
  let worker: Worker;
  let running: Promise<void>;
  let consoleServer: RunningConsole;
  let polled: Config;
  let unpolled: Config;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-console-unanswered-'));
    const [local, bundle] = await Promise.all([createLocalEnv(), bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger })]);
    env = local;
    const base = { TEMPORAL_ADDRESS: env.devServer.address, TEMPORAL_NAMESPACE: env.devServer.namespace, TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}` };
    polled = resolveConfig({}, { ...base, TEMPORAL_TASK_QUEUE: POLLED_QUEUE });
    unpolled = resolveConfig({}, { ...base, TEMPORAL_TASK_QUEUE: UNPOLLED_QUEUE });
    worker = await Worker.create({ connection: env.nativeConnection, taskQueue: POLLED_QUEUE, workflowBundle: bundle, activities: activitiesOf(model as never, fakeTools()) });
    running = worker.run();
    consoleServer = await startConsoleServer({
      operations: temporalOperations(env.client, { queryTimeoutMs: QUERY_TIMEOUT_MS, queryConcurrency: 2 }),
      token: TOKEN,
      port: 0,
      namespace: env.devServer.namespace,
    });
  }, 120_000);

  afterAll(async () => {
    await consoleServer?.close();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await env?.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('three runs on a task queue no worker polls are shown as not answering within the query timeout, and the page still lists the run that answered with its forms', async () => {
    const waitingId = 'unanswered-test-awaiting-approval';
    const handle = await startAgentRun(
      env.client,
      polled,
      baseInput({ modelOptions: { script: [toolTurn('Refunding.', call('r1', 'refund', { amount: 5 }))] } as never, approvalRequired: { refund: { expiresAfterMs: 3_600_000 } } }),
      waitingId,
    );
    await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
    const silentIds = ['unanswered-test-silent-1', 'unanswered-test-silent-2', 'unanswered-test-silent-3'];
    const silent = await Promise.all(silentIds.map((id) => startAgentRun(env.client, unpolled, baseInput(), id, { searchAttributes: false })));

    // Visibility is eventually consistent: wait until it lists all four (not the console: each console read asks every run).
    const listed = async () => {
      const ids = new Set<string>();
      for await (const execution of env.client.workflow.list({ query: WAITING_RUNS_QUERY })) ids.add(execution.workflowId);
      return ids;
    };
    for (let ids = await listed(); ![waitingId, ...silentIds].every((id) => ids.has(id)); ids = await listed()) await new Promise((r) => setTimeout(r, 200));

    const host = new URL(consoleServer.url).host;
    const page = await send(Number(new URL(consoleServer.url).port), 'GET', '/', { host, authorization: `Bearer ${TOKEN}` });
    await Promise.all([handle.signal(cancelRunSignal, { reason: 'test over' }), ...silent.map((h) => h.terminate('test over'))]);

    expect(page.statusCode).toBe(200);
    for (const id of silentIds) {
      const section = page.body.split('<section class="run"').find((s) => s.includes(`data-workflow-id="${id}"`));
      expect([id, section?.includes('data-answer="none"'), section?.includes('did not answer its status query within 1 s')]).toEqual([id, true, true]);
    }
    expect(page.body).toContain('4 runs, 1 call waiting');
    expect(formsOf(page.body, waitingId).map((f) => [f.action, f.fields.callId])).toEqual([
      ['/approve', 'r1'],
      ['/reject', 'r1'],
    ]);
  });
});
