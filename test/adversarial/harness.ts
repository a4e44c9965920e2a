/**
 * Harness of the adversarial regression suite (docs/protocol.md#overlapping-attempts to
 * #call-identity): the real activities in MockActivityEnvironment against a real store (SQLite;
 * TTC_ADVERSARIAL_STORE=postgres runs the same scenarios on PostgreSQL), the fence's injected clock
 * (real time plus an offset a test can jump), a provider fake that counts effects per idempotency
 * key, and a store wrapper that fails chosen operations with the real STORE_UNAVAILABLE. The
 * activities' warnings are silenced unless TTC_ADVERSARIAL_VERBOSE is set.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure, type Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { createToolActivities, defineTool, type ToolActivities, type ToolDefinition } from '../../src/activities';
import type { ToolActivitiesOptions } from '../../src/activities/index';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { FlakyStore, waitFor } from '../helpers/flaky-store';

export { FlakyStore, waitFor };
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import type { CheckpointRecord } from '../../src/checkpoint/types';

export { FENCE_POINTS } from '../../src/activities/fence/crash-points';
export { NOTHING_APPLIED_CODES } from '../../src/activities/contract/contract';

export const TENANT = 'acme';
/** A short deadline, for tests where a hung tool must be cut in real time. */
export const DEADLINE_MS = 1_000;
/**
 * A deadline for tools whose deadline is not what the test is about: no stall of a loaded
 * machine between a claim and the tool's call reaches it, so the outcome never depends on load.
 * Tests pass it only by moving the clock (`offsetMs`, {@link Harness.passSettleTime}).
 */
export const UNREACHED_DEADLINE_MS = 120_000;
export const MARGIN_MS = 200;

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

export const never = (): Promise<void> => new Promise<void>(() => undefined);

export class Gate {
  opened = false;
  private waiters: Array<() => void> = [];
  wait(): Promise<void> {
    return this.opened ? Promise.resolve() : new Promise((r) => this.waiters.push(r));
  }
  open(): void {
    this.opened = true;
    for (const w of this.waiters.splice(0)) w();
  }
}

/** A provider fake: effects per idempotency key. */
export class Provider {
  readonly effects = new Map<string, number>();
  readonly requests: string[] = [];
  latencyMs = 0;
  apply(key: string): { ticketId: string } {
    this.requests.push(key);
    this.effects.set(key, (this.effects.get(key) ?? 0) + 1);
    return { ticketId: `T-${key.slice(5, 13)}` };
  }
  async applyLater(key: string): Promise<{ ticketId: string }> {
    this.requests.push(key);
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    this.effects.set(key, (this.effects.get(key) ?? 0) + 1);
    return { ticketId: `T-${key.slice(5, 13)}` };
  }
  find(key: string): { ticketId: string } | null {
    return this.effects.has(key) ? { ticketId: `T-${key.slice(5, 13)}` } : null;
  }
  total(): number {
    return [...this.effects.values()].reduce((a, b) => a + b, 0);
  }
}

export const schema = z.object({ title: z.string().min(1) }).strict();

export function ticketTool(provider: Provider, options: Partial<ToolDefinition<any>> & { withLookup?: boolean } = {}): ToolDefinition<any> {
  const { withLookup, ...rest } = options;
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: schema,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    async execute(_input, ctx) {
      const r = await provider.applyLater(ctx.idempotencyKey);
      return { output: r, receipt: { key: ctx.idempotencyKey } };
    },
    ...(withLookup
      ? {
          async lookup(ctx) {
            const found = provider.find(ctx.idempotencyKey);
            return found === null ? { found: false as const } : { found: true as const, output: found, receipt: { key: ctx.idempotencyKey, via: 'lookup' } };
          },
        }
      : {}),
    ...rest,
  });
}

const silent = (): void => undefined;
/** Drops the activities' log lines (each failed attempt logs a WARN with its stack). */
const quietLogger: Logger = { log: silent, trace: silent, debug: silent, info: silent, warn: silent, error: silent };

export type Outcome = { result: FencedToolResult } | { failure: { type: string | undefined; nonRetryable: boolean; nextRetryDelay: unknown; message: string } } | { raw: unknown };

