/**
 * One explored schedule of a BATCH call: overlapping attempts of one `batch: true`
 * tool call through the real activity code (`createToolActivities(...).runFencedTool` in a
 * `MockActivityEnvironment` per attempt, `ctx.forEachItem` with the scenario's `groupSize`)
 * against a real SQLite store, in the model world of `./world.ts` (virtual time, fast-check's
 * scheduler at every store call and every fence point of every item, a provider that applies an
 * effect per item request when it lands). Temporal's part (a timed-out attempt keeps running
 * while the next one starts; retries after `nextRetryDelay`) is modelled as in `./explore.ts`.
 *
 * The batch's rules, checked in every schedule:
 * - `duplicate-item-effect`: no item's effect is applied twice (effects counted at the provider
 *   per item, over every idempotency key the item was sent with; a provider that dedupes by key
 *   applies a remembered key once, so it counts distinct applied keys);
 * - `item-out-of-order`: an attempt sends item n + 1 only once item n is settled in the store as
 *   that attempt last saw it; with a group of claims (`groupSize` > 1) item n may instead be
 *   claimed by this very attempt with its answer in hand (its result rides in the next grouped write);
 * - `attempt-end`: every attempt either returns a result in which every item is settled in the
 *   store (applied, or refused for good), or fails RECONCILE_PENDING / OUTCOME_UNKNOWN naming an
 *   item (`details.item`) whose checkpoint is executing or uncertain as far as that attempt could
 *   have seen; any other end is reported with its type;
 * - `reported-not-stored`: an attempt that completes reports each item's stored outcome;
 * - `stored-result-changed`, `lost-item-effect`: an item's stored result never changes, and an
 *   item whose effect was applied is not stored as refused nor with another effect's result.
 */
import { isDeepStrictEqual } from 'node:util';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError, type ToolContext, type ToolDefinition } from '../../../src/activities';
import type { FencedToolInput, FencedToolResult, ToolOutcome } from '../../../src/activities/contract/contract';
import type { FencePoint } from '../../../src/activities/fence/crash-points';
import { callBindingId } from '../../../src/checkpoint/call-identity';
import type { CheckpointRecord, JsonValue } from '../../../src/checkpoint/types';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import type { CheckpointStore, CreateResult, GroupWrite, GroupWriteResult } from '../../../src/stores/checkpoint-store';
import type { BatchAttemptPlan, BatchScenario } from './batch-scenario';
import type { ExplorerScheduler } from './explore';
import { EPOCH_MS, ExplorerStore, Provider, Sim, type Effect } from './world';

export const BATCH_VIOLATION_KINDS = [
  'duplicate-item-effect',
  'item-out-of-order',
  'attempt-end',
  'reported-not-stored',
  'stored-result-changed',
  'lost-item-effect',
  'harness',
] as const;
export type BatchViolationKind = (typeof BATCH_VIOLATION_KINDS)[number];

export interface BatchViolation {
  readonly kind: BatchViolationKind;
  readonly message: string;
}

/** What one attempt ended with (`details` = the failure's `details[0]`). */
export type BatchAttemptEnd =
  | { readonly ok: true; readonly result: FencedToolResult }
  | {
      readonly ok: false;
      readonly type: string;
      readonly nonRetryable: boolean;
      readonly nextRetryDelayMs: number | undefined;
      readonly message: string;
      readonly details: unknown;
    };

export interface BatchAttemptReport {
  readonly n: number;
  readonly startedAt: number;
  /** Earlier attempts still running (not ended, worker alive) when this one started. */
  readonly liveAtStart: number;
  readonly crashedAt: string | null;
  readonly timedOut: boolean;
  readonly end: BatchAttemptEnd | null;
  /** Item requests this attempt sent. */
  readonly requests: number;
  /** Set when the attempt failed at the call's own fence, naming no item: its call was taken over by a later attempt, or nothing of the batch ran under it. */
  readonly callLevel: 'superseded' | 'before any item' | 'item taken over' | null;
  readonly lookups: number;
}

export interface BatchScheduleReport {
  readonly attempts: readonly BatchAttemptReport[];
  /** Effects the provider applied (over all items). */
  readonly effects: number;
  /** Same-key repeats the provider deduplicated. */
  readonly deduplicatedRepeats: number;
  /** Items with a stored result at the end: applied (ok) / refused (error) / none. */
  readonly itemsApplied: number;
  readonly itemsRefused: number;
  readonly itemsUnsettled: number;
  /** What the run was finally told: `ok (<source>)`, a failure type, or null (still running when the schedule came to rest). */
  readonly final: string | null;
  readonly violations: readonly BatchViolation[];
  readonly virtualMs: number;
  readonly trace: readonly string[];
}

