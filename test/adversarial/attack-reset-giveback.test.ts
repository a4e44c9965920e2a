/**
 * Adversarial (resets, plugin occurrence give-back): a fence refusal is no proof that a call never
 * claimed. An attempt after the first can fail APPROVAL_EXPIRED after an earlier attempt claimed the
 * occurrence key (a transient failure released the claim: ready, key still held; the refusal is then
 * stored on it). When the plugin gave such a call's occurrence back, the next call of the same action
 * took the same index, and in a reset run replaying the refused call, the next call met that call's
 * row (a live call of its own branch; the plugin sends no liveCalls) and adopted its refusal. The
 * plugin now gives an occurrence back only for a call that never started (workflow-interceptors.ts),
 * so the next call takes the next index. Fence level, as the plugin drives it (call ids
 * `act-<seq>[@run]`, `occurrences.from` = the index the interceptor gives).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { occurrenceScopeOf, runScopedCallId } from '../../src/checkpoint/run-scope';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

jest.setTimeout(60_000);

describe('attack: occurrence given back after a claim', () => {
  let dir: string;
  let store: CheckpointStore;
  let acts: ToolActivities;
  let applied: string[];
  let failNext = 0;

  const charge = defineTool({
    name: 'charge',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    callDeadlineMs: 500,
    async execute(input) {
      if (failNext > 0) {
        failNext -= 1;
        throw Object.assign(new Error('503 from the provider'), { kind: 'transient' });
      }
      applied.push(input.orderId);
      return { output: { charge: `ch-${applied.length}` } };
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-attack-giveback-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    acts = createToolActivities({ store, tools: [charge], reconcileMarginMs: 100, transientRetry: { initialIntervalMs: 1, maximumIntervalMs: 1, maximumAttempts: 1 } });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(
    workflowId: string,
    runId: string,
    chain: string,
    callId: string,
    from: number,
    attempt: number,
    extra: Partial<FencedToolInput> = {},
  ): Promise<FencedToolResult | Error> {
    const env = new MockActivityEnvironment({
      attempt,
      workflowExecution: { workflowId, runId },
      heartbeatTimeoutMs: 30_000,
      scheduleToCloseTimeoutMs: 0,
      retryPolicy: { maximumAttempts: 0 },
    } as never);
    try {
      return await env.run(acts.runFencedTool, {
        tenant: 'acme',
        callId,
        runChainId: chain,
        toolName: 'charge',
        input: { orderId: 'o-1' },
        occurrences: { scope: occurrenceScopeOf({ firstExecutionRunId: chain }), from },
        ...extra,
      } as FencedToolInput);
    } catch (error) {
      return error as Error;
    }
  }

  it("X claims, is released (transient), then fails APPROVAL_EXPIRED; X keeps its index; a reset run before Y: Y' is answered by Y, never by X", async () => {
    applied = [];
    const chain = randomUUID();
    const wf = 'wf-giveback-1';
    const expiresAt = new Date(Date.now() + 300).toISOString();
    // R1: X = act-1 (index 0). Attempt 1 claims occurrence 0 and the provider answers 503: released, key held.
    failNext = 1;
    const x1 = await run(wf, chain, chain, 'act-1', 0, 1, { approvalExpiresAt: expiresAt });
    expect(x1).toBeInstanceOf(Error);
    await new Promise((r) => setTimeout(r, 400));
    // Attempt 2, after the approval expired: APPROVAL_EXPIRED. The call started: it keeps its occurrence.
    const x2 = await run(wf, chain, chain, 'act-1', 0, 2, { approvalExpiresAt: expiresAt });
    expect(String(x2)).toMatch(/APPROVAL_EXPIRED|expired/);
    // Y = act-2 gets index 1 and charges at occurrence 1.
    const y = await run(wf, chain, chain, 'act-2', 1, 1);
    expect((y as FencedToolResult).source).toBe('executed');
    expect(applied).toHaveLength(1);
    // R2: a reset of R1 to after X failed, before Y. Replaying X counts it again: Y' = act-2@R2, index 1.
    const r2 = randomUUID();
    const y2 = await run(wf, r2, chain, runScopedCallId('act-2', r2, chain), 1, 1);
    // R2's branch has one charge asked that can apply (Y'); Y applied it in R1: Y' must be answered by Y, not charge again or get X's refusal.
    expect({
      result: y2 instanceof Error ? String(y2).slice(0, 160) : { source: y2.source, appliedBy: y2.appliedByRun?.callId, ok: y2.outcome.ok },
      applied: applied.length,
    }).toEqual({
      result: { source: 'store', appliedBy: 'act-2', ok: true },
      applied: 1,
    });
  });
});
