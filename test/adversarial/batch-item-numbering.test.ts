/**
 * People count a batch's items from 1 ("item 3 of 100"); JSON keeps the 0-based `index`. Every
 * message the batch fence builds for a person follows it: an item `forEachItem` refuses (bad key,
 * repeated key), and an item whose answer is lost (`details.item.index` stays 0-based).
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness),
 * and a fast-check property over batch sizes and positions.
 */
import { ApplicationFailure } from '@temporalio/common';
import fc from 'fast-check';
import { z } from 'zod';
import { defineTool, ToolError, type ToolContext, type ToolSuccess } from '../../src/activities';
import type { FencedToolResult } from '../../src/activities/contract/contract';
import { describeItem, itemPosition } from '../../src/checkpoint/item-position';
import { Harness, Provider, UNREACHED_DEADLINE_MS, type Call } from './harness';

jest.setTimeout(120_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

/** A batch tool over `keys` (item keys as given, even repeated or empty); the item at `lose` is sent and its answer lost. */
function batchOver(provider: Provider, keys: readonly string[], lose: number | null) {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    batch: true,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      await ctx.forEachItem!(
        keys.map((key, index) => ({ key, index })),
        (item) => item.key,
        async (item, itemCtx): Promise<ToolSuccess> => {
          provider.apply(itemCtx.idempotencyKey);
          if ((item as { index: number }).index === lose) throw new ToolError('unknown-outcome', 'connection reset after the request was sent');
          return { output: null };
        },
      );
      return { output: null };
    },
  });
}

/** What one attempt of a call of `tool` ends with: the error result's message, or the failure's type, message and details. */
async function attempt(tool: ReturnType<typeof batchOver>, call: Call): Promise<{ result: string } | { type: string | undefined; message: string; details: unknown }> {
  try {
    const out = (await h.env(call, 1).run(h.activities([tool]).runFencedTool, call.input)) as FencedToolResult;
    return { result: out.outcome.ok ? 'ok' : out.outcome.error.message };
  } catch (error) {
    if (!(error instanceof ApplicationFailure)) throw error;
    return { type: error.type ?? undefined, message: error.message, details: error.details?.[0] };
  }
}

describe('batch items are counted from 1 for people', () => {
  it('itemPosition and describeItem: 1-based with the size, the bare position without one', () => {
    expect(itemPosition(0, 100)).toBe('1 of 100');
    expect(itemPosition(99, 100)).toBe('100 of 100');
    expect(itemPosition(2)).toBe('3');
    expect(describeItem({ key: 'user-20', index: 19, total: 100, generation: 2 })).toBe('item "user-20" (20 of 100, generation 2)');
  });

  it('a repeated item key is refused naming the repeat as "item 3 of 3"; nothing is sent', async () => {
    const provider = new Provider();
    const out = await attempt(batchOver(provider, ['u1', 'u2', 'u1'], null), h.newCall());
    expect(out).toEqual({ result: 'forEachItem: item key "u1" is used twice (item 3 of 3); keys name items, so each must be unique; no item of this call ran' });
    expect(provider.total()).toBe(0);
  });

  it('an item key the fence refuses is named as "item 2 of 3"; nothing is sent', async () => {
    const provider = new Provider();
    const out = await attempt(batchOver(provider, ['u1', '', 'u3'], null), h.newCall());
    expect(out).toMatchObject({ result: expect.stringMatching(/^forEachItem: item 2 of 3: INVALID_ARGUMENT: an item key must be/) });
    expect(provider.total()).toBe(0);
  });

  it('property: whatever the batch size and position, a repeated key and a lost answer name the item n of size, counted from 1; details keep the 0-based index', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 2, max: 12 })
          .chain((size) => fc.record({ size: fc.constant(size), at: fc.integer({ min: 1, max: size - 1 }), lose: fc.integer({ min: 0, max: size - 1 }) })),
        async ({ size, at, lose }) => {
          const keys = Array.from({ length: size }, (_, i) => `k${i}`);
          const repeated = keys.map((key, i) => (i === at ? keys[0]! : key));
          const refused = await attempt(batchOver(new Provider(), repeated, null), h.newCall());
          expect(refused).toEqual({
            result: `forEachItem: item key "k0" is used twice (item ${at + 1} of ${size}); keys name items, so each must be unique; no item of this call ran`,
          });

          const provider = new Provider();
          const paused = await attempt(batchOver(provider, keys, lose), h.newCall());
          expect(paused).toMatchObject({ type: 'OUTCOME_UNKNOWN', details: { item: { key: `k${lose}`, index: lose, total: size, generation: 1 } } });
          expect((paused as { message: string }).message).toContain(`item "k${lose}" (${lose + 1} of ${size}, generation 1) of create_ticket call`);
          expect(provider.total()).toBe(lose + 1);
        },
      ),
      { numRuns: 25 },
    );
  });
});
