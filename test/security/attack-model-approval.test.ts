/**
 * Adversarial review of "what the approver sees is what runs" and the strict
 * activity input of item 1, through the real activities (MockActivityEnvironment, SQLite store).
 * The approver reads `describeToolCall`'s `arguments` (canonical JSON: keys sorted, `-0` as `0`);
 * `execute` must receive exactly that value, not merely one with the same digest.
 */
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../../src/activities';
import type { ToolCallDescription } from '../../src/activities/contract/contract';
import { Harness, typeOf } from '../adversarial/harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

/** A tool that runs its steps in the order it reads them, and records what it received. */
function stepsTool(received: unknown[]): ToolDefinition<any> {
  return defineTool({
    name: 'run_steps',
    revision: '1',
    input: z.object({ steps: z.record(z.string(), z.string()), delta: z.number() }),
    async execute(args) {
      received.push(args);
      return { output: { ran: Object.keys(args.steps) } };
    },
  });
}

describe('attack on item 2: execute receives exactly the arguments the approver was shown', () => {
  test("member order and -0 as shown: the approver reads the steps sorted and delta 0, and execute iterates them in that order and gets 0 (not the model's order and -0)", async () => {
    const received: any[] = [];
    const acts = h.activities([stepsTool(received)]);
    // The model orders the destructive step first; canonical JSON (what the approver reads) sorts it last.
    const call = h.newCall({ toolName: 'run_steps', input: { steps: { z_wipe_volume: 'rm -rf /data', a_snapshot: 'snapshot /data' }, delta: -0 } });
    const described = (await h.env(call, 1).run(acts.describeToolCall, call.input)) as ToolCallDescription;
    const shown = described.arguments as { steps: Record<string, string>; delta: number };
    expect(Object.keys(shown.steps)).toEqual(['a_snapshot', 'z_wipe_volume']);

    const outcome = await h.run(acts, { ...call, input: { ...call.input, expectedIntentDigest: described.intentDigest } }, 1);
    expect(typeOf(outcome)).toBe('result:executed');
    expect(received).toHaveLength(1);
    expect(Object.keys(received[0].steps)).toEqual(Object.keys(shown.steps));
    expect(Object.is(received[0].delta, shown.delta)).toBe(true);
    expect(received[0]).toEqual(shown);
  });
});

describe('attack on item 1: the activity input is read strictly, fail closed', () => {
  test.each(['tomorrow', '2026-13-45T00:00:00Z', 'not a date', ''])(
    'item 1: an approvalExpiresAt that is not an ISO-8601 UTC timestamp (%j) is refused before anything runs, instead of an approval that never expires',
    async (approvalExpiresAt) => {
      const received: unknown[] = [];
      const acts = h.activities([stepsTool(received)]);
      const call = h.newCall({ toolName: 'run_steps', input: { steps: { a: 'b' }, delta: 1 }, approvalExpiresAt });
      const outcome = await h.run(acts, call, 1);
      expect(typeOf(outcome)).toBe('failure:INVALID_ARGUMENT');
      expect((outcome as { failure: { message: string } }).failure.message).toMatch(/approvalExpiresAt/);
      expect(received).toHaveLength(0);
      expect(await h.recordOf(call)).toBeNull();
    },
  );
});
