import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import {
  anthropicMessageToTurnResult,
  loadTranscriptFile,
  openAiCompletionToTurnResult,
  parseTranscript,
  parseTranscriptJson,
  INVALID_RESPONSE_REASON,
  type ResponseContext,
} from '../../../src/model/transcript';

const EXAMPLES = join(__dirname, '../../../examples/transcripts');
const ctx: ResponseContext = { where: 'test response', live: false, details: { transcript: 't', turn: 0 } };

/** Runs `fn` and returns what it threw (fails the test when it does not throw). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

function anthropic(content: unknown[], stop_reason: string | null): Record<string, unknown> {
  return { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content, stop_reason, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
}

function openai(message: Record<string, unknown>, finish_reason: string): Record<string, unknown> {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o',
    choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, logprobs: null, finish_reason }],
  };
}

const fnCall = (id: string, name: string, args: string) => ({ id, type: 'function', function: { name, arguments: args } });

describe('example transcripts', () => {
  test('anthropic-ticket: one create_ticket, then final text', async () => {
    const t = await loadTranscriptFile(join(EXAMPLES, 'anthropic-ticket.json'));
    expect(t.id).toBe('anthropic-ticket');
    expect(t.format).toBe('anthropic-messages');
    expect(t.turns).toHaveLength(2);
    const [first, last] = t.turns;
    expect(first!.stopReason).toBe('tool_use');
    expect(first!.text).toMatch(/billing ticket/);
    expect(first!.toolCalls).toHaveLength(1);
    expect(first!.toolCalls[0]).toMatchObject({ toolName: 'create_ticket', callId: expect.stringMatching(/^toolu_01[A-Za-z0-9]{20,}$/) });
    expect(Object.keys(first!.toolCalls[0]!.input as object).sort()).toEqual(['body', 'queue', 'title']);
    expect(last).toEqual({ stopReason: 'end_turn', text: expect.stringMatching(/order 48213/), toolCalls: [] });
  });

  test('openai-triage: create_ticket + send_email in one turn with JSON-string arguments, then an answer', async () => {
    const t = await loadTranscriptFile(join(EXAMPLES, 'openai-triage.json'));
    expect(t.format).toBe('openai-chat-completions');
    const [first, last] = t.turns;
    expect(first!.stopReason).toBe('tool_use');
    expect(first!.text).toBe('');
    expect(first!.toolCalls.map((c) => c.toolName)).toEqual(['create_ticket', 'send_email']);
    for (const call of first!.toolCalls) expect(call.callId).toMatch(/^call_[A-Za-z0-9]{20,}$/);
    expect(first!.toolCalls[0]!.input).toEqual({
      title: 'Checkout API returns 502 in eu-west',
      body: expect.stringContaining('HTTP 502'),
      queue: 'infra',
    });
    expect(first!.toolCalls[1]!.input).toMatchObject({ to: 'ops@acme.example', subject: expect.any(String), body: expect.stringContaining('\n') });
    expect(last!.stopReason).toBe('end_turn');
    expect(last!.toolCalls).toEqual([]);
  });

  test('anthropic-batch: three tool_use blocks in one turn, in order', async () => {
    const t = await loadTranscriptFile(join(EXAMPLES, 'anthropic-batch.json'));
    const [first, last] = t.turns;
    expect(first!.stopReason).toBe('tool_use');
    expect(first!.toolCalls.map((c) => c.toolName)).toEqual(['create_ticket', 'create_ticket', 'send_email']);
    const titles = first!.toolCalls.slice(0, 2).map((c) => (c.input as { title: string }).title);
    expect(new Set(titles).size).toBe(2);
    expect(new Set(first!.toolCalls.map((c) => c.callId)).size).toBe(3);
    expect(last!.stopReason).toBe('end_turn');
  });

  test('results are frozen', async () => {
    const t = await loadTranscriptFile(join(EXAMPLES, 'anthropic-batch.json'));
    expect(Object.isFrozen(t.turns)).toBe(true);
    expect(Object.isFrozen(t.turns[0])).toBe(true);
    expect(Object.isFrozen(t.turns[0]!.toolCalls)).toBe(true);
  });
});

describe('Anthropic responses', () => {
  test('several tool_use blocks, text concatenated, thinking ignored', () => {
    const r = anthropicMessageToTurnResult(
      anthropic(
        [
          { type: 'thinking', thinking: 'hmm', signature: 'sig' },
          { type: 'text', text: 'A' },
          { type: 'text', text: 'B' },
          { type: 'tool_use', id: 'toolu_01a', name: 'close_ticket', input: { ticketId: 'T-1' } },
          { type: 'tool_use', id: 'toolu_01b', name: 'close_ticket', input: { ticketId: 'T-2' } },
        ],
        'tool_use',
      ),
      ctx,
    );
    expect(r).toEqual({
      stopReason: 'tool_use',
      text: 'AB',
      toolCalls: [
        { callId: 'toolu_01a', toolName: 'close_ticket', input: { ticketId: 'T-1' } },
        { callId: 'toolu_01b', toolName: 'close_ticket', input: { ticketId: 'T-2' } },
      ],
    });
  });

  test.each([
    ['end_turn', 'end_turn'],
    ['stop_sequence', 'end_turn'],
    ['refusal', 'refusal'],
    ['pause_turn', 'pause_turn'],
    ['max_tokens', 'max_tokens'],
    ['model_context_window_exceeded', 'max_tokens'],
  ])('stop_reason %s → %s', (wire, mapped) => {
    expect(anthropicMessageToTurnResult(anthropic([{ type: 'text', text: 'x' }], wire), ctx).stopReason).toBe(mapped);
  });

  test.each([
    ['max_tokens', 'max_tokens'],
    ['model_context_window_exceeded', 'max_tokens'],
    ['refusal', 'refusal'],
    ['pause_turn', 'pause_turn'],
  ])('%s drops every tool_use (none runs) and counts them in droppedToolCalls; text kept', (wire, mapped) => {
    const blocks = [
      { type: 'text', text: 'partial' },
      { type: 'tool_use', id: 'toolu_01a', name: 'send_email', input: {} },
      { type: 'tool_use', id: 'toolu_01b', name: 'send_email', input: 'not even an object' },
    ];
    expect(anthropicMessageToTurnResult(anthropic(blocks, wire), ctx)).toEqual({ stopReason: mapped, text: 'partial', toolCalls: [], droppedToolCalls: 2 });
    expect(anthropicMessageToTurnResult(anthropic([{ type: 'text', text: 'x' }], wire), ctx)).toEqual({ stopReason: mapped, text: 'x', toolCalls: [] });
  });

  test('server tool blocks and unknown block types are ignored (a pause_turn with web search)', () => {
    const blocks = [
      { type: 'text', text: 'Searching.' },
      { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'x' } },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [] },
    ];
    expect(anthropicMessageToTurnResult(anthropic(blocks, 'pause_turn'), ctx)).toEqual({ stopReason: 'pause_turn', text: 'Searching.', toolCalls: [] });
  });

  test.each<[string, unknown, RegExp]>([
    ['tool_use without a tool_use block', anthropic([{ type: 'text', text: 'x' }], 'tool_use'), /no tool_use block/],
    ['end_turn with a tool_use block', anthropic([{ type: 'tool_use', id: 'toolu_01a', name: 'x', input: {} }], 'end_turn'), /1 tool_use blocks/],
    ['an unknown stop_reason', anthropic([], 'compaction'), /\$\.stop_reason/],
    ['null stop_reason', anthropic([], null), /unsupported stop_reason null/],
    ['a text block without text', anthropic([{ type: 'text' }], 'end_turn'), /\$\.content\[0\]\.text/],
    ['a block without type', anthropic([{ text: 'x' }], 'end_turn'), /\$\.content\[0\]\.type/],
    ['a tool_use without id', anthropic([{ type: 'tool_use', name: 'x', input: {} }], 'tool_use'), /\$\.content\[0\]\.id/],
    ['a wrong role', { ...anthropic([], 'end_turn'), role: 'user' }, /\$\.role/],
    ['the OpenAI format', openai({ content: 'hi' }, 'stop'), /not an Anthropic Messages response/],
    [
      'a duplicate call id',
      anthropic(
        [
          { type: 'tool_use', id: 'toolu_01a', name: 'x', input: {} },
          { type: 'tool_use', id: 'toolu_01a', name: 'y', input: {} },
        ],
        'tool_use',
      ),
      /toolu_01a appears twice/,
    ],
  ])('rejects %s with INVALID_TRANSCRIPT', (_name, raw, message) => {
    const err = thrown(() => anthropicMessageToTurnResult(raw, ctx));
    expect(isCheckpointError(err, 'INVALID_TRANSCRIPT')).toBe(true);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).toMatch(/^INVALID_TRANSCRIPT: test response: /);
  });

  test('a malformed live response is MODEL_TRANSIENT (retryable) with details.reason invalid-response; the same in a transcript is INVALID_TRANSCRIPT (not retryable)', () => {
    const dup = anthropic(
      [
        { type: 'tool_use', id: 'toolu_01a', name: 'x', input: {} },
        { type: 'tool_use', id: 'toolu_01a', name: 'y', input: {} },
      ],
      'tool_use',
    );
    for (const raw of [{ type: 'message' }, dup]) {
      const err = thrown(() => anthropicMessageToTurnResult(raw, { where: 'live', live: true, details: { provider: 'anthropic', turn: 3 } }));
      expect(isCheckpointError(err, 'MODEL_TRANSIENT')).toBe(true);
      expect(err).toMatchObject({ retryable: true, details: { reason: INVALID_RESPONSE_REASON, provider: 'anthropic', turn: 3 } });
      const recorded = thrown(() => anthropicMessageToTurnResult(raw, ctx));
      expect(isCheckpointError(recorded, 'INVALID_TRANSCRIPT')).toBe(true);
      expect(recorded).toMatchObject({ retryable: false });
    }
  });

  test.each([
    ['a string', 'x'],
    ['an array', [1]],
    ['null', null],
    ['missing', undefined],
  ])('tool input that is %s → that call fails with INVALID_TOOL_INPUT naming it (not-object), the turn stands', (_n, input) => {
    const r = anthropicMessageToTurnResult(anthropic([{ type: 'tool_use', id: 'toolu_01z', name: 'create_ticket', input }], 'tool_use'), ctx);
    expect(r.stopReason).toBe('tool_use');
    expect(r.toolCalls).toEqual([
      {
        callId: 'toolu_01z',
        toolName: 'create_ticket',
        input: {},
        inputError: {
          type: 'INVALID_TOOL_INPUT',
          reason: 'not-object',
          message: expect.stringMatching(/^INVALID_TOOL_INPUT: tool call toolu_01z \(create_ticket\) input refused \(not-object\)/),
        },
      },
    ]);
  });
});

describe('OpenAI responses', () => {
  test('JSON-string arguments are parsed; several calls in one turn', () => {
    const r = openAiCompletionToTurnResult(
      openai({ tool_calls: [fnCall('call_a', 'close_ticket', '{"ticketId":"T-9"}'), fnCall('call_b', 'send_email', '{"to":"a@b.c","subject":"s","body":"b"}')] }, 'tool_calls'),
      ctx,
    );
    expect(r).toEqual({
      stopReason: 'tool_use',
      text: '',
      toolCalls: [
        { callId: 'call_a', toolName: 'close_ticket', input: { ticketId: 'T-9' } },
        { callId: 'call_b', toolName: 'send_email', input: { to: 'a@b.c', subject: 's', body: 'b' } },
      ],
    });
  });

  test('finish_reason stop with tool_calls (forced tool_choice) is still tool_use', () => {
    const r = openAiCompletionToTurnResult(openai({ tool_calls: [fnCall('call_a', 'close_ticket', '{"ticketId":"T"}')] }, 'stop'), ctx);
    expect(r.stopReason).toBe('tool_use');
  });

  test('stop → end_turn with content; refusal text used when there is no content; length → max_tokens', () => {
    expect(openAiCompletionToTurnResult(openai({ content: 'done' }, 'stop'), ctx)).toEqual({ stopReason: 'end_turn', text: 'done', toolCalls: [] });
    expect(openAiCompletionToTurnResult(openai({ content: 'trunc', tool_calls: [fnCall('call_a', 'x', '{"a":')] }, 'length'), ctx)).toEqual({
      stopReason: 'max_tokens',
      text: 'trunc',
      toolCalls: [],
      droppedToolCalls: 1,
    });
    expect(openAiCompletionToTurnResult(openai({ content: 'trunc' }, 'length'), ctx)).toEqual({ stopReason: 'max_tokens', text: 'trunc', toolCalls: [] });
  });

  test('content_filter, or a non-null message.refusal with any finish_reason → refusal; tool calls dropped and counted; the refusal text is the text', () => {
    const calls = [fnCall('call_a', 'close_ticket', '{"ticketId":"T"}'), fnCall('call_b', 'close_ticket', 'nope')];
    expect(openAiCompletionToTurnResult(openai({ refusal: 'I cannot help with that.' }, 'stop'), ctx)).toEqual({
      stopReason: 'refusal',
      text: 'I cannot help with that.',
      toolCalls: [],
    });
    expect(openAiCompletionToTurnResult(openai({ content: 'par', tool_calls: calls }, 'content_filter'), ctx)).toEqual({
      stopReason: 'refusal',
      text: 'par',
      toolCalls: [],
      droppedToolCalls: 2,
    });
    expect(openAiCompletionToTurnResult(openai({ refusal: 'no', tool_calls: calls }, 'tool_calls'), ctx)).toEqual({
      stopReason: 'refusal',
      text: 'no',
      toolCalls: [],
      droppedToolCalls: 2,
    });
    expect(openAiCompletionToTurnResult(openai({ content: 'ok', refusal: null }, 'stop'), ctx).stopReason).toBe('end_turn');
  });

  test.each([[''], ['   '], ['\n\t ']])('arguments %j (a tool without parameters) → input {}', (args) => {
    const r = openAiCompletionToTurnResult(openai({ tool_calls: [fnCall('call_e', 'list_tickets', args)] }, 'tool_calls'), ctx);
    expect(r).toEqual({ stopReason: 'tool_use', text: '', toolCalls: [{ callId: 'call_e', toolName: 'list_tickets', input: {} }] });
  });

  test('arguments that are not a string: an object is the input (OpenAI-compatible servers); an array, null or a number fails only that call', () => {
    const call = (id: string, args: unknown) => ({ id, type: 'function', function: { name: 'close_ticket', arguments: args } });
    const r = openAiCompletionToTurnResult(
      openai({ tool_calls: [call('call_o', { ticketId: 'T' }), call('call_a', [1]), call('call_n', null), call('call_9', 9), call('call_u', undefined)] }, 'tool_calls'),
      ctx,
    );
    expect(r.toolCalls[0]).toEqual({ callId: 'call_o', toolName: 'close_ticket', input: { ticketId: 'T' } });
    for (const c of r.toolCalls.slice(1)) expect(c).toMatchObject({ input: {}, inputError: { type: 'INVALID_TOOL_INPUT', reason: 'not-object' } });
  });

  test('made-up tool names pass through unchanged (the workflow answers UNKNOWN_TOOL), inner calls not unpacked; toolNameFromWire maps offered names back', () => {
    const args = JSON.stringify({ tool_uses: [{ recipient_name: 'functions.close_ticket', parameters: { ticketId: 'T' } }] });
    const r = openAiCompletionToTurnResult(
      openai({ tool_calls: [fnCall('call_p', 'multi_tool_use.parallel', args), fnCall('call_w', 'files_read_0123456789', '{}')] }, 'tool_calls'),
      {
        ...ctx,
        toolNameFromWire: (name) => (name === 'files_read_0123456789' ? 'files.read' : name),
      },
    );
    expect(r.toolCalls).toEqual([
      { callId: 'call_p', toolName: 'multi_tool_use.parallel', input: JSON.parse(args) },
      { callId: 'call_w', toolName: 'files.read', input: {} },
    ]);
  });

  test('arguments that are not JSON → that call fails with INVALID_TOOL_INPUT naming the call id; the other call stands', () => {
    const r = openAiCompletionToTurnResult(
      openai({ tool_calls: [fnCall('call_ok', 'close_ticket', '{}'), fnCall('call_Bad1', 'create_ticket', '{"title": "x",')] }, 'tool_calls'),
      ctx,
    );
    expect(r.toolCalls[0]).toEqual({ callId: 'call_ok', toolName: 'close_ticket', input: {} });
    expect(r.toolCalls[1]).toMatchObject({ callId: 'call_Bad1', toolName: 'create_ticket', input: {}, inputError: { type: 'INVALID_TOOL_INPUT', reason: 'not-json' } });
    expect(r.toolCalls[1]!.inputError!.message).toMatch(/^INVALID_TOOL_INPUT: tool call call_Bad1 \(create_ticket\) input refused \(not-json\): tool input is not valid JSON/);
  });

  test('arguments that are JSON but not an object → that call fails with INVALID_TOOL_INPUT (not-object)', () => {
    for (const args of ['[1,2]', '"text"', 'null', '42']) {
      const r = openAiCompletionToTurnResult(openai({ tool_calls: [fnCall('call_x', 'close_ticket', args)] }, 'tool_calls'), ctx);
      expect(r.toolCalls).toEqual([
        { callId: 'call_x', toolName: 'close_ticket', input: {}, inputError: expect.objectContaining({ type: 'INVALID_TOOL_INPUT', reason: 'not-object' }) },
      ]);
    }
  });

  test.each<[string, unknown, RegExp]>([
    ['tool_calls without calls', openai({ content: 'x' }, 'tool_calls'), /no tool_calls/],
    ['legacy function_call', openai({ function_call: { name: 'x', arguments: '{}' } }, 'function_call'), /function_call/],
    [
      'a custom tool call',
      openai({ tool_calls: [{ id: 'call_c', type: 'custom', custom: { name: 'x', input: 'y' } }] }, 'tool_calls'),
      /\$\.choices\[0\]\.message\.tool_calls\[0\]/,
    ],
    ['no choices', { ...openai({}, 'stop'), choices: [] }, /\$\.choices/],
    ['the Anthropic format', anthropic([], 'end_turn'), /not an OpenAI chat\.completion response/],
    ['a tool call without id', openai({ tool_calls: [{ type: 'function', function: { name: 'x', arguments: '{}' } }] }, 'tool_calls'), /tool_calls\[0\]\.id/],
    ['a duplicate call id', openai({ tool_calls: [fnCall('call_d', 'x', '{}'), fnCall('call_d', 'x', '{}')] }, 'tool_calls'), /call_d appears twice/],
  ])('rejects %s with INVALID_TRANSCRIPT', (_name, raw, message) => {
    const err = thrown(() => openAiCompletionToTurnResult(raw, ctx));
    expect(isCheckpointError(err, 'INVALID_TRANSCRIPT')).toBe(true);
    expect((err as Error).message).toMatch(message);
  });
});

describe('transcript files', () => {
  const good = { version: 1, id: 'mini', format: 'openai-chat-completions', responses: [openai({ content: 'hi' }, 'stop')] };

  test('parses a minimal transcript', () => {
    const t = parseTranscript(good);
    expect(t).toMatchObject({ id: 'mini', format: 'openai-chat-completions', description: null, source: 'mini' });
    expect(t.turns).toEqual([{ stopReason: 'end_turn', text: 'hi', toolCalls: [] }]);
  });

  test.each<[string, unknown, RegExp]>([
    ['not an object', 42, /malformed/],
    ['a wrong version', { ...good, version: 2 }, /\$\.version/],
    ['an unknown format', { ...good, format: 'gemini' }, /\$\.format/],
    ['an unknown top-level key', { ...good, extra: true }, /extra/],
    ['no responses', { ...good, responses: [] }, /\$\.responses/],
    ['a response in the other format', { ...good, format: 'anthropic-messages' }, /\$\.responses\[0\]/],
  ])('rejects %s', (_name, value, message) => {
    const err = thrown(() => parseTranscript(value, 'file.json'));
    expect(isCheckpointError(err, 'INVALID_TRANSCRIPT')).toBe(true);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).toContain('"file.json"');
  });

  test('a malformed response names the transcript and its index', () => {
    const value = { ...good, responses: [openai({ content: 'a' }, 'stop'), openai({ content: 'b' }, 'tool_calls')] };
    const err = thrown(() => parseTranscript(value, 'x.json'));
    expect(isCheckpointError(err, 'INVALID_TRANSCRIPT')).toBe(true);
    expect((err as Error).message).toContain('transcript "x.json" response 1');
    expect((err as { details: Record<string, unknown> }).details).toMatchObject({ transcript: 'x.json', turn: 1 });
  });

  test('a tool-call id reused in a later response is rejected (it would collide in the checkpoint binding)', () => {
    const value = {
      ...good,
      responses: [
        openai({ tool_calls: [fnCall('call_same', 'close_ticket', '{"ticketId":"1"}')] }, 'tool_calls'),
        openai({ tool_calls: [fnCall('call_same', 'close_ticket', '{"ticketId":"2"}')] }, 'tool_calls'),
      ],
    };
    const err = thrown(() => parseTranscript(value));
    expect(isCheckpointError(err, 'INVALID_TRANSCRIPT')).toBe(true);
    expect((err as Error).message).toMatch(/call_same was already used in response 0/);
  });

  test('allowCallIdReuse: true accepts an id reused in a later response (list_dir:0 every turn), never within one', () => {
    const value = {
      ...good,
      allowCallIdReuse: true,
      responses: [
        openai({ tool_calls: [fnCall('list_dir:0', 'list_dir', '{"path":"/"}')] }, 'tool_calls'),
        openai({ tool_calls: [fnCall('list_dir:0', 'list_dir', '{"path":"/tmp"}')] }, 'tool_calls'),
        openai({ content: 'done' }, 'stop'),
      ],
    };
    const t = parseTranscript(value);
    expect(t.turns.map((turn) => turn.toolCalls.map((c) => c.callId))).toEqual([['list_dir:0'], ['list_dir:0'], []]);
    const within = { ...value, responses: [openai({ tool_calls: [fnCall('list_dir:0', 'list_dir', '{}'), fnCall('list_dir:0', 'list_dir', '{}')] }, 'tool_calls')] };
    expect(
      isCheckpointError(
        thrown(() => parseTranscript(within)),
        'INVALID_TRANSCRIPT',
      ),
    ).toBe(true);
    expect(
      isCheckpointError(
        thrown(() => parseTranscript({ ...value, allowCallIdReuse: 'yes' })),
        'INVALID_TRANSCRIPT',
      ),
    ).toBe(true);
  });

  test('every stop reason and droppedToolCalls can be scripted, in both formats', () => {
    const toolUse = { type: 'tool_use', id: 'toolu_01x', name: 'send_email', input: {} };
    const a = parseTranscript({
      version: 1,
      id: 'stops-anthropic',
      format: 'anthropic-messages',
      responses: ['tool_use', 'max_tokens', 'refusal', 'pause_turn', 'end_turn'].map((stop, i) =>
        anthropic(
          stop === 'end_turn'
            ? [{ type: 'text', text: 'bye' }]
            : [
                { type: 'text', text: stop },
                { ...toolUse, id: `toolu_0${i}` },
              ],
          stop,
        ),
      ),
    });
    expect(a.turns.map((t) => [t.stopReason, t.toolCalls.length, t.droppedToolCalls ?? 0])).toEqual([
      ['tool_use', 1, 0],
      ['max_tokens', 0, 1],
      ['refusal', 0, 1],
      ['pause_turn', 0, 1],
      ['end_turn', 0, 0],
    ]);
    const o = parseTranscript({
      ...good,
      responses: [
        openai({ tool_calls: [fnCall('call_1', 'x', '{}'), fnCall('call_2', 'x', '{}')] }, 'length'),
        openai({ tool_calls: [fnCall('call_3', 'x', '{}')] }, 'content_filter'),
        openai({ refusal: 'No.' }, 'stop'),
      ],
    });
    expect(o.turns.map((t) => [t.stopReason, t.toolCalls.length, t.droppedToolCalls ?? 0])).toEqual([
      ['max_tokens', 0, 2],
      ['refusal', 0, 1],
      ['refusal', 0, 0],
    ]);
  });

  test('text that is not JSON, and a missing file', async () => {
    expect(
      isCheckpointError(
        thrown(() => parseTranscriptJson('{nope', 'bad.json')),
        'INVALID_TRANSCRIPT',
      ),
    ).toBe(true);
    await expect(loadTranscriptFile('/nonexistent/transcript.json')).rejects.toMatchObject({ name: 'CheckpointError', code: 'INVALID_TRANSCRIPT' });
  });

  test("loadTranscriptFile names the file in errors; a call with unusable arguments is replayed as that call's INVALID_TOOL_INPUT", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transcript-'));
    const path = join(dir, 'broken.json');
    writeFileSync(path, JSON.stringify({ ...good, responses: [{ nope: true }] }));
    await expect(loadTranscriptFile(path)).rejects.toMatchObject({ code: 'INVALID_TRANSCRIPT', details: { transcript: path, turn: 0 } });
    const bad = join(dir, 'bad-arguments.json');
    writeFileSync(bad, JSON.stringify({ ...good, responses: [openai({ tool_calls: [fnCall('call_j', 'x', 'not json')] }, 'tool_calls')] }));
    const t = await loadTranscriptFile(bad);
    expect(t.turns[0]!.toolCalls).toEqual([
      { callId: 'call_j', toolName: 'x', input: {}, inputError: expect.objectContaining({ type: 'INVALID_TOOL_INPUT', reason: 'not-json' }) },
    ]);
  });
});
