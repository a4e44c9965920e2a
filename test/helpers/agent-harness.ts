// Harness of the agentWorkflow tests in the time-skipping environment (Java test server), with
// stub activities registered on a real Worker: a scripted model that fails loudly when its
// script runs out (and keeps the conversation by reference as the real activity does), and
// fenced-tool stubs that record every call. `useAgentTestEnv()` registers beforeAll/afterAll.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { FencedToolInput, FencedToolResult, ResolveToolCallInput, ResolveToolCallResult, ToolCallDescription } from '../../src/activities/contract/contract';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { agentWorkflow } from '../../src/workflows';
import { toolCallActivities } from '../../src/activities/agent/tool-call-activities';
import type { ToolActivities } from '../../src/workflows/agent/activity-types';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import { conversationFake } from './conversation-fake';
import { digestOf, okResult } from './agent-fakes';

export { call, currentPauseId, pauseIdLike, deferred, digestOf, endTurn, okResult, outcomeUnknown, toolTurn, waitForStatus } from './agent-fakes';
import { createLocalEnv, createTimeSkippingEnv } from './temporal';

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

/**
 * The time-skipping environment (or, with `server: 'dev'`, a real dev server: continue-as-new
 * with queries racing it is only faithful there) and the bundled workflows, set up once per file.
 */
export function useAgentTestEnv(server: 'time-skipping' | 'dev' = 'time-skipping') {
  const ctx: { env?: TestWorkflowEnvironment; workflowBundle?: WorkflowBundleWithSourceMap; queueSeq: number } = { queueSeq: 0 };
  beforeAll(async () => {
    [ctx.env, ctx.workflowBundle] = await Promise.all([
      server === 'dev' ? createLocalEnv() : createTimeSkippingEnv(),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
    ]);
  }, 120_000);
  afterAll(async () => {
    await ctx.env?.teardown();
  });
  return {
    get env(): TestWorkflowEnvironment {
      return ctx.env!;
    },
    get workflowBundle(): WorkflowBundleWithSourceMap {
      return ctx.workflowBundle!;
    },
    /** Runs `body` with a worker on a fresh task queue and a started agent run. */
    async withRun<T>(activities: ToolActivities, input: AgentWorkflowInput, body: (handle: WorkflowHandle<typeof agentWorkflow>) => Promise<T>): Promise<T> {
      const env = ctx.env!;
      const taskQueue = `agent-${++ctx.queueSeq}-${Date.now()}`;
      const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: ctx.workflowBundle!, activities });
      return worker.runUntil(async () => {
        const handle = await env.client.workflow.start(agentWorkflow, { taskQueue, workflowId: `run-${taskQueue}`, args: [input] });
        return body(handle);
      });
    },
  };
}

// ---- fakes ---------------------------------------------------------------------------------

/** A model that answers turn n with script[n] and records every request. */
export function scriptedModel(script: readonly ModelTurnResult[]) {
  const requests: ModelTurnInput[] = [];
  const conversation = conversationFake();
  return {
    requests,
    async runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
      requests.push({ ...input, messages: conversation.messagesOf(input) });
      const turn = script[requests.length - 1];
      if (turn === undefined) {
        throw ApplicationFailure.create({ type: 'SCRIPT_EXHAUSTED', message: `scripted model has no turn ${requests.length - 1}`, nonRetryable: true });
      }
      return turn;
    },
  };
}

export type ToolBehaviour = (input: FencedToolInput, attempt: number) => Promise<FencedToolResult | undefined>;

/** Fenced-tool stubs that record calls; `behaviour` may throw or return a result (undefined = ok). */
export function fakeTools(behaviour: ToolBehaviour = async () => undefined) {
  const runs: FencedToolInput[] = [];
  const described: FencedToolInput[] = [];
  const resolved: ResolveToolCallInput[] = [];
  let resolveBehaviour: (input: ResolveToolCallInput) => Promise<void> = async () => undefined;
  return {
    runs,
    described,
    resolved,
    onResolve(fn: (input: ResolveToolCallInput) => Promise<void>) {
      resolveBehaviour = fn;
    },
    async runFencedTool(input: FencedToolInput): Promise<FencedToolResult> {
      runs.push(input);
      return (await behaviour(input, Context.current().info.attempt)) ?? okResult(input);
    },
    async describeToolCall(input: FencedToolInput): Promise<ToolCallDescription> {
      described.push(input);
      return { toolRevision: '1', intentDigest: digestOf(input), idempotencyKey: `key-${input.callId}`, arguments: input.input, target: null };
    },
    async resolveToolCall(input: ResolveToolCallInput): Promise<ResolveToolCallResult> {
      resolved.push(input);
      await resolveBehaviour(input);
      return { callId: input.callId, toolName: input.toolName, toolRevision: '1', outcome: input.result!, idempotencyKey: `key-${input.callId}`, intentDigest: digestOf(input) };
    },
  };
}

// ---- harness -------------------------------------------------------------------------------

export function baseInput(overrides: Partial<AgentWorkflowInput> = {}): AgentWorkflowInput {
  return {
    tenant: 'acme',
    model: 'scripted',
    prompt: 'Please handle ticket 42.',
    tools: ['create_ticket', 'send_email', 'refund', 'lookup'],
    budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 60 * 60 * 1000 },
    // One call at a time, so these tests read in order; concurrent calls have their own tests.
    toolConcurrency: 1,
    ...overrides,
  };
}

/** The agent's activities plus each tool's own activity (type = tool name), as `createToolActivities` registers them. */
export function activitiesOf(model: ReturnType<typeof scriptedModel>, tools: Pick<ToolActivities, 'runFencedTool' | 'describeToolCall' | 'resolveToolCall'>): ToolActivities {
  return {
    ...toolCallActivities(baseInput().tools, tools.runFencedTool as (input: FencedToolInput) => Promise<FencedToolResult>),
    runModelTurn: model.runModelTurn,
    runFencedTool: tools.runFencedTool,
    describeToolCall: tools.describeToolCall,
    resolveToolCall: tools.resolveToolCall,
  };
}

/** The failure type with which an update was refused or failed. */
export async function updateFailureType(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    const cause = (err as { cause?: { type?: string } }).cause;
    return cause?.type ?? `untyped: ${String(err)}`;
  }
  throw new Error('the update was accepted');
}

export function callStatuses(calls: readonly { callId: string; status: string }[]): Record<string, string> {
  return Object.fromEntries(calls.map((c) => [c.callId, c.status]));
}