const TENANT = 'acme';
const NAMESPACE = `default/${TENANT}`;
const TOOL_NAME = 'notify';
const IDENTITY = { workflowId: 'wf-batch', callId: 'call-1', runChainId: 'chain-1' } as const;
const QUIET = new DefaultLogger('ERROR', () => undefined);
/** Transient retries within an attempt without a real-time wait (see {@link BatchWorld.request}). */
const TRANSIENT_RETRY = { initialIntervalMs: 0, maximumIntervalMs: 0, maximumAttempts: 3 } as const;

/** Raised into the fence when the harness kills a crashed worker for good (after the schedule). */
class WorkerGone extends Error {}

/** An item's output and receipt as the tool reports them in its batch output. */
interface ReportedItem {
  readonly key: string;
  readonly outcome: ToolOutcome;
}

interface Attempt {
  readonly n: number;
  readonly plan: BatchAttemptPlan;
  readonly env: MockActivityEnvironment;
  readonly startedAt: number;
  readonly liveAtStart: number;
  crashedAt: string | null;
  timedOut: boolean;
  end: BatchAttemptEnd | null;
  requests: number;
  lookups: number;
  /** The revision of every item checkpoint (`<key>#<generation>`) as this attempt last saw it in a store answer. */
  readonly seen: Map<string, number>;
  /** Items (by index) whose answer this attempt received: applied (ok) or refused. */
  readonly answered: Set<number>;
  /** Set when the attempt failed at the call's own fence, naming no item (see {@link BatchWorld.checkAttemptEnd}). */
  callLevel: 'superseded' | 'before any item' | 'item taken over' | null;
}

/** Item `key` (0-based index `i` → `user-<i+1>`). */
export const itemKeyOf = (index: number): string => `user-${index + 1}`;

/** Runs one schedule of `scenario` and checks the batch's rules. Never throws for a violation: they are in the report. */
export async function runBatchSchedule(scenario: BatchScenario, scheduler: ExplorerScheduler): Promise<BatchScheduleReport> {
  const raw = await openCheckpointStore('sqlite::memory:');
  const world = new BatchWorld(scenario, scheduler, raw);
  try {
    return await world.explore();
  } finally {
    await world.shutdown();
  }
}

/** A committed item record and its place in the commit order. */
interface SeenRecord {
  readonly record: CheckpointRecord;
  readonly seq: number;
  /** Sequence number of the first commit with a result (null while unsettled). */
  readonly settledSeq: number | null;
}

class BatchWorld {
  readonly sim: Sim;
  readonly provider: Provider;
  readonly store: ExplorerStore;
  readonly trace: string[] = [];
  private readonly bindingCallId = callBindingId(IDENTITY);
  private readonly keys: string[];
  private readonly attempts: Attempt[] = [];
  private readonly violations: BatchViolation[] = [];
  private readonly kills: Array<() => void> = [];
  private readonly running = new Set<Promise<unknown>>();
  /** Latest committed record per item (`<key>#<generation>`). */
  private readonly items = new Map<string, SeenRecord>();
  /** Every committed record per item (`<key>#<generation>`), in commit order. */
  private readonly history = new Map<string, SeenRecord[]>();
  /** Declared deadline (virtual ms) of every item claim, by its fence (attemptId). */
  private readonly deadlineByFence = new Map<string, number>();
  /** Item key of every idempotency key an item was sent or looked up with. */
  private readonly itemOfKey = new Map<string, string>();
  private commitSeq = 0;
  /** The call's own checkpoint as last committed. */
  private callRecord: CheckpointRecord | null = null;
  private requestIndex = 0;
  private lookupIndex = 0;
  private final: string | null = null;
  private closed = false;

  constructor(
    private readonly scenario: BatchScenario,
    scheduler: ExplorerScheduler,
    private readonly raw: CheckpointStore,
  ) {
    this.sim = new Sim(scheduler);
    this.provider = new Provider(this.sim, scenario.tool.dedupesByKey, scenario.tool.keyRetentionMs);
    this.store = new ExplorerStore(
      raw,
      this.sim,
      { latencyMs: scenario.storeLatencyMs, faults: [], outage: null },
      { committed: (r) => this.committed(r), log: (line) => this.log(line) },
    );
    this.keys = Array.from({ length: scenario.items }, (_, i) => itemKeyOf(i));
  }

