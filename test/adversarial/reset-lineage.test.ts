/**
 * Adversarial (resets): the calls a reset run replays, resets of runs that continued as new, and
 * repeated resets of one reset lineage (docs/protocol.md#resets). Found by an attack on the reset
 * lineage rules; each case failed before its fix:
 * - a call planned before the reset point and run after it counted the discarded branch's calls of
 *   its planning run as its own, and applied again an action the discarded branch applied;
 * - a reset to the task that continued as new handed over at once, before any model turn, so no
 *   check refused it;
 * - a call pending approval at the reset point ran before the first model turn's refusal.
 * Real dev server, real SQLite store, real model-turn and tool activities, resets with the
 * `temporal` CLI (test/helpers/agent-reset-harness.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import { createAgentResetHarness, type AgentResetHarness, type Plan } from '../helpers/agent-reset-harness';
import { installQuietTemporalRuntime } from '../helpers/temporal';
import { lastTask, taskAfterActivity } from '../helpers/workflow-reset';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(240_000);

/** The `type` of the first ApplicationFailure in `error`'s cause chain, else null. */
function failureType(error: unknown): string | null {
  for (let e = error as { cause?: unknown } | undefined; e !== undefined && e !== null; e = e.cause as typeof e) {
    if (e instanceof ApplicationFailure) return e.type ?? null;
  }
  return null;
}

const APPROVAL = { approvalRequired: { charge: { expiresAfterMs: 3_600_000 } } };

