/**
 * Adversarial (batch tools): tool code that misuses `ctx.forEachItem` in one attempt. Two
 * `forEachItem` calls in flight at once over the same items (e.g. `Promise.all` over two lists that
 * share a recipient at the same position) must never apply an item twice: each item is a fenced
 * call of its own (docs/protocol.md#crash-windows: the effect is never applied twice;
 * docs/protocol.md#fences: a lost compare-and-swap means a live competitor). A tool that returns
 * before its `forEachItem` settled must not leave items running, or an unknown item unpaused,
 * behind a completed call (docs/protocol.md#nothing-applied: once past `ready`, every failure ends
 * in delivery, reconciliation or a pause for a person).
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { z } from 'zod';
import { defineTool, ToolError, type ToolContext, type ToolSuccess } from '../../src/activities';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { Harness, Provider, sleep, type Outcome } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

const RECIPIENTS = ['a', 'b', 'c', 'd', 'e'];

type Mode = 'concurrent-same' | 'fire-and-forget';

function batchTool(provider: Provider, mode: Mode, unknownOf: string | null = null) {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    batch: true,
    callDeadlineMs: 2_000,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      const apply = async (to: string, item: ToolContext): Promise<ToolSuccess> => {
        await sleep(10);
        if (to === unknownOf) throw new ToolError('unknown-outcome', `connection reset sending to ${to}`);
        provider.apply(item.idempotencyKey);
        return { output: { sent: to } };
      };
      if (mode === 'concurrent-same') {
        // Two batches in flight at once that share their items (same keys, same positions).
        const [first, second] = await Promise.all([ctx.forEachItem!(RECIPIENTS, (to) => to, apply), ctx.forEachItem!(RECIPIENTS, (to) => to, apply)]);
        return { output: { applied: first.applied + second.applied } };
      }
      // Returns before the batch settled (a missing await).
      void ctx.forEachItem!(RECIPIENTS, (to) => to, apply).catch(() => undefined);
      return { output: { queued: RECIPIENTS.length } };
    },
  });
}

/** The item checkpoints of `call` (an item's call id holds the call's binding call id as a JSON string, so the workflow id appears escaped). */
async function itemRecords(call: ReturnType<Harness['newCall']>): Promise<CheckpointRecord[]> {
  const all = await h.store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 10_000 });
  return all.filter((r) => r.binding.callId.startsWith('["ttc/item/1"') && r.binding.callId.includes(call.workflowId));
}

test('two forEachItem calls in flight at once over the same items: no item is applied twice', async () => {
  const provider = new Provider();
  const acts = h.activities([batchTool(provider, 'concurrent-same')]);
  const call = h.newCall();
  const out: Outcome = await h.run(acts, call, 1);
  // Whatever the attempt answers (a result, or a failure telling the tool it raced itself), every item's key is applied at most once.
  const twice = [...provider.effects.entries()].filter(([, n]) => n > 1);
  expect({ twice: twice.length, outcome: 'result' in out ? 'result' : 'failure' in out ? out.failure.type : 'raw' }).toEqual({ twice: 0, outcome: expect.anything() });
  expect(provider.effects.size).toBe(RECIPIENTS.length);
});

test('a tool that returns before its forEachItem settled: no item is applied after the call completed, and no item is left unknown behind an ok result', async () => {
  const provider = new Provider();
  const acts = h.activities([batchTool(provider, 'fire-and-forget', 'c')]);
  const call = h.newCall();
  const out = await h.run(acts, call, 1);
  const appliedAtReturn = provider.total();
  await sleep(300); // the items the tool left behind run on (5 × 10 ms)
  const items = await itemRecords(call);
  const unsettled = items.filter((r) => r.status === 'executing' || r.status === 'uncertain').length;
  const callOk = 'result' in out && out.result.outcome.ok;
  // An ok result for the call must cover its items: none applied after it, none left unknown without a pause.
  expect({ callOk, appliedAfterTheCallCompleted: provider.total() - appliedAtReturn, unknownItemsBehindOkResult: callOk ? unsettled : 0 }).toEqual({
    callOk: expect.any(Boolean),
    appliedAfterTheCallCompleted: 0,
    unknownItemsBehindOkResult: 0,
  });
});
