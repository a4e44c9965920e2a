/**
 * People in the loop and retries on a real Temporal dev server, a real SQLite store, the real
 * activities and the demo provider in its own process (effects counted there): approval bound to
 * intent end to end, the retry policy's error classes, Retry-After, unknown outcomes after the
 * request was sent, dedupeByIntent, and the `pending` / `resolve` command line as a user runs it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { WorkflowUpdateFailedError, type WorkflowHandle, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolDefinition } from '../../src/activities';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { idempotencyKey } from '../../src/checkpoint/digest';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { ModelTurnInput, ModelTurnResult, ToolCallRequest } from '../../src/model/types';
import { agentWorkflow, approveCallUpdate, rejectCallUpdate, resolveOutcomeUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput, AgentWorkflowResult, RunStatusView } from '../../src/workflows/agent/types';
import { createDemoTools } from '../../examples/demo-tools';
import { startProvider, type RunningProvider } from '../../examples/provider/start-provider';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { runCli, type CliOutput } from '../helpers/cli';
import { conversationFake } from '../helpers/conversation-fake';
import { listWaitingRuns } from '../../src/operator/waiting-runs';
import { renderWaitingRunsPage } from '../../src/console/render-runs';
import { currentPauseId } from '../helpers/agent-fakes';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const TENANT = 'acme';
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

// ---- the model: a script carried in the run's modelOptions --------------------------------

function call(callId: string, toolName: string, input: Record<string, unknown>): ToolCallRequest {
  return { callId, toolName, input: input as ToolCallRequest['input'] };
}
function toolTurn(...toolCalls: ToolCallRequest[]): ModelTurnResult {
  return { stopReason: 'tool_use', text: `calling ${toolCalls.map((c) => c.toolName).join(', ')}`, toolCalls };
}

/** Answers turn n with `modelOptions.script[n]`, and ends the conversation after the script. Records what it saw. */
const modelRequests = new Map<string, ModelTurnInput[]>();
const conversation = conversationFake();
async function runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
  const workflowId = Context.current().info.workflowExecution?.workflowId ?? 'unknown';
  modelRequests.set(workflowId, [...(modelRequests.get(workflowId) ?? []), { ...input, messages: conversation.messagesOf(input) }]);
  const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
  return script[input.turn] ?? { stopReason: 'end_turn', text: 'done', toolCalls: [] };
}

// ---- provider requests as the tools sent them ---------------------------------------------

interface SentRequest {
  readonly method: string;
  readonly path: string;
  readonly idempotencyKey: string | null;
  readonly sentAt: number;
  answeredAt: number | null;
  status: number | null;
}

/** Pages per service and severity: a tool whose schema strips unknown fields and fills a default, declared `dedupeByIntent`. */
const pages = new Map<string, number>();
const pageOnCall = defineTool({
  name: 'page_on_call',
  revision: 'v1',
  input: z.object({ service: z.string().min(1), severity: z.enum(['minor', 'major']).default('minor') }),
  dedupeByIntent: true,
  callDeadlineMs: 1_000,
  async execute(input) {
    const key = `${input.service}/${input.severity}`;
    pages.set(key, (pages.get(key) ?? 0) + 1);
    return { output: { paged: key } };
  },
});

