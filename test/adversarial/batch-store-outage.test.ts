/**
 * Adversarial (batch tools): the store fails in the middle of a batch, at the grouped write that
 * stores item n's result together with item n + 1's claim (`writeGroup`): nothing written
 * (STORE_UNAVAILABLE), or written with the answer lost (STORE_OUTCOME_UNKNOWN).
 * docs/protocol.md#crash-windows: the effect is never applied twice; the store briefly unavailable
 * fails closed. The batch fence's own rule (src/activities/fence/batch-fence.ts): "Anything that stops
 * the batch (…, the store) fails the whole attempt, even when the tool's code catches it".
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { z } from 'zod';
import { defineTool, type ToolContext, type ToolSuccess } from '../../src/activities';
import { CheckpointError } from '../../src/checkpoint/errors';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { FlakyStore, Harness, Provider, UNREACHED_DEADLINE_MS } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

const RECIPIENTS = ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'];

function batchTool(provider: Provider, options: { swallow: boolean; lookup: boolean }) {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    batch: true,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      const run = () =>
        ctx.forEachItem!(
          RECIPIENTS,
          (to) => to,
          async (to, item): Promise<ToolSuccess> => {
            provider.apply(item.idempotencyKey);
            return { output: { sent: to } };
          },
        );
      if (!options.swallow) return { output: { applied: (await run()).applied } };
      try {
        return { output: { applied: (await run()).applied } };
      } catch {
        return { output: { applied: 'some, the rest next time' } };
      }
    },
    ...(options.lookup
      ? {
          async lookup(ctx: ToolContext) {
            return provider.find(ctx.idempotencyKey) === null ? { found: false as const } : { found: true as const, output: { sent: 'found' } };
          },
        }
      : {}),
  });
}

/** The store, failing its `nth` writeGroup: before it (STORE_UNAVAILABLE, nothing written) or after it committed (STORE_OUTCOME_UNKNOWN). */
function failingWriteGroup(nth: number, when: 'before' | 'after-commit'): { store: CheckpointStore; flaky: FlakyStore } {
  const flaky = new FlakyStore(h.store);
  let n = 0;
  if (when === 'before') {
    flaky.failWhen = (op) => op === 'writeGroup' && ++n === nth;
    return { store: flaky, flaky };
  }
  const store = new Proxy(flaky, {
    get(target, name, receiver) {
      if (name !== 'writeGroup') return Reflect.get(target, name, receiver) as unknown;
      return async (...args: Parameters<CheckpointStore['writeGroup']>) => {
        const answers = await target.writeGroup(...args);
        if (++n === nth) throw new CheckpointError('STORE_OUTCOME_UNKNOWN', 'the test lost the COMMIT answer; the group was written', {});
        return answers;
      };
    },
  });
  return { store, flaky };
}

async function itemRecords(workflowId: string): Promise<CheckpointRecord[]> {
  const all = await h.store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 10_000 });
  return all.filter((r) => r.binding.callId.startsWith('["ttc/item/1"') && r.binding.callId.includes(workflowId));
}

test.each(['before', 'after-commit'] as const)(
  'writeGroup fails (%s) after item 2 applied: the next attempts settle item 2 without applying it again; every item once',
  async (when) => {
    const provider = new Provider();
    const { store } = failingWriteGroup(3, when);
    const tool = batchTool(provider, { swallow: false, lookup: true });
    const call = h.newCall();
    const first = await h.run(h.activities([tool], { store }), call, 1);
    expect(first).toMatchObject({ failure: { nonRetryable: false } });
    expect(provider.total()).toBe(2);
    const stuck = (await itemRecords(call.workflowId)).find((r) => r.status === 'executing')!;
    h.passSettleTime(stuck);
    const second = await h.run(h.activities([tool]), call, 2);
    expect(second).toMatchObject({ result: { outcome: { ok: true, output: { applied: RECIPIENTS.length } } } });
    expect(provider.effects.size).toBe(RECIPIENTS.length);
    expect(Math.max(...provider.effects.values())).toBe(1);
  },
);