  async explore(): Promise<BatchScheduleReport> {
    this.sim.timer(0, 'start #1', () => this.startAttempt(1));
    try {
      await this.sim.run();
    } catch (error) {
      this.violate('harness', error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    }
    await this.checkEnd();
    let applied = 0;
    let refused = 0;
    for (const key of this.keys) {
      const stored = this.latest(key)?.record.result?.payload as ToolOutcome | undefined;
      if (stored?.ok === true) applied += 1;
      else if (stored !== undefined) refused += 1;
    }
    return {
      attempts: this.attempts.map((a) => ({
        n: a.n,
        startedAt: a.startedAt,
        liveAtStart: a.liveAtStart,
        crashedAt: a.crashedAt,
        timedOut: a.timedOut,
        end: a.end,
        requests: a.requests,
        callLevel: a.callLevel,
        lookups: a.lookups,
      })),
      effects: this.provider.effects.length,
      deduplicatedRepeats: this.provider.deduplicated,
      itemsApplied: applied,
      itemsRefused: refused,
      itemsUnsettled: this.keys.length - applied - refused,
      final: this.final,
      violations: this.violations,
      virtualMs: this.sim.now,
      trace: this.trace,
    };
  }

  /** Ends every attempt still blocked (killed workers, requests never answered), then closes the store. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.sim.closed = true;
    for (const kill of this.kills.splice(0)) kill();
    for (const a of this.attempts) if (a.end === null) a.env.cancel();
    for (let i = 0; i < 50 && this.running.size > 0; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
    await this.raw.close();
  }

  private log(line: string): void {
    this.trace.push(`t=${this.sim.now} ${line}`);
  }

  private violate(kind: BatchViolationKind, message: string): void {
    this.violations.push({ kind, message });
    this.log(`VIOLATION [${kind}] ${message}`);
  }

  // ----- Temporal: attempts, timeouts, retries -----

  private planFor(n: number): BatchAttemptPlan {
    return this.scenario.attempts[n - 1] ?? { crash: null, timeoutMs: 100_000_000 };
  }

  private input(): FencedToolInput {
    return { tenant: TENANT, callId: IDENTITY.callId, runChainId: IDENTITY.runChainId, toolName: TOOL_NAME, input: { recipients: this.keys } };
  }

  private startAttempt(n: number): void {
    if (this.closed) return;
    const plan = this.planFor(n);
    const env = new MockActivityEnvironment(
      {
        attempt: n,
        activityId: 'batch',
        activityType: 'runFencedTool',
        workflowExecution: { workflowId: IDENTITY.workflowId, runId: IDENTITY.runChainId },
        heartbeatTimeoutMs: 3_600_000,
      },
      { logger: QUIET },
    );
    const attempt: Attempt = {
      n,
      plan,
      env,
      startedAt: this.sim.now,
      liveAtStart: this.attempts.filter((a) => a.end === null && a.crashedAt === null).length,
      crashedAt: null,
      timedOut: false,
      end: null,
      requests: 0,
      lookups: 0,
      seen: new Map(),
      answered: new Set(),
      callLevel: null,
    };
    this.attempts.push(attempt);
    const crash = plan.crash === null ? '' : ` (dies at ${plan.crash.point} of ${plan.crash.item === 'call' ? 'the call' : `item ${plan.crash.item}`})`;
    this.log(`#${n} starts${crash}, timeout in ${plan.timeoutMs} ms`);
    const activities = createToolActivities({
      store: this.viewOf(attempt),
      tools: [this.tool(attempt)],
      clock: this.sim.clock,
      reconcileMarginMs: this.scenario.reconcileMarginMs,
      transientRetry: TRANSIENT_RETRY,
      hooks: { step: (point: FencePoint, fence: string) => this.step(attempt, point, fence) },
    });
    const run = (env.run(activities.runFencedTool, this.input()) as Promise<FencedToolResult>).then(
      (result) => this.settled(attempt, { ok: true, result }),
      (error: unknown) => this.settled(attempt, failureOf(error)),
    );
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
    this.sim.timer(plan.timeoutMs, `timeout #${n}`, () => this.timedOut(attempt));
  }

  /**
   * The store as `attempt` uses it: every record an answer shows the attempt (a read, a created or
   * existing record, a compare-and-swap that swapped) becomes the attempt's view of that item.
   */
  private viewOf(attempt: Attempt): CheckpointStore {
    const see = (record: CheckpointRecord | null | undefined): void => {
      if (record === null || record === undefined) return;
      const item = parseItemCallId(record.binding.callId, this.bindingCallId);
      if (item !== null) attempt.seen.set(`${item.key}#${item.generation}`, record.revision);
    };
    const store = this.store;
    return new Proxy(store, {
      get: (target, name, receiver) => {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const answer = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (name === 'createIfAbsent') see((answer as CreateResult).record);
          else if (name === 'get' || name === 'getByCall') see(answer as CheckpointRecord | null);
          else if (name === 'getMany') for (const r of answer as (CheckpointRecord | null)[]) see(r);
          else if (name === 'compareAndSwap' && answer === true) see(args[1] as CheckpointRecord);
          else if (name === 'writeGroup') {
            (answer as GroupWriteResult[]).forEach((result, i) => {
              const write = (args[0] as GroupWrite[])[i];
              if (result.kind === 'create') see(result.record);
              else if (result.swapped && write?.kind === 'cas') see(write.next);
            });
          }
          return answer;
        };
      },
    });
  }

