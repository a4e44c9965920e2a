/**
 * Model responses as they really arrive, end to end: the real `agentWorkflow` on a
 * real dev server, the real tool activities over a real SQLite store, and the REAL OpenAI and
 * Anthropic adapters (the official SDK clients) pointed at the loopback server, which answers
 * with scripted provider bodies. Each case checks the run's result, which tools really ran
 * (effect counters), and what the loopback received in the requests that followed: names and ids
 * the providers accept (`^[a-zA-Z0-9_-]{1,64}$`, OpenAI ids ≤ 40), ids unique, and every tool
 * result paired with a call of the assistant message just before it.
 */
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { AnthropicModel } from '../../src/model/anthropic-model';
import { OpenAiModel } from '../../src/model/openai-model';
import { toolSpecFromZod, type ToolSpecs } from '../../src/model/tool-specs';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { agentWorkflow } from '../../src/workflows';
import type { AgentWorkflowInput, AgentWorkflowResult } from '../../src/workflows/agent/types';
import { LoopbackLlm, ok, type LoopbackApi } from '../helpers/loopback-llm';
import { installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { completion, message, toolUse, type FnCall } from '../helpers/provider-wire';
import { startRealAgentEnv, type RealAgentEnv } from '../helpers/real-agent-env';

// ERROR: the workflow's WARN per failed call and the worker's per failed activity attempt are expected here.
installQuietTemporalRuntime('ERROR');

const API_KEY = 'sk-loopback-quirks-workflow';
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const OPENAI_ID = /^[a-zA-Z0-9_-]{1,40}$/;
const ANTHROPIC_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const RUN_MS = 60_000;

// ---------------------------------------------------------------------------------------------
// Tools: each records every real execution (the effect counter).

interface Effect {
  readonly tool: string;
  readonly callId: string;
  readonly input: unknown;
}
let effects: Effect[] = [];
const ranOf = (tool: string): Effect[] => effects.filter((e) => e.tool === tool);

const schemas = {
  list_tickets: z.object({}).strict(),
  close_ticket: z.object({ ticketId: z.string() }).strict(),
  list_dir: z.object({ path: z.string() }).strict(),
};
const TOOL_SPECS: ToolSpecs = {
  list_tickets: toolSpecFromZod(schemas.list_tickets, 'List open tickets (no parameters).'),
  close_ticket: toolSpecFromZod(schemas.close_ticket, 'Close a ticket.'),
  list_dir: toolSpecFromZod(schemas.list_dir, 'List a directory.'),
};
const TOOLS = [
  defineTool({
    name: 'list_tickets',
    revision: 'v1',
    input: schemas.list_tickets,
    async execute(input, ctx) {
      effects.push({ tool: 'list_tickets', callId: ctx.callId, input });
      return { output: { tickets: ['T-1', 'T-2'] } };
    },
  }),
  defineTool({
    name: 'close_ticket',
    revision: 'v1',
    input: schemas.close_ticket,
    async execute(input, ctx) {
      effects.push({ tool: 'close_ticket', callId: ctx.callId, input });
      return { output: { closed: input.ticketId }, receipt: { ticket: input.ticketId } };
    },
  }),
  defineTool({
    name: 'list_dir',
    revision: 'v1',
    input: schemas.list_dir,
    async execute(input, ctx) {
      effects.push({ tool: 'list_dir', callId: ctx.callId, input });
      return { output: { entries: [`${input.path}a.txt`] } };
    },
  }),
];
const TOOL_NAMES = ['list_tickets', 'close_ticket', 'list_dir'];

// ---------------------------------------------------------------------------------------------
// Wire bodies as the providers send them

const fnCall = (id: string, name: string, args: string): FnCall => ({ id, name, arguments: args });
const openAiCalls = (...calls: FnCall[]) => ok(completion({ calls }, 'tool_calls'));
const openAiText = (text: string) => ok(completion({ content: text }, 'stop'));

const text = (t: string) => ({ type: 'text', text: t });
const anthropicText = (t: string) => ok(message([text(t)], 'end_turn'));

// ---------------------------------------------------------------------------------------------
// What a strict provider checks in a request

type Body = { tools?: Array<Record<string, unknown>>; messages: Array<Record<string, unknown>> };
interface Pair {
  readonly id: string;
  readonly name: string;
  /** The tool result's text as sent. */
  readonly result: string;
}

/** OpenAI: valid names and ids, ids unique; each tool message answers a call of the assistant message before it, every call answered. */
function openAiPairs(body: unknown): Pair[] {
  const { tools = [], messages } = body as Body;
  for (const t of tools) expect((t['function'] as { name: string }).name).toMatch(NAME);
  const pairs: Pair[] = [];
  let open = new Map<string, string>();
  for (const m of messages) {
    if (m['role'] === 'assistant') {
      expect([...open.keys()]).toEqual([]);
      open = new Map();
      for (const c of (m['tool_calls'] as Array<{ id: string; function: { name: string } }> | undefined) ?? []) {
        expect(c.id).toMatch(OPENAI_ID);
        expect(c.function.name).toMatch(NAME);
        open.set(c.id, c.function.name);
      }
    } else if (m['role'] === 'tool') {
      const id = m['tool_call_id'] as string;
      expect(open.has(id)).toBe(true);
      pairs.push({ id, name: open.get(id)!, result: String(m['content']) });
      open.delete(id);
    } else {
      expect([...open.keys()]).toEqual([]);
    }
  }
  expect([...open.keys()]).toEqual([]);
  const ids = pairs.map((p) => p.id);
  expect(new Set(ids).size).toBe(ids.length);
  return pairs;
}

/** Anthropic: valid names and ids, ids unique; the user message after an assistant message answers exactly its tool_use blocks. */
function anthropicPairs(body: unknown): Pair[] {
  const { tools = [], messages } = body as Body;
  for (const t of tools) expect(t['name']).toMatch(NAME);
  const pairs: Pair[] = [];
  let previous = new Map<string, string>();
  for (const m of messages) {
    const blocks = typeof m['content'] === 'string' ? [] : (m['content'] as Array<Record<string, unknown>>);
    if (m['role'] === 'assistant') {
      expect([...previous.keys()]).toEqual([]);
      previous = new Map();
      for (const b of blocks.filter((x) => x['type'] === 'tool_use')) {
        expect(b['id']).toMatch(ANTHROPIC_ID);
        expect(b['name']).toMatch(NAME);
        previous.set(b['id'] as string, b['name'] as string);
      }
    } else {
      const answered = blocks.filter((x) => x['type'] === 'tool_result');
      expect(answered.map((x) => x['tool_use_id'])).toEqual([...previous.keys()]);
      for (const r of answered) pairs.push({ id: r['tool_use_id'] as string, name: previous.get(r['tool_use_id'] as string)!, result: JSON.stringify(r['content']) });
      previous = new Map();
    }
  }
  expect([...previous.keys()]).toEqual([]);
  const ids = pairs.map((p) => p.id);
  expect(new Set(ids).size).toBe(ids.length);
  return pairs;
}

// ---------------------------------------------------------------------------------------------
// The dev server, the store, the bundle (once); a loopback server per test.

let real: RealAgentEnv;
let env: LocalTestEnv;
let store: CheckpointStore;
let bundle: WorkflowBundleWithSourceMap;
let server: LoopbackLlm;

beforeAll(async () => {
  real = await startRealAgentEnv('ttc-quirks-wf-');
  ({ env, store, bundle } = real);
}, 180_000);

afterAll(() => real?.stop());

beforeEach(async () => {
  effects = [];
  server = await LoopbackLlm.start({ apiKey: API_KEY });
});
afterEach(async () => {
  await server.close();
});

let runCounter = 0;

/** Runs `agentWorkflow` to its end on a fresh task queue, with the real adapters pointed at the loopback server. */
async function runAgent(model: LoopbackApi, overrides: Partial<AgentWorkflowInput> = {}): Promise<AgentWorkflowResult> {
  const adapters = {
    openai: new OpenAiModel({ model: 'gpt-4o', tools: TOOL_SPECS, apiKey: API_KEY, baseURL: server.openaiBaseURL, maxRetries: 0 }),
    anthropic: new AnthropicModel({ model: 'claude-sonnet-4-6', tools: TOOL_SPECS, apiKey: API_KEY, baseURL: server.anthropicBaseURL, maxRetries: 0 }),
  };
  const id = `quirks-wf-${process.pid}-${Date.now()}-${++runCounter}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: id,
    workflowBundle: bundle,
    activities: { ...createToolActivities({ store, tools: TOOLS }), ...createModelActivities({ adapters, store }) },
  });
  const input: AgentWorkflowInput = {
    tenant: 'acme',
    model,
    prompt: 'Tidy up the tickets.',
    tools: TOOL_NAMES,
    budget: { maxTurns: 6, maxToolCalls: 10, deadlineMs: 600_000 },
    activityOptions: { startToCloseTimeoutMs: 20_000, retry: { initialIntervalMs: 100, backoffCoefficient: 1, maximumAttempts: 5 } },
    ...overrides,
  };
  return worker.runUntil(async () => {
    const handle = await env.client.workflow.start(agentWorkflow, { taskQueue: id, workflowId: id, args: [input] });
    return handle.result();
  });
}

const bodies = (api: LoopbackApi): unknown[] => server.requestsFor(api).map((r) => r.body);
const callView = (r: AgentWorkflowResult) => r.calls.map((c) => ({ modelCallId: c.modelCallId, toolName: c.toolName, status: c.status, errorType: c.errorType }));

// ---------------------------------------------------------------------------------------------

describe('agentWorkflow with the real adapters: model responses as they really arrive', () => {
  it(
    'OpenAI arguments "" for a tool without parameters runs the tool with {} (sent back as "{}")',
    async () => {
      server.enqueue('openai', openAiCalls(fnCall('call_NoArgs01', 'list_tickets', '')), openAiText('Two open tickets.'));
      const result = await runAgent('openai');

      expect(result).toMatchObject({ status: 'completed', stoppedBecause: 'model-stopped', finalText: 'Two open tickets.', turns: 2 });
      expect(callView(result)).toEqual([{ modelCallId: 'call_NoArgs01', toolName: 'list_tickets', status: 'completed', errorType: null }]);
      expect(effects).toEqual([{ tool: 'list_tickets', callId: 'call_NoArgs01', input: {} }]);

      const sent = bodies('openai');
      expect(sent).toHaveLength(2);
      expect((sent[1] as Body).messages[1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_NoArgs01', function: { name: 'list_tickets', arguments: '{}' } }] });
      const pairs = openAiPairs(sent[1]);
      expect(pairs.map((p) => p.id)).toEqual(['call_NoArgs01']);
      expect(pairs[0]!.result).toContain('T-2');
    },
    RUN_MS,
  );

  const badCalls: Array<[string, LoopbackApi, () => void]> = [
    [
      'OpenAI arguments that are not JSON',
      'openai',
      () =>
        server.enqueue(
          'openai',
          openAiCalls(fnCall('call_Good0001', 'close_ticket', '{"ticketId":"T-1"}'), fnCall('call_Bad00002', 'close_ticket', '{"ticketId": T-2}')),
          openAiText('Closed one.'),
        ),
    ],
    [
      'OpenAI arguments that are a JSON string (double-encoded) where the object belongs',
      'openai',
      () =>
        server.enqueue(
          'openai',
          openAiCalls(fnCall('call_Good0001', 'close_ticket', '{"ticketId":"T-1"}'), fnCall('call_Bad00002', 'close_ticket', JSON.stringify(JSON.stringify({ ticketId: 'T-2' })))),
          openAiText('Closed one.'),
        ),
    ],
    [
      'an Anthropic tool_use whose input is a string',
      'anthropic',
      () =>
        server.enqueue(
          'anthropic',
          ok(message([toolUse('call_Good0001', 'close_ticket', { ticketId: 'T-1' }), toolUse('call_Bad00002', 'close_ticket', '{"ticketId":"T-2"}')], 'tool_use')),
          anthropicText('Closed one.'),
        ),
    ],
  ];
  it.each(badCalls)(
    'one bad call among two (%s) fails only that call: INVALID_TOOL_INPUT; the other runs; both answered in the next request',
    async (_name, api, script) => {
      script();
      const result = await runAgent(api);

      expect(result).toMatchObject({ status: 'completed', stoppedBecause: 'model-stopped', finalText: 'Closed one.', turns: 2 });
      expect(callView(result)).toEqual([
        { modelCallId: 'call_Good0001', toolName: 'close_ticket', status: 'completed', errorType: null },
        { modelCallId: 'call_Bad00002', toolName: 'close_ticket', status: 'failed', errorType: 'INVALID_TOOL_INPUT' },
      ]);
      expect(result.summary).toEqual({ ran: ['call_Good0001'], notRun: ['call_Bad00002'], unknown: [] });
      expect(effects).toEqual([{ tool: 'close_ticket', callId: 'call_Good0001', input: { ticketId: 'T-1' } }]);

      const sent = bodies(api);
      expect(sent).toHaveLength(2);
      const pairs = api === 'openai' ? openAiPairs(sent[1]) : anthropicPairs(sent[1]);
      expect(pairs.map((p) => p.id)).toEqual(['call_Good0001', 'call_Bad00002']);
      expect(pairs[0]!.result).toContain('T-1');
      expect(pairs[0]!.result).not.toContain('INVALID_TOOL_INPUT');
      expect(pairs[1]!.result).toContain('INVALID_TOOL_INPUT');
      if (api === 'anthropic') {
        const results = ((sent[1] as Body).messages[2]!['content'] as Array<Record<string, unknown>>).filter((b) => b['type'] === 'tool_result');
        expect(results.map((b) => b['is_error'] === true)).toEqual([false, true]);
      }
    },
    RUN_MS,
  );

  it(
    'a made-up multi_tool_use.parallel call fails as UNKNOWN_TOOL, nothing unpacked; the next request sends valid names and ids, paired',
    async () => {
      const inner = {
        tool_uses: [
          { recipient_name: 'functions.close_ticket', parameters: { ticketId: 'T-1' } },
          { recipient_name: 'functions.close_ticket', parameters: { ticketId: 'T-2' } },
        ],
      };
      server.enqueue('openai', openAiCalls(fnCall('call_Par00001', 'multi_tool_use.parallel', JSON.stringify(inner))), openAiText('Sorry, one at a time then.'));
      const result = await runAgent('openai');

      expect(result).toMatchObject({ status: 'completed', stoppedBecause: 'model-stopped', turns: 2 });
      expect(callView(result)).toEqual([{ modelCallId: 'call_Par00001', toolName: 'multi_tool_use.parallel', status: 'failed', errorType: 'UNKNOWN_TOOL' }]);
      // Nothing unpacked: the inner close_ticket calls never ran, nor any other tool.
      expect(effects).toEqual([]);

      const sent = bodies('openai');
      expect(sent).toHaveLength(2);
      const pairs = openAiPairs(sent[1]);
      expect(pairs).toHaveLength(1);
      expect(pairs[0]!.name).toMatch(/^multi_tool_use_parallel_[0-9a-f]{10}$/);
      expect(pairs[0]!.id).toBe('call_Par00001');
      expect(pairs[0]!.result).toContain('UNKNOWN_TOOL');
      // The arguments go back as they came (the inner calls were not unpacked into calls of their own).
      const sentCalls = (sent[1] as Body).messages[1]!['tool_calls'] as Array<{ function: { name: string; arguments: string } }>;
      expect(sentCalls).toHaveLength(1);
      expect(JSON.parse(sentCalls[0]!.function.arguments)).toEqual(inner);
    },
    RUN_MS,
  );

  const stops: Array<[string, 'model-truncated' | 'model-refused', LoopbackApi, unknown]> = [
    [
      'OpenAI finish_reason length',
      'model-truncated',
      'openai',
      completion({ content: 'Closing', calls: [fnCall('call_Cut00001', 'close_ticket', '{"ticketId":"T-1"}')] }, 'length'),
    ],
    ['OpenAI finish_reason content_filter', 'model-refused', 'openai', completion({ calls: [fnCall('call_Flt00001', 'close_ticket', '{"ticketId":"T-1"}')] }, 'content_filter')],
    ['Anthropic stop_reason max_tokens', 'model-truncated', 'anthropic', message([text('Closing'), toolUse('toolu_01Cut', 'close_ticket', { ticketId: 'T-1' })], 'max_tokens')],
    ['Anthropic stop_reason refusal', 'model-refused', 'anthropic', message([text('I will'), toolUse('toolu_01Ref', 'close_ticket', { ticketId: 'T-1' })], 'refusal')],
  ];
  it.each(stops)(
    '%s with a tool call ends the run incomplete / %s; the call never runs, no further request',
    async (_name, because, api, body) => {
      server.enqueue(api, ok(body));
      const result = await runAgent(api);

      expect(result).toMatchObject({ status: 'incomplete', stoppedBecause: because, turns: 1, calls: [] });
      expect(result.reason).toContain('1 tool call of that answer did not run');
      expect(effects).toEqual([]);
      expect(server.requests).toHaveLength(1);
    },
    RUN_MS,
  );

  it(
    'Anthropic pause_turn then end_turn: the turn continues and the run completes after 2 turns',
    async () => {
      server.enqueue(
        'anthropic',
        ok(
          message(
            [
              text('Let me search.'),
              { type: 'server_tool_use', id: 'srvtoolu_01A', name: 'web_search', input: { query: 'ticket policy' } },
              { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01A', content: [] },
            ],
            'pause_turn',
          ),
        ),
        anthropicText('Found it.'),
      );
      const result = await runAgent('anthropic');

      expect(result).toMatchObject({ status: 'completed', stoppedBecause: 'model-stopped', finalText: 'Found it.', turns: 2, calls: [] });
      expect(effects).toEqual([]);
      const sent = bodies('anthropic');
      expect(sent).toHaveLength(2);
      // The paused answer is sent back as it stands, so the model continues it.
      expect((sent[1] as Body).messages).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'Tidy up the tickets.' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Let me search.' }] },
      ]);
    },
    RUN_MS,
  );

  const reused: Array<[string, LoopbackApi, string, (path: string) => ReturnType<typeof ok>, ReturnType<typeof ok>]> = [
    [
      'list_dir:0 through Anthropic (which refuses ":" in ids)',
      'anthropic',
      'list_dir:0',
      (path) => ok(message([text('Looking.'), toolUse('list_dir:0', 'list_dir', { path })], 'tool_use')),
      anthropicText('Listed.'),
    ],
    ['ollama_0 through OpenAI', 'openai', 'ollama_0', (path) => openAiCalls(fnCall('ollama_0', 'list_dir', JSON.stringify({ path }))), openAiText('Listed.')],
  ];
  it.each(reused)(
    "a call id reused every turn (%s): each turn's call runs under its own checkpoint; every request has unique valid ids, paired",
    async (_name, api, modelId, reply, last) => {
      // The same call (same id, same input) three turns running: each is a new call and runs.
      server.enqueue(api, reply('/'), reply('/'), reply('/tmp/'), last);
      const result = await runAgent(api);

      expect(result).toMatchObject({ status: 'completed', stoppedBecause: 'model-stopped', finalText: 'Listed.', turns: 4 });
      expect(callView(result)).toEqual([0, 1, 2].map(() => ({ modelCallId: expect.any(String), toolName: 'list_dir', status: 'completed', errorType: null })));
      const runIds = result.calls.map((c) => c.callId);
      expect(new Set(runIds).size).toBe(3);
      expect(runIds[0]).toBe(modelId);
      expect(result.calls.map((c) => c.turn)).toEqual([0, 1, 2]);
      // The effect ran once per turn, under the turn's own call id.
      expect(ranOf('list_dir').map((e) => e.input)).toEqual([{ path: '/' }, { path: '/' }, { path: '/tmp/' }]);
      expect(ranOf('list_dir').map((e) => e.callId)).toEqual(runIds);
      expect(result.calls.map((c) => c.outcome)).toEqual([
        expect.objectContaining({ ok: true, output: { entries: ['/a.txt'] } }),
        expect.objectContaining({ ok: true, output: { entries: ['/a.txt'] } }),
        expect.objectContaining({ ok: true, output: { entries: ['/tmp/a.txt'] } }),
      ]);

      const sent = bodies(api);
      expect(sent).toHaveLength(4);
      sent.forEach((body, turn) => {
        const pairs = api === 'openai' ? openAiPairs(body) : anthropicPairs(body);
        expect(pairs).toHaveLength(turn);
        expect(pairs.every((p) => p.name === 'list_dir')).toBe(true);
      });
      // The last request names the three calls by three distinct ids, each result with its own call's output.
      const pairs = api === 'openai' ? openAiPairs(sent[3]) : anthropicPairs(sent[3]);
      expect(pairs.map((p) => p.result.includes('/tmp/a.txt'))).toEqual([false, false, true]);
    },
    RUN_MS,
  );

  const malformed: Array<[string, LoopbackApi, unknown, ReturnType<typeof ok>, ReturnType<typeof ok>]> = [
    [
      'OpenAI: no choices',
      'openai',
      { id: 'chatcmpl-broken', object: 'chat.completion', created: 1767261600, model: 'gpt-4o-2024-08-06', usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 } },
      openAiCalls(fnCall('call_List0001', 'list_tickets', '{}')),
      openAiText('All tidy.'),
    ],
    [
      'Anthropic: no content',
      'anthropic',
      {
        id: 'msg_01Broken',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-6',
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 0 },
      },
      ok(message([toolUse('call_List0001', 'list_tickets', {})], 'tool_use')),
      anthropicText('All tidy.'),
    ],
  ];
  it.each(malformed)(
    'a live malformed response (%s) is retried and the run completes; the call before it ran once',
    async (_name, api, broken, first, good) => {
      server.enqueue(api, first, ok(broken), good);
      const result = await runAgent(api);

      expect(result).toMatchObject({ status: 'completed', stoppedBecause: 'model-stopped', finalText: 'All tidy.', turns: 2 });
      expect(callView(result)).toEqual([{ modelCallId: 'call_List0001', toolName: 'list_tickets', status: 'completed', errorType: null }]);
      expect(effects).toHaveLength(1);

      const sent = bodies(api);
      // Turn 0, turn 1 (malformed answer), turn 1 again: the retry sent the same conversation.
      expect(sent).toHaveLength(3);
      expect(sent[2]).toEqual(sent[1]);
      const pairs = api === 'openai' ? openAiPairs(sent[2]) : anthropicPairs(sent[2]);
      expect(pairs.map((p) => p.id)).toEqual(['call_List0001']);
      expect(server.pending(api)).toBe(0);
    },
    RUN_MS,
  );
});
