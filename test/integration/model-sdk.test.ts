/**
 * The real `@anthropic-ai/sdk` and `openai` clients against a loopback server that speaks their
 * HTTP APIs: request bodies, response conversion, retries and error mapping.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { isCheckpointError, type CheckpointError } from '../../src/checkpoint/errors';
import { AnthropicModel } from '../../src/model/anthropic-model';
import { OpenAiModel } from '../../src/model/openai-model';
import type { ToolSpecs } from '../../src/model/tool-specs';
import { parseTranscript, type TranscriptFile } from '../../src/model/transcript';
import type { ConversationMessage, ModelTurnInput } from '../../src/model/types';
import { LoopbackLlm, anthropicError, anthropicOverloaded, anthropicRateLimited, ok, openaiError, openaiRateLimited } from '../helpers/loopback-llm';

const API_KEY = 'sk-loopback-test-key';
const TOOLS: ToolSpecs = {
  create_ticket: {
    description: 'Open a ticket in a queue.',
    inputSchema: {
      type: 'object',
      properties: { title: { type: 'string' }, body: { type: 'string' }, queue: { type: 'string' } },
      required: ['title', 'body', 'queue'],
      additionalProperties: false,
    },
  },
  close_ticket: {
    description: 'Close a ticket.',
    inputSchema: { type: 'object', properties: { ticketId: { type: 'string' } }, required: ['ticketId'], additionalProperties: false },
  },
  send_email: {
    description: 'Send an email.',
    inputSchema: {
      type: 'object',
      properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
      required: ['to', 'subject', 'body'],
      additionalProperties: false,
    },
  },
};
const TOOL_NAMES = ['create_ticket', 'close_ticket', 'send_email'];

function transcriptFile(name: string): TranscriptFile {
  return JSON.parse(readFileSync(join(__dirname, '../../examples/transcripts', name), 'utf8')) as TranscriptFile;
}

const user: ConversationMessage = { role: 'user', text: 'Please handle the two customer problems.' };

let server: LoopbackLlm;
beforeEach(async () => {
  server = await LoopbackLlm.start({ apiKey: API_KEY });
});
afterEach(async () => {
  await server.close();
});

function anthropicModel(extra: Partial<ConstructorParameters<typeof AnthropicModel>[0]> = {}): AnthropicModel {
  return new AnthropicModel({ model: 'claude-sonnet-4-6', tools: TOOLS, apiKey: API_KEY, baseURL: server.anthropicBaseURL, system: 'You are a support agent.', ...extra });
}
function openAiModel(extra: Partial<ConstructorParameters<typeof OpenAiModel>[0]> = {}): OpenAiModel {
  return new OpenAiModel({ model: 'gpt-4o', tools: TOOLS, apiKey: API_KEY, baseURL: server.openaiBaseURL, ...extra });
}
const turnInput = (model: string, turn: number, messages: readonly ConversationMessage[]): ModelTurnInput => ({ model, turn, messages, tools: TOOL_NAMES });

describe('Anthropic SDK adapter', () => {
  test('a two-turn run: tools in the request, three tool_use blocks back, tool_result blocks sent, final text back', async () => {
    const file = transcriptFile('anthropic-batch.json');
    const expected = parseTranscript(file);
    server.enqueue('anthropic', ok(file.responses[0]), ok(file.responses[1]));
    const model = anthropicModel();

    const first = await model.turn(turnInput('anthropic', 0, [user]));
    expect(first).toEqual(expected.turns[0]);
    expect(first.toolCalls).toHaveLength(3);

    const [req0] = server.requestsFor('anthropic');
    expect(req0!.headers['x-api-key'] ?? req0!.headers.authorization).toMatch(new RegExp(`^(Bearer )?${API_KEY}$`));
    expect(req0!.headers['anthropic-version']).toEqual(expect.any(String));
    expect(req0!.headers['content-type']).toMatch(/application\/json/);
    expect(req0!.body).toEqual({
      model: 'claude-sonnet-4-6',
      max_tokens: 1024,
      system: 'You are a support agent.',
      messages: [{ role: 'user', content: [{ type: 'text', text: user.text }] }],
      tools: TOOL_NAMES.map((name) => ({ name, description: TOOLS[name]!.description, input_schema: TOOLS[name]!.inputSchema })),
    });

    const history: ConversationMessage[] = [
      user,
      { role: 'assistant', text: first.text, toolCalls: first.toolCalls },
      ...first.toolCalls.map((call, i): ConversationMessage => ({
        role: 'tool',
        callId: call.callId,
        toolName: call.toolName,
        content: i < 2 ? { ok: true, ticketId: `T-${i + 1}` } : 'send_email outcome unknown',
        isError: i === 2,
      })),
    ];
    const second = await model.turn(turnInput('anthropic', 1, history));
    expect(second).toEqual(expected.turns[1]);
    expect(second.stopReason).toBe('end_turn');

    const body1 = server.requestsFor('anthropic')[1]!.body as { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> };
    expect(body1.messages).toHaveLength(3);
    expect(body1.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: first.text }, ...first.toolCalls.map((c) => ({ type: 'tool_use', id: c.callId, name: c.toolName, input: c.input }))],
    });
    expect(body1.messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: first.toolCalls[0]!.callId, content: '{"ok":true,"ticketId":"T-1"}', is_error: false },
        { type: 'tool_result', tool_use_id: first.toolCalls[1]!.callId, content: '{"ok":true,"ticketId":"T-2"}', is_error: false },
        { type: 'tool_result', tool_use_id: first.toolCalls[2]!.callId, content: 'send_email outcome unknown', is_error: true },
      ],
    });
  });

  test('429 with retry-after is retried by the SDK after the asked delay (same body, retry count header)', async () => {
    const file = transcriptFile('anthropic-ticket.json');
    server.enqueue('anthropic', anthropicRateLimited(1), ok(file.responses[0]));
    const started = Date.now();
    const result = await anthropicModel().turn(turnInput('anthropic', 0, [user]));
    expect(result.toolCalls[0]!.toolName).toBe('create_ticket');
    const [a, b] = server.requestsFor('anthropic');
    expect(b!.receivedAt - a!.receivedAt).toBeGreaterThanOrEqual(950);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(b!.body).toEqual(a!.body);
    expect(b!.headers['x-stainless-retry-count']).toBe('1');
  });

  test('529 overloaded is retried by the SDK with backoff', async () => {
    const file = transcriptFile('anthropic-ticket.json');
    server.enqueue('anthropic', anthropicOverloaded(), ok(file.responses[1]));
    const result = await anthropicModel().turn(turnInput('anthropic', 1, [user]));
    expect(result.stopReason).toBe('end_turn');
    expect(server.requestsFor('anthropic')).toHaveLength(2);
  });

  test('when SDK retries are exhausted a 429 surfaces as a typed transient error carrying Retry-After', async () => {
    server.enqueue('anthropic', anthropicRateLimited(7));
    const err = (await anthropicModel({ maxRetries: 0 })
      .turn(turnInput('anthropic', 0, [user]))
      .catch((e: unknown) => e)) as CheckpointError;
    expect(isCheckpointError(err, 'MODEL_TRANSIENT')).toBe(true);
    expect(err.retryable).toBe(true);
    expect(err.details.retryAfterMs).toBe(7000);
    expect(err.details).toMatchObject({ provider: 'anthropic', status: 429, errorType: 'rate_limit_error', requestId: expect.stringMatching(/^req_/) });
    expect(server.requestsFor('anthropic')).toHaveLength(1);
  });

  test('a 529 after retries → MODEL_TRANSIENT; the activity turns it into a retryable failure', async () => {
    server.enqueue('anthropic', anthropicOverloaded());
    const { runModelTurn } = createModelActivities({ adapters: { anthropic: anthropicModel({ maxRetries: 0 }) } });
    const failure = (await runModelTurn(turnInput('anthropic', 0, [user])).catch((e: unknown) => e)) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe('MODEL_TRANSIENT');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.details?.[0]).toMatchObject({ status: 529, errorType: 'overloaded_error' });
  });

  test('400 invalid_request_error is not retried and is MODEL_REJECTED', async () => {
    server.enqueue('anthropic', anthropicError(400, 'invalid_request_error', 'messages.1.content.0: unexpected tool_use_id'));
    const err = (await anthropicModel()
      .turn(turnInput('anthropic', 0, [user]))
      .catch((e: unknown) => e)) as CheckpointError;
    expect(isCheckpointError(err, 'MODEL_REJECTED')).toBe(true);
    expect(err.message).toContain('unexpected tool_use_id');
    expect(server.requestsFor('anthropic')).toHaveLength(1);
  });

  test('a wrong API key gets the real 401 and MODEL_REJECTED', async () => {
    const err = await anthropicModel({ apiKey: 'wrong' })
      .turn(turnInput('anthropic', 0, [user]))
      .catch((e: unknown) => e);
    expect(isCheckpointError(err, 'MODEL_REJECTED')).toBe(true);
    expect((err as CheckpointError).details).toMatchObject({ status: 401, errorType: 'authentication_error' });
  });

  test('a 200 with a malformed body → MODEL_TRANSIENT (invalid-response): the next response may be fine', async () => {
    server.enqueue('anthropic', ok({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'x' }], stop_reason: 'tool_use' }));
    const err = await anthropicModel()
      .turn(turnInput('anthropic', 4, [user]))
      .catch((e: unknown) => e);
    expect(isCheckpointError(err, 'MODEL_TRANSIENT')).toBe(true);
    expect((err as CheckpointError).details).toMatchObject({ reason: 'invalid-response', provider: 'anthropic', turn: 4 });
    expect((err as Error).message).toContain('anthropic response to turn 4');
  });

  test('numbers are read as written: 1e20 and 1e21 (exact doubles) reach the tool; 9007199254740993, which JSON would read as ...992, refuses that call alone (inexact-number)', async () => {
    const body = `{"id":"msg_nums","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[
      {"type":"tool_use","id":"toolu_exact","name":"create_ticket","input":{"title":"t","body":"b","queue":"q","n":1e20,"m":1e21}},
      {"type":"tool_use","id":"toolu_rounded","name":"create_ticket","input":{"title":"t","body":"b","queue":"q","n":9007199254740993}}],
      "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`;
    server.enqueue('anthropic', { status: 200, body: null, rawBody: body });
    const result = await anthropicModel().turn(turnInput('anthropic', 0, [user]));
    expect(result.toolCalls.map((c) => [c.callId, c.input, c.inputError?.reason ?? null])).toEqual([
      ['toolu_exact', { title: 't', body: 'b', queue: 'q', n: 1e20, m: 1e21 }, null],
      ['toolu_rounded', {}, 'inexact-number'],
    ]);
    expect(result.toolCalls[1]!.inputError!.message).toContain('9007199254740993 at $.n would be read as 9007199254740992');
  });

  test('a repeated key in a tool_use.input refuses that call alone (duplicate-key): the approver and the tool never see a value JSON silently dropped', async () => {
    const body = `{"id":"msg_dup","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[
      {"type":"tool_use","id":"toolu_dup","name":"create_ticket","input":{"title":"t","body":"b","queue":"q","queue":"billing"}},
      {"type":"tool_use","id":"toolu_ok","name":"create_ticket","input":{"title":"t","body":"b","queue":"q"}}],
      "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`;
    server.enqueue('anthropic', { status: 200, body: null, rawBody: body });
    const result = await anthropicModel().turn(turnInput('anthropic', 0, [user]));
    expect(result.toolCalls.map((c) => [c.callId, c.inputError?.reason ?? null])).toEqual([
      ['toolu_dup', 'duplicate-key'],
      ['toolu_ok', null],
    ]);
  });

  test('a repeated member around a call (a second input or name) is an invalid response, retried (MODEL_TRANSIENT): JSON would keep the last', async () => {
    const block = (extra: string) => `{"id":"msg_env","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[
      {"type":"tool_use","id":"toolu_env","name":"create_ticket",${extra}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`;
    for (const extra of [
      '"input":{"title":"t","body":"b","queue":"q"},"input":{"title":"t","body":"b","queue":"billing"}',
      '"name":"send_email","input":{"title":"t","body":"b","queue":"q"}',
    ]) {
      server.enqueue('anthropic', { status: 200, body: null, rawBody: block(extra) });
      const err = await anthropicModel()
        .turn(turnInput('anthropic', 0, [user]))
        .catch((e: unknown) => e);
      expect(isCheckpointError(err, 'MODEL_TRANSIENT')).toBe(true);
      expect((err as CheckpointError).details).toMatchObject({ reason: 'invalid-response' });
      expect((err as Error).message).toMatch(/appears more than once in the object at \$\.content\[0\]/);
    }
  });

  test('a tool the adapter has no spec for fails before any request', async () => {
    const err = await anthropicModel()
      .turn({ ...turnInput('anthropic', 0, [user]), tools: ['drop_database'] })
      .catch((e: unknown) => e);
    expect(isCheckpointError(err, 'MISSING_TOOL_SPEC')).toBe(true);
    expect(server.requests).toHaveLength(0);
  });

  test('aborting the signal cancels the in-flight request and rejects with the reason', async () => {
    server.enqueue('anthropic', { ...ok(transcriptFile('anthropic-ticket.json').responses[1]), delayMs: 5_000 });
    const controller = new AbortController();
    const reason = new Error('activity cancelled');
    setTimeout(() => controller.abort(reason), 100);
    const started = Date.now();
    await expect(anthropicModel().turn(turnInput('anthropic', 0, [user]), controller.signal)).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('OpenAI SDK adapter', () => {
  test('a two-turn run: function tools in the request, two tool_calls back, role tool messages sent, final answer back', async () => {
    const file = transcriptFile('openai-triage.json');
    const expected = parseTranscript(file);
    server.enqueue('openai', ok(file.responses[0]), ok(file.responses[1]));
    const model = openAiModel();

    const first = await model.turn({ ...turnInput('openai', 0, [user]), system: 'Triage reports.' });
    expect(first).toEqual(expected.turns[0]);
    expect(first.toolCalls.map((c) => c.toolName)).toEqual(['create_ticket', 'send_email']);

    const [req0] = server.requestsFor('openai');
    expect(req0!.path).toBe('/v1/chat/completions');
    expect(req0!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(req0!.body).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Triage reports.' },
        { role: 'user', content: user.text },
      ],
      tools: TOOL_NAMES.map((name) => ({ type: 'function', function: { name, description: TOOLS[name]!.description, parameters: TOOLS[name]!.inputSchema } })),
    });

    const history: ConversationMessage[] = [
      user,
      { role: 'assistant', text: first.text, toolCalls: first.toolCalls },
      { role: 'tool', callId: first.toolCalls[0]!.callId, toolName: 'create_ticket', content: { ticketId: 'T-42' }, isError: false },
      { role: 'tool', callId: first.toolCalls[1]!.callId, toolName: 'send_email', content: { delivered: true }, isError: false },
    ];
    const second = await model.turn(turnInput('openai', 1, history));
    expect(second).toEqual(expected.turns[1]);

    const body1 = server.requestsFor('openai')[1]!.body as { messages: Array<Record<string, unknown>> };
    const rawCalls = (file.responses[0] as { choices: Array<{ message: { tool_calls: Array<{ id: string; function: { arguments: string } }> } }> }).choices[0]!.message.tool_calls;
    expect(body1.messages).toEqual([
      { role: 'user', content: user.text },
      {
        role: 'assistant',
        content: null,
        tool_calls: first.toolCalls.map((c, i) => ({ id: c.callId, type: 'function', function: { name: c.toolName, arguments: rawCalls[i]!.function.arguments } })),
      },
      { role: 'tool', tool_call_id: first.toolCalls[0]!.callId, content: '{"ticketId":"T-42"}' },
      { role: 'tool', tool_call_id: first.toolCalls[1]!.callId, content: '{"delivered":true}' },
    ]);
  });

  test('numbers are read as written also in arguments an OpenAI-compatible server sends as an object: 9007199254740993 refuses that call alone (inexact-number), 1e21 and the text arguments pass', async () => {
    const body = `{"id":"chatcmpl-nums","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
      {"id":"call_rounded","type":"function","function":{"name":"create_ticket","arguments":{"title":"t","body":"b","queue":"q","n":9007199254740993}}},
      {"id":"call_exact","type":"function","function":{"name":"create_ticket","arguments":{"title":"t","body":"b","queue":"q","n":1e21}}},
      {"id":"call_text","type":"function","function":{"name":"create_ticket","arguments":"{\\"title\\":\\"t\\",\\"body\\":\\"b\\",\\"queue\\":\\"q\\"}"}}]}}],
      "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`;
    server.enqueue('openai', { status: 200, body: null, rawBody: body });
    const result = await openAiModel().turn(turnInput('openai', 0, [user]));
    expect(result.toolCalls.map((c) => [c.callId, c.input, c.inputError?.reason ?? null])).toEqual([
      ['call_rounded', {}, 'inexact-number'],
      ['call_exact', { title: 't', body: 'b', queue: 'q', n: 1e21 }, null],
      ['call_text', { title: 't', body: 'b', queue: 'q' }, null],
    ]);
    expect(result.toolCalls[0]!.inputError!.message).toContain('9007199254740993 at $.n would be read as 9007199254740992');
  });

  test('a repeated key in arguments an OpenAI-compatible server sends as an object refuses that call alone (duplicate-key), at any depth', async () => {
    const body = `{"id":"chatcmpl-dup","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
      {"id":"call_top","type":"function","function":{"name":"create_ticket","arguments":{"title":"t","body":"b","queue":"q","amount":1,"amount":100000}}},
      {"id":"call_deep","type":"function","function":{"name":"create_ticket","arguments":{"title":"t","body":"b","queue":"q","meta":[{"a":1,"a":2}]}}},
      {"id":"call_ok","type":"function","function":{"name":"create_ticket","arguments":{"title":"t","body":"b","queue":"q"}}}]}}],
      "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`;
    server.enqueue('openai', { status: 200, body: null, rawBody: body });
    const result = await openAiModel().turn(turnInput('openai', 0, [user]));
    expect(result.toolCalls.map((c) => [c.callId, c.inputError?.reason ?? null])).toEqual([
      ['call_top', 'duplicate-key'],
      ['call_deep', 'duplicate-key'],
      ['call_ok', null],
    ]);
  });

  test('a repeated arguments or tool_calls member is an invalid response, retried (MODEL_TRANSIENT): JSON would keep the last', async () => {
    const bodies = [
      `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
        {"id":"call_a","type":"function","function":{"name":"create_ticket","arguments":"{\\"title\\":\\"t\\",\\"body\\":\\"b\\",\\"queue\\":\\"q\\"}","arguments":"{}"}}]}}]}`,
      `{"id":"c2","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
        "tool_calls":[{"id":"call_b","type":"function","function":{"name":"send_email","arguments":"{}"}}],
        "tool_calls":[{"id":"call_c","type":"function","function":{"name":"create_ticket","arguments":"{\\"title\\":\\"t\\",\\"body\\":\\"b\\",\\"queue\\":\\"q\\"}"}}]}}]}`,
    ];
    for (const body of bodies) {
      server.enqueue('openai', { status: 200, body: null, rawBody: body });
      const err = await openAiModel({ maxRetries: 0 })
        .turn(turnInput('openai', 0, [user]))
        .catch((e: unknown) => e);
      expect(isCheckpointError(err, 'MODEL_TRANSIENT')).toBe(true);
      expect((err as CheckpointError).details).toMatchObject({ reason: 'invalid-response' });
    }
  });

  test('429 with retry-after is retried by the SDK after the asked delay', async () => {
    const file = transcriptFile('openai-triage.json');
    server.enqueue('openai', openaiRateLimited(1), ok(file.responses[1]));
    const result = await openAiModel().turn(turnInput('openai', 1, [user]));
    expect(result.stopReason).toBe('end_turn');
    const [a, b] = server.requestsFor('openai');
    expect(b!.receivedAt - a!.receivedAt).toBeGreaterThanOrEqual(950);
    expect(b!.headers['x-stainless-retry-count']).toBe('1');
  });

  test('429 after retries → MODEL_TRANSIENT with Retry-After, mapped by the activity to nextRetryDelay', async () => {
    server.enqueue('openai', openaiRateLimited(4));
    const { runModelTurn } = createModelActivities({ adapters: { openai: openAiModel({ maxRetries: 0 }) } });
    const failure = (await runModelTurn(turnInput('openai', 0, [user])).catch((e: unknown) => e)) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe('MODEL_TRANSIENT');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.nextRetryDelay).toBe(4000);
    expect(failure.details?.[0]).toMatchObject({ provider: 'openai', status: 429, errorType: 'rate_limit_exceeded', requestId: expect.stringMatching(/^req_/) });
  });

  test('a 500 is retried; a 400 is not', async () => {
    server.enqueue(
      'openai',
      openaiError(500, 'server_error', 'The server had an error while processing your request.', null),
      ok(transcriptFile('openai-triage.json').responses[1]),
    );
    expect((await openAiModel().turn(turnInput('openai', 1, [user]))).stopReason).toBe('end_turn');
    server.enqueue(
      'openai',
      openaiError(400, 'invalid_request_error', "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", null),
    );
    const err = await openAiModel()
      .turn(turnInput('openai', 1, [user]))
      .catch((e: unknown) => e);
    expect(isCheckpointError(err, 'MODEL_REJECTED')).toBe(true);
    expect(server.requestsFor('openai')).toHaveLength(3);
  });

  test('arguments that are not JSON in a live response → that call fails with INVALID_TOOL_INPUT naming the call id, the turn stands', async () => {
    const bad = {
      id: 'chatcmpl-bad',
      object: 'chat.completion',
      created: 1767261600,
      model: 'gpt-4o',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            refusal: null,
            tool_calls: [{ id: 'call_Zr8TqW2mXn4Lp7Vb1KcJ9sHd', type: 'function', function: { name: 'close_ticket', arguments: '{"ticketId": "T-1"' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
    };
    server.enqueue('openai', ok(bad));
    const result = await openAiModel().turn(turnInput('openai', 2, [user]));
    expect(result.stopReason).toBe('tool_use');
    expect(result.toolCalls).toEqual([
      { callId: 'call_Zr8TqW2mXn4Lp7Vb1KcJ9sHd', toolName: 'close_ticket', input: {}, inputError: expect.objectContaining({ type: 'INVALID_TOOL_INPUT', reason: 'not-json' }) },
    ]);
    expect(result.toolCalls[0]!.inputError!.message).toContain('call_Zr8TqW2mXn4Lp7Vb1KcJ9sHd');
  });
});
