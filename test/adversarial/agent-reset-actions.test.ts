/**
 * Adversarial (resets): a Temporal reset (`temporal workflow reset`) of an agent run never repeats
 * an effect, and the rules that promise rests on:
 * - a call of the reset run's own history (made before the reset point) is passed by, so the
 *   reset run's next call of the same intent runs (test/integration/reset-occurrences.test.ts);
 * - a continued run (continue-as-new) counts its occurrences afresh;
 * - the run owns (and compensates) the effects of its history.
 *
 * Real dev server, real SQLite store, real model-turn and tool activities (as in
 * test/integration/agent-resets.test.ts); the model is a loopback planner handing out fresh
 * tool-call ids per turn, its plan replaceable between runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError } from '../../src/activities';
import type { AppliedEffect } from '../../src/activities/tools/compensation-declaration';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import type { ModelTurnInput, ModelTurnResult, ToolCallRequest } from '../../src/model/types';
import { agentWorkflow, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowResult } from '../../src/workflows/agent/types';
import { resetWithCli, taskAfterActivity, type ResetPoint } from '../helpers/workflow-reset';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(240_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
const TASK_QUEUE = 'adv-reset-agent';

type Plan = (turn: number, input: ModelTurnInput) => Omit<ToolCallRequest, 'callId'>[];

describe('agent resets', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let worker: Worker;
  let running: Promise<void>;
  const charges: { workflowId: string; orderId: string; amountCents: number; callId: string }[] = [];
  const refunds: { workflowId: string; orderId: string; callId: string }[] = [];
  const plans = new Map<string, Plan>();
  /** Every model request, by workflow id (what the model read). */
  const requests = new Map<string, ModelTurnInput[]>();
  let nextCallId = 0;

  const charge = defineTool({
    name: 'charge',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    callDeadlineMs: 300,
    async execute(input, ctx) {
      charges.push({ workflowId: ctx.workflowId, orderId: input.orderId, amountCents: input.amountCents, callId: ctx.callId });
      return { output: { charged: input.amountCents, orderId: input.orderId }, receipt: { chargeId: `ch_${charges.length}` } };
    },
    compensation: {
      revision: 'refund-v1',
      async execute(applied: AppliedEffect, ctx) {
        refunds.push({ workflowId: ctx.workflowId, orderId: (applied.args as { orderId: string }).orderId, callId: ctx.callId });
        return { output: { refunded: true } };
      },
    },
  });

  const decline = defineTool({
    name: 'decline',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    async execute() {
      throw new ToolError('rejected', 'the card issuer declined the order');
    },
  });

  /** A charge whose second execution (per order) waits for the test to open its gate: a call in flight at the reset point. */
  const gates = new Map<string, { open: () => void; opened: Promise<void> }>();
  const executions = new Map<string, number>();
  const slowCharge = defineTool({
    name: 'slow_charge',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    // The reset run's re-dispatched attempt waits out this claim; the gate opens a second or two after the claim.
    callDeadlineMs: 10_000,
    async execute(input, ctx) {
      const n = (executions.get(input.orderId) ?? 0) + 1;
      executions.set(input.orderId, n);
      charges.push({ workflowId: ctx.workflowId, orderId: input.orderId, amountCents: input.amountCents, callId: ctx.callId });
      const receipt = { chargeId: `ch_${charges.length}` };
      if (n === 2) await gates.get(input.orderId)?.opened;
      return { output: { charged: input.amountCents, orderId: input.orderId, ...receipt }, receipt };
    },
  });

  const planner = {
    name: 'planner',
    async turn(input: ModelTurnInput): Promise<ModelTurnResult> {
      const workflowId = (input.modelOptions as { workflowId: string }).workflowId;
      requests.set(workflowId, [...(requests.get(workflowId) ?? []), input]);
      const calls = plans.get(workflowId)!(input.turn, input);
      if (calls.length === 0) return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
      return { stopReason: 'tool_use', text: 'working', toolCalls: calls.map((c) => ({ ...c, callId: `toolu_${(nextCallId += 1)}` })) };
    },
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv-reset-agent-'));
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
        ...createToolActivities({ store, tools: [charge, decline, slowCharge], reconcileMarginMs: 100 }),
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
          prompt: 'handle the order',
          tools: ['charge', 'decline', 'slow_charge'],
          budget: { maxTurns: 8, maxToolCalls: 8, deadlineMs: 5 * 60_000 },
          activityOptions: { startToCloseTimeoutMs: 10_000, heartbeatTimeoutMs: 5_000, retry: { initialIntervalMs: 100, maximumIntervalMs: 300, maximumAttempts: 5 } },
          ...extra,
        },
      ],
    });
  }

  async function reset(workflowId: string, runId: string, to: ResetPoint): Promise<WorkflowHandle<typeof agentWorkflow>> {
    return env.client.workflow.getHandle(workflowId, await resetWithCli(env.devServer, env.client, workflowId, runId, to)) as WorkflowHandle<typeof agentWorkflow>;
  }

  /** The run ids of a continue-as-new chain ending at `lastRunId`, first to last. */
  async function chainRuns(workflowId: string, lastRunId: string): Promise<string[]> {
    const runs = [lastRunId];
    for (;;) {
      const { events } = await env.client.workflow.getHandle(workflowId, runs[0]).fetchHistory();
      const from = events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
      if (!from) return runs;
      runs.unshift(from);
    }
  }

  /** Resolves with the paused call's reason once the run pauses (polls the status query for 30 s, then never resolves). */
  /** The paused call's id and reason once the run pauses; stops asking once `settled.done` (so no query outlives the test's client). */
  async function waitForPause(handle: WorkflowHandle<typeof agentWorkflow>, settled: { done: boolean }): Promise<string> {
    for (let i = 0; i < 300 && !settled.done; i += 1) {
      const status = await handle.query(runStatusQuery).catch(() => null);
      const paused = status?.pendingCalls.find((c) => c.status === 'paused');
      if (status?.phase === 'paused' && paused !== undefined) return `${paused.callId}: ${paused.reason}`;
      await new Promise((r) => setTimeout(r, 100));
    }
    return new Promise(() => undefined);
  }

  /** The result of the chain's last run (following continue-as-new). */
  const finalResult = (workflowId: string): Promise<AgentWorkflowResult> => env.client.workflow.getHandle(workflowId).result() as Promise<AgentWorkflowResult>;

  const chargesOf = (workflowId: string) => charges.filter((c) => c.workflowId === workflowId).map((c) => `${c.orderId}:${c.amountCents}`);
  const refundsOf = (workflowId: string) => refunds.filter((r) => r.workflowId === workflowId).map((r) => r.orderId);

  it("a reset to a later workflow task: the reset run's second charge of an order is answered by the discarded second charge, never by its own first", async () => {
    const workflowId = 'adv-reset-a1';
    const first = await start(workflowId, (turn) => (turn === 0 ? [{ toolName: 'charge', input: { orderId: 'o-1', amountCents: 500 } }] : []));
    expect((await first.result()).status).toBe('completed');
    // The reset run keeps turn 0 (the charge applied) and, at turn 1, the model charges the order a second time.
    plans.set(workflowId, (turn) => (turn === 1 ? [{ toolName: 'charge', input: { orderId: 'o-1', amountCents: 500 } }] : []));
    const resetRun = await reset(workflowId, first.firstExecutionRunId, await taskAfterActivity(first, 2));
    const result = await resetRun.result();
    expect(result.status).toBe('completed');
    const second = result.calls.find((c) => c.turn === 1)!;
    if (process.env.RESET_DEBUG) console.log(JSON.stringify(result.calls.map((c) => ({ id: c.callId, turn: c.turn, source: c.source, appliedByRun: c.appliedByRun }))));
    // The branch asked for two charges; the first is in the reset run's own history, so the second must run.
    expect(second.source).toBe('executed');
    expect(chargesOf(workflowId)).toEqual(['o-1:500', 'o-1:500']);
  });

  it('a reset to a later workflow task, then compensation: the charge of its history is refunded once', async () => {
    const workflowId = 'adv-reset-a2';
    const first = await start(workflowId, (turn) => (turn === 0 ? [{ toolName: 'charge', input: { orderId: 'o-2', amountCents: 300 } }] : []), {
      compensateOn: ['BUSINESS_REJECTION'],
    });
    expect((await first.result()).status).toBe('completed');
    expect(refundsOf(workflowId)).toEqual([]);
    // The reset run keeps the charge (turn 0); at turn 1 the issuer declines, and the run compensates what it applied.
    plans.set(workflowId, (turn) => (turn === 1 ? [{ toolName: 'decline', input: { orderId: 'o-2' } }] : []));
    const resetRun = await reset(workflowId, first.firstExecutionRunId, await taskAfterActivity(first, 2));
    // The run must finish (compensated); a pause on the compensation is reported with its reason.
    const settled = { done: false };
    const finished = await Promise.race([
      resetRun.result().then((r) => ({ status: r.status, pause: null as string | null })),
      waitForPause(resetRun, settled).then((reason) => ({ status: 'paused', pause: reason })),
    ]);
    settled.done = true;
    if (process.env.RESET_DEBUG) console.log(JSON.stringify(finished));
    expect(finished.pause).toBeNull();
    expect(chargesOf(workflowId)).toEqual(['o-2:300']);
    // The charge is this branch's effect: the saga must refund it exactly once.
    expect(refundsOf(workflowId)).toEqual(['o-2']);
  });

  it('continue-as-new without a reset: the same charge in the next segment is applied again', async () => {
    const workflowId = 'adv-reset-a3';
    await start(workflowId, (turn) => (turn === 0 || turn === 1 ? [{ toolName: 'charge', input: { orderId: 'o-3', amountCents: 100 } }] : []), {
      limits: { continueAsNewAfterEvents: 12 },
    });
    const result = await finalResult(workflowId);
    expect(result.status).toBe('completed');
    expect(result.continued?.continuations ?? 0).toBeGreaterThanOrEqual(1);
    // One charge per turn, each turn in its own segment: "a continued run counts its occurrences afresh".
    expect(chargesOf(workflowId)).toEqual(['o-3:100', 'o-3:100']);
  });

  /** The `type` of the first ApplicationFailure in `error`'s cause chain, else null. */
  function failureType(error: unknown): string | null {
    for (let e = error as { cause?: unknown; type?: unknown } | undefined; e !== undefined && e !== null; e = e.cause as typeof e) {
      if (e instanceof ApplicationFailure) return e.type ?? null;
    }
    return null;
  }

  // Occurrences are counted per segment, and a reset lineage may continue as new at other turns
  // than the discarded runs did (the reset adds events; the model may plan otherwise), so a
  // discarded call of a later segment could not be met: such a reset is refused before the model
  // is asked (docs/protocol.md#resets).
  it('resetting an EARLIER (closed) run of a continued chain is refused before the model is asked: nothing runs again', async () => {
    const workflowId = 'adv-reset-a4';
    const plan: Plan = (turn) => (turn <= 2 ? [{ toolName: 'charge', input: { orderId: 'o-4', amountCents: 101 + turn } }] : []);
    await start(workflowId, plan, { limits: { continueAsNewAfterEvents: 12 } });
    const before = await finalResult(workflowId);
    expect(before.status).toBe('completed');
    const runs = await chainRuns(workflowId, (await env.client.workflow.getHandle(workflowId).describe()).runId);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(chargesOf(workflowId)).toEqual(['o-4:101', 'o-4:102', 'o-4:103']);
    const asked = requests.get(workflowId)!.length;
    // The chain's first run, to its first workflow task; then a middle run, to its first task.
    for (const run of [runs[0]!, runs[1]!]) {
      const resetRun = await reset(workflowId, run, 'first');
      const failure = await resetRun.result().then(
        () => null,
        (error: unknown) => error,
      );
      expect(failureType(failure)).toBe('RESET_OF_CONTINUED_RUN');
    }
    expect(requests.get(workflowId)!.length).toBe(asked);
    expect(chargesOf(workflowId)).toEqual(['o-4:101', 'o-4:102', 'o-4:103']);
    expect(refundsOf(workflowId)).toEqual([]);
  });

  it('resetting the LATEST run of a continued chain is not refused: its charges come from the store', async () => {
    const workflowId = 'adv-reset-a6';
    const plan: Plan = (turn) => (turn <= 2 ? [{ toolName: 'charge', input: { orderId: 'o-6', amountCents: 101 + turn } }] : []);
    await start(workflowId, plan, { limits: { continueAsNewAfterEvents: 12 } });
    expect((await finalResult(workflowId)).status).toBe('completed');
    const runs = await chainRuns(workflowId, (await env.client.workflow.getHandle(workflowId).describe()).runId);
    expect(runs.length).toBeGreaterThanOrEqual(2);
    const resetRun = await reset(workflowId, runs.at(-1)!, 'first');
    expect((await resetRun.result()).status).toBe('completed');
    expect(chargesOf(workflowId)).toEqual(['o-6:101', 'o-6:102', 'o-6:103']);
  });

  /**
   * A reset lineage that continued as new: run O charges A then B; a reset of O to its first task
   * (run R) adds twelve other charges to its first turn, so R passes O's history length, which is
   * the limit, and continues as new before its second turn (run R2), which asks for B again.
   * Returns the runs and the plan O ran.
   */
  async function continuedResetLineage(workflowId: string, order: string): Promise<{ r: string; r2: string; original: Plan }> {
    const original: Plan = (turn) => (turn <= 1 ? [{ toolName: 'charge', input: { orderId: order, amountCents: 301 + turn } }] : []);
    const budget = { maxTurns: 8, maxToolCalls: 30, deadlineMs: 5 * 60_000 };
    await start(`${workflowId}-measure`, original, { budget });
    await finalResult(`${workflowId}-measure`);
    const limit = (await env.client.workflow.getHandle(`${workflowId}-measure`).describe()).historyLength;
    const o = await start(workflowId, original, { budget, limits: { continueAsNewAfterEvents: limit } });
    const before = await finalResult(workflowId);
    expect(before.continued?.continuations ?? 0).toBe(0);
    expect(chargesOf(workflowId)).toEqual([`${order}:301`, `${order}:302`]);
    const extra = Array.from({ length: 12 }, (_, i) => ({ toolName: 'charge', input: { orderId: `${order}-extra-${i}`, amountCents: 1 } }));
    plans.set(workflowId, (turn, input) => (turn === 0 ? [...original(turn, input), ...extra] : original(turn, input)));
    await reset(workflowId, o.firstExecutionRunId, 'first');
    expect((await finalResult(workflowId)).status).toBe('completed');
    // The reset run R (no run before it: O was the chain's first) and R2, continued from it, which asked the second turn.
    const runs = await chainRuns(workflowId, (await env.client.workflow.getHandle(workflowId).describe()).runId);
    expect(runs).toHaveLength(2);
    expect(runs[0]).not.toBe(o.firstExecutionRunId);
    const { events } = await env.client.workflow.getHandle(workflowId, runs[1]).fetchHistory();
    const startInput = events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!.data!;
    expect((JSON.parse(Buffer.from(startInput).toString()) as { continued: { turns: number } }).continued.turns).toBe(1);
    return { r: runs[0]!, r2: runs[1]!, original };
  }

  it('a reset run that plans more, and so continues as new sooner than the run it reset: a discarded charge it asks for in its next run comes from the store', async () => {
    const workflowId = 'adv-reset-a7';
    await continuedResetLineage(workflowId, 'o-7');
    expect(chargesOf(workflowId).filter((c) => !c.includes('extra'))).toEqual(['o-7:301', 'o-7:302']);
  });

  it("a reset of a reset lineage's continued run: a charge the lineage's earlier run applied, asked for once more, is applied again; the discarded ones come from the store", async () => {
    const workflowId = 'adv-reset-a8';
    const { r2 } = await continuedResetLineage(workflowId, 'o-8');
    const before = chargesOf(workflowId);
    expect(before.filter((c) => c.startsWith('o-8:'))).toEqual(['o-8:301', 'o-8:302']);
    // Reset R2 to its first task: its turn asks for B (discarded: from the store) and for A once more (R applied A: a second A).
    plans.set(workflowId, (turn) =>
      turn === 1
        ? [
            { toolName: 'charge', input: { orderId: 'o-8', amountCents: 302 } },
            { toolName: 'charge', input: { orderId: 'o-8', amountCents: 301 } },
          ]
        : [],
    );
    const again = await reset(workflowId, r2, 'first');
    expect((await again.result()).status).toBe('completed');
    expect(chargesOf(workflowId)).toEqual([...before, 'o-8:301']);
  });

  it('a reset of the first run of a reset lineage that continued as new is not refused: every charge comes from the store', async () => {
    const workflowId = 'adv-reset-a9';
    const { r, original } = await continuedResetLineage(workflowId, 'o-9');
    const before = chargesOf(workflowId);
    plans.set(workflowId, original);
    await reset(workflowId, r, 'first');
    expect((await finalResult(workflowId)).status).toBe('completed');
    expect(chargesOf(workflowId)).toEqual(before);
  });

  it('a reset in the middle of a concurrent turn (two charges of one order, one completed, one in flight): each applied once, two distinct effects', async () => {
    const workflowId = 'adv-reset-a5';
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    gates.set('o-5', { open, opened });
    const twice: Plan = (turn) =>
      turn === 0
        ? [
            { toolName: 'slow_charge', input: { orderId: 'o-5', amountCents: 100 } },
            { toolName: 'slow_charge', input: { orderId: 'o-5', amountCents: 100 } },
          ]
        : [];
    const first = await start(workflowId, twice, { toolConcurrency: 2 });
    // Wait for the first charge's result and the workflow task after it, while the second is in flight.
    let resetPoint = 0;
    for (let i = 0; i < 300 && resetPoint === 0; i += 1) {
      resetPoint = await taskAfterActivity(first, 2).catch(() => 0);
      if (resetPoint === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(resetPoint).toBeGreaterThan(0);
    expect(chargesOf(workflowId)).toHaveLength(2);
    const resetRun = await reset(workflowId, first.firstExecutionRunId, resetPoint);
    open();
    const settled = { done: false };
    const finished = await Promise.race([
      resetRun.result().then((r) => ({ status: r.status, pause: null as string | null, calls: r.calls })),
      waitForPause(resetRun, settled).then((reason) => ({ status: 'paused', pause: reason, calls: [] })),
    ]);
    settled.done = true;
    if (process.env.RESET_DEBUG) console.log(JSON.stringify({ ...finished, charges: charges.filter((c) => c.workflowId === workflowId) }));
    expect(finished.pause).toBeNull();
    expect(finished.status).toBe('completed');
    // The branch asked for two charges of the order: exactly two effects, each call its own.
    expect(chargesOf(workflowId)).toEqual(['o-5:100', 'o-5:100']);
    const receipts = finished.calls.filter((c) => c.toolName === 'slow_charge').map((c) => JSON.stringify(c.receipt));
    expect(new Set(receipts).size).toBe(2);
    // The model reads two charges: neither tool message may tell it that its charge was not applied.
    const toolMessages = requests
      .get(workflowId)!
      .at(-1)!
      .messages!.filter((m) => m.role === 'tool');
    if (process.env.RESET_DEBUG) console.log(JSON.stringify(toolMessages));
    expect(toolMessages).toHaveLength(2);
    for (const m of toolMessages) expect(JSON.stringify(m)).not.toContain('not applied again');
  });
});
