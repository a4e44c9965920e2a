/**
 * wire-names.ts: tool names and call ids as the providers accept them, pairs kept, ids unique
 * per conversation.
 */
import fc from 'fast-check';
import {
  ANTHROPIC_ID_MAX_LENGTH,
  OPENAI_ID_MAX_LENGTH,
  WIRE_ID_PATTERN,
  WIRE_TOOL_NAME_PATTERN,
  toWireConversation,
  toolNameFromWire,
  wireToken,
  wireToolName,
} from '../../../src/model/wire-names';
import type { ConversationMessage, ToolCallRequest } from '../../../src/model/types';

const validToken = (max: number) => fc.stringMatching(new RegExp(`^[a-zA-Z0-9_-]{1,${max}}$`));
/** Any string, weighted towards the shapes models make up. */
const anyToken = fc.oneof(
  fc.string({ maxLength: 120 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('multi_tool_use.parallel', 'list_dir:0', 'ollama_0', 'functions.close_ticket', '', ' ', 'a'.repeat(65), 'call_é', '🙂'),
  validToken(64),
);

describe('wireToken / wireToolName', () => {
  test('the output always matches the provider pattern and cap', () => {
    fc.assert(
      fc.property(anyToken, fc.constantFrom(40, 64), (original, max) => {
        const token = wireToken(original, max);
        expect(token).toMatch(new RegExp(`^[a-zA-Z0-9_-]{1,${max}}$`));
        expect(WIRE_ID_PATTERN.test(token)).toBe(true);
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(anyToken, (name) => expect(wireToolName(name)).toMatch(WIRE_TOOL_NAME_PATTERN)),
      { numRuns: 2_000 },
    );
  });

  test('identity on names and ids that are already valid', () => {
    fc.assert(fc.property(validToken(64), (name) => expect(wireToolName(name)).toBe(name)));
    fc.assert(fc.property(validToken(40), (id) => expect(wireToken(id, OPENAI_ID_MAX_LENGTH)).toBe(id)));
  });

  test('injective in practice: different originals never share a token', () => {
    fc.assert(
      fc.property(fc.uniqueArray(anyToken, { minLength: 2, maxLength: 60 }), (originals) => {
        const tokens = originals.map((o) => wireToken(o, OPENAI_ID_MAX_LENGTH));
        expect(new Set(tokens).size).toBe(originals.length);
      }),
      { numRuns: 500 },
    );
    // Near-misses that sanitize to the same text still differ (the hash is of the original).
    expect(new Set(['a.b', 'a:b', 'a b', 'a_b', 'a/b'].map(wireToolName)).size).toBe(5);
    // Long originals that share the first 64 characters still differ.
    expect(wireToolName('x'.repeat(70) + '1')).not.toBe(wireToolName('x'.repeat(70) + '2'));
  });

  test('deterministic, readable, and salted variants differ', () => {
    expect(wireToolName('multi_tool_use.parallel')).toBe(wireToolName('multi_tool_use.parallel'));
    expect(wireToolName('multi_tool_use.parallel')).toMatch(/^multi_tool_use_parallel_[0-9a-f]{10}$/);
    expect(wireToken('list_dir:0', 64)).toMatch(/^list_dir_0_[0-9a-f]{10}$/);
    expect(wireToken('ollama_0', 64, '1')).not.toBe('ollama_0');
    expect(wireToken('ollama_0', 64, '1')).not.toBe(wireToken('ollama_0', 64, '2'));
    expect(wireToken('', 40)).toMatch(/^_[0-9a-f]{10}$/);
  });
});

describe('toWireConversation', () => {
  const call = (callId: string, toolName = 'list_dir'): ToolCallRequest => ({ callId, toolName, input: {} });
  const result = (callId: string, toolName = 'list_dir'): ConversationMessage => ({ role: 'tool', callId, toolName, content: 'ok', isError: false });

  /** Every assistant call id is valid and unique, and every tool result names the call it answers. */
  function checkPairs(wire: ConversationMessage[], original: ConversationMessage[], max: number): void {
    const ids: string[] = [];
    const open: string[] = [];
    wire.forEach((message, i) => {
      if (message.role === 'assistant') {
        for (const c of message.toolCalls) {
          expect(c.callId).toMatch(new RegExp(`^[a-zA-Z0-9_-]{1,${max}}$`));
          expect(c.toolName).toMatch(WIRE_TOOL_NAME_PATTERN);
          ids.push(c.callId);
          open.push(c.callId);
        }
      } else if (message.role === 'tool') {
        const o = original[i] as Extract<ConversationMessage, { role: 'tool' }>;
        expect(message.callId).toMatch(WIRE_ID_PATTERN);
        // Results answer the open calls in order in these conversations.
        expect(message.callId).toBe(open.shift());
        expect(o.role).toBe('tool');
      }
    });
    expect(new Set(ids).size).toBe(ids.length);
  }

  test('valid conversations pass unchanged', () => {
    const messages: ConversationMessage[] = [
      { role: 'user', text: 'hi' },
      { role: 'assistant', text: 'x', toolCalls: [call('toolu_01a', 'create_ticket'), call('toolu_01b', 'close_ticket')] },
      result('toolu_01a', 'create_ticket'),
      result('toolu_01b', 'close_ticket'),
    ];
    expect(toWireConversation(messages, 'anthropic')).toEqual(messages);
    expect(toWireConversation(messages, 'openai')).toEqual(messages);
  });

  test('list_dir:0 reused every turn: each turn gets its own valid id, its result the same one', () => {
    const messages: ConversationMessage[] = [
      { role: 'user', text: 'list' },
      { role: 'assistant', text: '', toolCalls: [call('list_dir:0')] },
      result('list_dir:0'),
      { role: 'assistant', text: '', toolCalls: [call('list_dir:0'), call('list_dir:1')] },
      result('list_dir:0'),
      result('list_dir:1'),
      { role: 'assistant', text: '', toolCalls: [call('list_dir:0')] },
      result('list_dir:0'),
    ];
    const wire = toWireConversation(messages, 'anthropic');
    checkPairs(wire, messages, ANTHROPIC_ID_MAX_LENGTH);
    const turnIds = wire.flatMap((m) => (m.role === 'assistant' ? [m.toolCalls[0]!.callId] : []));
    expect(new Set(turnIds).size).toBe(3);
    // Append-only: the mapping of earlier messages does not change when the conversation grows.
    expect(toWireConversation(messages.slice(0, 3), 'anthropic')).toEqual(wire.slice(0, 3));
  });

  test('a valid id reused (ollama_0) keeps its first use and renames later ones; a later id equal to a renamed one is still unique', () => {
    const messages: ConversationMessage[] = [
      { role: 'assistant', text: '', toolCalls: [call('ollama_0')] },
      result('ollama_0'),
      { role: 'assistant', text: '', toolCalls: [call('ollama_0')] },
      result('ollama_0'),
    ];
    const wire = toWireConversation(messages, 'openai');
    expect((wire[0] as Extract<ConversationMessage, { role: 'assistant' }>).toolCalls[0]!.callId).toBe('ollama_0');
    const second = (wire[2] as Extract<ConversationMessage, { role: 'assistant' }>).toolCalls[0]!.callId;
    expect(second).not.toBe('ollama_0');
    const third: ConversationMessage[] = [...messages, { role: 'assistant', text: '', toolCalls: [call(second)] }, result(second)];
    checkPairs(toWireConversation(third, 'openai'), third, OPENAI_ID_MAX_LENGTH);
  });

  test('multi_tool_use.parallel is renamed in the call and its result, never unpacked', () => {
    const input = { tool_uses: [{ recipient_name: 'functions.list_dir', parameters: {} }] };
    const messages: ConversationMessage[] = [
      { role: 'assistant', text: '', toolCalls: [{ callId: 'call_1', toolName: 'multi_tool_use.parallel', input }] },
      { role: 'tool', callId: 'call_1', toolName: 'multi_tool_use.parallel', content: { type: 'UNKNOWN_TOOL' }, isError: true },
    ];
    const wire = toWireConversation(messages, 'openai');
    expect(wire).toEqual([
      { role: 'assistant', text: '', toolCalls: [{ callId: 'call_1', toolName: wireToolName('multi_tool_use.parallel'), input }] },
      { role: 'tool', callId: 'call_1', toolName: wireToolName('multi_tool_use.parallel'), content: { type: 'UNKNOWN_TOOL' }, isError: true },
    ]);
    expect(messages[0]).toMatchObject({ toolCalls: [{ toolName: 'multi_tool_use.parallel' }] });
  });

  test('property: any ids and names, reused across turns, give valid unique ids with matching pairs', () => {
    const idArb = fc.oneof(fc.constantFrom('list_dir:0', 'ollama_0', 'x', 'call.1'), fc.string({ maxLength: 80 }));
    const turnArb = fc.uniqueArray(idArb, { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(fc.array(turnArb, { minLength: 1, maxLength: 8 }), fc.constantFrom('anthropic' as const, 'openai' as const), (turns, provider) => {
        const messages: ConversationMessage[] = [{ role: 'user', text: 'go' }];
        for (const ids of turns) {
          messages.push({ role: 'assistant', text: '', toolCalls: ids.map((id) => call(id, `${id}.tool`)) });
          for (const id of ids) messages.push(result(id, `${id}.tool`));
        }
        checkPairs(toWireConversation(messages, provider), messages, provider === 'openai' ? OPENAI_ID_MAX_LENGTH : ANTHROPIC_ID_MAX_LENGTH);
      }),
      { numRuns: 300 },
    );
  });
});

test('toolNameFromWire maps the wire form of an offered name back and passes other names through', () => {
  const back = toolNameFromWire(['files.read', 'close_ticket']);
  expect(back(wireToolName('files.read'))).toBe('files.read');
  expect(back('close_ticket')).toBe('close_ticket');
  expect(back('multi_tool_use.parallel')).toBe('multi_tool_use.parallel');
});
