/**
 * Adversarial review against a real dev server (search attributes registered), a real
 * in-process worker on the bundled agent workflow, and the real console (startConsoleServer with
 * temporalOperations on the same client):
 * - a stale page (the run moved on / the intent changed) never approves: the run's refusal is shown
 *   and the call stays awaiting approval;
 * - the console decides exactly the call whose button was pressed, whatever its id holds (`pay`,
 *   `pay ` and `pay\u200b` are three calls), and a reject form naming another intent than the
 *   call's is refused before anything is sent;
 * - many calls with long call ids awaiting approval never get the run stuck on an upsert, and a
 *   run cancelled by its cancelRun signal ends with TtcNeedsPerson = false.
 * (A run cancelled through Temporal is kept out of the suite.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { startAgentRun } from '../../src/client';
import { resolveConfig, type Config } from '../../src/config';
import { temporalOperations } from '../../src/console/operations';
import { startConsoleServer, type RunningConsole } from '../../src/console/server';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { cancelRunSignal, runStatusQuery, type agentWorkflow } from '../../src/workflows';
import { TTC_NEEDS_PERSON } from '../../src/workflows/agent/search-attributes';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import { activitiesOf, baseInput, call, endTurn, fakeTools, toolTurn, waitForStatus } from '../helpers/agent-harness';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { cookiesOf, formsOf, logIn, send } from '../helpers/console-http';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(90_000);

type Handle = WorkflowHandle<typeof agentWorkflow>;
const TASK_QUEUE = 'console-adversarial';
const WEEK_MS = 7 * 24 * 3_600_000;
const TOKEN = 'adversarial-console-token-0123456789';
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

const model = {
  requests: [] as ModelTurnInput[],
  async runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
    const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
    return script[input.turn] ?? endTurn('Done.');
  },
};
const tools = fakeTools();

function runInput(script: readonly ModelTurnResult[], overrides: Partial<AgentWorkflowInput> = {}): AgentWorkflowInput {
  return baseInput({ modelOptions: { script } as never, approvalRequired: { refund: { expiresAfterMs: WEEK_MS } }, ...overrides });
}

describe('console and visibility on a real dev server', () => {
  let env: LocalTestEnv;
  let bundle: WorkflowBundleWithSourceMap;
  let config: Config;
  let dir: string;
  let worker: Worker;
  let running: Promise<void>;
  let consoleServer: RunningConsole;
  let seq = 0;
  const nextId = (name: string) => `adv13-${name}-${++seq}-${Date.now()}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv13-'));
    [env, bundle] = await Promise.all([createLocalEnv(), bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger })]);
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
    consoleServer = await startConsoleServer({ operations: temporalOperations(env.client), token: TOKEN, port: 0, namespace: env.devServer.namespace });
  }, 120_000);

  afterAll(async () => {
    await consoleServer?.close();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await env?.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const host = () => new URL(consoleServer.url).host;
  const port = () => Number(new URL(consoleServer.url).port);

  /** Logs in and reads the list until `workflowId` shows with `calls` forms (visibility is eventually consistent). */
  async function openPage(workflowId: string, minForms: number): Promise<{ cookie: string; page: string }> {
    const tokenCookie = await logIn(port(), host(), TOKEN);
    const until = Date.now() + 20_000;
    for (;;) {
      const list = await send(port(), 'GET', '/', { host: host(), cookie: tokenCookie });
      if (formsOf(list.body, workflowId).length >= minForms) return { cookie: `${tokenCookie}; ${cookiesOf(list)}`, page: list.body };
      if (Date.now() > until) throw new Error(`the console never listed ${workflowId}: ${list.body.slice(0, 2_000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  const submit = (cookie: string, action: string, fields: Record<string, string>) =>
    send(port(), 'POST', action, { host: host(), origin: `http://${host()}`, cookie, 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams(fields).toString());

  it('a stale page (the run moved on since it was read) is refused with STALE_STATE_VERSION and the call stays awaiting approval; nothing runs', async () => {
    const id = nextId('stale');
    const handle: Handle = await startAgentRun(
      env.client,
      config,
      runInput([toolTurn('Refunding twice.', call('r1', 'refund', { amount: 1 }), call('r2', 'refund', { amount: 2 }))]),
      id,
    );
    const { cookie, page } = await openPage(id, 4);
    const approvals = formsOf(page, id).filter((f) => f.action === '/approve');
    const approveR1 = approvals.find((f) => f.fields.callId === 'r1')!;
    const approveR2 = approvals.find((f) => f.fields.callId === 'r2')!;
    expect((await submit(cookie, '/approve', approveR1.fields)).statusCode).toBe(200);
    // r1 runs and completes: the run moves on (its state version changes).
    await waitForStatus(handle, (s) => s.calls.some((c) => c.callId === 'r1' && c.status === 'completed'));
    const runsBefore = tools.runs.filter((r) => r.callId === 'r2').length;
    const answer = await submit(cookie, '/approve', approveR2.fields);
    const after = await handle.query(runStatusQuery);
    await handle.signal(cancelRunSignal, { reason: 'test over' });
    expect(answer.statusCode).toBe(409);
    expect(answer.body).toContain('STALE_STATE_VERSION');
    expect(after.pendingCalls.find((c) => c.callId === 'r2')?.status).toBe('awaiting-approval');
    expect(tools.runs.filter((r) => r.callId === 'r2').length).toBe(runsBefore);
  });

  it('many calls with long ids awaiting approval at once: the run keeps going (no upsert gets it stuck) and TtcNeedsPerson is true', async () => {
    const id = nextId('many-long');
    const calls = Array.from({ length: 10 }, (_, i) => call(`${'x'.repeat(300)}-${i}`, 'refund', { amount: i }));
    const handle: Handle = await startAgentRun(
      env.client,
      config,
      runInput([toolTurn('Refunding a lot.', ...calls)], { budget: { maxTurns: 5, maxToolCalls: 20, deadlineMs: 3_600_000 } }),
      id,
    );
    const status = await waitForStatus(handle, (s) => s.pendingCalls.filter((c) => c.status === 'awaiting-approval').length === 10);
    expect(status.phase).toBe('awaiting-approval');
    const until = Date.now() + 15_000;
    while ((await handle.describe()).typedSearchAttributes.get(TTC_NEEDS_PERSON) !== true) {
      if (Date.now() > until) throw new Error('TtcNeedsPerson never became true');
      await new Promise((r) => setTimeout(r, 200));
    }
    // Still answering queries and updates: the workflow task did not fail on the upsert.
    await handle.signal(cancelRunSignal, { reason: 'enough' });
    const result = await handle.result();
    expect(result.status).toBe('cancelled');
    expect((await handle.describe()).typedSearchAttributes.get(TTC_NEEDS_PERSON)).toBe(false);
  });

  it('the console rejects exactly the call whose button was pressed, also when its id has a trailing space or an invisible character; a reject naming another intent is refused', async () => {
    const id = nextId('ids');
    const handle: Handle = await startAgentRun(
      env.client,
      config,
      runInput([toolTurn('Refunding.', call('pay', 'refund', { amount: 1 }), call('pay ', 'refund', { amount: 1000 }), call('pay\u200b', 'refund', { amount: 7 }))]),
      id,
    );
    await waitForStatus(handle, (s) => s.pendingCalls.filter((c) => c.status === 'awaiting-approval').length === 3);
    const { cookie, page } = await openPage(id, 6);
    const rejects = formsOf(page, id).filter((f) => f.action === '/reject');
    expect(rejects.map((f) => f.fields.callId)).toEqual(['pay', 'pay ', 'pay\u200b']);
    // The person rejects the 1000 refund ("pay ") and the 7 refund ("pay\u200b") and leaves "pay" alone.
    const outcomes: number[] = [];
    for (const form of rejects.slice(1)) outcomes.push((await submit(cookie, '/reject', { ...form.fields, reason: 'too much' })).statusCode);
    // A reject form for "pay" carrying another call's intent digest is refused before anything is sent.
    const mismatch = await submit(cookie, '/reject', { ...rejects[0]!.fields, shownIntentDigest: rejects[1]!.fields.shownIntentDigest!, reason: 'wrong intent' });
    const status = await handle.query(runStatusQuery);
    const byId = Object.fromEntries(status.calls.map((c) => [c.callId, c.status]));
    await handle.signal(cancelRunSignal, { reason: 'test over' });
    expect({ outcomes, byId, mismatch: [mismatch.statusCode, mismatch.body.includes('APPROVAL_MISMATCH')] }).toEqual({
      outcomes: [200, 200],
      byId: { pay: 'awaiting-approval', 'pay ': 'rejected', 'pay\u200b': 'rejected' },
      mismatch: [409, true],
    });
  });
});
