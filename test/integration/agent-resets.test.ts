/**
 * An agent run reset with the `temporal` CLI never repeats an effect (docs/deploying.md#resetting-a-run).
 * The reset run asks the model again, and the model plans again under new tool-call ids: a call
 * that means an action the discarded branch applied (same tool, same validated arguments, same
 * occurrence) is answered from that call's checkpoint (`source: 'store'`, `appliedByRun` naming
 * the discarded run), a different action runs as a call of its own. The conversation log forks:
 * the reset run reads the conversation as it was at the reset point and the discarded branch's
 * messages stay in the store. Real dev server, real SQLite store, the real model-turn and tool
 * activities; the model is a loopback adapter that hands out a fresh tool-call id on every turn,
 * as providers do.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import type { ModelTurnInput, ModelTurnResult, ToolCallRequest } from '../../src/model/types';
import { agentWorkflow, resolveOutcomeUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowResult, RunStatusView } from '../../src/workflows/agent/types';
import { conversationLogId, messageKey } from '../../src/activities/agent/conversation-log';
import { resetWithCli, taskAfterActivity, type ResetPoint } from '../helpers/workflow-reset';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(180_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
const TASK_QUEUE = 'agent-resets';

/** What the model plans at turn `turn` of a run, given the conversation it reads. */
type Plan = (turn: number, input: ModelTurnInput) => Omit<ToolCallRequest, 'callId'>[];

