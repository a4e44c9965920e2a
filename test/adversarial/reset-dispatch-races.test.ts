/**
 * Races of a call dispatched again in a reset run (docs/protocol.md#resets): the reset run's
 * refusal of a call no attempt had claimed (DISCARDED_BY_RESET) against a late attempt of the
 * discarded run, each interleaving forced with a store wrapper that parks one side after a chosen
 * store operation. Each leaves at most one charge, and the reset run learns the charge when one
 * was applied. Fence activities in MockActivityEnvironment against a SQLite file store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { occurrenceScopeOf } from '../../src/checkpoint/run-scope';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

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

describe('a call dispatched again in a reset run, racing a late attempt of the discarded run', () => {
  let dir: string;
  let store: CheckpointStore;
  let applied: string[];
  const charge = defineTool({
    name: 'charge',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    callDeadlineMs: 300,
    async execute(input) {
      applied.push(input.orderId);
      return { output: { charge: `ch-${input.orderId}-${applied.length}` } };
    },
  });
  const actsOn = (s: CheckpointStore): ToolActivities => createToolActivities({ store: s, tools: [charge], reconcileMarginMs: 100 });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-reset-races-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });
  beforeEach(() => {
    applied = [];
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const env = (workflowId: string, runId: string, attempt = 1) =>
    new MockActivityEnvironment({ attempt, workflowExecution: { workflowId, runId }, heartbeatTimeoutMs: 30_000 } as never);
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
});
