import { z } from 'zod';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { AnthropicModel, toAnthropicMessages } from '../../../src/model/anthropic-model';
import { OpenAiModel, toOpenAiMessages } from '../../../src/model/openai-model';
import { isTransientStatus, parseSdkTurnOptions, retryAfterMs } from '../../../src/model/sdk-common';
import { resolveToolSpecs, toolSpecFromZod } from '../../../src/model/tool-specs';
import type { ConversationMessage } from '../../../src/model/types';

const conversation: ConversationMessage[] = [
  { role: 'user', text: 'Two problems: reset mail and VAT.' },
  {
    role: 'assistant',
    text: 'Opening tickets.',
    toolCalls: [
      { callId: 'toolu_01a', toolName: 'create_ticket', input: { title: 'Reset mail', body: 'b', queue: 'support' } },
      { callId: 'toolu_01b', toolName: 'send_email', input: { to: 'x@y.z', subject: 's', body: 'b' } },
    ],
  },
  { role: 'tool', callId: 'toolu_01a', toolName: 'create_ticket', content: { ticketId: 'T-1' }, isError: false },
  { role: 'tool', callId: 'toolu_01b', toolName: 'send_email', content: 'SMTP outcome unknown', isError: true },
  { role: 'user', text: 'Thanks, anything else?' },
  { role: 'assistant', text: '', toolCalls: [] },
];

test('toAnthropicMessages: tool_use blocks, grouped tool_result blocks first, empty assistant dropped', () => {
  expect(toAnthropicMessages(conversation)).toEqual([
    { role: 'user', content: [{ type: 'text', text: 'Two problems: reset mail and VAT.' }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Opening tickets.' },
        { type: 'tool_use', id: 'toolu_01a', name: 'create_ticket', input: { title: 'Reset mail', body: 'b', queue: 'support' } },
        { type: 'tool_use', id: 'toolu_01b', name: 'send_email', input: { to: 'x@y.z', subject: 's', body: 'b' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_01a', content: '{"ticketId":"T-1"}', is_error: false },
        { type: 'tool_result', tool_use_id: 'toolu_01b', content: 'SMTP outcome unknown', is_error: true },
        { type: 'text', text: 'Thanks, anything else?' },
      ],
    },
  ]);
});

test('toAnthropicMessages: an assistant with only tool calls has no text block', () => {
  const out = toAnthropicMessages([{ role: 'assistant', text: '', toolCalls: [{ callId: 'toolu_1', toolName: 'x', input: {} }] }]);
  expect(out).toEqual([{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'x', input: {} }] }]);
});

