/**
 * Agent runs on a worker that holds grant keys (docs/protocol.md#approval-grants). The console's
 * approve signs a grant when it has a key (the call runs) and sends none without one (the worker
 * refuses it). A rerun after a person proved an approved call absent waits for a new approval: the
 * grant named the first call only, and presented for the rerun it is refused by the worker. Real
 * dev server, real SQLite store, the agent workflow, a tool whose first answer can be lost (its
 * outcome unknown, no lookup: the run pauses).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { agentWorkflow, approveCallUpdate, resolveOutcomeUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowResult, RunStatusView } from '../../src/workflows/agent/types';
import { signAgentApproval } from '../../src/operator';
import { temporalOperations } from '../../src/console/operations';
import { readWaitingCall } from '../../src/operator/run-decisions';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import type { WorkflowHandle } from '@temporalio/client';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const KEY = { keyId: 'ops', hmacSecret: Buffer.from('3e9a71c5d2b8f046a1e7c39d5b2f8a6e0c4d7b1a9e3f5c8d2a6b0e4f7c1d9a3b', 'hex') };
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

describe('a rerun of an approved call in signed mode', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let worker: Worker;
  let running: Promise<void>;
  const wires: string[] = [];
  let loseFirstAnswer = true;

  const sendWire = defineTool({
    name: 'send_wire',
    revision: 'v1',
    input: z.object({ to: z.string(), amountCents: z.number().int().positive() }),
    callDeadlineMs: 300,
    async execute(input, ctx) {
      wires.push(ctx.idempotencyKey);
      if (loseFirstAnswer) {
        loseFirstAnswer = false;
        // The provider may or may not have applied it: the fence cannot tell (no lookup).
        throw new Error('the connection was reset after the request was sent');
      }
      return { output: { wired: input.amountCents } };
    },
  });

  async function runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
    if (input.turn > 0) return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
    return { stopReason: 'tool_use', text: 'wiring', toolCalls: [{ callId: 'w1', toolName: 'send_wire', input: { to: 'acct-9', amountCents: 12_000 } }] };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-grant-reruns-'));
    let bundle;
    [env, store, bundle] = await Promise.all([
      createLocalEnv(),
      openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
    ]);
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'grant-reruns',
      workflowBundle: bundle,
      activities: {
        ...createToolActivities({ store, tools: [sendWire], requireApproval: ['send_wire'], approvalGrantKeys: [KEY], reconcileMarginMs: 100 }),
        runModelTurn,
      },
    });
    running = worker.run();
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  async function waitFor(handle: WorkflowHandle, predicate: (s: RunStatusView) => boolean): Promise<RunStatusView> {
    const until = Date.now() + 60_000;
    for (;;) {
      const status = await handle.query(runStatusQuery);
      if (predicate(status)) return status;
      if (Date.now() > until) throw new Error(`status never matched: ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** An agent run whose one call, send_wire w1, needs approval. */
  function startRun(workflowId: string) {
    return env.client.workflow.start(agentWorkflow, {
      taskQueue: 'grant-reruns',
      workflowId,
      args: [
        {
          tenant: 'acme',
          model: 'scripted',
          prompt: 'pay the supplier',
          tools: ['send_wire'],
          approvalRequired: { send_wire: { expiresAfterMs: 600_000 } },
          budget: { maxTurns: 4, maxToolCalls: 6, deadlineMs: 5 * 60_000 },
          activityOptions: { startToCloseTimeoutMs: 10_000, heartbeatTimeoutMs: 5_000, retry: { initialIntervalMs: 100, maximumIntervalMs: 300, maximumAttempts: 5 } },
        },
      ],
    });
  }

  async function approveSigned(handle: WorkflowHandle, callId: string, grantFor?: string): Promise<string> {
    const waiting = await readWaitingCall(handle, 'default', callId, 'awaiting-approval');
    const grant = grantFor ?? signAgentApproval(waiting, { namespace: 'default', intentDigest: waiting.call.intentDigest!, approver: 'alice@ops', key: KEY });
    await handle.executeUpdate(approveCallUpdate, {
      args: [{ callId, intentDigest: waiting.call.intentDigest!, stateVersion: waiting.status.stateVersion, by: 'alice@ops', grant }],
    });
    return grant;
  }

  it('the console approves with a grant when it holds a signing key; without one the worker refuses the call and nothing runs', async () => {
    loseFirstAnswer = false;
    wires.length = 0;
    const [signed, unsigned] = await Promise.all([startRun(`grant-console-${Date.now()}`), startRun(`grant-console-unsigned-${Date.now()}`)]);
    for (const [handle, operations] of [
      [signed, temporalOperations(env.client, {}, KEY)],
      [unsigned, temporalOperations(env.client)],
    ] as const) {
      const status = await waitFor(handle, (s) => s.pendingCalls.some((c) => c.callId === 'w1' && c.status === 'awaiting-approval'));
      const intentDigest = status.pendingCalls.find((c) => c.callId === 'w1')!.intentDigest!;
      await operations.approveCall(handle.workflowId, { callId: 'w1', intentDigest, stateVersion: status.stateVersion, by: 'carol@ops' });
    }
    const [ran, refused] = (await Promise.all([signed.result(), unsigned.result()])) as AgentWorkflowResult[];
    expect(ran!.calls.map((c) => [c.callId, c.status, c.source])).toEqual([['w1', 'completed', 'executed']]);
    expect(refused!.calls.map((c) => [c.callId, c.status, c.status === 'failed' ? c.errorType : null])).toEqual([['w1', 'failed', 'APPROVAL_REQUIRED']]);
    expect(wires).toHaveLength(1);
    loseFirstAnswer = true;
    wires.length = 0;
  });

  it('waits for a new approval, refuses the first call’s grant, and runs once under its own grant', async () => {
    const handle = await startRun(`grant-rerun-${Date.now()}`);
    await waitFor(handle, (s) => s.pendingCalls.some((c) => c.callId === 'w1' && c.status === 'awaiting-approval'));
    const firstGrant = await approveSigned(handle, 'w1');
    const paused = await waitFor(handle, (s) => s.paused?.callId === 'w1');
    expect(wires).toHaveLength(1);

    await handle.executeUpdate(resolveOutcomeUpdate, { args: [{ callId: 'w1', pauseId: paused.paused!.pauseId, resolution: 'absent', reason: 'the bank shows no wire' }] });
    const rerun = await waitFor(handle, (s) => s.pendingCalls.some((c) => c.callId === 'w1~retry1' && c.status === 'awaiting-approval'));
    expect(rerun.pendingCalls.find((c) => c.callId === 'w1~retry1')).toMatchObject({ intentDigest: expect.stringMatching(/^sha256:/), approvalExpiresAt: expect.any(String) });
    expect(wires).toHaveLength(1);

    // The first call's grant, sent again for the rerun: the run accepts it (it holds no key), the worker refuses it.
    await approveSigned(handle, 'w1~retry1', firstGrant);
    const result = (await handle.result()) as AgentWorkflowResult;
    expect(result.calls.map((c) => [c.callId, c.status, c.status === 'failed' ? c.errorType : null])).toEqual([
      ['w1', 'resolved-absent', null],
      ['w1~retry1', 'failed', 'APPROVAL_MISMATCH'],
    ]);
    expect(result.calls[1]!.reason).toContain('the approval grant is for callId "w1"');
    expect(wires).toHaveLength(1);
  });

  it('runs the rerun once under a grant signed for it', async () => {
    loseFirstAnswer = true;
    wires.length = 0;
    const handle = await startRun(`grant-rerun-ok-${Date.now()}`);
    await waitFor(handle, (s) => s.pendingCalls.some((c) => c.callId === 'w1' && c.status === 'awaiting-approval'));
    await approveSigned(handle, 'w1');
    const paused = await waitFor(handle, (s) => s.paused?.callId === 'w1');
    await handle.executeUpdate(resolveOutcomeUpdate, { args: [{ callId: 'w1', pauseId: paused.paused!.pauseId, resolution: 'absent', reason: 'the bank shows no wire' }] });
    await waitFor(handle, (s) => s.pendingCalls.some((c) => c.callId === 'w1~retry1' && c.status === 'awaiting-approval'));
    await approveSigned(handle, 'w1~retry1');
    const result = (await handle.result()) as AgentWorkflowResult;
    expect(result.calls.map((c) => [c.callId, c.status, c.source])).toEqual([
      ['w1', 'resolved-absent', null],
      ['w1~retry1', 'completed', 'executed'],
    ]);
    expect(wires).toHaveLength(2);
    expect(new Set(wires).size).toBe(2);
  });
});