describe('reset lineages', () => {
  let h: AgentResetHarness;
  beforeAll(async () => {
    h = await createAgentResetHarness('adv-reset-lineage');
  });
  afterAll(async () => h?.teardown());

  /** The chain's result status, or the failure type it failed with. */
  const outcomeOf = (workflowId: string): Promise<string | null> =>
    h.finalResult(workflowId).then(
      (result) => result.status,
      (error: unknown) => failureType(error),
    );

  it('a call pending approval at the reset point, approved after it, gets the stored result of the same charge the discarded branch applied later', async () => {
    const workflowId = 'adv-lineage-replayed';
    const plan: Plan = (turn) => (turn <= 1 ? [{ toolName: 'charge', input: { orderId: 'o-1', amountCents: 500 } }] : []);
    const first = await h.start(workflowId, plan, APPROVAL);
    await h.approveNext(first, 'reject'); // turn 0's charge
    await h.approveNext(first, 'approve'); // turn 1's charge: applied
    expect((await first.result()).status).toBe('completed');
    expect(h.chargesOf(workflowId)).toEqual(['o-1:500']);
    // Reset to the task after turn 0's model turn: its charge waits for approval again; the model then stops.
    h.plans.set(workflowId, () => []);
    const resetRun = await h.reset(workflowId, first.firstExecutionRunId, await taskAfterActivity(first, 1));
    const approved = await h.approveNext(resetRun, 'approve');
    const result = await resetRun.result();
    expect(result.status).toBe('completed');
    // The reset branch asked for the charge once, the discarded branch applied it once.
    expect(h.chargesOf(workflowId)).toEqual(['o-1:500']);
    const call = result.calls.find((c) => c.callId === approved)!;
    expect(call.source).toBe('store');
    expect(call.appliedByRun?.runId).toBe(first.firstExecutionRunId);
  });

  it.each([
    ['the id of its last workflow task', 'event'],
    ['--type LastWorkflowTask', 'last'],
  ] as const)('a reset of a run that continued as new, to %s (it continues as new again before any model turn): refused, nothing runs again', async (_name, how) => {
    const workflowId = `adv-lineage-last-${how}`;
    const plan: Plan = (turn) => (turn <= 1 ? [{ toolName: 'charge', input: { orderId: `o-${how}`, amountCents: 101 + turn } }] : []);
    const first = await h.start(workflowId, plan, { limits: { continueAsNewAfterEvents: 10 } });
    expect((await h.finalResult(workflowId)).status).toBe('completed');
    expect((await h.chainRuns(workflowId)).length).toBeGreaterThanOrEqual(2);
    expect(h.chargesOf(workflowId)).toEqual([`o-${how}:101`, `o-${how}:102`]);
    const asked = h.requests.get(workflowId)!.length;
    await h.reset(workflowId, first.firstExecutionRunId, how === 'event' ? await lastTask(first) : 'last');
    expect(await outcomeOf(workflowId)).toBe('RESET_OF_CONTINUED_RUN');
    expect(h.requests.get(workflowId)!.length).toBe(asked);
    expect(h.chargesOf(workflowId)).toEqual([`o-${how}:101`, `o-${how}:102`]);
  });

  it('a reset of a run that continued as new, to where a call waits for approval: approving it runs nothing, the run is refused', async () => {
    const workflowId = 'adv-lineage-pending';
    const plan: Plan = (turn) => (turn <= 1 ? [{ toolName: 'charge', input: { orderId: 'o-2', amountCents: 700 } }] : []);
    const first = await h.start(workflowId, plan, { ...APPROVAL, limits: { continueAsNewAfterEvents: 10 } });
    await h.approveNext(first, 'reject'); // turn 0, first run; the run then continues as new
    const chain = h.env.client.workflow.getHandle(workflowId) as typeof first;
    await h.waitFor(async () => ((await chain.describe()).runId !== first.firstExecutionRunId ? true : null));
    await h.approveNext(chain, 'approve'); // turn 1, second run: applied
    expect((await h.finalResult(workflowId)).status).toBe('completed');
    expect(h.chargesOf(workflowId)).toEqual(['o-2:700']);
    const asked = h.requests.get(workflowId)!.length;
    h.plans.set(workflowId, () => []);
    const resetRun = await h.reset(workflowId, first.firstExecutionRunId, await taskAfterActivity(first, 1));
    await h.approveNext(resetRun, 'approve');
    expect(await outcomeOf(workflowId)).toBe('RESET_OF_CONTINUED_RUN');
    expect(h.requests.get(workflowId)!.length).toBe(asked);
    expect(h.chargesOf(workflowId)).toEqual(['o-2:700']);
  });

  it('repeated resets of one lineage with the same charge in every run: each reset applies only what its branch asks for beyond the discarded ones', async () => {
    const workflowId = 'adv-lineage-repeated';
    const x = { toolName: 'charge', input: { orderId: 'o-x', amountCents: 9 } };
    const upTo =
      (n: number): Plan =>
      (turn) =>
        turn < n ? [x] : [];
    await h.start(workflowId, upTo(4), { limits: { continueAsNewAfterEvents: 10 } });
    expect((await h.finalResult(workflowId)).status).toBe('completed');
    const base = await h.chainRuns(workflowId);
    // One charge per run: a continued run counts afresh.
    expect(h.chargesOf(workflowId)).toHaveLength(4);
    // Reset the latest run to its first task: the lineage asks for the charge three more times, over several runs.
    const latestTurn = h.requests.get(workflowId)!.length - 1;
    h.plans.set(workflowId, upTo(latestTurn + 3));
    await h.reset(workflowId, base.at(-1)!, 'first');
    expect((await h.finalResult(workflowId)).status).toBe('completed');
    const lineage = (await h.chainRuns(workflowId)).slice(base.length - 1);
    expect(lineage.length).toBeGreaterThanOrEqual(3);
    expect(h.chargesOf(workflowId)).toHaveLength(7);
    // Reset the lineage's first run (which continued) to its first task, asking twice: both from the store.
    h.plans.set(workflowId, upTo(latestTurn + 2));
    await h.reset(workflowId, lineage[0]!, 'first');
    expect((await h.finalResult(workflowId)).status).toBe('completed');
    expect(h.chargesOf(workflowId)).toHaveLength(7);
    // Reset the new lineage's second run to its last task, asking five times in all: two more.
    const lineage2 = (await h.chainRuns(workflowId)).slice(base.length - 1);
    h.plans.set(workflowId, upTo(latestTurn + 5));
    const mid = lineage2[1] ?? lineage2[0]!;
    await h.reset(workflowId, mid, await lastTask(h.env.client.workflow.getHandle(workflowId, mid)));
    expect((await h.finalResult(workflowId)).status).toBe('completed');
    expect(h.chargesOf(workflowId)).toHaveLength(9);
  });

  it("a charge still scheduled at the reset point, never claimed, is refused in the reset run and the model is told; asked again it is charged once, and the discarded run's held attempt charges nothing", async () => {
    const workflowId = 'adv-lineage-scheduled';
    const charge = { toolName: 'charge', input: { orderId: 'o-3', amountCents: 300 } };
    // Turn 0 charges and looks the order up; turn 1 (only the reset run gets there) asks for the charge again.
    const plan: Plan = (turn) => (turn === 0 ? [charge, { toolName: 'lookup_order', input: { orderId: 'o-3' } }] : turn === 1 ? [charge] : []);
    let reached!: () => void;
    const heldThere = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const passed: string[] = [];
    let holding = true;
    h.onStep = async (point, at) => {
      if (at.workflowId !== workflowId || at.activityType !== 'charge') return;
      passed.push(`${at.runId}:${point}`);
      if (point !== 'before-claim' || !holding) return;
      // The first charge attempt (the discarded run's) waits before its claim until the test lets it go.
      holding = false;
      reached();
      await released;
    };
    try {
      const first = await h.start(workflowId, plan, { tools: ['charge', 'lookup_order'] });
      await heldThere;
      // The task after the lookup completed: the charge is still scheduled there, unclaimed.
      const point = await h.waitFor(() => taskAfterActivity(first, 2));
      const resetRun = await h.reset(workflowId, first.firstExecutionRunId, point);
      const result = await resetRun.result();
      expect(result.status).toBe('completed');
      expect(h.chargesOf(workflowId)).toEqual(['o-3:300']);
      const charges = result.calls.filter((c) => c.toolName === 'charge');
      expect(charges.map((c) => [c.status, c.errorType])).toEqual([
        ['failed', 'DISCARDED_BY_RESET'],
        ['completed', null],
      ]);
      // The discarded run's attempt claims after the reset run refused the call: it loses, nothing is charged.
      release();
      const inFirst = () => passed.filter((p) => p.startsWith(`${first.firstExecutionRunId}:`)).map((p) => p.slice(p.indexOf(':') + 1));
      await h.waitFor(async () => (inFirst().includes('after-delivery-completed') ? true : null));
      // It never claimed: it delivered the refusal the reset run stored as the call's result.
      expect(inFirst()).toEqual(['before-claim', 'after-delivery-completed']);
      expect(h.chargesOf(workflowId)).toEqual(['o-3:300']);
    } finally {
      release?.();
      h.onStep = null;
    }
  });
});
