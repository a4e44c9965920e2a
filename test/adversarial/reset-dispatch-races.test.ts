/**
 * A call dispatched again in a reset run with the input the discarded run built
 * (docs/protocol.md#resets, #nothing-applied), against a late attempt of the discarded run: each
 * interleaving forced with a store wrapper that parks one side after a chosen store operation, and
 * a reset run's worker that cannot prepare the call (a deploy removed its tool or changed its
 * schema). Each leaves at most one charge, the reset run is told truthfully (nothing ran, or the
 * charge that answers it, naming the discarded call), and its model's next ask of the action is
 * answered by the discarded branch's charge. Found by attacks on the refusal (DISCARDED_BY_RESET);
 * each failed before its fix. Fence activities in MockActivityEnvironment against SQLite and PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { occurrenceScopeOf, packCallHashes, runScopedCallId } from '../../src/checkpoint/run-scope';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { CheckpointError } from '../../src/checkpoint/errors';
import { RunState } from '../../src/workflows/agent/run-state';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

jest.setTimeout(60_000);

type Park = { op: string; nth: number; reached: () => void; released: Promise<void> } | null;

/** `store` with one parking spot: after the nth call of `op` returns, the caller waits for `released`. */
function parking(store: CheckpointStore, spot: { park: Park }): CheckpointStore {
  const counts = new Map<string, number>();
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        const p = spot.park;
        if (p !== null && p.op === prop) {
          const n = (counts.get(p.op) ?? 0) + 1;
          counts.set(p.op, n);
          if (n === p.nth) {
            spot.park = null;
            p.reached();
            await p.released;
          }
        }
        return result;
      };
    },
  });
}

function spotAt(op: string, nth = 1): { park: Park; reached: Promise<void>; release: () => void } {
  let reached!: () => void;
  let release!: () => void;
  const r = new Promise<void>((res) => (reached = res));
  const released = new Promise<void>((res) => (release = res));
  return { park: { op, nth, reached, released }, reached: r, release };
}