  private current(): Attempt | undefined {
    return this.attempts[this.attempts.length - 1];
  }

  private settled(attempt: Attempt, end: BatchAttemptEnd): void {
    if (this.closed) return;
    attempt.end = end;
    this.log(
      `#${attempt.n} ${end.ok ? `returns ${end.result.source} ${JSON.stringify(end.result.outcome)}` : `fails ${end.type}${end.nonRetryable ? ' (non-retryable)' : ''}${end.nextRetryDelayMs === undefined ? '' : ` next retry in ${end.nextRetryDelayMs} ms`}: ${end.message}`}`,
    );
    this.checkAttemptEnd(attempt, end);
    if (this.final !== null || attempt !== this.current() || attempt.timedOut) return;
    if (end.ok) {
      this.finish(`ok (${end.result.source})`);
      return;
    }
    if (end.nonRetryable || attempt.n >= this.scenario.maxAttempts) {
      this.finish(end.type);
      return;
    }
    const delay = end.nextRetryDelayMs ?? Math.min(100 * 2 ** (attempt.n - 1), 100_000);
    this.sim.timer(delay, `start #${attempt.n + 1}`, () => this.startAttempt(attempt.n + 1));
  }

  private timedOut(attempt: Attempt): void {
    if (this.closed || attempt.end !== null || this.final !== null || attempt !== this.current()) return;
    attempt.timedOut = true;
    this.log(`#${attempt.n} times out (its worker keeps running unaware)`);
    if (attempt.n >= this.scenario.maxAttempts) this.finish('TIMEOUT_START_TO_CLOSE');
    else this.sim.timer(0, `start #${attempt.n + 1}`, () => this.startAttempt(attempt.n + 1));
  }

  private finish(final: string): void {
    this.final = final;
    this.log(`the run is told ${final}`);
  }

  // ----- crash points -----

  private step(attempt: Attempt, point: FencePoint, fence: string): Promise<void> {
    if (this.closed) return Promise.reject(new WorkerGone('the schedule is over'));
    const index = itemIndexOfFence(fence);
    const crash = attempt.plan.crash;
    if (crash !== null && attempt.crashedAt === null && crash.point === point && crash.item === (index ?? 'call'))
      return this.die(attempt, `${point} of ${index === null ? 'the call' : `item ${index}`}`);
    return this.sim.point(`#${attempt.n} ${index === null ? 'call' : `item ${index}`} ${point}`);
  }

  /** The worker dies here: the attempt never continues (its requests in flight may still land). */
  private die(attempt: Attempt, where: string): Promise<never> {
    attempt.crashedAt = where;
    this.log(`#${attempt.n} worker dies at ${where}`);
    return new Promise<never>((_, reject) => this.kills.push(() => reject(new WorkerGone('the worker was killed'))));
  }

  // ----- the tool and the provider -----

