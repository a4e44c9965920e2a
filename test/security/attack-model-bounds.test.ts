/**
 * Adversarial review of the tool input bounds at the activity boundary: an input
 * the model adapters accept (depth 32, 10,000 JSON values) must be refused per call with a typed
 * nothing-applied error the model reads, never with a failure that pauses the run for a person.
 * Before the fix the intent digest, which wraps the arguments one level down, failed
 * PAYLOAD_TOO_LARGE: not a nothing-applied code, so the agent workflow paused on a call that never ran.
 */
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../../src/activities';
import { NOTHING_APPLIED_CODES } from '../../src/activities/contract/contract';
import { LIMITS } from '../../src/checkpoint/bounds';
import type { CheckpointErrorCode } from '../../src/checkpoint/errors';
import { parseToolInputText } from '../../src/checkpoint/model-input';
import { Harness, typeOf } from '../adversarial/harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

/** A free-form tool, as item 1 describes them; counts its runs. */
function freeTool(runs: string[], extra: Partial<ToolDefinition<any>> = {}): ToolDefinition<any> {
  return defineTool({
    name: 'free',
    revision: '1',
    input: z.object({ data: z.any() }),
    async execute(args) {
      runs.push(JSON.stringify(args).slice(0, 20));
      return { output: 'ran' };
    },
    ...extra,
  });
}

/** `{ data: … }` nesting exactly `LIMITS.maxDepth` levels: the most the adapters accept. */
function deepest(): Record<string, unknown> {
  let v: unknown = 1;
  for (let i = 0; i < LIMITS.maxDepth - 1; i += 1) v = { a: v };
  return { data: v };
}

/** `{ data: [0, …] }` holding exactly `LIMITS.maxValues` JSON values (about 20 KB as text). */
function widest(): Record<string, unknown> {
  return { data: new Array(LIMITS.maxValues - 2).fill(0) };
}

describe('attack on item 3: inputs at the bounds fail alone and typed, never pause the run', () => {
  test.each([
    ['nesting 32 levels', deepest, {}],
    ['holding 10,000 values', widest, {}],
    ['nesting 32 levels, dedupeByIntent tool (intent call id)', deepest, { dedupeByIntent: true }],
  ] as const)(
    'item 3: an input %s, which the OpenAI adapter accepts, is refused by runFencedTool and describeToolCall as INVALID_TOOL_INPUT too-large (nothing applied); nothing written or run',
    async (_what, make, extra) => {
      const input = make();
      expect(parseToolInputText(JSON.stringify(input)).ok).toBe(true);
      const runs: string[] = [];
      const acts = h.activities([freeTool(runs, extra)]);
      const call = h.newCall({ toolName: 'free', input: input as never });

      const outcome = await h.run(acts, call, 1);
      expect(typeOf(outcome)).toBe('failure:INVALID_TOOL_INPUT');
      expect(NOTHING_APPLIED_CODES).toContain((outcome as { failure: { type: CheckpointErrorCode } }).failure.type);
      expect((outcome as { failure: { message: string } }).failure.message).toMatch(/input refused \(too-large\)/);
      const described = await h
        .env(call, 1)
        .run(acts.describeToolCall, call.input)
        .then(
          () => 'described',
          (e: { type?: string }) => e.type,
        );
      expect(described).toBe('INVALID_TOOL_INPUT');
      expect(runs).toEqual([]);
      expect(await h.recordsOfWorkflow(call)).toEqual([]);
    },
  );
});
