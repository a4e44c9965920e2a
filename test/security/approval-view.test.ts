/**
 * What the approver sees is what runs. On a real Temporal dev server with the
 * real tool activities and a SQLite store: a tool whose schema strips unknown keys and fills a
 * default. The pending call shows the validated arguments (and, apart and labelled, what the
 * model sent); they are what the intent digest covers and what `execute` receives after the
 * approval; an approval naming any other digest is refused; `ttc pending` prints both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import { intentDigest } from '../../src/checkpoint/digest';
import type { JsonValue } from '../../src/checkpoint/types';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { agentWorkflow, approveCallUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput, PendingCallView, RunStatusView } from '../../src/workflows/agent/types';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { runCli } from '../helpers/cli';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(180_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

/** What the model sent (the review's example): two keys the schema strips, no currency. */
const MODEL_INPUT = { account: 'A-1', amount: 5000, dryRun: true, maxAmount: 50 };
/** What runs: unknown keys stripped, the default currency filled. */
const VALIDATED = { account: 'A-1', amount: 5000, currency: 'USD' };

/** The model: turn n answers `modelOptions.script[n]`, then ends the conversation. */
async function runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
  const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
  return script[input.turn] ?? { stopReason: 'end_turn', text: 'done', toolCalls: [] };
}

describe('the approval view shows what runs', () => {
  let env: LocalTestEnv;
  let dir: string;
  let storeUrl: string;
  let store: CheckpointStore;
  let worker: Worker;
  let running: Promise<void>;
  const executed: unknown[] = [];
  const taskQueue = `item2-${Date.now()}`;

  const transfer = defineTool({
    name: 'transfer',
    revision: '3',
    input: z.object({ account: z.string(), amount: z.number().int().positive(), currency: z.string().default('USD') }),
    target: (args) => ({ account: args.account }),
    async execute(args) {
      executed.push(structuredClone(args));
      return { output: { moved: args.amount, currency: args.currency } };
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-item2-'));
    storeUrl = `sqlite:${join(dir, 'checkpoints.db')}`;
    const [created, bundle, opened] = await Promise.all([
      createLocalEnv(),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
      openCheckpointStore(storeUrl),
    ]);
    [env, store] = [created, opened];
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities: { ...createToolActivities({ store, tools: [transfer] }), runModelTurn },
    });
    running = worker.run();
  });

  afterAll(async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    executed.length = 0;
  });

  async function startTransfer(callId: string): Promise<WorkflowHandle<typeof agentWorkflow>> {
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'scripted',
      modelOptions: { script: [{ stopReason: 'tool_use', text: 'moving money', toolCalls: [{ callId, toolName: 'transfer', input: MODEL_INPUT }] }] } as never,
      prompt: 'pay A-1',
      tools: ['transfer'],
      budget: { maxTurns: 3, maxToolCalls: 3, deadlineMs: 120_000 },
      approvalRequired: { transfer: { expiresAfterMs: 60_000 } },
    };
    return env.client.workflow.start(agentWorkflow, { taskQueue, workflowId: `item2-${callId}-${Date.now()}`, args: [input] });
  }

  async function awaitingApproval(handle: WorkflowHandle): Promise<{ status: RunStatusView; pending: PendingCallView }> {
    const until = Date.now() + 30_000;
    for (;;) {
      const status = await handle.query(runStatusQuery);
      const pending = status.pendingCalls.find((c) => c.status === 'awaiting-approval');
      if (pending !== undefined) return { status, pending };
      if (Date.now() > until) throw new Error(`no call awaits approval: ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('the pending call shows the validated arguments the approved digest covers and execute receives; the model input apart; another digest is refused', async () => {
    const handle = await startTransfer('t1');
    const { status, pending } = await awaitingApproval(handle);

    expect(pending.arguments).toEqual(VALIDATED);
    expect(pending.modelInput).toEqual(MODEL_INPUT);
    expect(pending.target).toEqual({ account: 'A-1' });
    // The digest the approver approves is the intent digest over exactly the arguments shown.
    expect(intentDigest({ toolName: 'transfer', toolRevision: pending.toolRevision!, args: pending.arguments, target: pending.target })).toBe(pending.intentDigest);

    // An approval of anything else (here: the model's raw input) is refused and nothing runs.
    const rawDigest = intentDigest({ toolName: 'transfer', toolRevision: '3', args: MODEL_INPUT, target: { account: 'A-1' } });
    const refused = await handle
      .executeUpdate(approveCallUpdate, { args: [{ callId: 't1', intentDigest: rawDigest, stateVersion: status.stateVersion }] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refused as WorkflowUpdateFailedError).cause).toEqual(expect.objectContaining({ type: 'APPROVAL_MISMATCH' }));
    expect(executed).toEqual([]);

    await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 't1', intentDigest: pending.intentDigest!, stateVersion: status.stateVersion }] });
    const result = await handle.result();
    expect(result.calls).toEqual([expect.objectContaining({ callId: 't1', status: 'completed', source: 'executed', intentDigest: pending.intentDigest })]);
    expect(executed).toEqual([pending.arguments]);
  });

  it('`ttc pending` prints the validated arguments (what runs) and, labelled, what the model sent', async () => {
    const handle = await startTransfer('t2');
    const { pending } = await awaitingApproval(handle);
    const out = await runCli(['pending'], { ...process.env, TEMPORAL_ADDRESS: env.devServer.address, TEMPORAL_NAMESPACE: env.devServer.namespace, TTC_STORE_URL: storeUrl });
    expect(out).toEqual(expect.objectContaining({ code: 0 }));
    const lines = out.stdout.split('\n').map((l) => l.trim());
    const json = (v: JsonValue): string => JSON.stringify(v);
    expect(lines).toContain(`approval of ${handle.workflowId}/t2: transfer revision 3, intent ${pending.intentDigest}`);
    expect(lines).toContain(`arguments (validated; these run): ${json(VALIDATED)}`);
    expect(lines).toContain(`target: ${json({ account: 'A-1' })}`);
    expect(lines).toContain(`model sent (not run as sent): ${json(MODEL_INPUT)}`);
    await handle.cancel();
  });
});