  private tool(attempt: Attempt): ToolDefinition<any> {
    const { tool } = this.scenario;
    return defineTool({
      name: TOOL_NAME,
      revision: 'v1',
      batch: true,
      input: z.object({ recipients: z.array(z.string()).min(1) }).strict(),
      callDeadlineMs: tool.callDeadlineMs,
      ...(tool.dedupesByKey ? { dedupesByKey: true, keyRetentionMs: tool.keyRetentionMs } : {}),
      execute: async (input: { recipients: string[] }, ctx: ToolContext) => {
        const report = await ctx.forEachItem!(
          input.recipients,
          (to) => to,
          (_to, item) => this.request(attempt, item),
          tool.groupSize === undefined ? undefined : { groupSize: tool.groupSize },
        );
        const items: ReportedItem[] = report.items.map((r) => ({ key: r.key, outcome: r.outcome }));
        return { output: { applied: report.applied, rejected: report.rejected, items } as unknown as JsonValue };
      },
      ...(tool.lookup ? { lookup: (ctx: ToolContext) => this.lookup(attempt, ctx) } : {}),
    });
  }

  private noteItem(ctx: ToolContext): { key: string; index: number } {
    const item = ctx.item;
    if (item === undefined) {
      this.violate('harness', `a request without ctx.item (key …${ctx.idempotencyKey.slice(-6)})`);
      return { key: '?', index: -1 };
    }
    const known = this.itemOfKey.get(ctx.idempotencyKey);
    if (known !== undefined && known !== item.key) this.violate('harness', `items ${known} and ${item.key} were handed the same idempotency key`);
    this.itemOfKey.set(ctx.idempotencyKey, item.key);
    return item;
  }

  /**
   * One item request, as `./explore.ts` models a call's: it lands `latencyMs` after it was sent
   * unless its abort time (the item claim's declared deadline, or now when sent after it) plus the
   * margin comes first; a transient failure or a dropped request never reaches the provider.
   */
  private request(attempt: Attempt, ctx: ToolContext): Promise<{ output: JsonValue; receipt: JsonValue }> {
    if (this.closed) return Promise.reject(new ToolError('unknown-outcome', 'the schedule is over'));
    attempt.requests += 1;
    const { key, index } = this.noteItem(ctx);
    this.checkOrder(attempt, index, ctx.attemptId);
    const plan = this.scenario.requests[this.requestIndex++ % this.scenario.requests.length]!;
    const declared = this.deadlineByFence.get(ctx.attemptId);
    if (declared === undefined) this.violate('harness', `#${attempt.n} applied item ${index} under fence ${ctx.attemptId}, which never claimed it`);
    const deadlineAt = declared ?? this.sim.now;
    const abortAt = Math.max(deadlineAt, this.sim.now);
    const landBy = abortAt + this.scenario.reconcileMarginMs;
    const landAt = this.sim.now + plan.latencyMs;
    const reaches = plan.answer !== 'transient' && plan.answer !== 'dropped';
    const lands = reaches && landAt < landBy;
    const who = `#${attempt.n} item ${index}`;
    this.log(
      `${who} (${key}) sends its request (key …${ctx.idempotencyKey.slice(-6)}); ${lands ? `lands at ${landAt}` : 'never lands'}, answer ${plan.answer}; deadline ${deadlineAt}`,
    );
    return new Promise((resolve, reject) => {
      let done = false;
      const onAbort = (): void => answer(() => reject(new ToolError('unknown-outcome', 'aborted')));
      const answer = (fn: () => void): void => {
        if (done) return;
        done = true;
        ctx.signal.removeEventListener('abort', onAbort);
        fn();
      };
      if (lands) {
        this.sim.timer(plan.latencyMs, `${who} request lands`, () => {
          const before = this.provider.deduplicated;
          const effect = this.provider.land(ctx.idempotencyKey, ctx.attemptId, plan.answer === 'rejected');
          this.log(`${who}'s request lands: ${this.provider.deduplicated > before ? 'deduplicated to ' : ''}${effect === null ? 'refused' : `effect ${effect.n}`}`);
          if (plan.answer === 'lost' || this.closed) return;
          void this.sim.point(`${who} answer`, plan.answerDelayMs).then(() =>
            answer(() => {
              if (plan.answer === 'reset') return reject(new ToolError('unknown-outcome', 'the connection was reset after the request was sent'));
              attempt.answered.add(index);
              if (effect === null) reject(new ToolError('rejected', `the provider refused ${key}`, undefined, 'BUSINESS_REJECTION'));
              else resolve(effect.result);
            }),
          );
        });
      } else if (!reaches) {
        void this.sim.point(`${who} fails`, plan.latencyMs + plan.answerDelayMs).then(() =>
          answer(() => {
            if (plan.answer === 'dropped') return reject(new ToolError('unknown-outcome', `the connection was lost sending to ${key}`));
            // A 503 proves nothing was applied (an answer in hand). The fence retries it after a real 0 ms timer: hold the schedule until that retry has been sent.
            attempt.answered.add(index);
            this.sim.inflight += 1;
            setTimeout(() => (this.sim.inflight -= 1), 3);
            reject(new ToolError('transient', `503 from the provider for ${key}`));
          }),
        );
      }
      void this.sim
        .point(`${who} deadline`, abortAt - this.sim.now)
        .then(() => answer(() => reject(new ToolError('unknown-outcome', `aborted at the item's deadline (${deadlineAt})`))));
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      const crash = attempt.plan.crash;
      if (crash !== null && attempt.crashedAt === null && crash.point === 'mid-request' && crash.item === index) {
        answer(() => undefined);
        void this.die(attempt, `mid-request of item ${index}`).catch(reject);
      }
    });
  }

