import { join } from 'node:path';
import { isCheckpointError, type CheckpointError } from '../../../src/checkpoint/errors';
import { ScriptedModel } from '../../../src/model/scripted-model';
import { loadTranscriptFile, type Transcript } from '../../../src/model/transcript';
import type { JsonValue } from '../../../src/checkpoint/types';
import type { ConversationMessage, ModelTurnInput } from '../../../src/model/types';

const EXAMPLES = join(__dirname, '../../../examples/transcripts');
let ticket: Transcript;
let triage: Transcript;
let batch: Transcript;

beforeAll(async () => {
  ticket = await loadTranscriptFile(join(EXAMPLES, 'anthropic-ticket.json'));
  triage = await loadTranscriptFile(join(EXAMPLES, 'openai-triage.json'));
  batch = await loadTranscriptFile(join(EXAMPLES, 'anthropic-batch.json'));
});

const user: ConversationMessage = { role: 'user', text: 'Customer says the card payment failed.' };
const input = (turn: number, extra: Partial<ModelTurnInput> = {}): ModelTurnInput => ({
  model: 'scripted',
  turn,
  messages: [user],
  tools: ['create_ticket', 'close_ticket', 'send_email'],
  ...extra,
});

test('turn n returns response n and records each request (with recordRequests)', async () => {
  const model = new ScriptedModel({ transcripts: ticket, recordRequests: true });
  expect(model.name).toBe('scripted');
  const first = await model.turn(input(0));
  expect(first).toBe(ticket.turns[0]);
  const second = await model.turn(input(1));
  expect(second.stopReason).toBe('end_turn');
  expect(model.requests.map((r) => [r.transcript, r.turn])).toEqual([
    ['anthropic-ticket', 0],
    ['anthropic-ticket', 1],
  ]);
  expect(model.requests[0]!.input).toEqual(input(0));
});

test('recorded inputs are copies: later mutation by the caller does not change them', async () => {
  const model = new ScriptedModel({ transcripts: ticket, recordRequests: true });
  const messages: ConversationMessage[] = [user];
  await model.turn({ ...input(0), messages });
  messages.push({ role: 'user', text: 'changed' });
  expect(model.requests[0]!.input.messages).toHaveLength(1);
});

test('deterministic across retries: the same turn always gets the same response, in any order', async () => {
  const model = new ScriptedModel({ transcripts: batch, recordRequests: true });
  const a = await model.turn(input(0));
  const b = await model.turn(input(1));
  const aAgain = await model.turn(input(0)); // a retried attempt of turn 0
  const bAgain = await model.turn(input(1));
  expect(aAgain).toEqual(a);
  expect(bAgain).toEqual(b);
  expect(aAgain.toolCalls.map((c) => c.callId)).toEqual(a.toolCalls.map((c) => c.callId));
  expect(model.requests).toHaveLength(4);
});

test('running out of script fails loudly, naming the transcript and the turn', async () => {
  const model = new ScriptedModel({ transcripts: ticket });
  const err = (await model.turn(input(2)).catch((e: unknown) => e)) as CheckpointError;
  expect(isCheckpointError(err, 'SCRIPT_EXHAUSTED')).toBe(true);
  expect(err.retryable).toBe(false);
  expect(err.message).toMatch(/^SCRIPT_EXHAUSTED: transcript ".*anthropic-ticket\.json" has 2 responses; turn 2/);
  expect(err.details).toMatchObject({ transcript: 'anthropic-ticket', turn: 2, responses: 2 });
  // and it stays exhausted on retry
  await expect(model.turn(input(2))).rejects.toMatchObject({ code: 'SCRIPT_EXHAUSTED' });
});

test('selects among several transcripts by modelOptions.transcript', async () => {
  const model = new ScriptedModel({ transcripts: [ticket, triage, batch] });
  expect(model.transcriptIds).toEqual(['anthropic-ticket', 'openai-triage', 'anthropic-batch']);
  const r = await model.turn(input(0, { modelOptions: { transcript: 'openai-triage' } }));
  expect(r.toolCalls.map((c) => c.toolName)).toEqual(['create_ticket', 'send_email']);
  await expect(model.turn(input(0))).rejects.toMatchObject({ code: 'INVALID_MODEL_OPTIONS' });
  await expect(model.turn(input(0, { modelOptions: { transcript: 'nope' } }))).rejects.toMatchObject({
    code: 'INVALID_MODEL_OPTIONS',
    message: expect.stringContaining('"nope"'),
  });
  await expect(model.turn(input(0, { modelOptions: { other: 1 } }))).rejects.toMatchObject({ code: 'INVALID_MODEL_OPTIONS' });
  await expect(model.turn(input(0, { modelOptions: { transcript: 7 } }))).rejects.toMatchObject({ code: 'INVALID_MODEL_OPTIONS' });
});