describe.each([['sqlite'], ['postgres']])('a call dispatched again in a reset run, racing a late attempt of the discarded run (%s)', (kind) => {
  let dir: string;
  let store: CheckpointStore;
  let db: TestDatabase | undefined;
  let applied: string[];
  const chargeWith = (input: z.ZodType<{ orderId: string }>) =>
    defineTool({
      name: 'charge',
      revision: 'v1',
      input,
      callDeadlineMs: 300,
      async execute(args: { orderId: string }) {
        applied.push(args.orderId);
        return { output: { charge: `ch-${args.orderId}-${applied.length}` } };
      },
    });
  const charge = chargeWith(z.object({ orderId: z.string() }));
  const actsOn = (s: CheckpointStore): ToolActivities => createToolActivities({ store: s, tools: [charge], reconcileMarginMs: 100 });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-reset-races-'));
    if (kind === 'postgres') db = await createTestDatabase();
    store = await openCheckpointStore(kind === 'postgres' ? db!.url : `sqlite:${join(dir, 'checkpoints.db')}`);
  });
  beforeEach(() => {
    applied = [];
  });
  afterAll(async () => {
    await store.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const env = (workflowId: string, runId: string, attempt = 1, activityType?: string) =>
    new MockActivityEnvironment({
      attempt,
      ...(activityType === undefined ? {} : { activityType }),
      workflowExecution: { workflowId, runId },
      heartbeatTimeoutMs: 30_000,
    } as never);
  const qOf = (a: string): FencedToolInput =>
    ({
      tenant: 'acme',
      callId: 'toolu_q',
      runChainId: a,
      toolName: 'charge',
      input: { orderId: 'o-1' },
      occurrences: { scope: occurrenceScopeOf({ firstExecutionRunId: a }), ownCallsIn: a, builtInRun: a },
    }) as FencedToolInput;
  const settle = (p: Promise<FencedToolResult>): Promise<string> => p.then((r) => `ran: ${JSON.stringify(r.outcome)}`).catch((e: Error) => String(e));

  it("B reads 'no claim', then A's late attempt claims and charges, then B stores its refusal: B loses and later delivers A's charge", async () => {
    const a = randomUUID();
    const b = randomUUID();
    const wf = `wf-race1-${a}`;
    const spot = spotAt('getByCall');
    const bActs = actsOn(parking(store, spot));
    const inB = settle(env(wf, b).run(bActs.runFencedTool, qOf(a)));
    await spot.reached;
    expect(await settle(env(wf, a, 2).run(actsOn(store).runFencedTool, qOf(a)))).toMatch(/"ok":true/);
    spot.release();
    const first = await inB;
    const second = /"ok":true/.test(first) ? first : await settle(env(wf, b, 2).run(actsOn(store).runFencedTool, qOf(a)));
    expect({ second: /"ok":true/.test(second), applied }).toEqual({ second: true, applied: ['o-1'] });
  });

  it("A's late attempt (attempt 2) reads no record, B refuses and stores, then A inserts its claim: A loses, nothing is charged", async () => {
    const a = randomUUID();
    const b = randomUUID();
    const wf = `wf-race2-${a}`;
    const spot = spotAt('get');
    const inA = settle(env(wf, a, 2).run(actsOn(parking(store, spot)).runFencedTool, qOf(a)));
    await spot.reached;
    expect(await settle(env(wf, b).run(actsOn(store).runFencedTool, qOf(a)))).toMatch(/DISCARDED_BY_RESET/);
    spot.release();
    expect(await inA).toMatch(/DISCARDED_BY_RESET/);
    expect(applied).toEqual([]);
  });

  it('A holds a live claim (tool running) when B dispatches: B waits (RECONCILE_PENDING) and then delivers the one charge', async () => {
    const a = randomUUID();
    const b = randomUUID();
    const wf = `wf-race3-${a}`;
    const spot = spotAt('createIfAbsent');
    const inA = settle(env(wf, a).run(actsOn(parking(store, spot)).runFencedTool, qOf(a)));
    await spot.reached; // A's claim is in the store, the tool has not run yet
    expect(await settle(env(wf, b).run(actsOn(store).runFencedTool, qOf(a)))).toMatch(/RECONCILE_PENDING/);
    spot.release();
    expect(await inA).toMatch(/"ok":true/);
    expect(await settle(env(wf, b, 2).run(actsOn(store).runFencedTool, qOf(a)))).toMatch(/"ok":true/);
    expect(applied).toEqual(['o-1']);
  });

  const call = (chain: string, callId: string, occurrences: FencedToolInput['occurrences']): FencedToolInput =>
    ({ tenant: 'acme', callId, runChainId: chain, toolName: 'charge', input: { orderId: 'o-1' }, occurrences }) as FencedToolInput;

  /**
   * A0 (the chain's first) charges r; A, a reset of A0 to before r, plans q@A (the same charge), whose
   * first attempt is parked after its run's occurrence-adoption record when `parkA`; B, a reset of A
   * to where q is scheduled, dispatches q again; B's model then asks again (s@B, q refused in its history).
   */
  async function adoptionCutByReset(parkA: boolean): Promise<{ inB: string; again: FencedToolResult }> {
    const a0 = randomUUID();
    const wf = `wf-race-adopt-${a0}`;
    const scope = occurrenceScopeOf({ firstExecutionRunId: a0 });
    await env(wf, a0).run(actsOn(store).runFencedTool, call(a0, 'toolu_r', { scope, builtInRun: a0 }));
    const a = randomUUID();
    const qOfA = call(a0, runScopedCallId('toolu_q', a, a0), { scope, ownCallsIn: a, builtInRun: a });
    let inA: Promise<string> | null = null;
    let release = (): void => {};
    if (parkA) {
      // q's attempt in A: its claim insert meets r (1st createIfAbsent), then it records that run A adopts occurrence 0 (2nd).
      const spot = spotAt('createIfAbsent', 2);
      inA = settle(env(wf, a).run(actsOn(parking(store, spot)).runFencedTool, qOfA));
      await spot.reached;
      release = spot.release;
    }
    const b = randomUUID();
    const inB = await settle(env(wf, b).run(actsOn(store).runFencedTool, qOfA));
    release();
    if (inA !== null) await inA;
    // As the workflow builds it: q is B's history made by A, and B never ran it (DISCARDED_BY_RESET).
    const history = packCallHashes([qOfA.callId]);
    const again: FencedToolResult = await env(wf, b).run(
      actsOn(store).runFencedTool,
      call(a0, runScopedCallId('toolu_s', b, a0), { scope, ownCallsIn: b, liveCalls: history, liveRuns: [a], notRun: history, builtInRun: b }),
    );
    return { inB, again };
  }

  it("B refuses q before A's attempt started; B's next ask is answered by r's charge", async () => {
    const { inB, again } = await adoptionCutByReset(false);
    expect(inB).toMatch(/DISCARDED_BY_RESET/);
    expect({ source: again.source, applied }).toEqual({ source: 'store', applied: ['o-1'] });
  });

  it("A's attempt had recorded its run's adoption of r's occurrence when B refused q: q never ran in B, so B's next ask is still answered by r's charge", async () => {
    const { inB, again } = await adoptionCutByReset(true);
    expect(inB).toMatch(/DISCARDED_BY_RESET/);
    expect({ source: again.source, applied }).toEqual({ source: 'store', applied: ['o-1'] });
  });

  it("B's refusal loses its insert to A's late attempt that adopted r: B is answered by r's charge, naming it, never by the adoption record", async () => {
    const a0 = randomUUID();
    const wf = `wf-race-adopt3-${a0}`;
    const scope = occurrenceScopeOf({ firstExecutionRunId: a0 });
    await env(wf, a0).run(actsOn(store).runFencedTool, call(a0, 'toolu_r', { scope, builtInRun: a0 }));
    const a = randomUUID();
    const qOfA = call(a0, runScopedCallId('toolu_q', a, a0), { scope, ownCallsIn: a, builtInRun: a });
    const b = randomUUID();
    // B reads q's own address (the refusal check), then its addresses on the failure path (two more): parked after them.
    const spot = spotAt('getByCall', 3);
    const inB = (env(wf, b).run(actsOn(parking(store, spot)).runFencedTool, qOfA) as Promise<FencedToolResult>).then(
      (r: FencedToolResult) => r,
      (e: Error) => e,
    );
    await spot.reached;
    const inA: FencedToolResult = await env(wf, a, 2).run(actsOn(store).runFencedTool, qOfA);
    expect({ ok: inA.outcome.ok, source: inA.source }).toEqual({ ok: true, source: 'store' });
    spot.release();
    const got = await inB;
    expect(got instanceof Error ? String(got) : { ok: got.outcome.ok, appliedByRun: got.appliedByRun?.callId }).toEqual({ ok: true, appliedByRun: 'toolu_r' });
    expect(applied).toEqual(['o-1']);
  });

  it.each([
    [
      'its tool removed (UNKNOWN_TOOL through `default`)',
      () => createToolActivities({ store, tools: [defineTool({ name: 'other', revision: 'v1', input: z.object({}), execute: async () => ({ output: {} }) })] }),
    ],
    ['its schema changed (INVALID_TOOL_INPUT)', () => createToolActivities({ store, tools: [chargeWith(z.object({ orderId: z.string(), currency: z.string() }))] })],
  ])("B on a worker with %s stores its refusal before it says nothing ran: A's late attempt charges nothing, B's next ask charges once", async (_what, newWorker) => {
    const a = randomUUID();
    const wf = `wf-race-gone-${a}`;
    const b = randomUUID();
    const worker = newWorker();
    const inB = await settle(env(wf, b, 1, 'charge').run((worker.charge ?? worker.default) as never, qOf(a)));
    expect(inB).toMatch(/UNKNOWN_TOOL|INVALID_TOOL_INPUT/);
    const lateA = await settle(env(wf, a, 2).run(actsOn(store).runFencedTool, qOf(a)));
    const again = await settle(
      env(wf, b).run(actsOn(store).runFencedTool, {
        ...qOf(a),
        callId: runScopedCallId('toolu_s', b, a),
        occurrences: { scope: occurrenceScopeOf({ firstExecutionRunId: a }), ownCallsIn: b, liveCalls: packCallHashes(['toolu_q']), liveRuns: [a], builtInRun: b },
      } as FencedToolInput),
    );
    expect({ lateA: /"ok":true/.test(lateA) ? 'charged' : 'nothing', again: /"ok":true/.test(again) ? 'charged' : again, applied }).toEqual({
      lateA: 'nothing',
      again: 'charged',
      applied: ['o-1'],
    });
  });

  it.each([
    [
      'its schema changed (INVALID_TOOL_INPUT)',
      'INVALID_TOOL_INPUT',
      () => createToolActivities({ store, tools: [chargeWith(z.object({ orderId: z.string(), currency: z.string() }))] }),
    ],
    [
      'its tool removed (UNKNOWN_TOOL)',
      'UNKNOWN_TOOL',
      () => createToolActivities({ store, tools: [defineTool({ name: 'other', revision: 'v1', input: z.object({}), execute: async () => ({ output: {} }) })] }),
    ],
  ])(
    "B on a worker with %s refuses q after A's attempt recorded its run's adoption of r's occurrence: q never ran in B, B's next ask is answered by r's charge",
    async (_what, code, bWorker) => {
      const a0 = randomUUID();
      const wf = `wf-race-cut-${a0}`;
      const scope = occurrenceScopeOf({ firstExecutionRunId: a0 });
      await env(wf, a0).run(actsOn(store).runFencedTool, call(a0, 'toolu_r', { scope, builtInRun: a0 }));
      const a = randomUUID();
      const qOfA = call(a0, runScopedCallId('toolu_q', a, a0), { scope, ownCallsIn: a, builtInRun: a });
      const spot = spotAt('createIfAbsent', 2);
      const inA = settle(env(wf, a).run(actsOn(parking(store, spot)).runFencedTool, qOfA));
      await spot.reached;
      const b = randomUUID();
      expect(await settle(env(wf, b).run(bWorker().runFencedTool, qOfA))).toMatch(new RegExp(code));
      spot.release();
      await inA;
      // What B's workflow builds: q, made by A, failed in B with a nothing-applied code.
      const state = new RunState({ maxTurns: 5, maxToolCalls: 10, deadlineMs: 3_600_000 }, 0, undefined, a0);
      state.addressCallsIn(b);
      const [q] = state.startTurn([{ callId: 'toolu_q', toolName: 'charge', input: { orderId: 'o-1' } }], 0, true, [], a);
      expect(q!.callId).toBe(qOfA.callId);
      q!.status = 'failed';
      q!.errorType = code;
      const again: FencedToolResult = await env(wf, b).run(
        actsOn(store).runFencedTool,
        call(a0, runScopedCallId('toolu_s', b, a0), {
          scope,
          ownCallsIn: b,
          liveCalls: packCallHashes(state.callIdsOfOtherRuns()),
          liveRuns: [a],
          notRun: packCallHashes(state.notRunCallIds()),
          builtInRun: b,
        }),
      );
      expect({ source: again.source, applied }).toEqual({ source: 'store', applied: ['o-1'] });
    },
  );

  it("a call cut off between its run's adoption of an occurrence and its own adoption record, then refused before anything ran: the run's next ask takes the occurrence over and is answered by the discarded charge", async () => {
    const a0 = randomUUID();
    const wf = `wf-race-takeover-${a0}`;
    const scope = occurrenceScopeOf({ firstExecutionRunId: a0 });
    await env(wf, a0).run(actsOn(store).runFencedTool, call(a0, 'toolu_r', { scope, builtInRun: a0 }));
    // A, a reset of A0 to before r: q meets r, records that run A adopts occurrence 0, and dies before its own adoption record.
    const a = randomUUID();
    const qOfA = call(a0, runScopedCallId('toolu_q', a, a0), { scope, ownCallsIn: a, builtInRun: a });
    expect(await settle(env(wf, a).run(actsOn(failingAdoptionRecord(store)).runFencedTool, qOfA))).toMatch(/worker died/);
    // q's next attempt lands on a worker after a schema deploy: refused before anything ran, the refusal stored.
    const strict = createToolActivities({ store, tools: [chargeWith(z.object({ orderId: z.string(), currency: z.string() }))] });
    expect(await settle(env(wf, a, 2).run(strict.runFencedTool, qOfA))).toMatch(/INVALID_TOOL_INPUT/);
    // A's model asks again: q applied nothing in A (notRun), so its record of run A's adoption counts for nothing.
    const again: FencedToolResult = await env(wf, a).run(
      actsOn(store).runFencedTool,
      call(a0, runScopedCallId('toolu_s', a, a0), { scope, ownCallsIn: a, notRun: packCallHashes([qOfA.callId]), builtInRun: a }),
    );
    expect({ source: again.source, appliedBy: again.appliedByRun?.callId, applied }).toEqual({ source: 'store', appliedBy: 'toolu_r', applied: ['o-1'] });
  });

  it("a call whose adopted call's checkpoint was pruned pauses (OUTCOME_UNKNOWN), and a person's applied resolution is refused by name, never answered with the adoption record", async () => {
    const a0 = randomUUID();
    const wf = `wf-race-gone-${a0}`;
    const scope = occurrenceScopeOf({ firstExecutionRunId: a0 });
    // A0 charged r three days ago.
    const old = createToolActivities({ store, tools: [charge], reconcileMarginMs: 100, clock: () => new Date(Date.now() - 3 * 86_400_000) });
    await env(wf, a0).run(old.runFencedTool, call(a0, 'toolu_r', { scope, builtInRun: a0 }));
    // A: q adopts r; its adoption record commits, the answer is lost and the store goes away for the attempt.
    const a = randomUUID();
    const qOfA = call(a0, runScopedCallId('toolu_q', a, a0), { scope, ownCallsIn: a, builtInRun: a });
    expect(await settle(env(wf, a).run(actsOn(downAfterAdoption(store)).runFencedTool, qOfA))).toMatch(/connection reset|RECONCILE_PENDING|STORE_UNAVAILABLE/);
    // r's checkpoint is pruned (past the replay window); q's adoption record is recent and stays.
    expect(await store.prune({ olderThan: new Date(Date.now() - 86_400_000).toISOString() })).toBeGreaterThan(0);
    expect(await settle(env(wf, a, 2).run(actsOn(store).runFencedTool, qOfA))).toMatch(/OUTCOME_UNKNOWN/);
    const resolved = await settle(
      env(wf, a).run(actsOn(store).resolveToolCall as never, {
        ...qOfA,
        resolution: 'applied',
        result: { ok: true, output: { charge: 'ch-seen-at-provider' }, receipt: null },
        reason: 'the charge is at the provider',
      }),
    );
    expect(resolved).toMatch(/INVALID_CHECKPOINT: .*whose checkpoint is gone/);
    expect(resolved).not.toMatch(/ADOPTED/);
    expect(applied).toEqual(['o-1']);
  });
});

/** `store` that loses the answer to the insert of an adoption record (tool revision `adopted`) after it committed, then is down. */
function downAfterAdoption(store: CheckpointStore): CheckpointStore {
  let down = false;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (down) throw new CheckpointError('STORE_UNAVAILABLE', 'store down (test)');
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (prop === 'createIfAbsent' && (args[0] as { binding?: { toolRevision?: string } }).binding?.toolRevision === 'adopted') {
          down = true;
          throw new Error('connection reset after commit (test)');
        }
        return result;
      };
    },
  });
}

/** `store` on which the first write of an adoption record (tool revision `adopted`) fails before it lands: the worker died there. */
function failingAdoptionRecord(store: CheckpointStore): CheckpointStore {
  let failed = false;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (!failed && prop === 'createIfAbsent' && (args[0] as { binding?: { toolRevision?: string } }).binding?.toolRevision === 'adopted') {
          failed = true;
          throw new Error('worker died before the adoption record was written (test)');
        }
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
}