  private async lookup(attempt: Attempt, ctx: ToolContext): Promise<{ found: true; output: JsonValue; receipt: JsonValue } | { found: false }> {
    if (this.closed) throw new Error('the schedule is over');
    attempt.lookups += 1;
    const { index } = this.noteItem(ctx);
    const plan = this.scenario.lookups[this.lookupIndex++ % this.scenario.lookups.length]!;
    const who = `#${attempt.n} item ${index}`;
    await this.sim.point(`${who} lookup reads`, plan.readDelayMs);
    const effect = this.provider.find(ctx.idempotencyKey);
    this.log(`${who}'s lookup reads the provider: ${plan.fails ? 'error' : effect === undefined ? 'nothing' : `effect ${effect.n}`}`);
    await this.sim.point(`${who} lookup answer`, plan.answerDelayMs);
    if (plan.fails) throw new Error('the lookup service answered 503');
    return effect === undefined ? { found: false } : { found: true, output: effect.result.output, receipt: effect.result.receipt };
  }

  // ----- the store observer and the rules -----

  private committed(record: CheckpointRecord): void {
    this.commitSeq += 1;
    if (record.binding.namespace !== NAMESPACE) return this.violate('harness', `a checkpoint in another namespace was written: ${record.binding.namespace}`);
    if (record.binding.callId === this.bindingCallId) {
      this.callRecord = record;
      this.log(`store: call → ${record.status} r${record.revision}`);
      return;
    }
    const item = parseItemCallId(record.binding.callId, this.bindingCallId);
    if (item === null) return this.violate('harness', `a checkpoint for an unknown call was written: ${record.binding.callId}`);
    if (record.execution?.deadlineAt != null) this.deadlineByFence.set(record.execution.attemptId, Date.parse(record.execution.deadlineAt) - EPOCH_MS);
    const id = `${item.key}#${item.generation}`;
    const before = this.items.get(id);
    const payload = record.result?.payload ?? null;
    const previous = before?.record.result?.payload ?? null;
    if (previous !== null && !isDeepStrictEqual(previous, payload))
      this.violate('stored-result-changed', `${id}: stored result ${JSON.stringify(previous)} became ${JSON.stringify(payload)} (${record.status} r${record.revision})`);
    const settledSeq = before?.settledSeq ?? (payload !== null ? this.commitSeq : null);
    const seen = { record, seq: this.commitSeq, settledSeq };
    this.items.set(id, seen);
    this.history.set(id, [...(this.history.get(id) ?? []), seen]);
    this.log(
      `store: ${id} → ${record.status} r${record.revision}${record.execution === null ? '' : ` fence …${record.execution.attemptId.slice(-12)}`}${payload === null ? '' : ` ${JSON.stringify(payload)}`}`,
    );
  }

  /** The latest generation's record of item `key`. */
  private latest(key: string): SeenRecord | undefined {
    let found: SeenRecord | undefined;
    for (let generation = 1; ; generation += 1) {
      const seen = this.items.get(`${key}#${generation}`);
      if (seen === undefined) return found;
      found = seen;
    }
  }

  /** Item `id` (`<key>#<generation>`) as `attempt` last saw it in a store answer, or undefined. */
  private asSeenBy(attempt: Attempt, id: string): SeenRecord | undefined {
    const revision = attempt.seen.get(id);
    if (revision === undefined) return undefined;
    const list = this.history.get(id) ?? [];
    for (let i = list.length - 1; i >= 0; i -= 1) if (list[i]!.record.revision === revision) return list[i];
    return undefined;
  }

