/**
 * Model responses as they really arrive, through the real `openai` and
 * `@anthropic-ai/sdk` clients against the loopback server: per-call failures, stop reasons,
 * made-up tool names and reused call ids. Where a quirk affects the NEXT request, the body the
 * loopback received is checked against the providers' rules (names `^[a-zA-Z0-9_-]{1,64}$`,
 * Anthropic ids `^[a-zA-Z0-9_-]+$`, OpenAI ids ≤ 40 characters, ids unique, every result paired
 * with a call of the message just before).
 */
import { ApplicationFailure } from '@temporalio/common';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { isCheckpointError, type CheckpointError } from '../../src/checkpoint/errors';
import { AnthropicModel } from '../../src/model/anthropic-model';
import { OpenAiModel } from '../../src/model/openai-model';
import { ScriptedModel } from '../../src/model/scripted-model';
import type { ToolSpecs } from '../../src/model/tool-specs';
import { parseTranscript } from '../../src/model/transcript';
import type { JsonValue } from '../../src/checkpoint/types';
import type { ConversationMessage, ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { LoopbackLlm, ok } from '../helpers/loopback-llm';
import { completion, message, toolUse } from '../helpers/provider-wire';

const API_KEY = 'sk-loopback-quirks';
const obj = (properties: Record<string, unknown> = {}, required: string[] = []) => ({
  type: 'object' as const,
  properties: properties as never,
  required,
  additionalProperties: false,
});
const TOOLS: ToolSpecs = {
  list_tickets: { description: 'List open tickets (no parameters).', inputSchema: obj() },
  close_ticket: { description: 'Close a ticket.', inputSchema: obj({ ticketId: { type: 'string' } }, ['ticketId']) },
  list_dir: { description: 'List a directory.', inputSchema: obj({ path: { type: 'string' } }, ['path']) },
  'files.read': { description: 'A user tool whose name the APIs refuse as is.', inputSchema: obj({ path: { type: 'string' } }, ['path']) },
};
const TOOL_NAMES = ['list_tickets', 'close_ticket', 'list_dir'];
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;
const OPENAI_ID = /^[a-zA-Z0-9_-]{1,40}$/;

let server: LoopbackLlm;
beforeEach(async () => {
  server = await LoopbackLlm.start({ apiKey: API_KEY });
});
afterEach(async () => {
  await server.close();
});

const openAiModel = (extra: Partial<ConstructorParameters<typeof OpenAiModel>[0]> = {}) =>
  new OpenAiModel({ model: 'gpt-4o', tools: TOOLS, apiKey: API_KEY, baseURL: server.openaiBaseURL, maxRetries: 0, ...extra });
const anthropicModel = (extra: Partial<ConstructorParameters<typeof AnthropicModel>[0]> = {}) =>
  new AnthropicModel({ model: 'claude-sonnet-4-6', tools: TOOLS, apiKey: API_KEY, baseURL: server.anthropicBaseURL, maxRetries: 0, ...extra });
const turnInput = (model: string, turn: number, messages: readonly ConversationMessage[], tools = TOOL_NAMES): ModelTurnInput => ({ model, turn, messages, tools });
const user: ConversationMessage = { role: 'user', text: 'Tidy up the tickets.' };

// ---------------------------------------------------------------------------------------------
// Wire bodies as the providers send them

/** The conversation as the agent workflow keeps it after a turn: the assistant message and one result per call. */
function after(
  history: readonly ConversationMessage[],
  result: ModelTurnResult,
  content: (toolName: string) => { content: string | Record<string, string>; isError: boolean },
): ConversationMessage[] {
  return [
    ...history,
    { role: 'assistant', text: result.text, toolCalls: result.toolCalls },
    ...result.toolCalls.map((c): ConversationMessage => ({ role: 'tool', callId: c.callId, toolName: c.toolName, ...content(c.toolName) })),
  ];
}
const unknownOrOk = (name: string) =>
  TOOLS[name] === undefined ? { content: { type: 'UNKNOWN_TOOL', message: `UNKNOWN_TOOL: no tool ${name}` }, isError: true } : { content: 'ok', isError: false };

// ---------------------------------------------------------------------------------------------
// What a strict provider checks in a request

type Body = { tools?: Array<Record<string, unknown>>; messages: Array<Record<string, unknown>> };

/** OpenAI: valid names, ids ≤ 40 of the safe set, unique; each tool message answers a call of the assistant message before it. */
function expectOpenAiAccepts(body: unknown): { ids: string[]; names: string[] } {
  const { tools = [], messages } = body as Body;
  for (const t of tools) expect((t['function'] as { name: string }).name).toMatch(NAME);
  const ids: string[] = [];
  const names: string[] = [];
  let open = new Set<string>();
  for (const m of messages) {
    if (m['role'] === 'assistant') {
      open = new Set();
      for (const c of (m['tool_calls'] as Array<{ id: string; function: { name: string } }> | undefined) ?? []) {
        expect(c.id).toMatch(OPENAI_ID);
        expect(c.function.name).toMatch(NAME);
        ids.push(c.id);
        names.push(c.function.name);
        open.add(c.id);
      }
    } else if (m['role'] === 'tool') {
      expect(open.has(m['tool_call_id'] as string)).toBe(true);
      open.delete(m['tool_call_id'] as string);
    } else {
      open = new Set();
    }
  }
  expect(new Set(ids).size).toBe(ids.length);
  return { ids, names };
}

/** Anthropic: valid names and ids, unique; each tool_result answers a tool_use of the assistant message just before. */
function expectAnthropicAccepts(body: unknown): { ids: string[]; names: string[] } {
  const { tools = [], messages } = body as Body;
  for (const t of tools) expect(t['name']).toMatch(NAME);
  const ids: string[] = [];
  const names: string[] = [];
  let previous = new Set<string>();
  for (const m of messages) {
    const blocks = m['content'] as Array<Record<string, unknown>>;
    if (m['role'] === 'assistant') {
      previous = new Set();
      for (const b of blocks.filter((x) => x['type'] === 'tool_use')) {
        expect(b['id']).toMatch(ANTHROPIC_ID);
        expect(b['name']).toMatch(NAME);
        ids.push(b['id'] as string);
        names.push(b['name'] as string);
        previous.add(b['id'] as string);
      }
    } else {
      const answered = blocks.filter((x) => x['type'] === 'tool_result').map((x) => x['tool_use_id'] as string);
      expect(new Set(answered)).toEqual(previous);
      previous = new Set();
    }
  }
  expect(new Set(ids).size).toBe(ids.length);
  return { ids, names };
}

const lastBody = (api: 'openai' | 'anthropic'): unknown => server.requestsFor(api).at(-1)!.body;

// ---------------------------------------------------------------------------------------------

describe('OpenAI Chat Completions quirks', () => {
  test.each([[''], ['  \n']])('arguments %j for a tool without parameters is the input {} (and is sent back as "{}")', async (args) => {
    server.enqueue(
      'openai',
      ok(completion({ calls: [{ id: 'call_NoArgs01', name: 'list_tickets', arguments: args }] }, 'tool_calls')),
      ok(completion({ content: 'Done.' }, 'stop')),
    );
    const model = openAiModel();
    const first = await model.turn(turnInput('openai', 0, [user]));
    expect(first).toEqual({ stopReason: 'tool_use', text: '', toolCalls: [{ callId: 'call_NoArgs01', toolName: 'list_tickets', input: {} }] });
    await model.turn(turnInput('openai', 1, after([user], first, unknownOrOk)));
    expect((lastBody('openai') as Body).messages[1]).toMatchObject({ tool_calls: [{ id: 'call_NoArgs01', function: { name: 'list_tickets', arguments: '{}' } }] });
  });

  test('arguments that are not JSON in one of two calls fail only that call; the other runs', async () => {
    server.enqueue(
      'openai',
      ok(
        completion(
          {
            calls: [
              { id: 'call_Good0001', name: 'close_ticket', arguments: '{"ticketId":"T-1"}' },
              { id: 'call_Bad00002', name: 'close_ticket', arguments: '{"ticketId": T-2}' },
            ],
          },
          'tool_calls',
        ),
      ),
    );
    const result = await openAiModel().turn(turnInput('openai', 0, [user]));
    expect(result.stopReason).toBe('tool_use');
    expect(result.toolCalls[0]).toEqual({ callId: 'call_Good0001', toolName: 'close_ticket', input: { ticketId: 'T-1' } });
    expect(result.toolCalls[1]).toMatchObject({ callId: 'call_Bad00002', input: {}, inputError: { type: 'INVALID_TOOL_INPUT', reason: 'not-json' } });
  });

  test('a JSON string where the object belongs (double-encoded arguments) fails only that call as not-object', async () => {
    server.enqueue(
      'openai',
      ok(
        completion(
          {
            calls: [
              { id: 'call_Str00001', name: 'close_ticket', arguments: JSON.stringify(JSON.stringify({ ticketId: 'T-1' })) },
              { id: 'call_Arr00002', name: 'close_ticket', arguments: '["T-2"]' },
              { id: 'call_Ok000003', name: 'list_tickets', arguments: '{}' },
            ],
          },
          'tool_calls',
        ),
      ),
    );
    const result = await openAiModel().turn(turnInput('openai', 0, [user]));
    expect(result.toolCalls.map((c) => c.inputError?.reason ?? null)).toEqual(['not-object', 'not-object', null]);
  });

  test('multi_tool_use.parallel passes through whole (for UNKNOWN_TOOL); the next request sends a valid name, paired with its result', async () => {
    const inner = {
      tool_uses: [
        { recipient_name: 'functions.close_ticket', parameters: { ticketId: 'T-1' } },
        { recipient_name: 'functions.close_ticket', parameters: { ticketId: 'T-2' } },
      ],
    };
    server.enqueue(
      'openai',
      ok(completion({ calls: [{ id: 'call_Par00001', name: 'multi_tool_use.parallel', arguments: JSON.stringify(inner) }] }, 'tool_calls')),
      ok(completion({ content: 'Sorry.' }, 'stop')),
    );
    const model = openAiModel();
    const first = await model.turn(turnInput('openai', 0, [user]));
    expect(first.toolCalls).toEqual([{ callId: 'call_Par00001', toolName: 'multi_tool_use.parallel', input: inner }]);
    await model.turn(turnInput('openai', 1, after([user], first, unknownOrOk)));
    const { names, ids } = expectOpenAiAccepts(lastBody('openai'));
    expect(names).toEqual([expect.stringMatching(/^multi_tool_use_parallel_[0-9a-f]{10}$/)]);
    expect(ids).toEqual(['call_Par00001']);
    // The inner calls were not unpacked: the arguments go back as they came.
    expect((lastBody('openai') as Body).messages[1]).toMatchObject({ tool_calls: [{ function: { arguments: JSON.stringify(inner) } }] });
  });

  test('list_dir:0 reused every turn: the third request has unique valid ids, each tool message paired', async () => {
    const reply = (path: string) => ok(completion({ calls: [{ id: 'list_dir:0', name: 'list_dir', arguments: JSON.stringify({ path }) }] }, 'tool_calls'));
    server.enqueue('openai', reply('/'), reply('/tmp'), ok(completion({ content: 'Listed.' }, 'stop')));
    const model = openAiModel();
    let history: ConversationMessage[] = [user];
    for (let turn = 0; turn < 2; turn++) {
      const result = await model.turn(turnInput('openai', turn, history));
      expect(result.toolCalls[0]!.callId).toBe('list_dir:0');
      history = after(history, result, unknownOrOk);
    }
    expect((await model.turn(turnInput('openai', 2, history))).stopReason).toBe('end_turn');
    const { ids } = expectOpenAiAccepts(lastBody('openai'));
    expect(ids).toHaveLength(2);
  });

  test('a user tool whose name the API refuses is offered under a valid name and its calls come back under the real name', async () => {
    server.enqueue('openai', ok(completion({ calls: [] }, 'stop')));
    await openAiModel().turn(turnInput('openai', 0, [user], ['files.read']));
    const offered = ((lastBody('openai') as Body).tools![0]!['function'] as { name: string }).name;
    expect(offered).toMatch(NAME);
    server.enqueue('openai', ok(completion({ calls: [{ id: 'call_Read0001', name: offered, arguments: '{"path":"/a"}' }] }, 'tool_calls')));
    const result = await openAiModel().turn(turnInput('openai', 1, [user], ['files.read']));
    expect(result.toolCalls).toEqual([{ callId: 'call_Read0001', toolName: 'files.read', input: { path: '/a' } }]);
  });

  test('finish_reason length → max_tokens: the cut-off calls are dropped and counted', async () => {
    server.enqueue(
      'openai',
      ok(
        completion(
          {
            content: 'Closing',
            calls: [
              { id: 'call_Cut00001', name: 'close_ticket', arguments: '{"ticketId":"T-1"}' },
              { id: 'call_Cut00002', name: 'close_ticket', arguments: '{"tick' },
            ],
          },
          'length',
        ),
      ),
    );
    expect(await openAiModel().turn(turnInput('openai', 0, [user]))).toEqual({ stopReason: 'max_tokens', text: 'Closing', toolCalls: [], droppedToolCalls: 2 });
  });

  test('content_filter and a refusal message → refusal; no call of the response runs', async () => {
    server.enqueue(
      'openai',
      ok(completion({ calls: [{ id: 'call_Flt00001', name: 'close_ticket', arguments: '{"ticketId":"T-1"}' }] }, 'content_filter')),
      ok(completion({ refusal: "I'm sorry, I can't help with that." }, 'stop')),
    );
    const model = openAiModel();
    expect(await model.turn(turnInput('openai', 0, [user]))).toEqual({ stopReason: 'refusal', text: '', toolCalls: [], droppedToolCalls: 1 });
    expect(await model.turn(turnInput('openai', 1, [user]))).toEqual({ stopReason: 'refusal', text: "I'm sorry, I can't help with that.", toolCalls: [] });
  });

  test('a malformed live response (duplicate call ids, unknown finish_reason) is retryable MODEL_TRANSIENT; the activity keeps it retryable', async () => {
    server.enqueue(
      'openai',
      ok(
        completion(
          {
            calls: [
              { id: 'call_Dup', name: 'list_tickets', arguments: '{}' },
              { id: 'call_Dup', name: 'list_tickets', arguments: '{}' },
            ],
          },
          'tool_calls',
        ),
      ),
    );
    const err = (await openAiModel()
      .turn(turnInput('openai', 3, [user]))
      .catch((e: unknown) => e)) as CheckpointError;
    expect(isCheckpointError(err, 'MODEL_TRANSIENT')).toBe(true);
    expect(err.details).toMatchObject({ reason: 'invalid-response', provider: 'openai', turn: 3, callId: 'call_Dup' });

    server.enqueue('openai', ok(completion({ content: 'x' }, 'weird')));
    const { runModelTurn } = createModelActivities({ adapters: { openai: openAiModel() } });
    const failure = (await runModelTurn(turnInput('openai', 0, [user])).catch((e: unknown) => e)) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe('MODEL_TRANSIENT');
    expect(failure.nonRetryable).toBe(false);
  });
});

describe('Anthropic Messages quirks', () => {
  test('a string where the input object belongs fails only that call; the other runs', async () => {
    server.enqueue(
      'anthropic',
      ok(message([toolUse('toolu_01Good', 'close_ticket', { ticketId: 'T-1' }), toolUse('toolu_01Str', 'close_ticket', '{"ticketId":"T-2"}')], 'tool_use')),
    );
    const result = await anthropicModel().turn(turnInput('anthropic', 0, [user]));
    expect(result.stopReason).toBe('tool_use');
    expect(result.toolCalls[0]).toEqual({ callId: 'toolu_01Good', toolName: 'close_ticket', input: { ticketId: 'T-1' } });
    expect(result.toolCalls[1]).toMatchObject({ callId: 'toolu_01Str', input: {}, inputError: { type: 'INVALID_TOOL_INPUT', reason: 'not-object' } });
  });

  test('a made-up dotted name with a colon id (an OpenAI-compatible model behind the API) is sent back valid and paired', async () => {
    server.enqueue(
      'anthropic',
      ok(message([toolUse('list_dir:0', 'multi_tool_use.parallel', { tool_uses: [] })], 'tool_use')),
      ok(message([{ type: 'text', text: 'ok' }], 'end_turn')),
    );
    const model = anthropicModel();
    const first = await model.turn(turnInput('anthropic', 0, [user]));
    expect(first.toolCalls).toEqual([{ callId: 'list_dir:0', toolName: 'multi_tool_use.parallel', input: { tool_uses: [] } }]);
    await model.turn(turnInput('anthropic', 1, after([user], first, unknownOrOk)));
    const { names, ids } = expectAnthropicAccepts(lastBody('anthropic'));
    expect(names).toEqual([expect.stringMatching(/^multi_tool_use_parallel_[0-9a-f]{10}$/)]);
    expect(ids).toEqual([expect.stringMatching(/^list_dir_0_[0-9a-f]{10}$/)]);
  });

  test('list_dir:0 reused every turn: the third request has unique valid ids, each tool_result paired with the turn before', async () => {
    const reply = (path: string) => ok(message([{ type: 'text', text: 'Looking.' }, toolUse('list_dir:0', 'list_dir', { path })], 'tool_use'));
    server.enqueue('anthropic', reply('/'), reply('/tmp'), ok(message([{ type: 'text', text: 'Listed.' }], 'end_turn')));
    const model = anthropicModel();
    let history: ConversationMessage[] = [user];
    for (let turn = 0; turn < 2; turn++) {
      const result = await model.turn(turnInput('anthropic', turn, history));
      expect(result.toolCalls[0]!.callId).toBe('list_dir:0');
      history = after(history, result, unknownOrOk);
    }
    await model.turn(turnInput('anthropic', 2, history));
    const { ids } = expectAnthropicAccepts(lastBody('anthropic'));
    expect(ids).toHaveLength(2);
  });

  test('a user tool whose name the API refuses is offered under a valid name and its calls come back under the real name', async () => {
    server.enqueue('anthropic', ok(message([{ type: 'text', text: 'hi' }], 'end_turn')));
    await anthropicModel().turn(turnInput('anthropic', 0, [user], ['files.read']));
    const offered = (lastBody('anthropic') as Body).tools![0]!['name'] as string;
    expect(offered).toMatch(NAME);
    server.enqueue('anthropic', ok(message([toolUse('toolu_01Read', offered, { path: '/a' })], 'tool_use')));
    const result = await anthropicModel().turn(turnInput('anthropic', 1, [user], ['files.read']));
    expect(result.toolCalls).toEqual([{ callId: 'toolu_01Read', toolName: 'files.read', input: { path: '/a' } }]);
    // Sent back in history under the same valid name.
    server.enqueue('anthropic', ok(message([{ type: 'text', text: 'done' }], 'end_turn')));
    await anthropicModel().turn(turnInput('anthropic', 2, after([user], result, unknownOrOk), ['files.read']));
    expect(expectAnthropicAccepts(lastBody('anthropic')).names).toEqual([offered]);
  });

  test.each(['max_tokens', 'model_context_window_exceeded'])('stop_reason %s → max_tokens: tool_use blocks dropped and counted', async (stop) => {
    server.enqueue('anthropic', ok(message([{ type: 'text', text: 'Closing' }, toolUse('toolu_01Cut', 'close_ticket', { ticketId: 'T' })], stop)));
    expect(await anthropicModel().turn(turnInput('anthropic', 0, [user]))).toEqual({ stopReason: 'max_tokens', text: 'Closing', toolCalls: [], droppedToolCalls: 1 });
  });

  test('stop_reason refusal → refusal: no tool_use of the response runs', async () => {
    server.enqueue('anthropic', ok(message([{ type: 'text', text: 'I will' }, toolUse('toolu_01Ref', 'close_ticket', { ticketId: 'T' })], 'refusal')));
    expect(await anthropicModel().turn(turnInput('anthropic', 0, [user]))).toEqual({ stopReason: 'refusal', text: 'I will', toolCalls: [], droppedToolCalls: 1 });
  });

  test('stop_reason pause_turn → pause_turn with its text (server tool blocks ignored); sending it back continues the turn', async () => {
    server.enqueue(
      'anthropic',
      ok(
        message(
          [
            { type: 'text', text: 'Let me search.' },
            { type: 'server_tool_use', id: 'srvtoolu_01A', name: 'web_search', input: { query: 'ticket policy' } },
            { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01A', content: [] },
          ],
          'pause_turn',
        ),
      ),
      ok(message([{ type: 'text', text: ' Found it.' }], 'end_turn')),
    );
    const model = anthropicModel();
    const paused = await model.turn(turnInput('anthropic', 0, [user]));
    expect(paused).toEqual({ stopReason: 'pause_turn', text: 'Let me search.', toolCalls: [] });
    const next = await model.turn(turnInput('anthropic', 1, [user, { role: 'assistant', text: paused.text, toolCalls: [] }]));
    expect(next.stopReason).toBe('end_turn');
    expect((lastBody('anthropic') as Body).messages.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'Let me search.' }] });
  });

  test('a malformed live response is retryable MODEL_TRANSIENT; the same response recorded in a transcript is non-retryable INVALID_TRANSCRIPT', async () => {
    const bad = message([toolUse('toolu_01Dup', 'list_tickets', {}), toolUse('toolu_01Dup', 'list_tickets', {})], 'tool_use');
    server.enqueue('anthropic', ok(bad));
    const live = createModelActivities({ adapters: { anthropic: anthropicModel() } });
    const failure = (await live.runModelTurn(turnInput('anthropic', 0, [user])).catch((e: unknown) => e)) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe('MODEL_TRANSIENT');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.details?.[0]).toMatchObject({ reason: 'invalid-response', provider: 'anthropic' });

    const transcript = { version: 1, id: 'bad-recording', format: 'anthropic-messages', responses: [bad] };
    expect(() => parseTranscript(transcript)).toThrow(/INVALID_TRANSCRIPT/);
    const scripted = createModelActivities({ adapters: { scripted: new ScriptedModel({ transcripts: [] }) } });
    const recorded = (await scripted
      .runModelTurn({ ...turnInput('scripted', 0, [user]), modelOptions: { transcript } as unknown as JsonValue })
      .catch((e: unknown) => e)) as ApplicationFailure;
    expect(recorded).toBeInstanceOf(ApplicationFailure);
    expect(recorded.type).toBe('INVALID_TRANSCRIPT');
    expect(recorded.nonRetryable).toBe(true);
  });
});