export type Call = { input: FencedToolInput; workflowId: string; runId: string };

export class Harness {
  dir!: string;
  store!: CheckpointStore;
  offsetMs = 0;
  seq = 0;
  readonly clock = (): Date => new Date(Date.now() + this.offsetMs);

  private pg: { drop(): Promise<void> } | undefined;

  /** SQLite by default; TTC_ADVERSARIAL_STORE=postgres runs the same scenarios on PostgreSQL. */
  async open(): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), 'ttc-adversarial-'));
    if (process.env.TTC_ADVERSARIAL_STORE === 'postgres') {
      const { createTestDatabase } = await import('../helpers/postgres');
      const db = await createTestDatabase();
      this.pg = db;
      this.store = await openCheckpointStore(db.url);
    } else {
      this.store = await openCheckpointStore(`sqlite:${join(this.dir, 'checkpoints.db')}`);
    }
  }

  async close(): Promise<void> {
    await this.store?.close();
    await this.pg?.drop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  activities(tools: ToolDefinition<any>[], over: Partial<ToolActivitiesOptions> = {}): ToolActivities {
    return createToolActivities({
      store: this.store,
      tools,
      clock: this.clock,
      reconcileMarginMs: MARGIN_MS,
      transientRetry: { initialIntervalMs: 5, maximumIntervalMs: 20, maximumAttempts: 3 },
      ...over,
    });
  }

  newCall(overrides: Partial<FencedToolInput> = {}, ids: { workflowId?: string; runId?: string } = {}): Call {
    this.seq += 1;
    const workflowId = ids.workflowId ?? `wf-adversarial-${this.seq}-${Math.random().toString(36).slice(2, 8)}`;
    const runId = ids.runId ?? `run-${this.seq}`;
    return {
      workflowId,
      runId,
      input: { tenant: TENANT, callId: `toolu_${this.seq}`, toolName: 'create_ticket', input: { title: `t${this.seq}` }, runChainId: runId, ...overrides },
    };
  }

  env(call: { workflowId: string; runId: string }, attempt: number): MockActivityEnvironment {
    return new MockActivityEnvironment(
      { attempt, workflowExecution: { workflowId: call.workflowId, runId: call.runId }, heartbeatTimeoutMs: 30_000 } as never,
      process.env.TTC_ADVERSARIAL_VERBOSE ? {} : { logger: quietLogger },
    );
  }

  async run(acts: ToolActivities, call: Call, attempt: number, e = this.env(call, attempt)): Promise<Outcome> {
    try {
      return { result: await e.run(acts.runFencedTool, call.input) };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) return { raw: error };
      return { failure: { type: error.type ?? undefined, nonRetryable: error.nonRetryable ?? false, nextRetryDelay: error.nextRetryDelay, message: error.message } };
    }
  }

  async recordOf(call: Call, callId = call.input.callId): Promise<CheckpointRecord | null> {
    return this.store.getByCall(`default/${TENANT}`, callBindingId({ runChainId: call.input.runChainId ?? call.runId, workflowId: call.workflowId, callId }));
  }

  /**
   * Jumps the clock just past the settle time of `record`'s claim: its declared deadline
   * (claimedAt + callDeadlineMs) plus the margin, plus `extraMs`.
   */
  passSettleTime(record: CheckpointRecord, extraMs = 50): void {
    const execution = record.execution!;
    const deadline = execution.deadlineAt !== null ? Date.parse(execution.deadlineAt) : Date.parse(execution.claimedAt) + DEADLINE_MS;
    this.offsetMs = deadline + MARGIN_MS + extraMs - Date.now();
  }

  async recordsOfWorkflow(call: Call): Promise<CheckpointRecord[]> {
    const all = await this.store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 10_000 });
    return all.filter((r) => r.binding.callId.includes(JSON.stringify(call.workflowId)));
  }
}

export function typeOf(o: Outcome): string {
  if ('result' in o) return `result:${o.result.source}`;
  if ('failure' in o) return `failure:${o.failure.type}`;
  return `raw:${String((o.raw as Error)?.name)}:${String((o.raw as Error)?.message)}`;
}