  /** Item `index` is sent by `attempt`: item `index - 1` must be settled as the attempt last saw the store (or, in a group, claimed by it with its answer in hand). */
  private checkOrder(attempt: Attempt, index: number, fence: string): void {
    if (index <= 0) return;
    const previousKey = this.keys[index - 1]!;
    // Item n - 1 as this attempt last saw it (its latest generation the attempt saw); a later change by another attempt is not in its view.
    let previous: SeenRecord | undefined;
    for (let generation = 1; attempt.seen.has(`${previousKey}#${generation}`); generation += 1) previous = this.asSeenBy(attempt, `${previousKey}#${generation}`);
    if (previous?.record.result != null) return;
    const groupSize = this.scenario.tool.groupSize ?? (this.scenario.tool.dedupesByKey ? 100 : 1);
    const previousFence = fence.replace(/\/i(\d+)-(\d+)$/, (_, generation: string) => `/i${generation}-${index - 1}`);
    const ownClaim = previous?.record.status === 'executing' && previous.record.execution?.attemptId === previousFence;
    if (groupSize > 1 && ownClaim && attempt.answered.has(index - 1)) return;
    this.violate(
      'item-out-of-order',
      `#${attempt.n} sent item ${index} while item ${index - 1} was ${previous === undefined ? 'never written' : `${previous.record.status}${previous.record.execution === null ? '' : ` under …${previous.record.execution.attemptId.slice(-12)}`}`}${groupSize > 1 ? `; groupSize ${groupSize}, own claim ${ownClaim}, answer in hand ${attempt.answered.has(index - 1)}` : ''}`,
    );
  }

  /** An attempt's end: a result with every item settled and reported as stored, or RECONCILE_PENDING / OUTCOME_UNKNOWN naming an item not settled as far as the attempt could see. */
  private checkAttemptEnd(attempt: Attempt, end: BatchAttemptEnd): void {
    const who = `#${attempt.n}`;
    if (end.ok) {
      const { outcome } = end.result;
      if (!outcome.ok) return this.violate('attempt-end', `${who} returned an error result ${JSON.stringify(outcome)}`);
      const reported = (outcome.output as { items?: ReportedItem[] } | null)?.items ?? [];
      if (reported.length !== this.keys.length || reported.some((r, i) => r.key !== this.keys[i])) {
        return this.violate('attempt-end', `${who} returned ${reported.length} items (${reported.map((r) => r.key).join(', ')}), the batch has ${this.keys.length}`);
      }
      for (const r of reported) {
        const stored = this.latest(r.key);
        if (stored === undefined || stored.settledSeq === null) {
          this.violate(
            'attempt-end',
            `${who} returned ${end.result.source} with ${r.key} reported ${JSON.stringify(r.outcome)}, but its checkpoint is ${stored?.record.status ?? 'missing'}`,
          );
        } else if (!isDeepStrictEqual(stored.record.result!.payload, r.outcome)) {
          this.violate('reported-not-stored', `${who} reported ${r.key} as ${JSON.stringify(r.outcome)}, its stored outcome is ${JSON.stringify(stored.record.result!.payload)}`);
        }
      }
      return;
    }
    const item = (end.details as { item?: { key?: unknown; generation?: unknown } } | undefined)?.item;
    if (typeof item?.key === 'string' && typeof item.generation === 'number') {
      const latest = this.items.get(`${item.key}#${item.generation}`);
      const seen = this.asSeenBy(attempt, `${item.key}#${item.generation}`);
      // The item as the attempt last saw it is claimed (by this attempt or another) and has no result.
      if ((end.type === 'RECONCILE_PENDING' || end.type === 'OUTCOME_UNKNOWN') && (seen?.record.status === 'executing' || seen?.record.status === 'uncertain')) return;
      // Or this attempt held the item's claim and another attempt took it over (and may have settled it since): retryable, the next attempt settles it.
      const own = (r: SeenRecord): boolean => r.record.execution?.attemptId.startsWith(`attempt-${attempt.n}-`) === true;
      const heldByThis = (this.history.get(`${item.key}#${item.generation}`) ?? []).some(own);
      if (end.type === 'RECONCILE_PENDING' && heldByThis && seen !== undefined && seen.record.execution !== null && !own(seen)) {
        attempt.callLevel = 'item taken over';
        return;
      }
      return this.violate(
        'attempt-end',
        `${who} failed ${end.type} naming ${item.key} (generation ${item.generation}), whose checkpoint it last saw ${seen?.record.status ?? 'missing'} (now ${latest?.record.status ?? 'missing'}${latest?.record.execution == null ? '' : ` under …${latest.record.execution.attemptId.slice(-12)}`}): ${end.message}`,
      );
    }
    // A failure of the call's own fence, naming no item: allowed when the call was taken over by a later attempt (this one is superseded), or when nothing of the batch ran under this attempt.
    const call = this.callRecord;
    const superseded = call?.execution != null && !call.execution.attemptId.startsWith(`attempt-${attempt.n}-`);
    const itemsTouched =
      attempt.requests > 0 || [...this.history.values()].some((list) => list.some((r) => r.record.execution?.attemptId.startsWith(`attempt-${attempt.n}-`) === true));
    if ((end.type === 'RECONCILE_PENDING' || end.type === 'FENCE_CONFLICT') && (superseded || !itemsTouched)) {
      attempt.callLevel = superseded ? 'superseded' : 'before any item';
      return;
    }
    this.violate(
      'attempt-end',
      `${who} failed ${end.type}${item === undefined ? ' naming no item' : ` naming ${JSON.stringify(item)}`} (the call is ${call?.status ?? 'missing'}${call?.execution == null ? '' : ` under …${call.execution.attemptId.slice(-12)}`}): ${end.message}`,
    );
  }