describe('people in the loop and the retry policy on a real server', () => {
  let env: LocalTestEnv;
  let dir: string;
  let storeUrl: string;
  let store: CheckpointStore;
  let provider: RunningProvider;
  let bundle: WorkflowBundleWithSourceMap;
  const sent: SentRequest[] = [];
  const workers: Array<{ worker: Worker; running: Promise<void> }> = [];
  let seq = 0;

  const recordingFetch: typeof fetch = async (url, init) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    const key = headers['Idempotency-Key'];
    const request: SentRequest = {
      method: init?.method ?? 'GET',
      path: new URL(String(url)).pathname,
      idempotencyKey: key === undefined ? null : key.replace(/^"|"$/g, ''),
      sentAt: Date.now(),
      answeredAt: null,
      status: null,
    };
    sent.push(request);
    const response = await fetch(url, init);
    request.answeredAt = Date.now();
    request.status = response.status;
    return response;
  };

  async function startWorker(taskQueue: string, tools: readonly ToolDefinition<any>[]): Promise<Worker> {
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities: {
        ...createToolActivities({ store, tools, transientRetry: { initialIntervalMs: 50, maximumIntervalMs: 500, maximumAttempts: 5 } }),
        runModelTurn,
      },
    });
    workers.push({ worker, running: worker.run() });
    return worker;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-people-retries-'));
    storeUrl = `sqlite:${join(dir, 'checkpoints.db')}`;
    [env, provider, bundle, store] = await Promise.all([
      createLocalEnv(),
      startProvider({ dbFile: join(dir, 'provider.db'), faults: true, stderr: 'ignore' }),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
      openCheckpointStore(storeUrl),
    ]);
    await startWorker('people-retries', createDemoTools(provider.url, { fetch: recordingFetch }));
    await startWorker('people-retries-dedupe', createDemoTools(provider.url, { fetch: recordingFetch, dedupeByIntent: true }));
    await startWorker('people-retries-intent', [pageOnCall]);
  });

  afterAll(async () => {
    for (const { worker } of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.allSettled(workers.map((w) => w.running));
    await store?.close();
    await env?.teardown();
    await provider?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    await provider.client.clearFaults();
    sent.length = 0;
  });

  function runInput(script: ModelTurnResult[], overrides: Partial<AgentWorkflowInput> = {}): AgentWorkflowInput {
    return {
      tenant: TENANT,
      model: 'scripted',
      modelOptions: { script } as never,
      prompt: 'handle it',
      tools: ['create_ticket', 'close_ticket', 'send_email'],
      budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 5 * 60_000 },
      activityOptions: { startToCloseTimeoutMs: 30_000, heartbeatTimeoutMs: 5_000, retry: { initialIntervalMs: 200, maximumIntervalMs: 1_000 } },
      ...overrides,
    };
  }

  async function start(
    script: ModelTurnResult[],
    overrides: Partial<AgentWorkflowInput> = {},
    taskQueue = 'people-retries',
  ): Promise<WorkflowHandleWithFirstExecutionRunId<typeof agentWorkflow>> {
    seq += 1;
    return env.client.workflow.start(agentWorkflow, { taskQueue, workflowId: `people-retries-${seq}-${Date.now()}`, args: [runInput(script, overrides)] });
  }

  async function waitForStatus(handle: WorkflowHandle, predicate: (s: RunStatusView) => boolean, timeoutMs = 30_000): Promise<RunStatusView> {
    const until = Date.now() + timeoutMs;
    let last: RunStatusView | undefined;
    while (Date.now() < until) {
      last = await handle.query(runStatusQuery);
      if (predicate(last)) return last;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`status never matched; last: ${JSON.stringify(last)}`);
  }

  function keyOf(workflowId: string, runChainId: string, callId: string, toolName: string): string {
    return idempotencyKey({ namespace: `default/${TENANT}`, runChainId, workflowId, callId, toolName, toolRevision: 'v1' });
  }

  function bindingCallId(handle: { workflowId: string; firstExecutionRunId: string }, callId: string): string {
    return callBindingId({ runChainId: handle.firstExecutionRunId, workflowId: handle.workflowId, callId });
  }

  async function emailsTo(to: string): Promise<number> {
    return (await provider.client.listEmails()).filter((e) => e.to === to).length;
  }

  // ---- 1. approval bound to intent ---------------------------------------------------------

  describe('approval bound to intent', () => {
    it('an approved call runs under the approved intent digest and the email is sent once', async () => {
      const to = 'approved@example.com';
      const handle = await start([toolTurn(call('e1', 'send_email', { to, subject: 'refund', body: 'approved' }))], {
        approvalRequired: { send_email: { expiresAfterMs: 60_000 } },
      });
      const status = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      const pending = status.pendingCalls[0]!;
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'e1', intentDigest: pending.intentDigest!, stateVersion: status.stateVersion }] });
      const result = await handle.result();

      expect(result.calls).toEqual([expect.objectContaining({ callId: 'e1', status: 'completed', source: 'executed', intentDigest: pending.intentDigest })]);
      expect(await emailsTo(to)).toBe(1);
    });

    it('a worker whose tool changed after the approval refuses the call with APPROVAL_MISMATCH before any checkpoint write; nothing is sent', async () => {
      // Worker v1 describes the call; the fleet is then redeployed with send_email v2 before the person approves.
      const v1Queue = `people-retries-redeploy-${Date.now()}`;
      const v1 = await startWorker(v1Queue, createDemoTools(provider.url, { fetch: recordingFetch }));
      const to = 'redeployed@example.com';
      const handle = await start(
        [toolTurn(call('e1', 'send_email', { to, subject: 'refund', body: 'approved for v1' }))],
        { approvalRequired: { send_email: { expiresAfterMs: 60_000 } } },
        v1Queue,
      );
      const status = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      v1.shutdown();
      await workers[workers.length - 1]!.running;
      const v2Tools = createDemoTools(provider.url, { fetch: recordingFetch }).map((tool) => (tool.name === 'send_email' ? defineTool({ ...tool, revision: 'v2' }) : tool));
      await startWorker(v1Queue, v2Tools);

      const approvedDigest = status.pendingCalls[0]!.intentDigest!;
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'e1', intentDigest: approvedDigest, stateVersion: status.stateVersion }] });
      const result = await handle.result();

      expect(result.calls).toEqual([expect.objectContaining({ callId: 'e1', status: 'failed', errorType: 'APPROVAL_MISMATCH', reason: expect.stringContaining(approvedDigest) })]);
      expect(result.summary).toEqual({ ran: [], notRun: ['e1'], unknown: [] });
      expect(await emailsTo(to)).toBe(0);
      expect(sent.filter((r) => r.path === '/emails')).toEqual([]);
      const records = await store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 10_000 });
      expect(records.filter((r) => r.binding.callId === bindingCallId(handle, 'e1'))).toEqual([]);
      expect(modelRequests.get(handle.workflowId)![1]!.messages).toContainEqual(
        expect.objectContaining({ role: 'tool', callId: 'e1', isError: true, content: { error: expect.objectContaining({ type: 'APPROVAL_MISMATCH' }) } }),
      );
    });
  });

  // ---- 2. retry policy --------------------------------------------------------------------

  describe('retry policy', () => {
    it('a rate-limited create is retried with the same idempotency key, no earlier than Retry-After, and applied once', async () => {
      await provider.client.setFaults({ rateLimitNext: 1, retryAfterMs: 1_000, pathPrefix: '/tickets' });
      const handle = await start([toolTurn(call('t1', 'create_ticket', { title: 'printer', body: 'jammed', queue: 'it' }))]);
      const result = await handle.result();

      const key = keyOf(handle.workflowId, handle.firstExecutionRunId, 't1', 'create_ticket');
      const creates = sent.filter((r) => r.method === 'POST' && r.path === '/tickets');
      expect(creates.map((r) => [r.status, r.idempotencyKey])).toEqual([
        [429, key],
        [201, key],
      ]);
      expect(creates[1]!.sentAt - creates[0]!.answeredAt!).toBeGreaterThanOrEqual(1_000);
      expect(result.calls).toEqual([expect.objectContaining({ callId: 't1', status: 'completed', source: 'executed', idempotencyKey: key })]);
      expect((await provider.client.effects()).byIdempotencyKey[key]).toBe(1);
    });

    it('a create rate-limited through every in-attempt retry of its first attempt is not final: the attempt releases its claim, the next attempt sends it again under the same key, and it is applied once', async () => {
      // The worker's tools try 5 times per attempt: attempt 1 gets five 429s (nothing applied), attempt 2 gets the 201.
      await provider.client.setFaults({ rateLimitNext: 5, retryAfterMs: 100, pathPrefix: '/tickets' });
      const handle = await start([toolTurn(call('t1', 'create_ticket', { title: 'scanner', body: 'offline', queue: 'it' }))]);
      const result = await handle.result();

      const key = keyOf(handle.workflowId, handle.firstExecutionRunId, 't1', 'create_ticket');
      const creates = sent.filter((r) => r.method === 'POST' && r.path === '/tickets');
      expect(creates.map((r) => [r.status, r.idempotencyKey])).toEqual([...Array.from({ length: 5 }, () => [429, key]), [201, key]]);
      expect(result.calls).toEqual([
        expect.objectContaining({ callId: 't1', status: 'completed', source: 'executed', idempotencyKey: key, outcome: expect.objectContaining({ ok: true }) }),
      ]);
      expect((await provider.client.effects()).byIdempotencyKey[key]).toBe(1);
    });

    it('non-retryable failures are distinguishable by class: idempotency conflict, business rejection, invalid input, unsupported tool, user rejection', async () => {
      seq += 1;
      const workflowId = `people-retries-classes-${seq}-${Date.now()}`;
      // The run starts after a delay, so its run chain (and its key for t1) is known before its first
      // task: the provider already saw that key with another body, a key conflict (422).
      const handle = await env.client.workflow.start(agentWorkflow, {
        taskQueue: 'people-retries',
        workflowId,
        startDelay: '2 seconds',
        args: [
          runInput(
            [
              toolTurn(
                call('t1', 'create_ticket', { title: 'printer', body: 'jammed', queue: 'it' }),
                call('c1', 'close_ticket', { ticketId: 'T-999999' }),
                call('e1', 'send_email', { to: 'not-an-address', subject: 's', body: 'b' }),
                call('r1', 'refund', { amount: 5 }),
                call('e2', 'send_email', { to: 'rejected@example.com', subject: 's', body: 'b' }),
              ),
            ],
            { tools: ['create_ticket', 'close_ticket', 'send_email', 'refund'], approvalRequired: { send_email: { expiresAfterMs: 60_000 } } },
          ),
        ],
      });
      await provider.client.createTicket({ title: 'other', body: 'other', queue: 'it' }, { idempotencyKey: keyOf(workflowId, handle.firstExecutionRunId, 't1', 'create_ticket') });
      await waitForStatus(handle, (s) => s.pendingCalls.some((c) => c.callId === 'e2' && c.status === 'awaiting-approval'));
      await handle.executeUpdate(rejectCallUpdate, { args: [{ callId: 'e2', reason: 'not this customer' }] });
      const result = await handle.result();

      const byId = Object.fromEntries(result.calls.map((c) => [c.callId, c]));
      expect(byId.t1).toEqual(expect.objectContaining({ status: 'completed', outcome: { ok: false, error: expect.objectContaining({ type: 'IDEMPOTENCY_CONFLICT' }) } }));
      expect(byId.c1).toEqual(expect.objectContaining({ status: 'completed', outcome: { ok: false, error: expect.objectContaining({ type: 'BUSINESS_REJECTION' }) } }));
      expect(byId.e1).toEqual(expect.objectContaining({ status: 'failed', errorType: 'INVALID_TOOL_INPUT' }));
      expect(byId.r1).toEqual(expect.objectContaining({ status: 'failed', errorType: 'UNKNOWN_TOOL' }));
      expect(byId.e2).toEqual(expect.objectContaining({ status: 'rejected', errorType: 'USER_REJECTION' }));
      expect(await emailsTo('rejected@example.com')).toBe(0);
      expect(sent.filter((r) => r.path === '/tickets' && r.method === 'POST').map((r) => r.status)).toEqual([422]);
    });

    it('create_ticket whose answer is lost after the effect is recovered by lookup on the next attempt: applied once', async () => {
      await provider.client.setFaults({ dropAfterEffectNext: 1, pathPrefix: '/tickets' });
      const handle = await start([toolTurn(call('t1', 'create_ticket', { title: 'vpn', body: 'down', queue: 'it' }))]);
      const result = await handle.result();

      const key = keyOf(handle.workflowId, handle.firstExecutionRunId, 't1', 'create_ticket');
      expect(result.calls).toEqual([expect.objectContaining({ callId: 't1', status: 'completed', source: 'lookup', outcome: expect.objectContaining({ ok: true }) })]);
      expect(sent.filter((r) => r.method === 'POST' && r.path === '/tickets')).toHaveLength(1);
      expect(sent.filter((r) => r.path.startsWith('/tickets/by-idempotency-key/'))).toHaveLength(1);
      expect((await provider.client.effects()).byIdempotencyKey[key]).toBe(1);
    });

    it('when the retries run out before the lookup, a lost create pauses the run (RECONCILE_PENDING) instead of reading as "nothing applied"', async () => {
      await provider.client.setFaults({ dropAfterEffectNext: 1, pathPrefix: '/tickets' });
      const handle = await start([toolTurn(call('t1', 'create_ticket', { title: 'disk', body: 'full', queue: 'it' }))], {
        activityOptions: { startToCloseTimeoutMs: 30_000, retry: { maximumAttempts: 1 } },
      });
      const status = await waitForStatus(handle, (s) => s.phase === 'paused');
      await handle.signal('cancelRun', { reason: 'test over' });
      const result = await handle.result();

      expect(status.paused).toEqual(expect.objectContaining({ callId: 't1', errorType: 'RECONCILE_PENDING' }));
      expect(result.calls).toEqual([expect.objectContaining({ callId: 't1', status: 'unknown' })]);
      expect(result.summary).toEqual({ ran: [], notRun: [], unknown: ['t1'] });
      const record = (await store.listByStatus(['uncertain'], { limit: 10_000 })).find((r) => r.binding.callId === bindingCallId(handle, 't1'));
      expect(record?.status).toBe('uncertain');
    });
  });

  // ---- 4. dedupeByIntent ------------------------------------------------------------------

  describe('dedupeByIntent', () => {
    const email = { to: 'replan@example.com', subject: 'Your ticket', body: 'We are on it.' };

    it('a re-planned identical email under a new tool-call id is answered from the first call checkpoint; one email is sent', async () => {
      const handle = await start([toolTurn(call('e1', 'send_email', email)), toolTurn(call('e2', 'send_email', email))], {}, 'people-retries-dedupe');
      const result = await handle.result();

      expect(result.calls).toEqual([
        expect.objectContaining({ callId: 'e1', status: 'completed', source: 'executed', reason: null }),
        expect.objectContaining({ callId: 'e2', status: 'completed', source: 'store', reason: expect.stringContaining('same intent as call "e1"') }),
      ]);
      expect(result.calls[1]!.outcome).toEqual(result.calls[0]!.outcome);
      expect(result.calls[1]!.idempotencyKey).toBe(result.calls[0]!.idempotencyKey);
      expect(await emailsTo(email.to)).toBe(1);
      expect(sent.filter((r) => r.path === '/emails' && r.method === 'POST')).toHaveLength(1);
    });

    it('a different intent (another recipient) is not deduplicated', async () => {
      const other = { ...email, to: 'replan-other@example.com' };
      const handle = await start(
        [toolTurn(call('e1', 'send_email', { ...email, to: 'replan-first@example.com' })), toolTurn(call('e2', 'send_email', other))],
        {},
        'people-retries-dedupe',
      );
      const result = await handle.result();
      expect(result.calls.map((c) => [c.callId, c.source])).toEqual([
        ['e1', 'executed'],
        ['e2', 'executed'],
      ]);
      expect(await emailsTo(other.to)).toBe(1);
    });

    it('after a person proves a lost email absent, the rerun gets a new intent generation: it runs again instead of reopening the paused checkpoint, and a later call with that intent is answered from the rerun', async () => {
      const to = 'replan-absent@example.com';
      await provider.client.setFaults({ dropAfterEffectNext: 1, pathPrefix: '/emails' });
      const handle = await start([toolTurn(call('e1', 'send_email', { ...email, to })), toolTurn(call('e2', 'send_email', { ...email, to }))], {}, 'people-retries-dedupe');
      await waitForStatus(handle, (s) => s.phase === 'paused');
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'operator says absent (it was not: the provider dropped the answer)' }],
      });
      const result = await handle.result();

      expect(result.calls.map((c) => [c.callId, c.status, c.source])).toEqual([
        ['e1', 'resolved-absent', null],
        ['e1~retry1', 'completed', 'executed'],
        ['e2', 'completed', 'store'],
      ]);
      expect(result.calls[2]!.idempotencyKey).toBe(result.calls[1]!.idempotencyKey);
      expect(result.calls[1]!.idempotencyKey).not.toBe(result.calls[0]!.idempotencyKey);
      // The person was wrong: the provider had applied the first send, so a second email went out. The product did what it was told.
      expect(await emailsTo(to)).toBe(2);
    });

    it('a re-plan that adds a field the schema strips or a default it fills, in a later turn or in the same turn, pages once', async () => {
      const later = await start(
        [toolTurn(call('p1', 'page_on_call', { service: 'db' })), toolTurn(call('p2', 'page_on_call', { service: 'db', severity: 'minor', note: 'still down' }))],
        { tools: ['page_on_call'] },
        'people-retries-intent',
      );
      const sameTurn = await start(
        [toolTurn(call('p1', 'page_on_call', { service: 'api' }), call('p2', 'page_on_call', { severity: 'minor', service: 'api' }))],
        { tools: ['page_on_call'] },
        'people-retries-intent',
      );
      const [a, b] = [await later.result(), await sameTurn.result()];

      expect(a.calls.map((c) => [c.callId, c.status, c.source])).toEqual([
        ['p1', 'completed', 'executed'],
        ['p2', 'completed', 'store'],
      ]);
      expect(a.calls[1]!.reason).toContain('same intent as call "p1"');
      expect(b.calls.map((c) => c.status)).toEqual(['completed', 'completed']);
      expect(b.calls.map((c) => c.source).sort()).toEqual(['executed', 'store']);
      for (const result of [a, b]) expect(result.calls[1]!.idempotencyKey).toBe(result.calls[0]!.idempotencyKey);
      expect(pages).toEqual(
        new Map([
          [`db/minor`, 1],
          [`api/minor`, 1],
        ]),
      );
    });

    it('without the option the same re-plan sends the email twice (why the option exists)', async () => {
      const to = 'replan-nodedupe@example.com';
      const handle = await start([toolTurn(call('e1', 'send_email', { ...email, to })), toolTurn(call('e2', 'send_email', { ...email, to }))]);
      const result = await handle.result();
      expect(result.calls.map((c) => c.source)).toEqual(['executed', 'executed']);
      expect(await emailsTo(to)).toBe(2);
    });
  });

  // ---- 2 + 5. an email whose answer is lost pauses; pending and resolve from the command line

  describe('send_email whose answer is lost, and the command line', () => {
    const cliEnv = (): NodeJS.ProcessEnv => ({
      ...process.env,
      TEMPORAL_ADDRESS: env.devServer.address,
      TEMPORAL_NAMESPACE: env.devServer.namespace,
      TTC_STORE_URL: storeUrl,
    });

    function cli(...args: string[]): Promise<CliOutput> {
      return runCli(args, cliEnv());
    }

    it('pauses as OUTCOME_UNKNOWN with the email sent once; `pending` lists it; `resolve --applied` resumes the run; resolving again exits 1', async () => {
      const to = 'lost-answer@example.com';
      await provider.client.setFaults({ dropAfterEffectNext: 1, pathPrefix: '/emails' });
      const handle = await start([toolTurn(call('e1', 'send_email', { to, subject: 'Update', body: 'Fixed.' }))]);
      const paused = await waitForStatus(handle, (s) => s.phase === 'paused');
      expect(paused.paused).toEqual(expect.objectContaining({ callId: 'e1', toolName: 'send_email', errorType: 'OUTCOME_UNKNOWN' }));
      expect(await emailsTo(to)).toBe(1);
      expect(sent.filter((r) => r.path === '/emails' && r.method === 'POST')).toHaveLength(1);

      const pending = await cli('pending');
      expect(pending).toEqual(expect.objectContaining({ code: 0 }));
      const lines = pending.stdout.split('\n');
      expect(lines[0]).toMatch(/^from\s+tenant\s+status\s+call\s+tool\s+updatedAt\s+why$/);
      // The store's uncertain checkpoint and Temporal's paused call are one call: listed once, with the checkpoint's time.
      expect(lines.filter((line) => line.includes(`${handle.workflowId}/e1`))).toEqual([
        expect.stringMatching(new RegExp(`^temporal\\+store\\s+${TENANT}\\s+paused\\s+${handle.workflowId}/e1\\s+send_email\\s+\\d{4}-\\S+\\s+OUTCOME_UNKNOWN: `)),
      ]);

      // The operator reads the pause's identity from `pending` and decides on exactly that pause.
      const pauseId = /, pause (\S+)\)/.exec(lines.find((line) => line.includes(`${handle.workflowId}/e1`)) ?? '')?.[1];
      expect(pauseId).toBe(paused.paused!.pauseId);
      const sentEmail = (await provider.client.listEmails()).find((e) => e.to === to)!;
      const resolved = await cli(
        'resolve',
        handle.workflowId,
        'e1',
        '--applied',
        JSON.stringify({ messageId: sentEmail.messageId }),
        '--reason',
        'found in the provider outbox',
        '--pause',
        pauseId!,
      );
      expect(resolved).toEqual({ code: 0, stdout: 'resolved e1 as applied: call status resolved-applied\n', stderr: '' });
      const result: AgentWorkflowResult = await handle.result();
      expect(result.calls).toEqual([
        expect.objectContaining({
          callId: 'e1',
          status: 'resolved-applied',
          source: 'resolution',
          outcome: {
            ok: true,
            output: { messageId: sentEmail.messageId },
            receipt: null,
            resolvedInStore: expect.objectContaining({ kind: 'applied', reason: 'found in the provider outbox', by: expect.any(String) }),
          },
        }),
      ]);
      expect(result.summary).toEqual({ ran: ['e1'], notRun: [], unknown: [] });
      expect(await emailsTo(to)).toBe(1);

      const again = await cli('resolve', handle.workflowId, 'e1', '--absent', '--reason', 'try again', '--pause', pauseId!);
      expect(again.code).toBe(1);
      expect(again.stdout).toBe('');
      expect(again.stderr.trim()).toBe(`INVALID_ARGUMENT: run ${handle.workflowId} is completed; call e1 is not waiting for a resolution`);
      expect(await emailsTo(to)).toBe(1);
    });

    it('a paused call shows the idempotency key its request was sent under and the tool revision: status view, show, show --json, pending once, the console card', async () => {
      const to = 'key-shown@example.com';
      await provider.client.setFaults({ dropAfterEffectNext: 1, pathPrefix: '/emails' });
      const handle = await start([toolTurn(call('e1', 'send_email', { to, subject: 'Update', body: 'Fixed.' }))]);
      const status = await waitForStatus(handle, (s) => s.phase === 'paused');
      expect(sent.filter((r) => r.path === '/emails' && r.method === 'POST')).toHaveLength(1);
      // The key the fence handed the tool for this call (ctx.idempotencyKey), derived as the worker derives it.
      const key = keyOf(handle.workflowId, handle.firstExecutionRunId, 'e1', 'send_email');

      expect(status.paused).toEqual(expect.objectContaining({ callId: 'e1', errorType: 'OUTCOME_UNKNOWN', toolRevision: 'v1', idempotencyKey: key }));
      expect(status.calls).toEqual([expect.objectContaining({ callId: 'e1', status: 'paused', toolRevision: 'v1', idempotencyKey: key })]);
      expect(status.pendingCalls).toEqual([expect.objectContaining({ callId: 'e1', status: 'paused', toolRevision: 'v1', idempotencyKey: key })]);

      // Three read-only commands on the paused run, run side by side (each is a separate process).
      const [json, text, pending] = await Promise.all([cli('show', handle.workflowId, '--json'), cli('show', handle.workflowId), cli('pending')]);
      expect(json.code).toBe(0);
      const shown = JSON.parse(json.stdout) as RunStatusView;
      expect(shown.paused).toEqual(expect.objectContaining({ toolRevision: 'v1', idempotencyKey: key }));
      expect(shown.calls[0]).toEqual(expect.objectContaining({ toolRevision: 'v1', idempotencyKey: key }));

      // The run's first pause, of call e1, in this run chain (the last 12 hex digits of its first run id).
      const pauseId = `e1#1.${handle.firstExecutionRunId.replace(/-/g, '').slice(-12)}`;
      expect(text.stdout).toContain(`paused on e1 (send_email revision v1, key ${key}); pause ${pauseId} (ttc resolve … --pause ${pauseId}): OUTCOME_UNKNOWN: `);

      const rows = pending.stdout.split('\n').filter((line) => line.includes(`${handle.workflowId}/e1`));
      expect(rows).toHaveLength(1);
      expect(rows[0]).toContain(`(revision v1, key ${key}, pause ${pauseId})`);

      const runs = (await listWaitingRuns(env.client, { searchAttributes: false })).filter((run) => run.workflowId === handle.workflowId);
      const page = renderWaitingRunsPage(runs, 'default', { csrfToken: 'token' }, Date.now());
      expect(page).toContain(`<dt>Idempotency key</dt><dd><code>${key}</code></dd>`);
      expect(page).toContain('<dt>Tool</dt><dd>send_email, revision v1</dd>');

      await handle.signal('cancelRun', { reason: 'test over' });
      await handle.result();
    });

    it('who decided is kept: `approve --by` and `resolve --by` name the person in the run result (decisions) and in the checkpoint; a `by` with control, bidi or only invisible characters is refused and changes nothing', async () => {
      const to = 'decided-by@example.com';
      await provider.client.setFaults({ dropAfterEffectNext: 1, pathPrefix: '/emails' });
      const handle = await start([toolTurn(call('e1', 'send_email', { to, subject: 'Refund', body: 'Approved.' }))], {
        approvalRequired: { send_email: { expiresAfterMs: 60_000 } },
      });
      const waiting = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      const pending = waiting.pendingCalls[0]!;
      // Control characters, a bidi override that shows "alice", nothing visible at all.
      const forged = [];
      for (const by of ['eve\u001b[2J', '\u202eecila', '\u200b\u3164']) {
        forged.push(
          await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'e1', intentDigest: pending.intentDigest!, stateVersion: waiting.stateVersion, by }] }).then(
            () => 'accepted',
            (error: { cause?: { type?: string } }) => error.cause?.type,
          ),
        );
      }
      expect(forged).toEqual(['INVALID_REQUEST', 'INVALID_REQUEST', 'INVALID_REQUEST']);
      expect((await handle.query(runStatusQuery)).phase).toBe('awaiting-approval');

      expect(await cli('approve', handle.workflowId, 'e1', '--by', 'alice@example.com')).toMatchObject({ code: 0 });
      const paused = await waitForStatus(handle, (s) => s.phase === 'paused');
      const sentEmail = (await provider.client.listEmails()).find((e) => e.to === to)!;
      const resolved = await cli(
        'resolve',
        handle.workflowId,
        'e1',
        '--applied',
        JSON.stringify({ messageId: sentEmail.messageId }),
        '--reason',
        'found in the outbox',
        '--pause',
        paused.paused!.pauseId,
        '--by',
        'carol@example.com',
      );
      expect(resolved).toMatchObject({ code: 0 });
      const result = await handle.result();

      expect(result.calls[0]!.decisions).toEqual([
        { kind: 'approved', by: 'alice@example.com', at: expect.any(String) },
        { kind: 'resolved-applied', by: 'carol@example.com', at: expect.any(String), pauseId: paused.paused!.pauseId },
      ]);
      const record = (await store.listByStatus(['delivered'])).find((r) => JSON.stringify(r.binding).includes(handle.workflowId));
      expect(record!.result!.payload).toMatchObject({
        ok: true,
        output: { messageId: sentEmail.messageId },
        resolvedInStore: { kind: 'applied', by: 'carol@example.com', reason: 'found in the outbox' },
      });
      expect(await emailsTo(to)).toBe(1);
    });

    it('`resolve` refuses a call of a running run that is not paused, with a clear message and exit 1', async () => {
      const handle = await start([toolTurn(call('e1', 'send_email', { to: 'waiting@example.com', subject: 's', body: 'b' }))], {
        approvalRequired: { send_email: { expiresAfterMs: 60_000 } },
      });
      await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      const out = await cli('resolve', handle.workflowId, 'e1', '--abandon', '--reason', 'wrong call');
      await handle.signal('cancelRun', { reason: 'test over' });
      await handle.result();

      expect(out.code).toBe(1);
      expect(out.stderr.trim()).toBe(`INVALID_ARGUMENT: run ${handle.workflowId} is awaiting-approval; call e1 is not waiting for a resolution`);
    });

    it('`resolve` with no resolution chosen exits 1 and says what to choose', async () => {
      const out = await cli('resolve', 'any-run', 'e1', '--reason', 'x');
      expect(out.code).toBe(1);
      expect(out.stderr.trim()).toBe('INVALID_ARGUMENT: choose exactly one of --applied <json>, --absent, --abandon');
    });
  });

  it('refusal types reach the client unchanged (sanity: approving a call that is not pending)', async () => {
    const handle = await start([toolTurn(call('e1', 'send_email', { to: 'x@example.com', subject: 's', body: 'b' }))], {
      approvalRequired: { send_email: { expiresAfterMs: 60_000 } },
    });
    const status = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
    const refused = await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'e1', intentDigest: 'sha256:0000', stateVersion: status.stateVersion }] }).then(
      () => null,
      (err: unknown) => err,
    );
    await handle.signal('cancelRun', { reason: 'test over' });
    await handle.result();
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refused as WorkflowUpdateFailedError).cause).toEqual(expect.objectContaining({ type: 'APPROVAL_MISMATCH' }));
  });
});
