/**
 * Adversarial (batch tools): the store fails at a grouped write in the middle of a batch and the
 * tool's code catches what `forEachItem` throws and returns ok. The batch fence promises
 * (src/activities/fence/batch-fence.ts): "Anything that stops the batch (an item paused for a person, a
 * claim still held by another attempt, the store) fails the whole attempt, even when the tool's
 * code catches it". Otherwise the call completes ok while an applied item's checkpoint is left
 * executing with its result never stored, and no later attempt ever settles it
 * (docs/protocol.md#nothing-applied: once past `ready`, every failure ends in delivery,
 * reconciliation or a pause).
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { z } from 'zod';
import { defineTool, type ToolContext, type ToolSuccess } from '../../src/activities';
import { FlakyStore, Harness, Provider, UNREACHED_DEADLINE_MS } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

test('writeGroup unavailable after item 2 applied, the tool swallows the error: the attempt still fails, the call is not completed', async () => {
  const provider = new Provider();
  const tool = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    batch: true,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      try {
        await ctx.forEachItem!(
          ['u1', 'u2', 'u3', 'u4'],
          (to) => to,
          async (to, item): Promise<ToolSuccess> => {
            provider.apply(item.idempotencyKey);
            return { output: { sent: to } };
          },
        );
      } catch {
        // Tool code that hides the stop and claims success.
      }
      return { output: { done: true } };
    },
  });
  const flaky = new FlakyStore(h.store);
  let writes = 0;
  flaky.failWhen = (op) => op === 'writeGroup' && ++writes === 3;
  const call = h.newCall();
  const out = await h.run(h.activities([tool], { store: flaky }), call, 1);
  expect(provider.total()).toBe(2);
  expect(out).toMatchObject({ failure: { type: expect.any(String) } });
  expect((await h.recordOf(call))?.status).not.toBe('delivered');
});
