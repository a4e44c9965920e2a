/**
 * Nothing in a production worker grows with the turns it serves. The scripted
 * model kept a deep copy of every turn's input (the whole conversation, about 240 KB a turn in a
 * long run) for ever, and `ttc worker` always offered it, so any workflow starter could push a
 * worker out of memory. The long-run figures are `npm run bench:soak` (docs/benchmarks.md).
 */
import { serialize } from 'node:v8';
import { defineTool } from '../../src/activities';
import { isCheckpointError } from '../../src/checkpoint/errors';
import { buildModels, loadTranscripts } from '../../src/cli/models';
import { resolveConfig } from '../../src/config';
import { ScriptedModel } from '../../src/model/scripted-model';
import type { ConversationMessage, ModelTurnInput } from '../../src/model/types';
import { z } from 'zod';

/** Every own field of the model, serialized: what it holds between turns. */
const stateOf = (model: ScriptedModel): Buffer => serialize(Object.fromEntries(Object.entries(model)));

test('the scripted model keeps no per-turn state: 200 turns with a 50 KB conversation leave it as it was', async () => {
  const [transcript] = loadTranscripts();
  const model = new ScriptedModel({ transcripts: transcript! });
  const before = stateOf(model);
  const messages: ConversationMessage[] = [{ role: 'user', text: 'x'.repeat(50_000) }];
  for (let i = 0; i < 200; i += 1) {
    const input: ModelTurnInput = { model: 'scripted', turn: i % transcript!.turns.length, messages, tools: [] };
    await model.turn(input);
  }
  const after = stateOf(model);
  expect(after.length).toBe(before.length);
  expect(after.equals(before)).toBe(true);
});

test('requests are kept only when a test opts in with recordRequests', async () => {
  const [transcript] = loadTranscripts();
  const model = new ScriptedModel({ transcripts: transcript! });
  await model.turn({ model: 'scripted', turn: 0, messages: [{ role: 'user', text: 'hi' }], tools: [] });
  let error: unknown;
  try {
    void model.requests;
  } catch (e) {
    error = e;
  }
  expect(isCheckpointError(error, 'INVALID_ARGUMENT')).toBe(true);
  expect((error as Error).message).toMatch(/recordRequests: true/);
  const recording = new ScriptedModel({ transcripts: transcript!, recordRequests: true });
  await recording.turn({ model: 'scripted', turn: 0, messages: [{ role: 'user', text: 'hi' }], tools: [] });
  expect(recording.requests).toHaveLength(1);
});

describe('ttc worker offers the scripted model only when asked', () => {
  const tools = [defineTool({ name: 'noop', revision: 'v1', input: z.object({}), execute: async () => ({ output: null }) })];

  it('without --models or TTC_MODELS a worker offers the real adapters whose keys are set, never scripted', () => {
    expect(buildModels(tools, { OPENAI_API_KEY: 'k' }).map((m) => m.name)).toEqual(['openai']);
    expect(
      buildModels(tools, { OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' })
        .map((m) => m.name)
        .sort(),
    ).toEqual(['anthropic', 'openai']);
  });

  it('a worker with no model at all is refused with INVALID_CONFIG naming --models scripted', () => {
    expect(() => buildModels(tools, {})).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(/--models scripted/) }));
  });

  it('--models / TTC_MODELS opts in to scripted; unknown names and missing keys are INVALID_CONFIG', () => {
    expect(buildModels(tools, {}, ['scripted']).map((m) => m.name)).toEqual(['scripted']);
    expect(buildModels(tools, { ANTHROPIC_API_KEY: 'k' }, ['scripted', 'anthropic']).map((m) => m.name)).toEqual(['scripted', 'anthropic']);
    expect(() => buildModels(tools, {}, ['gpt-9'])).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(/"gpt-9"/) }));
    expect(() => buildModels(tools, {}, ['openai'])).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message: expect.stringMatching(/OPENAI_API_KEY is not set/) }));
    expect(resolveConfig({}, { TTC_MODELS: 'scripted, anthropic' }).pins.models).toEqual(['scripted', 'anthropic']);
    expect(resolveConfig({}, {}).pins.models).toBeNull();
  });
});
