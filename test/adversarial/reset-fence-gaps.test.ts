/**
 * Known gaps of the reset rules at the fence (docs/protocol.md#resets, "Limits"), found by an attack
 * on the reset lineage fix; each `it.failing` states the promise and flips when its gap is closed:
 * - a call planned before a reset point that adopts in the reset run and then pauses (resolved by a
 *   person) never tells the workflow the run its adoption is recorded for (`appliedByRun.recordedFor`
 *   comes only with an `ok` result), so a later reset of that run counts the adopted occurrence free;
 * - a call still pending at a reset point is dispatched again in the reset run with the input the
 *   discarded run built: it passes by that run's discarded calls, and carries no `refusedIfStarted`.
 * Each has a control: the input the workflow would build with the missing knowledge, which holds.
 * Fence activities in MockActivityEnvironment against a SQLite file store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { conversationLogId } from '../../src/activities/agent/conversation-log';
import { occurrenceScopeOf, packCallHashes, runOfCallId, runScopedCallId } from '../../src/checkpoint/run-scope';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

jest.setTimeout(60_000);

describe('reset rules at the fence: known gaps', () => {
  let dir: string;
  let store: CheckpointStore;
  let acts: ToolActivities;
  let dying: ToolActivities;
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
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-reset-gaps-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    acts = createToolActivities({ store, tools: [charge], reconcileMarginMs: 100 });
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
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const env = (workflowId: string, runId: string, attempt = 1) =>
    new MockActivityEnvironment({ attempt, workflowExecution: { workflowId, runId }, heartbeatTimeoutMs: 30_000 } as never);
  const call = (chain: string, callId: string, occurrences: FencedToolInput['occurrences']): FencedToolInput =>
    ({ tenant: 'acme', callId, runChainId: chain, toolName: 'charge', input: { orderId: 'o-1' }, occurrences }) as FencedToolInput;

  /** The occurrences as `occurrences()` in agent-run-tool-calls.ts builds them: `liveRuns` are the runs in the ids plus the `recordedFor` the workflow learnt. */
  function occ(chain: string, ownCallsIn: string, history: string[], recordedFor: Map<string, string>): FencedToolInput['occurrences'] {
    const others = history.filter((c) => runOfCallId(c, chain) !== ownCallsIn);
    const scope = occurrenceScopeOf({ firstExecutionRunId: chain });
    if (others.length === 0) return { scope, ownCallsIn };
    const runs = others.flatMap((c) => (recordedFor.has(c) ? [runOfCallId(c, chain), recordedFor.get(c)!] : [runOfCallId(c, chain)]));
    return { scope, ownCallsIn, liveCalls: packCallHashes(others), liveRuns: [...new Set(runs)] };
  }

  /**
   * Run A (the chain's first): p waits for approval (the reset point); x, the same charge, applies
   * and its worker dies. B, a reset of A: p approved, adopts x (unsettled), pauses, and a person
   * resolves it applied. Returns the chain, workflow id and B.
   */
  async function adoptedThenResolved(): Promise<{ chain: string; workflowId: string; b: string }> {
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
    await env(workflowId, b).run(acts.resolveToolCall, {
      ...p,
      resolution: 'applied',
      result: { ok: true, output: { charge: 'ch-o-1-1' } },
      reason: 'seen at the provider',
    } as never);
    expect(applied).toHaveLength(1);
    return { chain, workflowId, b };
  }

  it("control: a reset of B after p, whose adoption's run the workflow knows, runs a second charge of its own", async () => {
    const { chain, workflowId, b } = await adoptedThenResolved();
    const c = randomUUID();
    const y = runScopedCallId('toolu_y', c, chain);
    const result: FencedToolResult = await env(workflowId, c).run(acts.runFencedTool, call(chain, y, occ(chain, c, ['toolu_p', y], new Map([['toolu_p', b]]))));
    expect({ source: result.source, applied: applied.length }).toEqual({ source: 'executed', applied: 2 });
  });

  it.failing("a reset of B after p, which paused and was resolved (its adoption's run unknown to the workflow), runs a second charge of its own", async () => {
    const { chain, workflowId } = await adoptedThenResolved();
    const c = randomUUID();
    const y = runScopedCallId('toolu_y', c, chain);
    const result: FencedToolResult = await env(workflowId, c).run(acts.runFencedTool, call(chain, y, occ(chain, c, ['toolu_p', y], new Map())));
    expect({ source: result.source, applied: applied.length }).toEqual({ source: 'executed', applied: 2 });
  });

  it('control: a call the reset run builds (its own run, the call among its history) adopts the discarded same charge', async () => {
    const a = randomUUID();
    const workflowId = `wf-gaps-${a}`;
    const first = occurrenceScopeOf({ firstExecutionRunId: a });
    await env(workflowId, a).run(acts.runFencedTool, call(a, 'toolu_r', { scope: first, ownCallsIn: a }));
    const b = randomUUID();
    const q: FencedToolResult = await env(workflowId, b).run(
      acts.runFencedTool,
      call(a, 'toolu_q', { scope: first, ownCallsIn: b, liveCalls: packCallHashes(['toolu_q']), liveRuns: [a] }),
    );
    expect({ source: q.source, applied: applied.length }).toEqual({ source: 'store', applied: 1 });
  });

  it.failing("a call pending at the reset point, dispatched again in the reset run with the discarded run's input, adopts the discarded same charge", async () => {
    const a = randomUUID();
    const workflowId = `wf-gaps-${a}`;
    const first = occurrenceScopeOf({ firstExecutionRunId: a });
    // A: q scheduled, its attempts end with nothing applied after the reset point; the model asks r instead, which applies.
    await env(workflowId, a).run(acts.runFencedTool, call(a, 'toolu_r', { scope: first, ownCallsIn: a }));
    // B, a reset of A to where q was pending: Temporal dispatches q again with A's input.
    const b = randomUUID();
    const q: FencedToolResult = await env(workflowId, b).run(acts.runFencedTool, call(a, 'toolu_q', { scope: first, ownCallsIn: a }));
    expect({ source: q.source, applied: applied.length }).toEqual({ source: 'store', applied: 1 });
  });

  it.failing('a call pending at the reset point of a run that continued as new, dispatched again with its input, is refused', async () => {
    const a = randomUUID();
    const workflowId = `wf-gaps-${a}`;
    const first = occurrenceScopeOf({ firstExecutionRunId: a });
    const log = conversationLogId({ namespace: 'default', tenant: 'acme', workflowId, runChainId: a });
    await store.putConversationEntries(log, [{ key: `s/after:${a}`, value: { segment: `after:${a}` } }]);
    const a2 = randomUUID();
    await env(workflowId, a2).run(acts.runFencedTool, call(a, runScopedCallId('toolu_r', a2, a), { scope: `after:${a}`, ownCallsIn: a }));
    const b = randomUUID();
    // Built by the reset run it is refused (control); dispatched with A's input it runs.
    expect(
      String(
        await env(workflowId, b)
          .run(acts.runFencedTool, call(a, 'toolu_q3', { scope: first, ownCallsIn: b, refusedIfStarted: [`after:${a}`] }))
          .catch((e: Error) => e),
      ),
    ).toMatch(/RESET_OF_CONTINUED_RUN/);
    const q = (await env(workflowId, b)
      .run(acts.runFencedTool, call(a, 'toolu_q', { scope: first, ownCallsIn: a }))
      .catch((e: Error) => e)) as FencedToolResult | Error;
    expect({ q: q instanceof Error ? 'refused' : q.source, applied: applied.length }).toEqual({ q: 'refused', applied: 1 });
  });
});
