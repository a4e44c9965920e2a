/**
 * An agent worker for reset tests: a real dev server, a real SQLite store, a loopback planner
 * model (its plan per workflow replaceable between runs, fresh tool-call ids per turn), a `charge`
 * tool (optionally needing approval) with a refund, a `lookup_order` tool with no effect, a hook at
 * the fence's points (an attempt can be held there), resets with the real `temporal` CLI
 * (`./workflow-reset`), and the calls a person approves or rejects through the run's updates.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import type { WorkflowHandle, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import type { AppliedEffect } from '../../src/activities/tools/compensation-declaration';
import type { FencePoint } from '../../src/activities/fence/crash-points';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import type { ModelTurnInput, ModelTurnResult, ToolCallRequest } from '../../src/model/types';
import { agentWorkflow, approveCallUpdate, rejectCallUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowResult } from '../../src/workflows/agent/types';
import { createLocalEnv, type LocalTestEnv } from './temporal';
import { resetWithCli, type ResetPoint } from './workflow-reset';

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

export type Plan = (turn: number, input: ModelTurnInput) => Omit<ToolCallRequest, 'callId'>[];

/** The worker, its store and what the tools and the model saw, per workflow id. */
export interface AgentResetHarness {
  env: LocalTestEnv;
  store: CheckpointStore;
  charges: { workflowId: string; orderId: string; amountCents: number; callId: string }[];
  refunds: { workflowId: string; orderId: string; callId: string }[];
  plans: Map<string, Plan>;
  requests: Map<string, ModelTurnInput[]>;
  gates: Map<string, Promise<void>>;
  /** Awaited at each fence point of every attempt (an attempt held there stays held); null: none. */
  onStep: ((point: FencePoint, at: { workflowId: string; runId: string; activityType: string }) => Promise<void> | void) | null;
  start(workflowId: string, plan: Plan, extra?: Record<string, unknown>): Promise<WorkflowHandleWithFirstExecutionRunId<typeof agentWorkflow>>;
  reset(workflowId: string, runId: string, to: ResetPoint): Promise<WorkflowHandle<typeof agentWorkflow>>;
  chainRuns(workflowId: string, lastRunId?: string): Promise<string[]>;
  finalResult(workflowId: string): Promise<AgentWorkflowResult>;
  chargesOf(workflowId: string): string[];
  refundsOf(workflowId: string): string[];
  waitFor<T>(what: () => Promise<T | null | undefined>, ms?: number): Promise<T>;
  approveNext(handle: WorkflowHandle<typeof agentWorkflow>, decide?: 'approve' | 'reject'): Promise<string>;
  teardown(): Promise<void>;
}

/** The `type` of the first ApplicationFailure in `error`'s cause chain, else null. */
export function failureType(error: unknown): string | null {
  for (let e = error as { cause?: unknown; type?: unknown } | undefined; e !== undefined && e !== null; e = e.cause as typeof e) {
    if (e instanceof ApplicationFailure) return e.type ?? null;
  }
  return null;
}

