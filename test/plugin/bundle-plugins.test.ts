/**
 * `buildAgentWorkflowBundle({ plugins })` (real dev server, real SQLite store). Temporal
 * 1.24 adds a plugin's workflow interceptor modules to a worker with a prebuilt bundle only when
 * the plugin was given to the bundler, so the agent bundle takes the worker's plugins.
 *
 * The agent workflow runs from a prebuilt bundle on a worker with `ToolCheckpointPlugin` fencing
 * the user's activity `lookup_order`, which the workflow schedules as a tool (activity type = tool
 * name). Built with the plugin, the activity's call comes from the `_ttc-call` header (`act-<seq>`,
 * run chain = first run id); built without it, the fence falls back to `activity-<activityId>`
 * within the run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker, type ActivityInboundCallsInterceptor, type ActivityExecuteInput, type Next } from '@temporalio/worker';
import type { Context } from '@temporalio/activity';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { buildAgentWorkflowBundle } from '../../src/codec/workflow-bundle';
import { fencedCallContext, ToolCheckpointPlugin } from '../../src/plugin';
import { activityCallIdentity, type ActivityCallIdentity } from '../../src/plugin/call-identity';
import type { FencedToolResult, ToolCallInput } from '../../src/activities/contract/contract';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { agentWorkflow } from '../../src/workflows';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
const TOOL = 'lookup_order';

/** Turn 0 asks for one `lookup_order` call; turn 1 ends the run. */
async function runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
  if (input.turn > 0) return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
  return { stopReason: 'tool_use', text: '', toolCalls: [{ callId: 'toolu_1', toolName: TOOL, input: { orderId: 'o-1' } }] };
}

/** Records the call identity every activity execution would get from its headers (and the activity id). */
class IdentityObserver implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: Context,
    private readonly seen: Map<string, ActivityCallIdentity & { activityId: string }>,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const { info } = this.ctx;
    this.seen.set(info.activityType, { ...activityCallIdentity(info, input.headers), activityId: info.activityId });
    return next(input);
  }
}

describe('buildAgentWorkflowBundle({ plugins })', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let withPlugin: string;
  let withoutPlugin: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-bundle-plugins-'));
    [env, store] = await Promise.all([createLocalEnv(), openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`)]);
    // The bundler gets its own plugin instance, as a separate build step would.
    const bundlerPlugin = new ToolCheckpointPlugin({ store, fence: { [TOOL]: { revision: 'v1' } } });
    [withPlugin, withoutPlugin] = await Promise.all([
      buildAgentWorkflowBundle({ encodeFailures: true, plugins: [bundlerPlugin], logger: quietLogger }),
      buildAgentWorkflowBundle({ encodeFailures: true, logger: quietLogger }),
    ]);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Runs one agent run on a worker with `code` and the plugin fencing `lookup_order`; returns what
   * the fenced activity saw, the identities the observer recorded, and the run's ids.
   */
  async function runOn(code: string, workflowId: string) {
    const seen = new Map<string, ActivityCallIdentity & { activityId: string }>();
    const contexts: { callId: string; idempotencyKey: string }[] = [];
    const lookupOrder = async (input: ToolCallInput): Promise<FencedToolResult> => {
      const ctx = fencedCallContext();
      if (ctx === undefined) throw new Error('lookup_order ran outside the fence');
      contexts.push({ callId: ctx.callId, idempotencyKey: ctx.idempotencyKey });
      return {
        callId: input.callId,
        toolName: TOOL,
        toolRevision: 'v1',
        source: 'executed',
        outcome: { ok: true, output: { status: 'shipped' }, receipt: null },
        idempotencyKey: ctx.idempotencyKey,
        intentDigest: ctx.intentDigest,
      };
    };
    const taskQueue = `bundle-plugins-${workflowId}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { code },
      activities: { runModelTurn, [TOOL]: lookupOrder },
      interceptors: { activity: [(ctx) => ({ inbound: new IdentityObserver(ctx, seen) })] },
      plugins: [new ToolCheckpointPlugin({ store, fence: { [TOOL]: { revision: 'v1' } } })],
    });
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'scripted',
      prompt: 'Where is order o-1?',
      tools: [TOOL],
      budget: { maxTurns: 4, maxToolCalls: 4, deadlineMs: 60_000 },
    };
    const { result, firstRunId } = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(agentWorkflow, { taskQueue, workflowId, args: [input] });
      return { result: await handle.result(), firstRunId: handle.firstExecutionRunId };
    });
    return { result, seen, contexts, firstRunId };
  }

  it('built with the plugin: the fenced tool activity runs under the `_ttc-call` header call id act-<seq> in the run chain', async () => {
    const { result, seen, contexts, firstRunId } = await runOn(withPlugin, 'with-plugin');
    expect(result.calls.map((c) => [c.toolName, c.status])).toEqual([[TOOL, 'completed']]);
    // Activity commands of the run: 1 runModelTurn, 2 lookup_order, 3 runModelTurn.
    expect(seen.get(TOOL)).toEqual({ callId: 'act-2', runChainId: firstRunId, occurrence: { scope: `first:${firstRunId}`, index: 0 }, source: 'header', activityId: '2' });
    expect(seen.get('runModelTurn')).toMatchObject({ callId: 'act-3', source: 'header' });
    expect(contexts.map((c) => c.callId)).toEqual(['act-2']);
    const record = await store.getByCall('default/default', callBindingId({ runChainId: firstRunId, workflowId: 'with-plugin', callId: 'act-2' }));
    expect([record?.status, record?.binding.toolName]).toEqual(['delivered', TOOL]);
  });

  it('built without the plugin: no header reaches the activity, and the fence falls back to activity-<activityId> within the run', async () => {
    const { result, seen, contexts, firstRunId } = await runOn(withoutPlugin, 'without-plugin');
    expect(result.calls.map((c) => [c.toolName, c.status])).toEqual([[TOOL, 'completed']]);
    expect(seen.get(TOOL)).toEqual({ callId: 'activity-2', runChainId: firstRunId, source: 'context', activityId: '2' });
    expect(contexts.map((c) => c.callId)).toEqual(['activity-2']);
    expect(await store.getByCall('default/default', callBindingId({ runChainId: firstRunId, workflowId: 'without-plugin', callId: 'act-2' }))).toBeNull();
    const record = await store.getByCall('default/default', callBindingId({ runChainId: firstRunId, workflowId: 'without-plugin', callId: 'activity-2' }));
    expect([record?.status, record?.binding.toolName]).toEqual(['delivered', TOOL]);
  });
});
