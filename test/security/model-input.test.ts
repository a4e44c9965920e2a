/**
 * Model-supplied tool input cannot change how the fence behaves. Through the model adapters (OpenAI
 * arguments text, Anthropic input objects) and through the real activities
 * (MockActivityEnvironment, SQLite store), since users' workflows call the activities directly.
 */
import fc from 'fast-check';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolDefinition } from '../../src/activities';
import { isCheckpointError } from '../../src/checkpoint/errors';
import { anthropicMessageToTurnResult, openAiCompletionToTurnResult, parseTranscript, parseTranscriptJson, type ResponseContext } from '../../src/model/transcript';
import type { ToolCallRequest } from '../../src/model/types';
import { Gate, Harness, Provider, typeOf, waitFor } from '../adversarial/harness';
import { cleanPrototype, naiveMerge } from '../helpers/prototype';

jest.setTimeout(120_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

// ---- helpers ---------------------------------------------------------------------------------

afterEach(() => {
  cleanPrototype();
});

/** A naive tool: a free-form `options` field; the whole input is deep-merged into defaults. */
function mergeTool(name = 'create_ticket', extra: Partial<ToolDefinition<any>> = {}): ToolDefinition<any> {
  return defineTool({
    name,
    revision: 'v1',
    input: z.object({ title: z.string(), options: z.record(z.string(), z.any()).optional() }),
    async execute(input) {
      const merged = naiveMerge({ priority: 'normal' }, input as Record<string, unknown>);
      return { output: { merged: JSON.parse(JSON.stringify(merged)) } };
    },
    ...extra,
  });
}

const ctx: ResponseContext = { where: 'test response', live: true, details: { provider: 'openai', turn: 0 } };

function openAiTurn(...calls: Array<[id: string, name: string, args: string]>): unknown {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: null, tool_calls: calls.map(([id, name, args]) => ({ id, type: 'function', function: { name, arguments: args } })) },
        finish_reason: 'tool_calls',
      },
    ],
  };
}

function anthropicTurn(...calls: Array<[id: string, name: string, input: unknown]>): unknown {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude',
    content: calls.map(([id, name, input]) => ({ type: 'tool_use', id, name, input })),
    stop_reason: 'tool_use',
  };
}

function refusal(call: ToolCallRequest | undefined): { reason: string; type: string } | undefined {
  return call?.inputError === undefined ? undefined : { type: call.inputError.type, reason: call.inputError.reason };
}

const ISSUE_INPUT = '{"title":"t","options":{"x":{"__proto__":{"dedupesByKey":true}}}}';

// ---- strict input: prototype keys, own properties --------------------------------------------