/** Starts the worker on `taskQueue` (one dev server, one store file); `teardown` stops all. */
export async function createAgentResetHarness(taskQueue: string): Promise<AgentResetHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'ttc-agent-resets-'));
  const charges: AgentResetHarness['charges'] = [];
  const refunds: AgentResetHarness['refunds'] = [];
  const plans = new Map<string, Plan>();
  const requests = new Map<string, ModelTurnInput[]>();
  const gates = new Map<string, Promise<void>>();
  let nextCallId = 0;
  const charge = defineTool({
    name: 'charge',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    callDeadlineMs: 30_000,
    async execute(input, ctx) {
      charges.push({ workflowId: ctx.workflowId, orderId: input.orderId, amountCents: input.amountCents, callId: ctx.callId });
      const gate = gates.get(input.orderId);
      if (gate) await gate;
      return { output: { charged: input.amountCents, orderId: input.orderId }, receipt: { chargeId: `ch_${charges.length}` } };
    },
    compensation: {
      revision: 'refund-v1',
      async execute(applied: AppliedEffect, ctx) {
        refunds.push({ workflowId: ctx.workflowId, orderId: (applied.args as { orderId: string }).orderId, callId: ctx.callId });
        return { output: { refunded: true } };
      },
    },
  });
  const lookupOrder = defineTool({
    name: 'lookup_order',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    async execute(input) {
      return { output: { orderId: input.orderId, status: 'open' } };
    },
  });
  const onStep = (point: FencePoint): Promise<void> | void => {
    const info = Context.current().info;
    return h.onStep?.(point, { workflowId: info.workflowExecution?.workflowId ?? '', runId: info.workflowExecution?.runId ?? '', activityType: info.activityType });
  };
  const planner = {
    name: 'planner',
    async turn(input: ModelTurnInput): Promise<ModelTurnResult> {
      const workflowId = (input.modelOptions as { workflowId: string }).workflowId;
      requests.set(workflowId, [...(requests.get(workflowId) ?? []), input]);
      const calls = plans.get(workflowId)!(input.turn, input);
      if (calls.length === 0) return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
      return { stopReason: 'tool_use', text: 'working', toolCalls: calls.map((c) => ({ ...c, callId: `toolu_${(nextCallId += 1)}` })) };
    },
  };
  const [env, store, bundle] = await Promise.all([
    createLocalEnv(),
    openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
  ]);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: {
      ...createToolActivities({ store, tools: [charge, lookupOrder], reconcileMarginMs: 100, hooks: { step: onStep } }),
      ...createModelActivities({ store, adapters: { planner } }),
    },
  });
  const running = worker.run();
  const h: AgentResetHarness = {
    env,
    store,
    charges,
    refunds,
    plans,
    requests,
    gates,
    onStep: null,
    start(workflowId, plan, extra = {}) {
      plans.set(workflowId, plan);
      return env.client.workflow.start(agentWorkflow, {
        taskQueue,
        workflowId,
        args: [
          {
            tenant: 'acme',
            model: 'planner',
            modelOptions: { workflowId },
            prompt: 'handle the order',
            tools: ['charge'],
            budget: { maxTurns: 20, maxToolCalls: 20, deadlineMs: 5 * 60_000 },
            activityOptions: { startToCloseTimeoutMs: 40_000, heartbeatTimeoutMs: 35_000, retry: { initialIntervalMs: 100, maximumIntervalMs: 300, maximumAttempts: 5 } },
            ...extra,
          },
        ],
      });
    },
    async reset(workflowId, runId, to) {
      return env.client.workflow.getHandle(workflowId, await resetWithCli(env.devServer, env.client, workflowId, runId, to)) as WorkflowHandle<typeof agentWorkflow>;
    },
    async chainRuns(workflowId, lastRunId) {
      const runs = [lastRunId ?? (await env.client.workflow.getHandle(workflowId).describe()).runId];
      for (;;) {
        const { events } = await env.client.workflow.getHandle(workflowId, runs[0]).fetchHistory();
        const from = events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
        if (!from) return runs;
        runs.unshift(from);
      }
    },
    finalResult: (workflowId) => env.client.workflow.getHandle(workflowId).result() as Promise<AgentWorkflowResult>,
    chargesOf: (workflowId) => charges.filter((c) => c.workflowId === workflowId).map((c) => `${c.orderId}:${c.amountCents}`),
    refundsOf: (workflowId) => refunds.filter((r) => r.workflowId === workflowId).map((r) => r.orderId),
    async waitFor(what, ms = 30_000) {
      const until = Date.now() + ms;
      for (;;) {
        const v = await what().catch(() => null);
        if (v !== null && v !== undefined) return v;
        if (Date.now() > until) throw new Error('waitFor timed out');
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    /** Approves (or rejects) the first call awaiting approval; returns its id. */
    async approveNext(handle, decide = 'approve') {
      const status = await h.waitFor(async () => {
        const s = await handle.query(runStatusQuery);
        return s.phase === 'awaiting-approval' && s.pendingCalls.some((c) => c.status === 'awaiting-approval') ? s : null;
      });
      const pending = status.pendingCalls.find((c) => c.status === 'awaiting-approval')!;
      if (decide === 'approve')
        await handle.executeUpdate(approveCallUpdate, { args: [{ callId: pending.callId, intentDigest: pending.intentDigest!, stateVersion: status.stateVersion }] });
      else await handle.executeUpdate(rejectCallUpdate, { args: [{ callId: pending.callId, reason: 'not now' }] });
      return pending.callId;
    },
    async teardown() {
      worker.shutdown();
      await running;
      await store.close();
      await env.teardown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}
