/**
 * Scratch: what an agent run's history holds in signed mode. The docs/README say the grant carries
 * no intent digest "so history holds no digest to test guesses of the arguments against"; the
 * tool activity's input still carries `expectedIntentDigest` next to `approvalGrant`. FAILS on the current code.
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
import { agentWorkflow, approveCallUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowResult, RunStatusView } from '../../src/workflows/agent/types';
import { signAgentApproval } from '../../src/operator';
import { readWaitingCall } from '../../src/operator/run-decisions';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import type { WorkflowHandle } from '@temporalio/client';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const KEY = { keyId: 'ops', hmacSecret: Buffer.alloc(32, 3) };
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

describe('scratch: signed-mode history', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let worker: Worker;
  let running: Promise<void>;

  const sendWire = defineTool({
    name: 'send_wire',
    revision: 'v1',
    input: z.object({ to: z.string(), amountCents: z.number().int().positive() }),
    async execute(input) {
      return { output: { wired: input.amountCents } };
    },
  });
  async function runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
    if (input.turn > 0) return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
    return { stopReason: 'tool_use', text: 'wiring', toolCalls: [{ callId: 'w1', toolName: 'send_wire', input: { to: 'acct-9', amountCents: 12_000 } }] };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-scratch-hist-'));
    let bundle;
    [env, store, bundle] = await Promise.all([
      createLocalEnv(),
      openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
    ]);
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'scratch-hist',
      workflowBundle: bundle,
      activities: { ...createToolActivities({ store, tools: [sendWire], requireApproval: ['send_wire'], approvalGrantKeys: [KEY] }), runModelTurn },
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
      if (Date.now() > until) throw new Error('status never matched');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('the tool activity input of a grant-approved call carries no bare intent digest', async () => {
    const handle = await env.client.workflow.start(agentWorkflow, {
      taskQueue: 'scratch-hist',
      workflowId: `scratch-hist-${Date.now()}`,
      args: [
        {
          tenant: 'acme',
          model: 'scripted',
          prompt: 'pay',
          tools: ['send_wire'],
          approvalRequired: { send_wire: { expiresAfterMs: 600_000 } },
          budget: { maxTurns: 4, maxToolCalls: 6, deadlineMs: 5 * 60_000 },
          activityOptions: { startToCloseTimeoutMs: 10_000, retry: { maximumAttempts: 2 } },
        },
      ],
    });
    await waitFor(handle, (s) => s.pendingCalls.some((c) => c.callId === 'w1' && c.status === 'awaiting-approval'));
    const waiting = await readWaitingCall(handle, 'default', 'w1', 'awaiting-approval');
    const grant = signAgentApproval(waiting, { namespace: 'default', intentDigest: waiting.call.intentDigest!, approver: 'alice', key: KEY });
    await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'w1', intentDigest: waiting.call.intentDigest!, stateVersion: waiting.status.stateVersion, by: 'alice', grant }] });
    const result = (await handle.result()) as AgentWorkflowResult;
    expect(result.calls.map((c) => [c.callId, c.status])).toEqual([['w1', 'completed']]);
    const history = await handle.fetchHistory();
    const decode = (data: Uint8Array | null | undefined) => (data ? Buffer.from(data).toString('utf8') : '');
    const toolInputs = (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'send_wire')
      .map((e) => (e.activityTaskScheduledEventAttributes!.input?.payloads ?? []).map((p) => decode(p.data)).join(''));
    expect(toolInputs).toHaveLength(1);
    expect(toolInputs[0]).toContain('approvalGrant');
    // The promise (README "Approvals a person provably gave"): history holds no intent digest.
    expect(toolInputs[0]).not.toContain(waiting.call.intentDigest!);
  });
});