test('duplicate transcript ids are refused', () => {
  expect(() => new ScriptedModel({ transcripts: [ticket, ticket] })).toThrow(/two transcripts have the id anthropic-ticket/);
});

test('an inline transcript in modelOptions is replayed (and validated)', async () => {
  const inline = {
    version: 1,
    id: 'inline',
    format: 'openai-chat-completions',
    responses: [{ object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }] }],
  };
  const model = new ScriptedModel({ transcripts: [] });
  expect(await model.turn(input(0, { modelOptions: { transcript: inline } }))).toEqual({ stopReason: 'end_turn', text: 'hello', toolCalls: [] });
  await expect(model.turn(input(0, { modelOptions: { transcript: { ...inline, version: 9 } } }))).rejects.toMatchObject({ code: 'INVALID_TRANSCRIPT' });
  const strict = new ScriptedModel({ transcripts: [], allowInline: false });
  await expect(strict.turn(input(0, { modelOptions: { transcript: inline } }))).rejects.toMatchObject({ code: 'INVALID_MODEL_OPTIONS' });
});

test('checkToolResults: a later turn must carry a tool result for every earlier call', async () => {
  const model = new ScriptedModel({ transcripts: triage, checkToolResults: true });
  const first = await model.turn(input(0));
  const assistant: ConversationMessage = { role: 'assistant', text: first.text, toolCalls: first.toolCalls };
  const [ticketCall, emailCall] = first.toolCalls;
  const partial: ConversationMessage[] = [user, assistant, { role: 'tool', callId: ticketCall!.callId, toolName: ticketCall!.toolName, content: { id: 'T-1' }, isError: false }];
  const err = await model.turn(input(1, { messages: partial })).catch((e: unknown) => e);
  expect(isCheckpointError(err, 'INVALID_ARGUMENT')).toBe(true);
  expect((err as Error).message).toContain(emailCall!.callId);
  const full: ConversationMessage[] = [...partial, { role: 'tool', callId: emailCall!.callId, toolName: emailCall!.toolName, content: 'sent', isError: false }];
  expect((await model.turn(input(1, { messages: full }))).stopReason).toBe('end_turn');
});

test('an invalid turn index and an aborted signal', async () => {
  const model = new ScriptedModel({ transcripts: ticket });
  await expect(model.turn(input(-1))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  await expect(model.turn(input(0.5))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  const controller = new AbortController();
  const reason = new Error('cancelled by test');
  controller.abort(reason);
  await expect(model.turn(input(0), controller.signal)).rejects.toBe(reason);
});

test('messages are optional for the scripted model, except with checkToolResults (INVALID_ARGUMENT)', async () => {
  const { messages: _dropped, ...withoutMessages } = input(1);
  expect((await new ScriptedModel({ transcripts: triage }).turn(withoutMessages)).stopReason).toBe('end_turn');
  await expect(new ScriptedModel({ transcripts: triage, checkToolResults: true }).turn(withoutMessages)).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'messages' },
  });
});

test('a transcript scripts refusal, max_tokens and pause_turn with droppedToolCalls, and reused ids when it allows them', async () => {
  const msg = (content: unknown[], stop_reason: string) => ({ type: 'message', role: 'assistant', content, stop_reason });
  const use = (id: string) => ({ type: 'tool_use', id, name: 'close_ticket', input: { ticketId: 'T' } });
  const transcript = {
    version: 1,
    id: 'quirks',
    format: 'anthropic-messages',
    allowCallIdReuse: true,
    responses: [
      msg([use('ollama_0')], 'tool_use'),
      msg([use('ollama_0')], 'tool_use'),
      msg([{ type: 'text', text: 'Searching' }], 'pause_turn'),
      msg([use('ollama_1'), use('ollama_2')], 'max_tokens'),
      msg([{ type: 'text', text: 'No.' }, use('ollama_3')], 'refusal'),
    ],
  };
  const model = new ScriptedModel({ transcripts: [] });
  const results = [];
  for (let turn = 0; turn < 5; turn++) results.push(await model.turn(input(turn, { modelOptions: { transcript } as unknown as JsonValue })));
  expect(results.map((r) => [r.stopReason, r.toolCalls.map((c) => c.callId), r.droppedToolCalls ?? 0])).toEqual([
    ['tool_use', ['ollama_0'], 0],
    ['tool_use', ['ollama_0'], 0],
    ['pause_turn', [], 0],
    ['max_tokens', [], 2],
    ['refusal', [], 1],
  ]);
});
