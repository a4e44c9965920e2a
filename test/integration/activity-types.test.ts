/**
 * Each tool is its own activity type, on a real Temporal dev server with the real
 * tool activities and a real SQLite store: a run's history (fetched with the client) reads as the
 * agent's actions, each tool call's activity carries a summary naming its call id, and a tool's
 * own retry policy (`activityOptions.perTool`) is the one Temporal applies to it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import { temporalCliPath } from '../../src/dev/temporal-binaries';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import type { ModelTurnInput, ModelTurnResult, ToolCallRequest } from '../../src/model/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { agentWorkflow } from '../../src/workflows';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import { FlakyStore } from '../helpers/flaky-store';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

/** Answers turn n with `modelOptions.script[n]`; ends the conversation after the script. */
async function runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
  const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
  return script[input.turn] ?? { stopReason: 'end_turn', text: 'done', toolCalls: [] };
}

function call(callId: string, toolName: string, input: Record<string, unknown>): ToolCallRequest {
  return { callId, toolName, input: input as ToolCallRequest['input'] };
}

describe('each tool is its own activity type (real server, real activities)', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let flaky: FlakyStore;
  let bundle: WorkflowBundleWithSourceMap;
  const effects: string[] = [];
  let seq = 0;

  const tools = [
    defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: z.object({ title: z.string() }).strict(),
      async execute(input) {
        effects.push(`create_ticket:${input.title}`);
        return { output: { ticketId: `T-${effects.length}` } };
      },
    }),
    defineTool({
      name: 'send_email',
      revision: 'v1',
      input: z.object({ to: z.string() }).strict(),
      async execute(input) {
        effects.push(`send_email:${input.to}`);
        return { output: { sent: true } };
      },
    }),
  ];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-activity-types-'));
    [env, store, bundle] = await Promise.all([
      createLocalEnv(),
      openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
    ]);
    flaky = new FlakyStore(store);
  });

  afterAll(async () => {
    await env?.teardown();
    await store?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    effects.length = 0;
    flaky.failWhen = null;
  });

  /** Runs one agent run to its end on a fresh task queue; returns its result and history. */
  async function run(script: ModelTurnResult[], activityOptions?: AgentWorkflowInput['activityOptions'], offered: readonly string[] = ['create_ticket', 'send_email']) {
    const taskQueue = `activity-types-${++seq}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities: { ...createToolActivities({ store: flaky, tools }), runModelTurn },
    });
    return worker.runUntil(async () => {
      const input: AgentWorkflowInput = {
        tenant: 'acme',
        model: 'scripted',
        modelOptions: { script } as never,
        prompt: 'Open a ticket and tell the customer.',
        tools: offered,
        budget: { maxTurns: 4, maxToolCalls: 4, deadlineMs: 60_000 },
        ...(activityOptions !== undefined ? { activityOptions } : {}),
      };
      const workflowId = `activity-types-${seq}-${Date.now()}`;
      await env.client.workflow.start(agentWorkflow, { taskQueue, workflowId, args: [input] });
      const handle = env.client.workflow.getHandle<typeof agentWorkflow>(workflowId);
      const result = await handle.result();
      const events = (await handle.fetchHistory()).events ?? [];
      return { result, events, workflowId };
    });
  }

  function scheduled(events: readonly HistoryEvent[]) {
    return events.flatMap((e) => {
      const attrs = e.activityTaskScheduledEventAttributes;
      if (!attrs) return [];
      const summary = e.userMetadata?.summary ? defaultPayloadConverter.fromPayload<string>(e.userMetadata.summary) : null;
      const input = attrs.input?.payloads?.[0] ? defaultPayloadConverter.fromPayload<Record<string, unknown>>(attrs.input.payloads[0]) : null;
      return [{ eventId: String(e.eventId), type: attrs.activityType?.name, summary, input, retry: attrs.retryPolicy }];
    });
  }

  it("schedules each tool call as an activity named after the tool, with a summary naming the call id; history reads as the agent's actions", async () => {
    const { result, events, workflowId } = await run([
      { stopReason: 'tool_use', text: 'on it', toolCalls: [call('toolu_1', 'create_ticket', { title: 'printer' }), call('toolu_2', 'send_email', { to: 'a@b.c' })] },
    ]);

    expect(result.status).toBe('completed');
    expect(result.calls.map((c) => [c.callId, c.status, c.source])).toEqual([
      ['toolu_1', 'completed', 'executed'],
      ['toolu_2', 'completed', 'executed'],
    ]);
    expect(effects).toEqual(['create_ticket:printer', 'send_email:a@b.c']);

    const acts = scheduled(events);
    expect(acts.map((a) => a.type)).toEqual(['runModelTurn', 'create_ticket', 'send_email', 'runModelTurn']);
    expect(acts.map((a) => a.summary)).toEqual([null, 'create_ticket call toolu_1', 'send_email call toolu_2', null]);
    // The activity type names the tool; the input carries the call, not the tool name.
    expect(acts[1]!.input).toMatchObject({ tenant: 'acme', callId: 'toolu_1', input: { title: 'printer' } });
    expect(acts[1]!.input).not.toHaveProperty('toolName');
    // What an operator reads with `temporal workflow show`: the tools by name, each with its call.
    const shown = execFileSync(
      temporalCliPath(),
      ['workflow', 'show', '--workflow-id', workflowId, '--address', env.devServer.address, '--namespace', env.devServer.namespace, '--output', 'json'],
      { encoding: 'utf8' },
    );
    const shownTypes = [...shown.matchAll(/"activityType":\s*\{\s*"name":\s*"([^"]+)"/g)].map((m) => m[1]);
    expect(shownTypes).toEqual(['runModelTurn', 'create_ticket', 'send_email', 'runModelTurn']);
    // The run recorded the patch marker that makes replays of it schedule the tools' own types.
    expect(events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')).toBe(true);
  });

  it("applies a tool's own retry policy (activityOptions.perTool) over the run's: one tool is retried, the other is not", async () => {
    const failures = new Map<string, number>();
    // The store refuses each tool's first two checkpoint writes (STORE_UNAVAILABLE: retryable, nothing applied).
    flaky.failWhen = (op, args) => {
      if (op !== 'createIfAbsent') return false;
      const tool = (args[0] as CheckpointRecord).binding.toolName;
      const n = failures.get(tool) ?? 0;
      if (n >= 2) return false;
      failures.set(tool, n + 1);
      return true;
    };
    const { result, events } = await run(
      [{ stopReason: 'tool_use', text: 'on it', toolCalls: [call('toolu_1', 'create_ticket', { title: 'printer' }), call('toolu_2', 'send_email', { to: 'a@b.c' })] }],
      {
        startToCloseTimeoutMs: 20_000,
        retry: { maximumAttempts: 1 },
        perTool: { send_email: { retry: { maximumAttempts: 3, initialIntervalMs: 100, backoffCoefficient: 1 }, startToCloseTimeoutMs: 15_000 } },
      },
    );

    // create_ticket: the run's policy (one attempt); the failure proves nothing applied, the model sees it.
    expect(result.calls[0]).toMatchObject({ callId: 'toolu_1', status: 'failed', errorType: 'STORE_UNAVAILABLE' });
    // send_email: its own policy (three attempts); the third writes the checkpoint and sends once.
    expect(result.calls[1]).toMatchObject({ callId: 'toolu_2', status: 'completed', source: 'executed' });
    expect(effects).toEqual(['send_email:a@b.c']);
    expect(Object.fromEntries(failures)).toEqual({ create_ticket: 1, send_email: 2 });

    const acts = scheduled(events);
    const ticket = acts.find((a) => a.type === 'create_ticket')!;
    const email = acts.find((a) => a.type === 'send_email')!;
    expect(ticket.retry?.maximumAttempts).toBe(1);
    expect(email.retry).toMatchObject({ maximumAttempts: 3, backoffCoefficient: 1 });
    const emailStarted = events.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === email.eventId);
    expect(emailStarted?.activityTaskStartedEventAttributes?.attempt).toBe(3);
    const startToClose = (eventId: string) => events.find((e) => String(e.eventId) === eventId)?.activityTaskScheduledEventAttributes?.startToCloseTimeout?.seconds;
    expect(Number(startToClose(email.eventId))).toBe(15);
    expect(Number(startToClose(ticket.eventId))).toBe(20);
  });

  it('a tool the run offers but no worker registers fails at once as UNKNOWN_TOOL (nothing ran), and the run goes on', async () => {
    const { result, events } = await run(
      [{ stopReason: 'tool_use', text: 'on it', toolCalls: [call('toolu_1', 'refund', { amount: 5 }), call('toolu_2', 'send_email', { to: 'a@b.c' })] }],
      { retry: { maximumAttempts: 0 } },
      ['refund', 'send_email'],
    );
    expect(result.calls[0]).toMatchObject({ callId: 'toolu_1', status: 'failed', errorType: 'UNKNOWN_TOOL' });
    expect(result.calls[1]).toMatchObject({ callId: 'toolu_2', status: 'completed' });
    expect(effects).toEqual(['send_email:a@b.c']);
    const refund = scheduled(events).find((a) => a.type === 'refund')!;
    expect(refund.retry?.nonRetryableErrorTypes).toContain('NotFoundError');
    const failed = events.find((e) => String(e.activityTaskFailedEventAttributes?.scheduledEventId) === refund.eventId)?.activityTaskFailedEventAttributes;
    // The worker's `default` activity settles an unregistered tool's call by its evidence (no claim on attempt 1: nothing ran).
    expect(failed?.failure?.applicationFailureInfo?.type).toBe('UNKNOWN_TOOL');
    expect(
      events.filter((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === refund.eventId).map((e) => e.activityTaskStartedEventAttributes?.attempt),
    ).toEqual([1]);
  });
});
