/**
 * Adversarial (batch tools): the items of a batch call change between attempts under the same call
 * (the tool reads its list from elsewhere, e.g. a recipients table) and an item key is reused for a
 * different item. docs/protocol.md#decide-and-validate: any binding difference is BINDING_CONFLICT,
 * never a cache hit; docs/protocol.md#the-fenced-attempt: "A binding conflict, an invalid record
 * and invalid input are non-retryable failures". Each attempt of a batch call takes the call over
 * (it "sent a claim"), so the item's BINDING_CONFLICT must not be turned into RECONCILE_PENDING on
 * every attempt: the call then retries forever and never reaches a person.
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { z } from 'zod';
import { defineTool, ToolError, type ToolContext } from '../../src/activities';
import { Harness, Provider, UNREACHED_DEADLINE_MS } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

interface Item {
  readonly to: string;
  readonly body: string;
}

test('an item key reused for a different item: the call ends non-retryably (BINDING_CONFLICT or a pause) within a few attempts; the item is never applied again', async () => {
  const provider = new Provider();
  const source = { items: Array.from({ length: 5 }, (_, i): Item => ({ to: `u${i + 1}`, body: 'hello' })), loseAnswerOf: 'u4' as string | null };
  const tool = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    batch: true,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext) {
      const report = await ctx.forEachItem!(
        source.items,
        (item) => item.to,
        async (item, itemCtx) => {
          provider.apply(itemCtx.idempotencyKey);
          if (source.loseAnswerOf === item.to) {
            source.loseAnswerOf = null;
            throw new ToolError('unknown-outcome', `connection reset after sending to ${item.to}`);
          }
          return { output: { sent: item.to } };
        },
      );
      return { output: { applied: report.applied } };
    },
    async lookup(ctx: ToolContext) {
      return provider.find(ctx.idempotencyKey) === null ? { found: false as const } : { found: true as const, output: { sent: 'found' } };
    },
  });
  const acts = h.activities([tool]);
  const call = h.newCall();
  expect(await h.run(acts, call, 1)).toMatchObject({ failure: { type: 'RECONCILE_PENDING' } });
  expect(provider.total()).toBe(4);
  // The list changes under the same call: u2's message is another one now.
  source.items = source.items.map((i) => (i.to === 'u2' ? { ...i, body: 'a different message' } : i));
  const attempts = [await h.run(acts, call, 2), await h.run(acts, call, 3), await h.run(acts, call, 4)];
  expect(provider.total()).toBe(4);
  // Every attempt pauses for a person on the item (OUTCOME_UNKNOWN, non-retryable), naming the conflict.
  for (const attempt of attempts) expect(attempt).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN', nonRetryable: true } });
  expect((attempts[0] as { failure: { message: string } }).failure.message).toContain('the key names another item than an earlier attempt applied under it');
});
