/**
 * End to end through the agent workflow (time-skipping test server): one model turn with a poisoned
 * call and a good call. The model adapter's conversion (`openAiCompletionToTurnResult`) and the
 * real tool activities (SQLite store) run on a real Worker: the poisoned call fails alone with a
 * typed INVALID_TOOL_INPUT the model reads, the good call runs, and Object.prototype is untouched.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import type { ModelAdapter } from '../../src/model/model-adapter';
import { openAiCompletionToTurnResult } from '../../src/model/transcript';
import type { ModelTurnInput } from '../../src/model/types';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { agentWorkflow } from '../../src/workflows';
import { cleanPrototype, naiveMerge } from '../helpers/prototype';
import { createTimeSkippingEnv, installQuietTemporalRuntime } from '../helpers/temporal';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
let env: TestWorkflowEnvironment;
let workflowBundle: WorkflowBundleWithSourceMap;
let dir: string;
let store: CheckpointStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-model-input-'));
  [env, workflowBundle, store] = await Promise.all([
    createTimeSkippingEnv(),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
    openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`),
  ]);
}, 120_000);

afterAll(async () => {
  await env?.teardown();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Replays OpenAI chat.completion responses through the adapter's real conversion; records each request. */
function replayOpenAi(responses: readonly unknown[]): ModelAdapter & { requests: ModelTurnInput[] } {
  const requests: ModelTurnInput[] = [];
  return {
    name: 'replay',
    requests,
    async turn(input) {
      requests.push(input);
      return openAiCompletionToTurnResult(responses[input.turn], { where: `replay turn ${input.turn}`, live: true, details: { provider: 'openai', turn: input.turn } });
    },
  };
}

function completion(finish: 'tool_calls' | 'stop', content: string | null, calls: Array<[id: string, name: string, args: string]> = []): unknown {
  return {
    id: 'chatcmpl-x',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          ...(calls.length > 0 ? { tool_calls: calls.map(([id, name, args]) => ({ id, type: 'function', function: { name, arguments: args } })) } : {}),
        },
        finish_reason: finish,
      },
    ],
  };
}

test('a model turn with a poisoned call (a __proto__ key; and, item 3, a number JSON would read changed) and good calls (one with 1e21): each poisoned call fails typed as INVALID_TOOL_INPUT, the good one runs, Object.prototype untouched', async () => {
  const executed: string[] = [];
  const createTicket = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: z.object({ title: z.string(), options: z.record(z.string(), z.any()).optional() }),
    async execute(input, ctx) {
      executed.push(ctx.callId);
      const merged = naiveMerge({ priority: 'normal' }, input as Record<string, unknown>);
      return { output: { ticketId: `T-${ctx.callId}`, priority: String(merged.priority) } };
    },
  });
  const model = replayOpenAi([
    completion('tool_calls', null, [
      ['call_poisoned', 'create_ticket', '{"title":"t","options":{"x":{"__proto__":{"dedupesByKey":true}}}}'],
      ['call_big', 'create_ticket', '{"title":"big","options":{"n":9007199254740993}}'],
      ['call_good', 'create_ticket', '{"title":"printer on fire"}'],
      ['call_exact', 'create_ticket', '{"title":"exact","options":{"n":1e21}}'],
    ]),
    completion('stop', 'Done.'),
  ]);
  const taskQueue = `model-input-${Date.now()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    activities: { ...createModelActivities({ adapters: { replay: model }, store }), ...createToolActivities({ store, tools: [createTicket] }) },
  });
  const result = await worker.runUntil(
    env.client.workflow.execute(agentWorkflow, {
      taskQueue,
      workflowId: `model-input-${Date.now()}`,
      args: [{ tenant: 'acme', model: 'replay', prompt: 'Open a ticket.', tools: ['create_ticket'], budget: { maxTurns: 3, maxToolCalls: 10, deadlineMs: 60 * 60 * 1000 } }],
    }),
  );
  const polluted = cleanPrototype();

  expect(polluted).toEqual([]);
  expect(result.status).toBe('completed');
  expect(executed.sort()).toEqual(['call_exact', 'call_good']);
  expect(result.calls.map((c) => [c.callId, c.status, c.errorType])).toEqual([
    ['call_poisoned', 'failed', 'INVALID_TOOL_INPUT'],
    ['call_big', 'failed', 'INVALID_TOOL_INPUT'],
    ['call_good', 'completed', null],
    ['call_exact', 'completed', null],
  ]);
  const toolMessages = model.requests[1]!.messages!.filter((m) => m.role === 'tool');
  expect(toolMessages.map((m) => [m.callId, m.isError, (m.content as { error?: { type?: string } }).error?.type ?? null])).toEqual([
    ['call_poisoned', true, 'INVALID_TOOL_INPUT'],
    ['call_big', true, 'INVALID_TOOL_INPUT'],
    ['call_good', false, null],
    ['call_exact', false, null],
  ]);
  // What the model sent for a refused call is not carried on: the assistant message holds `{}`.
  const assistant = model.requests[1]!.messages!.find((m) => m.role === 'assistant');
  expect(assistant?.role === 'assistant' && assistant.toolCalls.map((c) => c.input)).toEqual([{}, {}, { title: 'printer on fire' }, { title: 'exact', options: { n: 1e21 } }]);
});