describe('prototype keys', () => {
  test('prototype pollution: a tool with a naive deep merge gets the call refused with INVALID_TOOL_INPUT and Object.prototype stays unchanged', async () => {
    const acts = h.activities([mergeTool()]);
    const call = h.newCall({ input: JSON.parse(ISSUE_INPUT) });
    const out = await h.run(acts, call, 1);
    const polluted = cleanPrototype();
    expect({ out: typeOf(out), polluted }).toEqual({ out: 'failure:INVALID_TOOL_INPUT', polluted: [] });
    expect('failure' in out && out.failure.message).toMatch(/forbidden-key.*"__proto__"/);
    expect(await h.recordOf(call)).toBeNull();
  });

  test.each(['__proto__', 'constructor', 'prototype'])('the OpenAI adapter refuses %s at any depth for that call only; the other call of the turn stands', (key) => {
    const deep = `{"title":"t","options":{"a":[{"b":{${JSON.stringify(key)}:{"dedupesByKey":true}}}]}}`;
    const result = openAiCompletionToTurnResult(openAiTurn(['call_bad', 'create_ticket', deep], ['call_ok', 'create_ticket', '{"title":"fine"}']), ctx);
    expect(result.stopReason).toBe('tool_use');
    expect(result.toolCalls.map((c) => [c.callId, c.input, refusal(c)])).toEqual([
      ['call_bad', {}, { type: 'INVALID_TOOL_INPUT', reason: 'forbidden-key' }],
      ['call_ok', { title: 'fine' }, undefined],
    ]);
    expect(result.toolCalls[0]!.inputError!.message).toMatch(/^INVALID_TOOL_INPUT: tool call call_bad \(create_ticket\) input refused \(forbidden-key\): member name "/);
    expect(cleanPrototype()).toEqual([]);
  });

  test('the Anthropic adapter and a recorded transcript refuse them per call as well', () => {
    const poisoned = JSON.parse(ISSUE_INPUT) as unknown;
    const live = anthropicMessageToTurnResult(anthropicTurn(['toolu_bad', 'create_ticket', poisoned], ['toolu_ok', 'create_ticket', { title: 'ok' }]), {
      ...ctx,
      details: { provider: 'anthropic', turn: 0 },
    });
    expect(live.toolCalls.map(refusal)).toEqual([{ type: 'INVALID_TOOL_INPUT', reason: 'forbidden-key' }, undefined]);
    const transcript = parseTranscript({
      version: 1,
      id: 'poisoned',
      format: 'openai-chat-completions',
      responses: [openAiTurn(['call_p', 'create_ticket', '{"title":"t","constructor":{"prototype":{"x":1}}}'])],
    });
    expect(transcript.turns[0]!.toolCalls.map(refusal)).toEqual([{ type: 'INVALID_TOOL_INPUT', reason: 'forbidden-key' }]);
  });

  test('defineTool and createToolActivities make every flag an own property; a polluted Object.prototype sets none', () => {
    const declaration = { name: 'send_email', revision: 'v1', input: z.object({ to: z.string() }), execute: async () => ({ output: null }) };
    Object.assign(Object.prototype, { dedupesByKey: true, keyRetentionMs: 1e12, dedupeByIntent: true, callDeadlineMs: 1 });
    const defined = defineTool(declaration);
    const flags = { dedupesByKey: defined.dedupesByKey, keyRetentionMs: defined.keyRetentionMs, dedupeByIntent: defined.dedupeByIntent, callDeadlineMs: defined.callDeadlineMs };
    const own = ['dedupesByKey', 'keyRetentionMs', 'dedupeByIntent', 'callDeadlineMs', 'lookup', 'target'].filter((k) => !Object.hasOwn(defined, k));
    cleanPrototype();
    expect(flags).toEqual({ dedupesByKey: false, keyRetentionMs: undefined, dedupeByIntent: false, callDeadlineMs: 30_000 });
    expect(own).toEqual([]);
    // A tool object that bypassed defineTool is checked the same way by createToolActivities.
    expect(() => createToolActivities({ store: h.store, tools: [{ ...declaration, dedupesByKey: 'yes' } as never] })).toThrow(/dedupesByKey must be a boolean/);
  });

  test('with Object.prototype polluted (dedupesByKey, keyRetentionMs), a crashed claim of a non-deduplicating tool without lookup pauses instead of repeating the effect', async () => {
    const provider = new Provider();
    const stuck = new Gate();
    // Declared without defineTool and without dedupesByKey: the provider does NOT deduplicate.
    const sendEmail = {
      name: 'create_ticket',
      revision: 'v1',
      input: z.object({ title: z.string() }),
      callDeadlineMs: 1_000,
      async execute(_input: unknown, c: { idempotencyKey: string }) {
        const effect = provider.apply(c.idempotencyKey);
        if (provider.total() === 1) await stuck.wait(); // attempt 1's worker hangs after the effect
        return { output: effect };
      },
    } as ToolDefinition<any>;
    const acts = h.activities([sendEmail]);
    const call = h.newCall();
    void h.run(acts, call, 1);
    await waitFor(async () => provider.total() === 1);
    h.passSettleTime((await h.recordOf(call))!);
    Object.assign(Object.prototype, { dedupesByKey: true, keyRetentionMs: 10 * 365 * 86_400_000 });
    const second = await h.run(h.activities([sendEmail]), call, 2);
    cleanPrototype();
    stuck.open();
    expect({ second: typeOf(second), effects: provider.total() }).toEqual({ second: 'failure:OUTCOME_UNKNOWN', effects: 1 });
  });

  test('the activity input is read from its own properties: a polluted expectedIntentDigest or runChainId changes nothing; unknown fields are refused', async () => {
    const acts = h.activities([mergeTool()]);
    const call = h.newCall({ input: { title: 'own fields' } });
    Object.assign(Object.prototype, { expectedIntentDigest: `sha256:${'0'.repeat(64)}`, runChainId: 'chain-of-the-attacker', intentGeneration: -1 });
    const out = await h.run(acts, call, 1);
    cleanPrototype();
    expect(typeOf(out)).toBe('result:executed');
    expect(await h.recordOf(call)).toEqual(expect.objectContaining({ status: 'delivered' }));

    const typo = await h.run(acts, h.newCall({ expectedIntentDigst: 'sha256:x' } as never), 1);
    expect(typeOf(typo)).toBe('failure:INVALID_ARGUMENT');
    expect('failure' in typo && typo.failure.message).toMatch(/expectedIntentDigst/);
  });

  test("(property) no model input, as arguments text through the OpenAI adapter or as an object through the activity, changes Object.prototype or a tool's flags", async () => {
    const tool = mergeTool('merge_tool', { input: z.record(z.string(), z.unknown()) });
    const acts = h.activities([tool]);
    const key = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'dedupesByKey', 'keyRetentionMs', 'runChainId', 'title'), fc.string({ maxLength: 4 }));
    type Node =
      | { readonly t: 'obj'; readonly entries: ReadonlyArray<readonly [string, Node]> }
      | { readonly t: 'arr'; readonly items: readonly Node[] }
      | { readonly t: 'leaf'; readonly v: null | boolean | number | string };
    const { node } = fc.letrec<{ node: Node; obj: Node; arr: Node; leaf: Node }>((tie) => ({
      node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('obj'), tie('arr')),
      obj: fc.record({ t: fc.constant('obj' as const), entries: fc.array(fc.tuple(key, tie('node')), { maxLength: 4 }) }),
      arr: fc.record({ t: fc.constant('arr' as const), items: fc.array(tie('node'), { maxLength: 3 }) }),
      leaf: fc.record({ t: fc.constant('leaf' as const), v: fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.string({ maxLength: 6 })) }),
    }));
    const text = (n: Node): string =>
      n.t === 'leaf' ? JSON.stringify(n.v) : n.t === 'arr' ? `[${n.items.map(text).join(',')}]` : `{${n.entries.map(([k, v]) => `${JSON.stringify(k)}:${text(v)}`).join(',')}}`;
    const forbidden = (n: Node): boolean =>
      n.t === 'obj' ? n.entries.some(([k, v]) => ['__proto__', 'constructor', 'prototype'].includes(k) || forbidden(v)) : n.t === 'arr' ? n.items.some(forbidden) : false;
    const ownForbiddenKey = (v: unknown): boolean =>
      typeof v === 'object' &&
      v !== null &&
      Object.keys(v).some((k) => ['__proto__', 'constructor', 'prototype'].includes(k) || ownForbiddenKey((v as Record<string, unknown>)[k]));
    const duplicated = (n: Node): boolean =>
      n.t === 'obj' ? new Set(n.entries.map(([k]) => k)).size < n.entries.length || n.entries.some(([, v]) => duplicated(v)) : n.t === 'arr' ? n.items.some(duplicated) : false;
    const top = fc.array(fc.tuple(key, node), { maxLength: 4 }).map((entries): Node => ({ t: 'obj', entries: [['title', { t: 'leaf', v: 't' }], ...entries] }));

    await fc.assert(
      fc.asyncProperty(top, async (input) => {
        const args = text(input);
        const [viaAdapter] = openAiCompletionToTurnResult(openAiTurn(['call_p', 'merge_tool', args]), ctx).toolCalls;
        if (forbidden(input) || duplicated(input)) expect(viaAdapter!.inputError?.type).toBe('INVALID_TOOL_INPUT');
        else expect(viaAdapter).toEqual({ callId: 'call_p', toolName: 'merge_tool', input: JSON.parse(args) });
        // The same input as an object (own __proto__ keys, as JSON.parse makes them) straight into the activity.
        const parsed = JSON.parse(args) as unknown; // duplicates resolved last-wins, as a workflow would pass them
        const out = await h.run(acts, h.newCall({ toolName: 'merge_tool', input: parsed as never }), 1);
        const polluted = cleanPrototype();
        expect(polluted).toEqual([]);
        expect(typeOf(out)).toBe(ownForbiddenKey(parsed) ? 'failure:INVALID_TOOL_INPUT' : 'result:executed');
        expect([tool.dedupesByKey, Object.hasOwn(tool, 'dedupesByKey'), tool.dedupeByIntent, tool.keyRetentionMs]).toEqual([false, true, false, undefined]);
      }),
      { numRuns: 150 },
    );
  });
});