test('toOpenAiMessages: system first, tool_calls with JSON-string arguments, role tool with tool_call_id', () => {
  expect(toOpenAiMessages(conversation, 'Be brief.')).toEqual([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Two problems: reset mail and VAT.' },
    {
      role: 'assistant',
      content: 'Opening tickets.',
      tool_calls: [
        { id: 'toolu_01a', type: 'function', function: { name: 'create_ticket', arguments: '{"title":"Reset mail","body":"b","queue":"support"}' } },
        { id: 'toolu_01b', type: 'function', function: { name: 'send_email', arguments: '{"to":"x@y.z","subject":"s","body":"b"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'toolu_01a', content: '{"ticketId":"T-1"}' },
    { role: 'tool', tool_call_id: 'toolu_01b', content: 'Error: SMTP outcome unknown' },
    { role: 'user', content: 'Thanks, anything else?' },
    { role: 'assistant', content: null },
  ]);
});

test('retryAfterMs reads retry-after-ms, retry-after seconds and HTTP dates', () => {
  const h = (entries: Record<string, string>) => new Headers(entries);
  expect(retryAfterMs(h({ 'retry-after': '2' }))).toBe(2000);
  expect(retryAfterMs(h({ 'retry-after': '0.25' }))).toBe(250);
  expect(retryAfterMs(h({ 'retry-after-ms': '150', 'retry-after': '9' }))).toBe(150);
  const now = Date.parse('2026-01-01T00:00:00Z');
  expect(retryAfterMs(h({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5000);
  expect(retryAfterMs(h({ 'retry-after': 'Thu, 01 Jan 2025 00:00:05 GMT' }), now)).toBeNull();
  expect(retryAfterMs(h({ 'retry-after': 'soon' }))).toBeNull();
  expect(retryAfterMs(h({ 'retry-after': '0' }))).toBeNull();
  expect(retryAfterMs(h({}))).toBeNull();
  expect(retryAfterMs(undefined)).toBeNull();
});

test('isTransientStatus follows classifyHttpFailure and x-should-retry', () => {
  for (const s of [408, 429, 500, 502, 503, 529]) expect(isTransientStatus(s)).toBe(true);
  // 409: a model request carries no idempotency key, so it is the classifier's unkeyed conflict (after the SDK's own retries).
  for (const s of [400, 401, 403, 404, 409, 413, 422]) expect(isTransientStatus(s)).toBe(false);
  expect(isTransientStatus(500, new Headers({ 'x-should-retry': 'false' }))).toBe(false);
  expect(isTransientStatus(400, new Headers({ 'x-should-retry': 'true' }))).toBe(true);
});

test('parseSdkTurnOptions accepts { model, maxTokens } and refuses anything else', () => {
  expect(parseSdkTurnOptions(undefined, 'a')).toEqual({});
  expect(parseSdkTurnOptions({ model: 'm', maxTokens: 5 }, 'a')).toEqual({ model: 'm', maxTokens: 5 });
  expect(() => parseSdkTurnOptions({ transcript: 'x' }, 'anthropic')).toThrow(/INVALID_MODEL_OPTIONS: anthropic modelOptions/);
  expect(() => parseSdkTurnOptions({ maxTokens: -1 }, 'a')).toThrow(/INVALID_MODEL_OPTIONS/);
});

test('toolSpecFromZod and resolveToolSpecs', () => {
  const spec = toolSpecFromZod(z.object({ ticketId: z.string().min(1) }), 'Close a ticket');
  expect(spec).toEqual({
    description: 'Close a ticket',
    inputSchema: { type: 'object', properties: { ticketId: { type: 'string', minLength: 1 } }, required: ['ticketId'], additionalProperties: false },
  });
  expect(() => toolSpecFromZod(z.string())).toThrow(/MISSING_TOOL_SPEC/);
  expect(resolveToolSpecs(['close_ticket'], { close_ticket: spec }, 'a')).toEqual([{ name: 'close_ticket', spec }]);
  let err: unknown;
  try {
    resolveToolSpecs(['close_ticket', 'toString'], { close_ticket: spec }, 'anthropic');
  } catch (e) {
    err = e;
  }
  expect(isCheckpointError(err, 'MISSING_TOOL_SPEC')).toBe(true);
  expect((err as Error).message).toContain('toString');
});

test('buildRequest of both adapters (no network)', () => {
  const tools = { close_ticket: { description: 'Close', inputSchema: { type: 'object' as const, properties: { ticketId: { type: 'string' } }, required: ['ticketId'] } } };
  const anthropic = new AnthropicModel({ model: 'claude-x', tools, apiKey: 'k', baseURL: 'http://127.0.0.1:9', system: 'S' });
  const turn = { model: 'anthropic', turn: 0, messages: [{ role: 'user' as const, text: 'hi' }], tools: ['close_ticket'] };
  expect(anthropic.buildRequest(turn)).toEqual({
    model: 'claude-x',
    max_tokens: 1024,
    system: 'S',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    tools: [{ name: 'close_ticket', description: 'Close', input_schema: tools.close_ticket.inputSchema }],
  });
  expect(anthropic.buildRequest({ ...turn, tools: [], modelOptions: { model: 'claude-y', maxTokens: 9 }, system: 'T' })).toEqual({
    model: 'claude-y',
    max_tokens: 9,
    system: 'T',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  });
  const openai = new OpenAiModel({ model: 'gpt-x', tools, apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1' });
  expect(openai.buildRequest({ ...turn, modelOptions: { maxTokens: 7 } })).toEqual({
    model: 'gpt-x',
    messages: [{ role: 'user', content: 'hi' }],
    tools: [{ type: 'function', function: { name: 'close_ticket', description: 'Close', parameters: tools.close_ticket.inputSchema } }],
    max_completion_tokens: 7,
  });
});

test('buildRequest sends names and ids the APIs accept, pairs kept, without changing the conversation', () => {
  const tools = { list_dir: { inputSchema: { type: 'object' as const } } };
  const messages: ConversationMessage[] = [
    { role: 'user', text: 'go' },
    { role: 'assistant', text: '', toolCalls: [{ callId: 'list_dir:0', toolName: 'multi_tool_use.parallel', input: {} }] },
    { role: 'tool', callId: 'list_dir:0', toolName: 'multi_tool_use.parallel', content: 'UNKNOWN_TOOL', isError: true },
  ];
  const frozen = structuredClone(messages);
  const turn = { model: 'x', turn: 1, messages, tools: ['list_dir'] };
  const a = new AnthropicModel({ model: 'claude-x', tools, apiKey: 'k', baseURL: 'http://127.0.0.1:9' }).buildRequest(turn);
  const [, assistant, results] = a.messages as unknown as Array<{ content: Array<Record<string, unknown>> }>;
  expect(assistant!.content[0]).toMatchObject({
    type: 'tool_use',
    id: expect.stringMatching(/^list_dir_0_[0-9a-f]{10}$/),
    name: expect.stringMatching(/^multi_tool_use_parallel_[0-9a-f]{10}$/),
  });
  expect(results!.content[0]!['tool_use_id']).toBe(assistant!.content[0]!['id']);
  const o = new OpenAiModel({ model: 'gpt-x', tools, apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1' }).buildRequest(turn);
  const call = (o.messages[1] as { tool_calls: Array<{ id: string }> }).tool_calls[0]!;
  expect(call.id).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
  expect((o.messages[2] as { tool_call_id: string }).tool_call_id).toBe(call.id);
  expect(messages).toEqual(frozen);
});

test('the SDK adapters refuse a turn without resolved messages (INVALID_ARGUMENT, before any request)', () => {
  const tools = { list_dir: { inputSchema: { type: 'object' as const } } };
  const turn = { model: 'x', turn: 0, tools: ['list_dir'] };
  for (const model of [
    new AnthropicModel({ model: 'claude-x', tools, apiKey: 'k', baseURL: 'http://127.0.0.1:9' }),
    new OpenAiModel({ model: 'gpt-x', tools, apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1' }),
  ]) {
    let err: unknown;
    try {
      model.buildRequest(turn);
    } catch (e) {
      err = e;
    }
    expect(isCheckpointError(err, 'INVALID_ARGUMENT')).toBe(true);
    expect(err).toMatchObject({ details: { field: 'messages' } });
  }
});