  /** End of schedule: no item applied twice; an applied item stored as that effect. */
  private async checkEnd(): Promise<void> {
    const effects = new Map<string, Effect[]>();
    for (const e of this.provider.effects) {
      const key = this.itemOfKey.get(e.key) ?? `?${e.key}`;
      effects.set(key, [...(effects.get(key) ?? []), e]);
    }
    for (const [key, list] of effects) {
      if (list.length > 1)
        this.violate('duplicate-item-effect', `${key}: ${list.length} effects (${list.map((e) => `effect ${e.n} at t=${e.at} under key …${e.key.slice(-6)}`).join(', ')})`);
      const stored = this.latest(key)?.record.result?.payload as ToolOutcome | undefined;
      if (stored === undefined) continue;
      const matches = list.some((e) => isDeepStrictEqual(stored, { ok: true, output: e.result.output, receipt: e.result.receipt }));
      if (!matches) this.violate('lost-item-effect', `${key}: effect ${list[0]!.n} was applied, yet its stored result is ${JSON.stringify(stored)}`);
    }
    // The store agrees with what the observer saw.
    for (const key of this.keys) {
      const seen = this.latest(key);
      if (seen === undefined) continue;
      const row = await this.raw.get(seen.record.binding);
      if (row === null || row.revision !== seen.record.revision)
        this.violate('harness', `${key}: the store holds r${row?.revision ?? '-'}, the observer saw r${seen.record.revision} last`);
    }
  }
}

/** The item index of an item fence (`<call attemptId>/i<generation>-<index>`), or null for the call's own fence. */
function itemIndexOfFence(fence: string): number | null {
  const m = /\/i\d+-(\d+)$/.exec(fence);
  return m === null ? null : Number(m[1]);
}

/** `["ttc/item/1",<call binding callId>,<key>,<generation>]` → key and generation, or null. */
function parseItemCallId(callId: string, parent: string): { key: string; generation: number } | null {
  try {
    const parsed = JSON.parse(callId) as unknown;
    if (Array.isArray(parsed) && parsed[0] === 'ttc/item/1' && parsed[1] === parent && typeof parsed[2] === 'string' && typeof parsed[3] === 'number')
      return { key: parsed[2], generation: parsed[3] };
  } catch {
    // not an item
  }
  return null;
}

/** What Temporal makes of an error thrown by an attempt (keeps the failure's `details[0]`). */
function failureOf(error: unknown): BatchAttemptEnd {
  if (error instanceof ApplicationFailure) {
    return {
      ok: false,
      type: error.type ?? 'Error',
      nonRetryable: error.nonRetryable === true,
      nextRetryDelayMs: error.nextRetryDelay === undefined || error.nextRetryDelay === null ? undefined : msToNumber(error.nextRetryDelay),
      message: error.message,
      details: error.details?.[0],
    };
  }
  if (error instanceof CancelledFailure)
    return { ok: false, type: 'CancelledFailure', nonRetryable: true, nextRetryDelayMs: undefined, message: error.message, details: error.details?.[0] };
  const e = error instanceof Error ? error : new Error(String(error));
  return { ok: false, type: e.name, nonRetryable: false, nextRetryDelayMs: undefined, message: e.message, details: undefined };
}