// ---- tool input bounds: numbers, duplicate keys, size ----------------------------------------

describe('numbers, duplicates and size', () => {
  test('numbers: exactly the literals JSON reads changed are refused, naming the token, per call; 1e20, 1e21, 2^53 and 0.1 pass, in OpenAI arguments and in an Anthropic transcript', () => {
    const result = openAiCompletionToTurnResult(
      openAiTurn(
        ['call_big', 'refund', '{"amount": 9007199254740993}'],
        ['call_neg', 'refund', '{"amount": -1e300}'],
        ['call_frac', 'refund', '{"amount": 0.99999999999999999}'],
        ['call_ok', 'refund', '{"amount": 9007199254740991, "rate": 0.5, "big": 1e20, "bigger": 1e21, "pow": 9007199254740992}'],
      ),
      ctx,
    );
    expect(result.toolCalls.map(refusal)).toEqual([
      { type: 'INVALID_TOOL_INPUT', reason: 'inexact-number' },
      { type: 'INVALID_TOOL_INPUT', reason: 'inexact-number' },
      { type: 'INVALID_TOOL_INPUT', reason: 'inexact-number' },
      undefined,
    ]);
    expect(result.toolCalls[0]!.inputError!.message).toContain('9007199254740993 at $.amount would be read as 9007199254740992');
    expect(result.toolCalls[3]!.input).toEqual({ amount: 9007199254740991, rate: 0.5, big: 1e20, bigger: 1e21, pow: 2 ** 53 });
    // A transcript is read from its text: the same rule, per call.
    const text = `{"version":1,"id":"t","format":"anthropic-messages","responses":[{"id":"msg_1","type":"message","role":"assistant","model":"claude","stop_reason":"tool_use","content":[
      {"type":"tool_use","id":"toolu_ok","name":"refund","input":{"amount":1e20,"cap":1e21}},
      {"type":"tool_use","id":"toolu_big","name":"refund","input":{"amount":9007199254740993}}]}]}`;
    const turn = parseTranscriptJson(text, 'numbers.json').turns[0]!;
    expect(turn.toolCalls.map((c) => [c.callId, c.input, refusal(c)?.reason])).toEqual([
      ['toolu_ok', { amount: 1e20, cap: 1e21 }, undefined],
      ['toolu_big', {}, 'inexact-number'],
    ]);
    // A value has no literals left to check: it is exactly the double it holds.
    const anthropic = anthropicMessageToTurnResult(anthropicTurn(['toolu_pow', 'refund', { amount: 2 ** 53, big: 1e21 }]), ctx);
    expect(anthropic.toolCalls.map(refusal)).toEqual([undefined]);
  });

  test('duplicate keys in OpenAI arguments are refused for that call (at any depth), not resolved last-wins', () => {
    const result = openAiCompletionToTurnResult(
      openAiTurn(['call_dup', 'refund', '{"account":"A-1","amount":5,"amount":5000}'], ['call_deep', 'refund', '{"a":{"b":1,"b":2}}'], ['call_ok', 'refund', '{"amount":5}']),
      ctx,
    );
    expect(result.toolCalls.map((c) => [c.input, refusal(c)])).toEqual([
      [{}, { type: 'INVALID_TOOL_INPUT', reason: 'duplicate-key' }],
      [{}, { type: 'INVALID_TOOL_INPUT', reason: 'duplicate-key' }],
      [{ amount: 5 }, undefined],
    ]);
    expect(result.toolCalls[0]!.inputError!.message).toMatch(/"amount" appears more than once/);
  });

  test('an input over 64 KiB is refused for that call by the adapters (as text and as an object)', () => {
    const big = JSON.stringify({ body: 'x'.repeat(5 * 1024 * 1024) });
    const openai = openAiCompletionToTurnResult(openAiTurn(['call_big', 'send_email', big], ['call_ok', 'send_email', '{"body":"hi"}']), ctx);
    expect(openai.toolCalls.map(refusal)).toEqual([{ type: 'INVALID_TOOL_INPUT', reason: 'too-large' }, undefined]);
    const anthropic = anthropicMessageToTurnResult(anthropicTurn(['toolu_big', 'send_email', { body: 'y'.repeat(65_536) }]), ctx);
    expect(anthropic.toolCalls.map(refusal)).toEqual([{ type: 'INVALID_TOOL_INPUT', reason: 'too-large' }]);
    const custom = openAiCompletionToTurnResult(openAiTurn(['call_small', 'send_email', '{"body":"0123456789"}']), { ...ctx, maxToolInputBytes: 10 });
    expect(custom.toolCalls.map(refusal)).toEqual([{ type: 'INVALID_TOOL_INPUT', reason: 'too-large' }]);
  });

  test('the activity refuses a 5 MB input and input over its configured maxToolInputBytes, writing nothing; a number beyond 2^53 is the double it holds and runs', async () => {
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: z.object({ title: z.string(), n: z.number().optional() }),
      execute: async (i) => ({ output: { title: i.title.length } }),
    });
    const acts = h.activities([tool]);
    expect(typeOf(await h.run(acts, h.newCall({ input: { title: 't', n: 2 ** 53 + 2 } as never }), 1))).toBe('result:executed');
    for (const input of [{ title: 'x'.repeat(5 * 1024 * 1024) }]) {
      const call = h.newCall({ input: input as never });
      const out = await h.run(acts, call, 1);
      expect(typeOf(out)).toBe('failure:INVALID_TOOL_INPUT');
      expect(await h.recordOf(call)).toBeNull();
    }
    const small = h.activities([tool], { maxToolInputBytes: 32 });
    expect(typeOf(await h.run(small, h.newCall({ input: { title: 'x'.repeat(40) } }), 1))).toBe('failure:INVALID_TOOL_INPUT');
    expect(typeOf(await h.run(small, h.newCall({ input: { title: 'short' } }), 1))).toBe('result:executed');
    for (const bad of [0, 1.5, 11 * 1024 * 1024]) {
      let err: unknown;
      try {
        h.activities([tool], { maxToolInputBytes: bad });
      } catch (e) {
        err = e;
      }
      expect(isCheckpointError(err, 'INVALID_ARGUMENT')).toBe(true);
    }
  });
});
