/**
 * Calls that run after a reset point (docs/protocol.md#resets), at the fence:
 * - a call planned before a reset point that adopts a discarded call's checkpoint in the reset run
 *   and then pauses tells the workflow the run its adoption is recorded for through the person's
 *   resolution (`resolveToolCall`'s `appliedByRun`), as an `ok` delivery does, so a later reset of
 *   that run finds the occurrence taken;
 * - a call still scheduled at a reset point is dispatched again in the reset run with the input the
 *   discarded run built (`occurrences.builtInRun`): it goes on only as the call an attempt claimed,
 *   else it is refused (DISCARDED_BY_RESET) and the refusal stored, so a late attempt of the
 *   discarded run cannot apply it either.
 * Fence activities in MockActivityEnvironment against a SQLite file store; inputs built as
 * `occurrences()` in agent-run-tool-calls.ts builds them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError, type ToolActivities } from '../../src/activities';
import { callBindingId } from '../../src/checkpoint/call-identity';
import type { FencedToolInput, FencedToolResult, ResolveToolCallResult } from '../../src/activities/contract/contract';
import { conversationLogId } from '../../src/activities/agent/conversation-log';
import { occurrenceScopeOf, packCallHashes, runOfCallId, runScopedCallId } from '../../src/checkpoint/run-scope';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { RunState } from '../../src/workflows/agent/run-state';

jest.setTimeout(60_000);

describe('calls that run after a reset point, at the fence', () => {
  let dir: string;
  let store: CheckpointStore;
  let acts: ToolActivities;
  let dying: ToolActivities;
  let applied: string[];
  /** How many next effects the provider answers 503 to, before accepting them. */
  let failNext: number;
  const provider = (what: string): void => {
    if (failNext > 0) {
      failNext -= 1;
      throw new ToolError('transient', 'provider answered 503 before accepting the request');
    }
    applied.push(what);
  };
  const charge = defineTool({
    name: 'charge',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    callDeadlineMs: 300,
    async execute(input) {
      provider(input.orderId);
      return { output: { charge: `ch-${input.orderId}-${applied.length}` } };
    },
  });
  const notify = defineTool({
    name: 'notify',
    revision: 'v1',
    input: z.object({ to: z.string() }),
    dedupeByIntent: true,
    async execute(input) {
      provider(input.to);
      return { output: { sent: input.to } };
    },
  });
  const ship = defineTool({
    name: 'ship',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    businessKey: (args: { orderId: string }) => `ship:${args.orderId}`,
    callDeadlineMs: 300,
    async execute(input) {
      provider(input.orderId);
      return { output: { shipment: `sh-${input.orderId}` } };
    },
    async lookup() {
      return { found: false };
    },
  });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-reset-gaps-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    acts = createToolActivities({
      store,
      tools: [charge, notify, ship],
      reconcileMarginMs: 100,
      transientRetry: { initialIntervalMs: 1, maximumIntervalMs: 1, maximumAttempts: 1 },
    });
    dying = createToolActivities({
      store,
      tools: [charge],
      reconcileMarginMs: 100,
      hooks: {
        step(point) {
          if (point === 'after-effect') throw new Error('the worker dies after the effect');
        },
      },
    });
  });
  beforeEach(() => {
    applied = [];
    failNext = 0;
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const env = (workflowId: string, runId: string, attempt = 1) =>
    new MockActivityEnvironment({ attempt, workflowExecution: { workflowId, runId }, heartbeatTimeoutMs: 30_000 } as never);
  /** An attempt whose activity has retries left (a transient failure is released for the next attempt, not stored). */
  const retrying = (workflowId: string, runId: string, attempt = 1) =>
    new MockActivityEnvironment({
      attempt,
      workflowExecution: { workflowId, runId },
      heartbeatTimeoutMs: 30_000,
      scheduleToCloseTimeoutMs: 0,
      retryPolicy: { maximumAttempts: 0 },
    } as never);
  const call = (chain: string, callId: string, occurrences: FencedToolInput['occurrences'], toolName = 'charge', input: object = { orderId: 'o-1' }): FencedToolInput =>
    ({ tenant: 'acme', callId, runChainId: chain, toolName, input, occurrences }) as FencedToolInput;
  const refusal = (p: Promise<unknown>): Promise<string> => p.then((r) => `ran: ${JSON.stringify(r)}`).catch((e: Error) => String(e));

  /**
   * The occurrences as `occurrences()` in agent-run-tool-calls.ts builds them in run `builtInRun`:
   * `liveRuns` are the runs in the ids plus the `recordedFor` the workflow learnt.
   */
  function occ(chain: string, ownCallsIn: string, history: string[], recordedFor: Map<string, string>, builtInRun = ownCallsIn): FencedToolInput['occurrences'] {
    const others = history.filter((c) => runOfCallId(c, chain) !== ownCallsIn);
    const scope = occurrenceScopeOf({ firstExecutionRunId: chain });
    if (others.length === 0) return { scope, ownCallsIn, builtInRun };
    const runs = others.flatMap((c) => (recordedFor.has(c) ? [runOfCallId(c, chain), recordedFor.get(c)!] : [runOfCallId(c, chain)]));
    return { scope, ownCallsIn, liveCalls: packCallHashes(others), liveRuns: [...new Set(runs)], builtInRun };
  }

  /**
   * Run A (the chain's first): p waits for approval (the reset point); x, the same charge, applies
   * and its worker dies. B, a reset of A: p approved, adopts x (unsettled), pauses, and a person
   * resolves it applied. Returns the chain, workflow id, B and what the resolution returned.
   */
  async function adoptedThenResolved(): Promise<{ chain: string; workflowId: string; b: string; resolved: ResolveToolCallResult }> {
    const chain = randomUUID();
    const workflowId = `wf-gaps-${chain}`;
    await expect(env(workflowId, chain).run(dying.runFencedTool, call(chain, 'toolu_x', occ(chain, chain, ['toolu_x'], new Map())))).rejects.toThrow();
    expect(applied).toHaveLength(1);
    const b = randomUUID();
    const p = call(chain, 'toolu_p', occ(chain, b, ['toolu_p'], new Map()));
    await expect(env(workflowId, b).run(acts.runFencedTool, p)).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 600));
    expect(
      String(
        await env(workflowId, b, 2)
          .run(acts.runFencedTool, p)
          .catch((e: Error) => e),
      ),
    ).toMatch(/OUTCOME_UNKNOWN|did not finish/);
    const resolved: ResolveToolCallResult = await env(workflowId, b).run(acts.resolveToolCall, {
      ...p,
      resolution: 'applied',
      result: { ok: true, output: { charge: 'ch-o-1-1' } },
      reason: 'seen at the provider',
    } as never);
    expect(applied).toHaveLength(1);
    return { chain, workflowId, b, resolved };
  }

  /** S, a reset of R0 (the chain's first run) to where its call p waited, runs p as a call of R0 S replays. */
  function pRunInResetBefore(r0: string, workflowId: string): Promise<FencedToolResult> {
    const s = randomUUID();
    const scope = occurrenceScopeOf({ firstExecutionRunId: r0 });
    return env(workflowId, s).run(acts.runFencedTool, call(r0, 'toolu_p', { scope, ownCallsIn: s, liveCalls: packCallHashes(['toolu_p']), liveRuns: [r0], builtInRun: s }));
  }

  it("a call a person rejected, approved in a reset to before the rejection (it charges there), then a reset to after it: that branch's charge is answered by it, never passed by as its own", async () => {
    const r0 = randomUUID();
    const workflowId = `wf-late-${r0}`;
    const scope = occurrenceScopeOf({ firstExecutionRunId: r0 });
    // R0: the model asks for p, a person rejects it. S, a reset of R0 to where p waited: approved, it charges.
    expect((await pRunInResetBefore(r0, workflowId)).source).toBe('executed');
    // T, a reset of R0 to after the rejection: p is T's history, rejected (notRun); T's model asks for the charge.
    const t = randomUUID();
    const history = packCallHashes(['toolu_p']);
    const inT: FencedToolResult = await env(workflowId, t).run(
      acts.runFencedTool,
      call(r0, runScopedCallId('toolu_q', t, r0), { scope, ownCallsIn: t, liveCalls: history, liveRuns: [r0], notRun: history, builtInRun: t }),
    );
    expect({ source: inT.source, appliedBy: inT.appliedByRun?.callId, applied }).toEqual({ source: 'store', appliedBy: 'toolu_p', applied: ['o-1'] });
  });

  it("a call that failed before anything ran (a schema deploy), run in a reset to before it on a fixed worker, then a reset to after the failure: that branch's charge is answered by it", async () => {
    const r0 = randomUUID();
    const workflowId = `wf-late-${r0}`;
    const scope = occurrenceScopeOf({ firstExecutionRunId: r0 });
    const chargeWith = (input: z.ZodType<{ orderId: string }>) => defineTool({ ...charge, input } as never);
    const broken = createToolActivities({ store, tools: [chargeWith(z.object({ orderId: z.string(), currency: z.string() }))], reconcileMarginMs: 100 });
    // R0: p fails INVALID_TOOL_INPUT on its first attempt, nothing stored; the model reads that nothing ran.
    expect(await refusal(env(workflowId, r0).run(broken.runFencedTool, call(r0, 'toolu_p', { scope, builtInRun: r0 })))).toMatch(/INVALID_TOOL_INPUT/);
    // S, a reset of R0 to before p was scheduled, on a fixed worker: p charges.
    expect((await pRunInResetBefore(r0, workflowId)).source).toBe('executed');
    // T, a reset of R0 to after the failure: T's workflow replays p as failed, so p is not T's (notRun as RunState builds it).
    const t = randomUUID();
    const state = new RunState({ maxTurns: 5, maxToolCalls: 10, deadlineMs: 3_600_000 }, 0, undefined, r0);
    state.addressCallsIn(t);
    const [p] = state.startTurn([{ callId: 'toolu_p', toolName: 'charge', input: { orderId: 'o-1' } }], 0, true, [], r0);
    p!.status = 'failed';
    p!.errorType = 'INVALID_TOOL_INPUT';
    expect(state.notRunCallIds()).toEqual(['toolu_p']);
    const history = packCallHashes(state.callIdsOfOtherRuns());
    const inT: FencedToolResult = await env(workflowId, t).run(
      acts.runFencedTool,
      call(r0, runScopedCallId('toolu_q', t, r0), { scope, ownCallsIn: t, liveCalls: history, liveRuns: [r0], notRun: packCallHashes(state.notRunCallIds()), builtInRun: t }),
    );
    expect({ source: inT.source, appliedBy: inT.appliedByRun?.callId, applied }).toEqual({ source: 'store', appliedBy: 'toolu_p', applied: ['o-1'] });
  });

  it("a person's resolution of a call that adopted a discarded call's checkpoint names that call and the run its adoption is recorded for", async () => {
    const { chain, b, resolved } = await adoptedThenResolved();
    expect(resolved.appliedByRun).toEqual({ runId: chain, callId: 'toolu_x', recordedFor: b });
  });

  it("a reset of B after p, which paused and was resolved, runs a second charge of its own: the resolution's recordedFor is in its history's runs", async () => {
    const { chain, workflowId, resolved } = await adoptedThenResolved();
    const c = randomUUID();
    const y = runScopedCallId('toolu_y', c, chain);
    const learnt = new Map([['toolu_p', resolved.appliedByRun!.recordedFor!]]);
    const result: FencedToolResult = await env(workflowId, c).run(acts.runFencedTool, call(chain, y, occ(chain, c, ['toolu_p', y], learnt)));
    expect({ source: result.source, applied: applied.length }).toEqual({ source: 'executed', applied: 2 });
  });

  it("an adopted call's stored result delivered by the failure path (its tool gone after a deploy) still names the discarded call and its adoption's run", async () => {
    const a = randomUUID();
    const workflowId = `wf-late-${a}`;
    await env(workflowId, a).run(acts.runFencedTool, call(a, 'toolu_r', occ(a, a, [], new Map())));
    const b = randomUUID();
    const q = call(a, 'toolu_q', occ(a, b, ['toolu_q'], new Map()));
    const adopted: FencedToolResult = await env(workflowId, b).run(acts.runFencedTool, q);
    expect(adopted.appliedByRun).toEqual({ runId: a, callId: 'toolu_r', recordedFor: b });
    const withoutTool = createToolActivities({ store, tools: [defineTool({ name: 'other', revision: 'v1', input: z.object({}), execute: async () => ({ output: {} }) })] });
    const again: FencedToolResult = await env(workflowId, b, 2).run(withoutTool.runFencedTool, q);
    expect({ source: again.source, appliedByRun: again.appliedByRun, applied: applied.length }).toEqual({
      source: 'store',
      appliedByRun: { runId: a, callId: 'toolu_r', recordedFor: b },
      applied: 1,
    });
  });

  it('control: a call the reset run builds (its own run, the call among its history) adopts the discarded same charge', async () => {
    const a = randomUUID();
    const workflowId = `wf-late-${a}`;
    await env(workflowId, a).run(acts.runFencedTool, call(a, 'toolu_r', occ(a, a, [], new Map())));
    const b = randomUUID();
    const q: FencedToolResult = await env(workflowId, b).run(acts.runFencedTool, call(a, 'toolu_q', occ(a, b, ['toolu_q'], new Map())));
    expect({ source: q.source, applied: applied.length }).toEqual({ source: 'store', applied: 1 });
  });

  it("a call still scheduled at the reset point, dispatched again in the reset run with the discarded run's input before any claim, is refused and nothing runs; a late attempt in the discarded run runs nothing either", async () => {
    const a = randomUUID();
    const workflowId = `wf-late-${a}`;
    // A: q scheduled (the reset point), its first attempt not yet claimed; the model asks r, which applies.
    const qOfA = call(a, 'toolu_q', occ(a, a, [], new Map()));
    await env(workflowId, a).run(acts.runFencedTool, call(a, 'toolu_r', occ(a, a, [], new Map())));
    // B, a reset of A to where q was scheduled: Temporal dispatches q again with A's input, at attempt 1.
    const b = randomUUID();
    expect(await refusal(env(workflowId, b).run(acts.runFencedTool, qOfA))).toMatch(/DISCARDED_BY_RESET/);
    expect(await refusal(env(workflowId, a, 2).run(acts.runFencedTool, qOfA))).not.toMatch(/^ran: .*"ok":true/);
    expect(applied).toHaveLength(1);
    // B's model asks again: B's call adopts the discarded r's charge.
    const again: FencedToolResult = await env(workflowId, b).run(acts.runFencedTool, call(a, runScopedCallId('toolu_s', b, a), occ(a, b, ['toolu_q'], new Map())));
    expect({ source: again.source, applied: applied.length }).toEqual({ source: 'store', applied: 1 });
  });

  it('a call the discarded run had claimed when it was reset goes on in the reset run as that call: its stored result is delivered, nothing runs again', async () => {
    const a = randomUUID();
    const workflowId = `wf-late-${a}`;
    const qOfA = call(a, 'toolu_q', occ(a, a, [], new Map()));
    // A's attempt applies and stores q; the reset came before A's history recorded its result.
    const inA: FencedToolResult = await env(workflowId, a).run(acts.runFencedTool, qOfA);
    expect(inA.source).toBe('executed');
    const b = randomUUID();
    const inB: FencedToolResult = await env(workflowId, b).run(acts.runFencedTool, qOfA);
    expect({ source: inB.source, applied: applied.length }).toEqual({ source: 'store', applied: 1 });
  });

  it('a call still scheduled at the reset point of a run that continued as new, dispatched again with its input, is refused', async () => {
    const a = randomUUID();
    const workflowId = `wf-late-${a}`;
    const first = occurrenceScopeOf({ firstExecutionRunId: a });
    const log = conversationLogId({ namespace: 'default', tenant: 'acme', workflowId, runChainId: a });
    await store.putConversationEntries(log, [{ key: `s/after:${a}`, value: { segment: `after:${a}` } }]);
    const a2 = randomUUID();
    await env(workflowId, a2).run(acts.runFencedTool, call(a, runScopedCallId('toolu_r', a2, a), { scope: `after:${a}`, ownCallsIn: a, builtInRun: a2 }));
    const b = randomUUID();
    // Built by the reset run it is refused as a reset of a continued run; dispatched with A's input, as a call A built.
    expect(
      await refusal(env(workflowId, b).run(acts.runFencedTool, call(a, 'toolu_q3', { scope: first, ownCallsIn: b, refusedIfStarted: [`after:${a}`], builtInRun: b }))),
    ).toMatch(/RESET_OF_CONTINUED_RUN/);
    expect(await refusal(env(workflowId, b).run(acts.runFencedTool, call(a, 'toolu_q', { scope: first, ownCallsIn: a, builtInRun: a })))).toMatch(/DISCARDED_BY_RESET/);
    expect(applied).toHaveLength(1);
  });

  it('a call that claimed in the discarded run and was released (a 503) goes on in the reset run as that call; a later reset before it adopts its charge', async () => {
    const a = randomUUID();
    const workflowId = `wf-late-${a}`;
    // A: q claims occurrence 0, the provider answers 503, the claim is released (ready, still holding occurrence 0).
    const qOfA = call(a, 'toolu_q', occ(a, a, [], new Map()));
    failNext = 1;
    expect(await refusal(retrying(workflowId, a).run(acts.runFencedTool, qOfA))).toMatch(/RECONCILE_PENDING/);
    // B, a reset of A to where q is still scheduled: q holds its occurrence, so it goes on and charges once.
    const b = randomUUID();
    const inB: FencedToolResult = await env(workflowId, b).run(acts.runFencedTool, qOfA);
    expect({ source: inB.source, applied }).toEqual({ source: 'executed', applied: ['o-1'] });
    // C, a reset of A to before q was scheduled, asks for the charge once: it gets q's charge.
    const c = randomUUID();
    const t: FencedToolResult = await env(workflowId, c).run(acts.runFencedTool, call(a, runScopedCallId('toolu_t', c, a), occ(a, c, [], new Map())));
    expect({ ok: t.outcome.ok, source: t.source, applied: applied.length }).toEqual({ ok: true, source: 'store', applied: 1 });
  });

  it("a dedupeByIntent call still scheduled at the reset point goes on in the reset run (its intent key is the chain's): sent once, and asked again it is answered by it", async () => {
    const a = randomUUID();
    const workflowId = `wf-late-${a}`;
    const to = { to: 'ops@example.com' };
    const qOfA = call(a, 'toolu_q', occ(a, a, [], new Map()), 'notify', to);
    const b = randomUUID();
    const inB: FencedToolResult = await env(workflowId, b).run(acts.runFencedTool, qOfA);
    expect({ source: inB.source, applied }).toEqual({ source: 'executed', applied: ['ops@example.com'] });
    const again: FencedToolResult = await env(workflowId, b).run(acts.runFencedTool, call(a, runScopedCallId('toolu_s', b, a), occ(a, b, ['toolu_q'], new Map()), 'notify', to));
    expect({ ok: again.outcome.ok, applied }).toEqual({ ok: true, applied: ['ops@example.com'] });
  });

  /**
   * W2 (never reset): h claims ship:<order>, the provider answers 503, the claim is released
   * (ready). W1's run A: q, the same shipment, adopts h and waits for it.
   */
  async function adoptedReleasedShipment(): Promise<{ orderId: string; w2: string; h: FencedToolInput; a: string; qOfA: FencedToolInput }> {
    const orderId = `o-${randomUUID()}`;
    const w2 = randomUUID();
    const h = call(w2, 'toolu_h', occ(w2, w2, [], new Map()), 'ship', { orderId });
    failNext = 1;
    expect(await refusal(retrying(`wf-w2-${w2}`, w2).run(acts.runFencedTool, h))).toMatch(/RECONCILE_PENDING/);
    const a = randomUUID();
    const qOfA = call(a, 'toolu_q', occ(a, a, [], new Map()), 'ship', { orderId });
    expect(await refusal(retrying(`wf-w1-${a}`, a).run(acts.runFencedTool, qOfA))).toMatch(/RECONCILE_PENDING/);
    return { orderId, w2, h, a, qOfA };
  }

  it("a business-key call that adopted another workflow's released claim goes on after its own workflow's reset: the other workflow's call is never refused, it ships once", async () => {
    const { orderId, w2, h, a, qOfA } = await adoptedReleasedShipment();
    // W1 is reset to where q is still scheduled.
    expect(await refusal(retrying(`wf-w1-${a}`, randomUUID()).run(acts.runFencedTool, qOfA))).not.toMatch(/DISCARDED_BY_RESET/);
    const again: FencedToolResult = await retrying(`wf-w2-${w2}`, w2, 2).run(acts.runFencedTool, h);
    expect({ source: again.source, applied }).toEqual({ source: 'executed', applied: [orderId] });
  });

  it("a later attempt of a call that adopted another workflow's released claim, refused on a worker without its tool, waits: it never stores its refusal in that call's row", async () => {
    const { orderId, w2, h, a, qOfA } = await adoptedReleasedShipment();
    // q's next attempt lands on a worker that no longer has the tool (UNKNOWN_TOOL, nothing applied by this attempt).
    const withoutShip = createToolActivities({ store, tools: [charge], reconcileMarginMs: 100 });
    expect(await refusal(retrying(`wf-w1-${a}`, a, 2).run(withoutShip.runFencedTool, qOfA))).toMatch(/RECONCILE_PENDING/);
    const again: FencedToolResult = await retrying(`wf-w2-${w2}`, w2, 2).run(acts.runFencedTool, h);
    expect({ source: again.source, applied }).toEqual({ source: 'executed', applied: [orderId] });
  });

  it.each([
    ['a number', 42],
    ['an empty string', ''],
    ['an object', { run: 'x' }],
  ])('builtInRun as %s: typed INVALID_ARGUMENT on the first attempt, nothing written', async (_what, builtInRun) => {
    const a = randomUUID();
    const workflowId = `wf-late-${a}`;
    const input = call(a, 'toolu_m', { scope: occurrenceScopeOf({ firstExecutionRunId: a }), builtInRun } as never);
    expect(await refusal(env(workflowId, a).run(acts.runFencedTool, input))).toMatch(/INVALID_ARGUMENT/);
    expect(await store.getByCall('default/acme', callBindingId({ runChainId: a, workflowId, callId: 'toolu_m' }))).toBeNull();
    expect(applied).toEqual([]);
  });
});