describe('a reset agent run never repeats an effect', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let worker: Worker;
  let running: Promise<void>;
  /** Each charge the provider applied: workflow id, order, amount. */
  const charges: { workflowId: string; orderId: string; amountCents: number }[] = [];
  /** Every model request, by workflow id. */
  const requests = new Map<string, ModelTurnInput[]>();
  /** The plan of each workflow id; replaced by a test between runs to make the model answer otherwise. */
  const plans = new Map<string, Plan>();
  /** Orders whose first charge answer is lost (the provider may have applied it: the outcome is unknown). */
  const loseAnswer = new Set<string>();
  let nextCallId = 0;

  const charge = defineTool({
    name: 'charge',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive(), currency: z.string().default('usd') }),
    callDeadlineMs: 300,
    async execute(input, ctx) {
      charges.push({ workflowId: ctx.workflowId, orderId: input.orderId, amountCents: input.amountCents });
      if (loseAnswer.delete(input.orderId)) throw new Error('the connection was reset after the request was sent');
      return { output: { charged: input.amountCents, orderId: input.orderId }, receipt: { chargeId: `ch_${charges.length}` } };
    },
  });

  const planner = {
    name: 'planner',
    async turn(input: ModelTurnInput): Promise<ModelTurnResult> {
      const workflowId = (input.modelOptions as { workflowId: string }).workflowId;
      requests.set(workflowId, [...(requests.get(workflowId) ?? []), input]);
      const calls = plans.get(workflowId)!(input.turn, input);
      if (calls.length === 0) return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
      // A fresh id on every turn, as a provider gives: a reset run's plan never reuses the discarded run's ids.
      return { stopReason: 'tool_use', text: 'charging', toolCalls: calls.map((c) => ({ ...c, callId: `toolu_${(nextCallId += 1)}` })) };
    },
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-agent-resets-'));
    let bundle;
    [env, store, bundle] = await Promise.all([
      createLocalEnv(),
      openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
    ]);
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: TASK_QUEUE,
      workflowBundle: bundle,
      activities: {
        ...createToolActivities({ store, tools: [charge], reconcileMarginMs: 100 }),
        ...createModelActivities({ store, adapters: { planner } }),
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

  function start(workflowId: string, plan: Plan, extra: Record<string, unknown> = {}) {
    plans.set(workflowId, plan);
    return env.client.workflow.start(agentWorkflow, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [
        {
          tenant: 'acme',
          model: 'planner',
          modelOptions: { workflowId },
          prompt: 'charge the order',
          tools: ['charge'],
          budget: { maxTurns: 6, maxToolCalls: 8, deadlineMs: 5 * 60_000 },
          activityOptions: { startToCloseTimeoutMs: 10_000, heartbeatTimeoutMs: 5_000, retry: { initialIntervalMs: 100, maximumIntervalMs: 300, maximumAttempts: 5 } },
          ...extra,
        },
      ],
    });
  }

  /** `temporal workflow reset` of the run `runId` to `to` (the first workflow task, or a WorkflowTaskCompleted event id); returns the reset run's handle. */
  async function reset(workflowId: string, runId: string, to: ResetPoint): Promise<WorkflowHandle<typeof agentWorkflow>> {
    return env.client.workflow.getHandle(workflowId, await resetWithCli(env.devServer, env.client, workflowId, runId, to)) as WorkflowHandle<typeof agentWorkflow>;
  }

  async function waitFor(handle: WorkflowHandle, predicate: (s: RunStatusView) => boolean): Promise<RunStatusView> {
    const until = Date.now() + 60_000;
    for (;;) {
      const status = await handle.query(runStatusQuery);
      if (predicate(status)) return status;
      if (Date.now() > until) throw new Error(`status never matched: ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const chargesOf = (workflowId: string) => charges.filter((c) => c.workflowId === workflowId).map((c) => `${c.orderId}:${c.amountCents}`);
  const chargeTurn =
    (...orders: [string, number][]): Plan =>
    (turn) =>
      turn === 0 ? orders.map(([orderId, amountCents]) => ({ toolName: 'charge', input: { orderId, amountCents } })) : [];

  it('reset to the first workflow task: the re-planned charge is answered from the discarded call, the conversation forks', async () => {
    const workflowId = 'reset-first-task';
    const first = await start(workflowId, chargeTurn(['o-1', 500]));
    const firstResult = await first.result();
    expect(firstResult.status).toBe('completed');
    const [discarded] = firstResult.calls;
    // The reset run's model spells the default out: the validated arguments, not the model's text, name the action.
    plans.set(workflowId, (turn) => (turn === 0 ? [{ toolName: 'charge', input: { amountCents: 500, orderId: 'o-1', currency: 'usd' } }] : []));
    const resetRun = await reset(workflowId, first.firstExecutionRunId, 'first');
    const result: AgentWorkflowResult = await resetRun.result();

    expect(result.status).toBe('completed');
    expect(chargesOf(workflowId)).toEqual(['o-1:500']);
    const [answered] = result.calls;
    expect(answered!.callId).not.toBe(discarded!.callId);
    expect(answered!.source).toBe('store');
    expect(answered!.appliedByRun).toEqual({ runId: first.firstExecutionRunId, callId: discarded!.callId });
    expect(answered!.receipt).toEqual(discarded!.receipt);
    // The model read the stored output, with a note that the action was not applied again.
    const lastTurn = requests.get(workflowId)!.at(-1)!;
    const toolMessage = lastTurn.messages!.find((m) => m.role === 'tool')!;
    expect(JSON.stringify(toolMessage)).toContain('nothing was applied again');
    // The tool message answers the tool call the model made, by the model's id.
    const plan = lastTurn.messages!.find((m) => m.role === 'assistant')!;
    expect(plan.role === 'assistant' && plan.toolCalls![0]!.callId).toBe(answered!.modelCallId);
    expect(toolMessage.role === 'tool' && toolMessage.callId).toBe(answered!.modelCallId);

    // The log forked: the discarded branch's assistant message is still in the chain's log, the reset run's in its own.
    const namespace = env.devServer.namespace;
    const chainLog = conversationLogId({ namespace, tenant: 'acme', workflowId, runChainId: first.firstExecutionRunId });
    const [discardedPlan] = await store.getConversationEntries(chainLog, [messageKey(1)]);
    expect(JSON.stringify(discardedPlan)).toContain(discarded!.callId.split('@')[0]);
    const resetLog = conversationLogId({ namespace, tenant: 'acme', workflowId, runChainId: first.firstExecutionRunId, runId: (await resetRun.describe()).runId });
    const [resetPlan] = await store.getConversationEntries(resetLog, [messageKey(1)]);
    expect(JSON.stringify(resetPlan)).toContain(answered!.modelCallId);
  });

  it('a different action in the reset run runs as a call of its own; the same action twice applies once more', async () => {
    const workflowId = 'reset-other-action';
    const first = await start(workflowId, chargeTurn(['o-2', 500]), { toolConcurrency: 2 });
    expect((await first.result()).status).toBe('completed');
    // The reset run charges the order twice (the second is a new action) and another order once.
    plans.set(workflowId, chargeTurn(['o-2', 500], ['o-2', 500], ['o-3', 700]));
    const resetRun = await reset(workflowId, first.firstExecutionRunId, 'first');
    const result = await resetRun.result();

    expect(result.status).toBe('completed');
    expect(chargesOf(workflowId).sort()).toEqual(['o-2:500', 'o-2:500', 'o-3:700']);
    expect(result.calls.map((c) => c.source).sort()).toEqual(['executed', 'executed', 'store']);
    const runId = (await resetRun.describe()).runId;
    for (const c of result.calls) expect(c.callId.endsWith(`@${runId}`)).toBe(true);
  });

  it('repeated resets to later workflow tasks and back to the first never repeat an effect', async () => {
    const workflowId = 'reset-repeated';
    const plan: Plan = (turn) =>
      turn === 0 ? [{ toolName: 'charge', input: { orderId: 'o-4', amountCents: 100 } }] : turn === 1 ? [{ toolName: 'charge', input: { orderId: 'o-5', amountCents: 200 } }] : [];
    const first = await start(workflowId, plan);
    expect((await first.result()).status).toBe('completed');
    expect(chargesOf(workflowId)).toEqual(['o-4:100', 'o-5:200']);

    // After the first charge's result, before the second turn: the second turn is planned again.
    const second = await reset(workflowId, first.firstExecutionRunId, await taskAfterActivity(first, 2));
    const secondResult = await second.result();
    expect(secondResult.status).toBe('completed');
    expect(secondResult.calls.map((c) => c.source)).toEqual(['executed', 'store']);
    // Back to the first workflow task of the reset run: both turns are planned again.
    const third = await reset(workflowId, (await second.describe()).runId, 'first');
    const thirdResult = await third.result();
    expect(thirdResult.status).toBe('completed');
    expect(thirdResult.calls.map((c) => c.source)).toEqual(['store', 'store']);
    expect(chargesOf(workflowId)).toEqual(['o-4:100', 'o-5:200']);
  });

  it('a reset between two turns that charge the same order: the replayed call keeps its id, the re-planned one is answered by the discarded second charge', async () => {
    const workflowId = 'reset-same-intent-twice';
    const twice: Plan = (turn) => (turn < 2 ? [{ toolName: 'charge', input: { orderId: 'o-7', amountCents: 300 } }] : []);
    const first = await start(workflowId, twice);
    const firstResult = await first.result();
    expect(chargesOf(workflowId)).toEqual(['o-7:300', 'o-7:300']);
    const [kept, discarded] = firstResult.calls;

    const resetRun = await reset(workflowId, first.firstExecutionRunId, await taskAfterActivity(first, 2));
    const result = await resetRun.result();
    expect(result.status).toBe('completed');
    // The first charge is history the reset run replays: the same call, under the id it ran with.
    expect(result.calls[0]).toEqual(expect.objectContaining({ callId: kept!.callId, source: 'executed' }));
    // The second turn was planned again: the same action as the discarded second charge, never the first one's result.
    expect(result.calls[1]).toEqual(expect.objectContaining({ source: 'store', appliedByRun: { runId: first.firstExecutionRunId, callId: discarded!.callId } }));
    expect(result.calls[1]!.receipt).toEqual(discarded!.receipt);
    expect(chargesOf(workflowId)).toEqual(['o-7:300', 'o-7:300']);
  });

  it('a reset while the run waits on an unknown outcome: the reset run waits on the same effect, and a person settles it once', async () => {
    const workflowId = 'reset-during-pause';
    loseAnswer.add('o-6');
    const first = await start(workflowId, chargeTurn(['o-6', 900]));
    await waitFor(first, (s) => s.phase === 'paused');
    const resetRun = await reset(workflowId, first.firstExecutionRunId, 'first');
    const paused = await waitFor(resetRun, (s) => s.phase === 'paused');
    const waiting = paused.paused!;
    await resetRun.executeUpdate(resolveOutcomeUpdate, {
      args: [{ callId: waiting.callId, pauseId: waiting.pauseId, resolution: 'applied', result: { charged: 900, orderId: 'o-6' }, reason: 'seen at the provider' }],
    });
    const result = await resetRun.result();
    expect(result.status).toBe('completed');
    expect(chargesOf(workflowId)).toEqual(['o-6:900']);
  });
});
