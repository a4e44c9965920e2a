/**
 * One explored schedule: 2–4 (up to 10) overlapping attempts of one tool call through the real
 * activity code (`createToolActivities(...).runFencedTool` in a `MockActivityEnvironment` per
 * attempt) against a real SQLite store, in the model world of `./world.ts`; Temporal's part
 * (timeouts that start the next attempt while the last one still runs, retries after
 * `nextRetryDelay`, at most one accepted completion) and the workflow's reading of the outcome
 * (`NOTHING_APPLIED_CODES`) are modelled here. Then the invariants of
 * docs/protocol.md#overlapping-attempts to #call-identity:
 *
 * - effects per call ≤ 1 (a provider without key dedupe; a deduplicating provider that forgot the key counts a new effect too);
 * - a stored result never changes;
 * - a call with a claimed checkpoint is never reported nothing-applied;
 * - a result returned to a run (by any attempt, or a person's resolution) is the one stored for that run's call;
 * - no lost result: a call with an effect is not reported nothing-applied, and its stored result is that effect's;
 * - no needless pause: the attempt Temporal waits for never ends the call with FENCE_CONFLICT (a lost fence
 *   is a live competitor: retryable, the next attempt delivers or reconciles).
 */
import { isDeepStrictEqual } from 'node:util';
import { ApplicationFailure } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError, type ToolContext, type ToolDefinition } from '../../../src/activities';
import type { FencedToolInput, FencedToolResult, ResolveToolCallInput, ResolveToolCallResult, ToolOutcome } from '../../../src/activities/contract/contract';
import type { FencePoint } from '../../../src/activities/fence/crash-points';
import { callBindingId } from '../../../src/checkpoint/call-identity';
import type { CheckpointRecord, JsonValue } from '../../../src/checkpoint/types';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { NOTHING_APPLIED_CODES } from '../../../src/workflows/common/failures';
import type { AttemptPlan, Scenario, WorkerKind } from './scenario';
import { EPOCH_MS, ExplorerStore, Provider, Sim, type Effect } from './world';

/** The scheduler surface the explorer uses (fast-check's `fc.scheduler()`, or {@link fifoScheduler} for the named scenarios). */
export type ExplorerScheduler = ConstructorParameters<typeof Sim>[0];

export const OUTCOME_KINDS = ['executed', 'store', 'lookup', 'same-key-repeat', 'paused', 'reconcile-pending', 'nothing-applied'] as const;
export type OutcomeKind = (typeof OUTCOME_KINDS)[number];

export const VIOLATION_KINDS = [
  'duplicate-effect',
  'stored-result-changed',
  'nothing-applied-with-claim',
  'result-not-stored-one',
  'lost-result',
  'needless-pause',
  'harness',
] as const;
export type ViolationKind = (typeof VIOLATION_KINDS)[number];

export interface Violation {
  readonly kind: ViolationKind;
  readonly message: string;
}

/** What one attempt ended with. */
export type AttemptEnd =
  | { readonly ok: true; readonly result: FencedToolResult }
  | { readonly ok: false; readonly type: string; readonly nonRetryable: boolean; readonly nextRetryDelayMs: number | undefined; readonly message: string };

export interface AttemptReport {
  readonly call: string;
  readonly n: number;
  readonly worker: WorkerKind;
  readonly startedAt: number;
  /** Earlier attempts of the call still running (not ended, worker alive) when this one started. */
  readonly liveAtStart: number;
  readonly crashedAt: string | null;
  readonly timedOut: boolean;
  readonly end: AttemptEnd | null;
  readonly executes: number;
  readonly lookups: number;
  readonly points: readonly string[];
}

/** The run's view of the call: what the workflow was finally told. */
export interface FinalOutcome {
  readonly kind: OutcomeKind;
  /** Failure type for a failure (OUTCOME_UNKNOWN, RECONCILE_PENDING, TIMEOUT_START_TO_CLOSE, …). */
  readonly type: string | null;
  readonly at: number;
  /** The attempt whose completion Temporal accepted (null for a timeout). */
  readonly by: number | null;
}

export interface ScheduleReport {
  readonly final: FinalOutcome | null;
  readonly neighbourFinal: FinalOutcome | null;
  readonly attempts: readonly AttemptReport[];
  readonly effects: number;
  readonly duplicates: number;
  readonly deduplicatedRepeats: number;
  readonly resolution: 'applied' | 'absent' | `failed:${string}` | null;
  readonly storeCalls: number;
  readonly storeFaults: number;
  /** Answers a live attempt received for an effect whose result the store never got (the run paused instead; not a violation). */
  readonly knownResultsNotStored: number;
  readonly violations: readonly Violation[];
  readonly virtualMs: number;
  readonly steps: number;
  readonly trace: readonly string[];
}

const TENANT = 'acme';
const NAMESPACE = `default/${TENANT}`;
const TOOL_NAME = 'create_ticket';
const MODEL_INPUT = { title: 'printer on fire' } as const;

/** The activity logger would print every failed attempt. */
const QUIET = new DefaultLogger('ERROR', () => undefined);

/** Raised into the fence when the harness kills a crashed worker for good (after the schedule). */
class WorkerGone extends Error {}

interface CallIdentity {
  readonly workflowId: string;
  readonly callId: string;
  readonly runChainId: string;
}

interface Call {
  readonly name: 'main' | 'neighbour';
  readonly identity: CallIdentity;
  readonly bindingCallId: string;
  readonly keys: Set<string>;
  readonly attempts: Attempt[];
  readonly planFor: (n: number) => AttemptPlan;
  readonly maxAttempts: number;
  final: FinalOutcome | null;
  /** Every success returned to the run: by attempts (current or not) and by a resolution. */
  readonly returned: Array<{ readonly by: string; readonly outcome: ToolOutcome }>;
  /** First time a committed record of this call was past `ready` (virtual ms). */
  claimedAt: number | null;
  /** Every fence that held the call's claim (`executing` under it was committed). */
  readonly claimFences: Set<string>;
  /** Claims a release covered (releaseExecution: its holder's requests proven not applied, and every claim before it), and the fence of the last executing record seen. */
  readonly releasedFences: Set<string>;
  lastFence: string | null;
  /** The first stored result (virtual ms, payload). */
  stored: { readonly at: number; readonly payload: JsonValue } | null;
  resolution: ScheduleReport['resolution'];
}

interface Attempt {
  readonly call: Call;
  readonly n: number;
  readonly plan: AttemptPlan;
  readonly env: MockActivityEnvironment;
  readonly startedAt: number;
  readonly liveAtStart: number;
  fence: string | null;
  crashedAt: string | null;
  timedOut: boolean;
  cancelled: boolean;
  end: AttemptEnd | null;
  executes: number;
  lookups: number;
  readonly points: string[];
  /** Effects whose ok answer this attempt received. */
  readonly known: Effect[];
}

/** A scheduler that releases tasks in the order they were scheduled: the named scenarios' deterministic schedule. */
export function fifoScheduler(): ExplorerScheduler {
  const queue: Array<() => void> = [];
  return {
    schedule<T>(task: Promise<T>): Promise<T> {
      return new Promise<void>((release) => queue.push(release)).then(() => task);
    },
    count: () => queue.length,
    async waitNext(count: number): Promise<void> {
      for (let i = 0; i < count; i += 1) {
        queue.shift()?.();
        await Promise.resolve();
      }
    },
  } as unknown as ExplorerScheduler;
}

/** Options of {@link runSchedule}. */
export interface RunOptions {
  /** Store URL; a private in-memory SQLite database per schedule by default. */
  readonly storeUrl?: string;
}

/** Runs one schedule of `scenario` and checks the invariants. Never throws for a violation: they are in the report. */
export async function runSchedule(scenario: Scenario, scheduler: ExplorerScheduler, options: RunOptions = {}): Promise<ScheduleReport> {
  const raw = await openCheckpointStore(options.storeUrl ?? 'sqlite::memory:');
  const world = new World(scenario, scheduler, raw);
  try {
    return await world.explore();
  } finally {
    await world.shutdown();
  }
}

class World {
  readonly sim: Sim;
  readonly provider: Provider;
  readonly store: ExplorerStore;
  readonly trace: string[] = [];
  private readonly calls: Call[] = [];
  private readonly claimedAtByFence = new Map<string, number>();
  private readonly attemptByFence = new Map<string, Attempt>();
  private readonly kills: Array<() => void> = [];
  private readonly violations: Violation[] = [];
  private readonly running = new Set<Promise<unknown>>();
  private requestIndex = 0;
  private lookupIndex = 0;
  private closed = false;

  constructor(
    private readonly scenario: Scenario,
    scheduler: ExplorerScheduler,
    private readonly raw: CheckpointStore,
  ) {
    this.sim = new Sim(scheduler);
    this.provider = new Provider(this.sim, scenario.tool.dedupesByKey, scenario.tool.keyRetentionMs);
    this.store = new ExplorerStore(
      raw,
      this.sim,
      { latencyMs: scenario.storeLatencyMs, delays: scenario.storeDelays, failures: scenario.storeFailures, faults: scenario.storeFaults, outage: scenario.outage },
      { committed: (r) => this.committed(r), log: (line) => this.log(line) },
    );
  }

  async explore(): Promise<ScheduleReport> {
    const main = this.addCall(
      'main',
      { workflowId: 'a/b', callId: 'c', runChainId: 'chain-1' },
      (n) => this.scenario.attempts[(n - 1) % this.scenario.attempts.length]!,
      this.scenario.maxAttempts,
    );
    this.sim.timer(0, 'start main#1', () => this.startAttempt(main, 1));
    let neighbour: Call | null = null;
    const spec = this.scenario.neighbour;
    if (spec !== null) {
      const identity = spec.kind === 'slash' ? { workflowId: 'a', callId: 'b/c', runChainId: 'chain-1' } : { workflowId: 'a/b', callId: 'c', runChainId: 'chain-2' };
      const steady: AttemptPlan = { worker: 'same', crashAt: null, timeoutMs: 10_000_000, cancelOnTimeout: false };
      const call = this.addCall('neighbour', identity, () => steady, this.scenario.maxAttempts);
      neighbour = call;
      this.sim.timer(spec.startAt, 'start neighbour#1', () => this.startAttempt(call, 1));
    }
    try {
      await this.sim.run();
    } catch (error) {
      this.violations.push({ kind: 'harness', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    }
    for (const call of this.calls) await this.check(call);
    for (const match of this.store.unmatchedRules()) this.violations.push({ kind: 'harness', message: `the scenario's store rule "${match}" never met its operation` });
    const effects = this.provider.effects.length;
    const perCall = this.calls.map((c) => this.provider.effectsOf(c.keys).length);
    return {
      final: main.final,
      neighbourFinal: neighbour?.final ?? null,
      attempts: this.calls.flatMap((c) =>
        c.attempts.map((a) => ({
          call: c.name,
          n: a.n,
          worker: a.plan.worker,
          startedAt: a.startedAt,
          liveAtStart: a.liveAtStart,
          crashedAt: a.crashedAt,
          timedOut: a.timedOut,
          end: a.end,
          executes: a.executes,
          lookups: a.lookups,
          points: a.points,
        })),
      ),
      effects,
      duplicates: perCall.reduce((sum, n) => sum + Math.max(0, n - 1), 0),
      deduplicatedRepeats: this.provider.deduplicated,
      resolution: main.resolution,
      storeCalls: this.store.calls,
      storeFaults: this.store.faultsInjected,
      knownResultsNotStored: this.knownResultsNotStored(),
      violations: this.violations,
      virtualMs: this.sim.now,
      steps: this.sim.steps,
      trace: this.trace,
    };
  }

  /** Ends every attempt still blocked (crashed workers, requests never answered) so nothing outlives the schedule, then closes the store. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.sim.closed = true;
    for (const kill of this.kills.splice(0)) kill();
    for (const call of this.calls) for (const a of call.attempts) if (a.end === null && !a.cancelled) a.env.cancel();
    for (let i = 0; i < 50 && this.running.size > 0; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
    await this.raw.close();
  }

  private log(line: string): void {
    this.trace.push(`t=${this.sim.now} ${line}`);
  }

  private addCall(name: Call['name'], identity: CallIdentity, planFor: (n: number) => AttemptPlan, maxAttempts: number): Call {
    const call: Call = {
      name,
      identity,
      bindingCallId: callBindingId(identity),
      keys: new Set(),
      attempts: [],
      planFor,
      maxAttempts,
      final: null,
      returned: [],
      claimedAt: null,
      claimFences: new Set(),
      releasedFences: new Set(),
      lastFence: null,
      stored: null,
      resolution: null,
    };
    this.calls.push(call);
    return call;
  }

  private input(call: Call): FencedToolInput {
    return { tenant: TENANT, callId: call.identity.callId, runChainId: call.identity.runChainId, toolName: TOOL_NAME, input: MODEL_INPUT };
  }

  private environment(call: Call, attempt: number, activityId = `${call.name}-tool`): MockActivityEnvironment {
    return new MockActivityEnvironment(
      {
        attempt,
        activityId,
        activityType: 'runFencedTool',
        workflowExecution: { workflowId: call.identity.workflowId, runId: call.identity.runChainId },
        // Long, so the fence's real-time heartbeat interval never fires during a schedule.
        heartbeatTimeoutMs: 3_600_000,
        // Temporal's retry policy as modelled here: attempt maxAttempts is the last; no schedule-to-close bound.
        retryPolicy: { maximumAttempts: call.maxAttempts },
        scheduleToCloseTimeoutMs: 0,
      },
      { logger: QUIET },
    );
  }

  // ----- Temporal: attempts, timeouts, retries -----

  private startAttempt(call: Call, n: number): void {
    if (this.closed) return;
    const plan = call.planFor(n);
    const attempt: Attempt = {
      call,
      n,
      plan,
      env: this.environment(call, n),
      startedAt: this.sim.now,
      liveAtStart: call.attempts.filter((a) => a.end === null && a.crashedAt === null).length,
      fence: null,
      crashedAt: null,
      timedOut: false,
      cancelled: false,
      end: null,
      executes: 0,
      lookups: 0,
      points: [],
      known: [],
    };
    call.attempts.push(attempt);
    this.log(`${call.name}#${n} starts on worker ${plan.worker}${plan.crashAt === null ? '' : ` (dies at ${plan.crashAt})`}, timeout in ${plan.timeoutMs} ms`);
    const activities = createToolActivities({
      store: this.store,
      tools: this.toolsFor(attempt),
      clock: this.sim.clock,
      reconcileMarginMs: this.scenario.reconcileMarginMs,
      // One request per attempt: a transient answer is left to the next attempt (no real-time backoff inside a schedule).
      transientRetry: { initialIntervalMs: 1, maximumIntervalMs: 1, maximumAttempts: 1 },
      hooks: { step: (point: FencePoint, fence: string) => this.step(attempt, point, fence) },
    });
    const run = (attempt.env.run(activities.runFencedTool, this.input(call)) as Promise<FencedToolResult>).then(
      (result) => this.settled(attempt, { ok: true, result }),
      (error: unknown) => this.settled(attempt, failureOf(error)),
    );
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
    this.sim.timer(plan.timeoutMs, `timeout ${call.name}#${n}`, () => this.timedOut(attempt));
  }

  private current(call: Call): Attempt | undefined {
    return call.attempts[call.attempts.length - 1];
  }

  private settled(attempt: Attempt, end: AttemptEnd): void {
    if (this.closed) return;
    attempt.end = end;
    const { call } = attempt;
    this.log(
      `${call.name}#${attempt.n} ${end.ok ? `returns ${end.result.source} ${JSON.stringify(end.result.outcome)}` : `fails ${end.type}${end.nonRetryable ? ' (non-retryable)' : ''}${end.nextRetryDelayMs === undefined ? '' : ` next retry in ${end.nextRetryDelayMs} ms`}: ${end.message}`}`,
    );
    if (end.ok) call.returned.push({ by: `attempt ${attempt.n}${attempt.timedOut ? ' (timed out)' : ''}`, outcome: end.result.outcome });
    // Temporal accepts a completion only from the current attempt, and none after it timed out.
    if (call.final !== null || attempt !== this.current(call) || attempt.timedOut) return;
    if (!end.ok && end.type === 'FENCE_CONFLICT' && end.nonRetryable) {
      this.violations.push({
        kind: 'needless-pause',
        message: `${call.name}#${attempt.n}, the attempt Temporal waits for, ended the call with a final FENCE_CONFLICT: ${end.message}`,
      });
    }
    if (end.ok) {
      this.finish(call, { kind: end.result.source as OutcomeKind, type: null, at: this.sim.now, by: attempt.n });
      return;
    }
    if (end.nonRetryable || attempt.n >= call.maxAttempts) {
      this.finish(call, { kind: classify(end.type), type: end.type, at: this.sim.now, by: attempt.n });
      return;
    }
    this.retry(call, attempt.n, end.nextRetryDelayMs);
  }

  private timedOut(attempt: Attempt): void {
    const { call } = attempt;
    if (this.closed || attempt.end !== null || call.final !== null || attempt !== this.current(call)) return;
    attempt.timedOut = true;
    if (attempt.plan.cancelOnTimeout && attempt.crashedAt === null) {
      attempt.cancelled = true;
      attempt.env.cancel();
    }
    this.log(`${call.name}#${attempt.n} times out${attempt.cancelled ? ' (its worker is told to cancel)' : ''}`);
    if (attempt.n >= call.maxAttempts) this.finish(call, { kind: 'paused', type: 'TIMEOUT_START_TO_CLOSE', at: this.sim.now, by: null });
    else this.retry(call, attempt.n, undefined);
  }

  private retry(call: Call, n: number, nextRetryDelayMs: number | undefined): void {
    const backoff = Math.min(this.scenario.initialIntervalMs * 2 ** (n - 1), 100_000);
    const delay = nextRetryDelayMs ?? backoff;
    this.sim.timer(delay, `start ${call.name}#${n + 1}`, () => this.startAttempt(call, n + 1));
  }

  private finish(call: Call, final: FinalOutcome): void {
    call.final = final;
    this.log(`${call.name}: the run is told ${final.kind}${final.type === null ? '' : ` (${final.type})`}`);
    const paused = final.kind === 'paused' || final.kind === 'reconcile-pending';
    if (paused && call.name === 'main' && this.scenario.resolution !== null) {
      this.sim.timer(this.scenario.resolution.delayMs, 'a person resolves', () => {
        const run = this.resolve(call);
        this.running.add(run);
        void run.finally(() => this.running.delete(run));
      });
    }
  }

  /** A person looks the call up at the provider: applied with the provider's result when it has the effect, else absent (the workflow reruns under a new call id; not explored). */
  private async resolve(call: Call): Promise<void> {
    const effect = this.provider.effectsOf(call.keys)[0];
    if (effect === undefined) {
      call.resolution = 'absent';
      this.log(`${call.name}: a person finds no effect and resolves absent`);
      return;
    }
    const activities = createToolActivities({
      store: this.store,
      tools: [this.tool({ call, n: 0 } as Attempt, 'same')],
      clock: this.sim.clock,
      reconcileMarginMs: this.scenario.reconcileMarginMs,
    });
    const result: ToolOutcome = { ok: true, output: effect.result.output, receipt: effect.result.receipt };
    // Temporal retries the resolve activity (1 s doubling to 60 s, 12 attempts: outlasts any explored outage).
    for (let attempt = 1; attempt <= 12 && !this.closed; attempt += 1) {
      const env = this.environment(call, attempt, 'resolve');
      try {
        const input: ResolveToolCallInput = { ...this.input(call), resolution: 'applied', result, reason: `the provider shows effect ${effect.n} for the call's key` };
        const resolved = (await env.run(activities.resolveToolCall, input)) as ResolveToolCallResult;
        call.returned.push({ by: 'resolution', outcome: resolved.outcome });
        call.resolution = 'applied';
        this.log(`${call.name}: resolved applied, the run gets ${JSON.stringify(resolved.outcome)}`);
        return;
      } catch (error) {
        const end = failureOf(error);
        if (end.ok) return;
        this.log(`${call.name}: resolution attempt ${attempt} fails ${end.type}: ${end.message}`);
        if (end.nonRetryable) {
          call.resolution = `failed:${end.type}`;
          return;
        }
        await this.sim.point('resolution retry', Math.min(1_000 * 2 ** (attempt - 1), 60_000));
      }
    }
    call.resolution ??= 'failed:RETRIES_EXHAUSTED';
  }

  // ----- the fence's steps (crash points) -----

  private step(attempt: Attempt, point: FencePoint, fence: string): Promise<void> {
    if (this.closed) return Promise.reject(new WorkerGone('the schedule is over'));
    if (attempt.fence === null) {
      attempt.fence = fence;
      this.attemptByFence.set(fence, attempt);
    }
    attempt.points.push(point);
    if (attempt.plan.crashAt === point) return this.die(attempt, point);
    return this.sim.point(`${attempt.call.name}#${attempt.n} ${point}`);
  }

  /** The worker dies here: the attempt never continues (its requests in flight may still land). */
  private die(attempt: Attempt, where: string): Promise<never> {
    attempt.crashedAt = where;
    this.log(`${attempt.call.name}#${attempt.n} worker dies at ${where}`);
    return new Promise<never>((_, reject) => this.kills.push(() => reject(new WorkerGone('the worker was killed'))));
  }

  // ----- tools and the provider -----

  private toolsFor(attempt: Attempt): ToolDefinition<any>[] {
    const other = defineTool({ name: 'send_email', revision: 'v1', input: z.object({ to: z.string() }).strict(), execute: async () => ({ output: 'sent' }) });
    return attempt.plan.worker === 'missing' ? [other] : [this.tool(attempt, attempt.plan.worker), other];
  }

  private tool(attempt: Attempt, worker: Exclude<WorkerKind, 'missing'>): ToolDefinition<any> {
    const { tool } = this.scenario;
    const schema =
      worker === 'schema-default' ? z.object({ title: z.string().min(1), priority: z.string().default('normal') }).strict() : z.object({ title: z.string().min(1) }).strict();
    return defineTool({
      name: TOOL_NAME,
      revision: worker === 'new-revision' ? 'v2' : 'v1',
      input: schema,
      callDeadlineMs: tool.callDeadlineMs,
      ...(tool.dedupesByKey ? { dedupesByKey: true, keyRetentionMs: tool.keyRetentionMs } : {}),
      execute: (_input: unknown, ctx: ToolContext) => this.request(attempt, ctx),
      ...(tool.lookup ? { lookup: (ctx: ToolContext) => this.lookup(attempt, ctx) } : {}),
    });
  }

  private noteKey(attempt: Attempt, key: string, fence: string): void {
    if (!this.attemptByFence.has(fence)) this.attemptByFence.set(fence, attempt);
    attempt.call.keys.add(key);
    for (const other of this.calls) {
      if (other !== attempt.call && other.keys.has(key))
        this.violations.push({ kind: 'harness', message: `calls ${other.name} and ${attempt.call.name} were handed the same idempotency key ${key}` });
    }
  }

  /**
   * One request to the provider. It lands `latencyMs` after it was sent unless that is at or
   * after its abort time plus the margin: the fence aborts `ctx.signal` at the holder's deadline
   * (claim + callDeadlineMs), or at once when the request is sent after it, and by the world's
   * assumption an aborted request is no longer outstanding after the margin. The fence's own
   * abort is a real timer that virtual time does not reach, so the provider fails the request as
   * aborted at the virtual abort time.
   */
  private request(attempt: Attempt, ctx: ToolContext): Promise<{ output: JsonValue; receipt: JsonValue }> {
    if (this.closed) return Promise.reject(new ToolError('unknown-outcome', 'the schedule is over'));
    attempt.executes += 1;
    this.noteKey(attempt, ctx.idempotencyKey, ctx.attemptId);
    const plan = this.scenario.requests[this.requestIndex++ % this.scenario.requests.length]!;
    const claimedAt = this.claimedAtByFence.get(ctx.attemptId);
    if (claimedAt === undefined)
      this.violations.push({ kind: 'harness', message: `${attempt.call.name}#${attempt.n} called execute under fence ${ctx.attemptId}, which never claimed the call` });
    const deadlineAt = (claimedAt ?? this.sim.now) + this.scenario.tool.callDeadlineMs;
    // The fence aborts ctx.signal at the deadline, or at once (a timer of 0 ms) when the request is sent after it.
    const abortAt = Math.max(deadlineAt, this.sim.now);
    const landBy = abortAt + this.scenario.reconcileMarginMs;
    const landAt = this.sim.now + plan.latencyMs;
    const lands = landAt < landBy;
    const who = `${attempt.call.name}#${attempt.n}`;
    this.log(
      `${who} sends its request (key …${ctx.idempotencyKey.slice(-6)}${this.sim.now >= deadlineAt ? `, AFTER its deadline ${deadlineAt}` : ''}); ${lands ? `lands at ${landAt}` : 'never lands (aborted)'}, answer ${plan.answer}; deadline ${deadlineAt}, outstanding until ${landBy} at most`,
    );
    return new Promise((resolve, reject) => {
      let done = false;
      // Removed once answered: Node 20 keeps an AbortSignal.any() signal that has an abort listener alive until it aborts.
      const onAbort = (): void => answer(() => reject(new ToolError('unknown-outcome', 'aborted: the activity was cancelled')));
      const answer = (fn: () => void): void => {
        if (done) return;
        done = true;
        ctx.signal.removeEventListener('abort', onAbort);
        fn();
      };
      if (lands) {
        this.sim.timer(plan.latencyMs, `${who} request lands`, () => {
          const deduplicatedBefore = this.provider.deduplicated;
          const effect = plan.answer === 'transient' ? null : this.provider.land(ctx.idempotencyKey, ctx.attemptId, plan.answer === 'rejected');
          const repeat = this.provider.deduplicated > deduplicatedBefore;
          this.log(`${who}'s request lands: ${repeat ? 'deduplicated to ' : ''}${effect === null ? 'refused' : `effect ${effect.n}`}`);
          if (plan.answer === 'lost' || this.closed) return;
          void this.sim.point(`${who} answer`, plan.answerDelayMs).then(() =>
            answer(() => {
              if (plan.answer === 'reset') reject(new ToolError('unknown-outcome', 'the connection was reset after the request was sent'));
              else if (plan.answer === 'transient') reject(new ToolError('transient', 'HTTP 503: the provider did not accept the request'));
              else if (effect === null) reject(new ToolError('rejected', 'the provider refused the ticket', undefined, 'BUSINESS_REJECTION'));
              else {
                attempt.known.push(effect);
                resolve(effect.result);
              }
            }),
          );
        });
      }
      void this.sim
        .point(`${who} deadline`, abortAt - this.sim.now)
        .then(() => answer(() => reject(new ToolError('unknown-outcome', `aborted at the call deadline (${deadlineAt})`))));
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      if (attempt.plan.crashAt === 'mid-request') {
        answer(() => undefined);
        void this.die(attempt, 'mid-request').catch(reject);
      }
    });
  }

  private async lookup(attempt: Attempt, ctx: ToolContext): Promise<{ found: true; output: JsonValue; receipt: JsonValue } | { found: false }> {
    if (this.closed) throw new Error('the schedule is over');
    attempt.lookups += 1;
    this.noteKey(attempt, ctx.idempotencyKey, ctx.attemptId);
    const plan = this.scenario.lookups[this.lookupIndex++ % this.scenario.lookups.length]!;
    const who = `${attempt.call.name}#${attempt.n}`;
    await this.sim.point(`${who} lookup reads`, plan.readDelayMs);
    const effect = this.provider.find(ctx.idempotencyKey);
    this.log(`${who}'s lookup reads the provider: ${plan.fails ? 'error' : effect === undefined ? 'nothing' : `effect ${effect.n}`}`);
    await this.sim.point(`${who} lookup answer`, plan.answerDelayMs);
    if (plan.fails) throw new Error('the lookup service answered 503');
    return effect === undefined ? { found: false } : { found: true, output: effect.result.output, receipt: effect.result.receipt };
  }

  // ----- the store observer and the invariants -----

  private committed(record: CheckpointRecord): void {
    const call = this.calls.find((c) => c.bindingCallId === record.binding.callId && record.binding.namespace === NAMESPACE);
    if (call === undefined) {
      this.violations.push({ kind: 'harness', message: `a checkpoint for an unknown call was written: ${record.binding.callId}` });
      return;
    }
    if (record.status === 'executing' && record.execution !== null) this.claimedAtByFence.set(record.execution.attemptId, Date.parse(record.execution.claimedAt) - EPOCH_MS);
    if (record.status !== 'ready' && call.claimedAt === null) call.claimedAt = this.sim.now;
    if (record.status === 'executing' && record.execution !== null) call.claimFences.add(record.execution.attemptId);
    // A release proves every claim before it not applied: its holder's own requests were refused, and it held the claim
    // from `ready` or over claims proven absent (a same-key repeat never releases; docs/protocol.md#nothing-applied).
    if (record.status === 'ready' && record.revision > 0 && call.lastFence !== null) for (const f of call.claimFences) call.releasedFences.add(f);
    call.lastFence = record.execution?.attemptId ?? null;
    this.log(`store: ${call.name} → ${record.status} r${record.revision}${record.execution === null ? '' : ` fence ${this.fenceName(record.execution.attemptId, call)}`}`);
    const payload = record.result?.payload ?? null;
    if (call.stored === null) {
      if (payload !== null) call.stored = { at: this.sim.now, payload };
    } else if (!isDeepStrictEqual(call.stored.payload, payload)) {
      this.violations.push({
        kind: 'stored-result-changed',
        message: `${call.name}: stored result ${JSON.stringify(call.stored.payload)} (t=${call.stored.at}) became ${JSON.stringify(payload)} (${record.status} r${record.revision})`,
      });
    }
  }

  private fenceName(fence: string, call?: Call): string {
    const a = this.attemptByFence.get(fence);
    if (a !== undefined) return `${a.call.name}#${a.n}`;
    const n = /^attempt-(\d+)-/.exec(fence)?.[1];
    return n !== undefined && call !== undefined ? `${call.name}#${n}` : fence.slice(0, 12);
  }

  private async check(call: Call): Promise<void> {
    const effects = this.provider.effectsOf(call.keys);
    if (effects.length > 1) {
      this.violations.push({
        kind: 'duplicate-effect',
        message: `${call.name}: ${effects.length} effects (${effects.map((e) => `effect ${e.n} at t=${e.at} by ${this.fenceName(e.fence)}`).join(', ')})`,
      });
    }
    let record: CheckpointRecord | null = null;
    try {
      record = await this.raw.getByCall(NAMESPACE, call.bindingCallId);
    } catch (error) {
      this.violations.push({ kind: 'harness', message: `${call.name}: the final checkpoint cannot be read: ${String(error)}` });
    }
    const stored = record?.result?.payload ?? null;
    const final = call.final;
    if (final?.kind === 'nothing-applied' && call.claimedAt !== null && !this.durableRefusal(call, final, stored)) {
      const when = call.claimedAt <= final.at ? 'before' : 'after (by an attempt Temporal had given up on)';
      const fences = [...call.claimFences].map((f) => this.fenceName(f, call)).join(', ') || 'none';
      this.violations.push({
        kind: 'nothing-applied-with-claim',
        message: `${call.name}: reported nothing applied (${final.type}) by attempt ${final.by} at t=${final.at}, but its checkpoint was claimed at t=${call.claimedAt}, ${when} the report, by ${fences}; final status ${record?.status ?? 'none'}, stored result ${JSON.stringify(stored)}`,
      });
    }
    for (const r of call.returned) {
      if (stored === null || !isDeepStrictEqual(r.outcome, stored)) {
        this.violations.push({
          kind: 'result-not-stored-one',
          message: `${call.name}: ${r.by} returned ${JSON.stringify(r.outcome)}, the call's stored result is ${JSON.stringify(stored)}`,
        });
      }
      const receiptKey =
        r.outcome.ok && r.outcome.receipt !== null && typeof r.outcome.receipt === 'object' && !Array.isArray(r.outcome.receipt)
          ? (r.outcome.receipt as { key?: unknown }).key
          : undefined;
      if (typeof receiptKey === 'string' && !call.keys.has(receiptKey)) {
        this.violations.push({ kind: 'result-not-stored-one', message: `${call.name}: ${r.by} returned a result made under another call's key (${receiptKey})` });
      }
    }
    const effect = effects[0];
    if (effect !== undefined) {
      if (call.final?.kind === 'nothing-applied') {
        this.violations.push({ kind: 'lost-result', message: `${call.name}: effect ${effect.n} was applied, yet the run was told nothing applied (${call.final.type})` });
      }
      // A person's resolution stores its audit (`resolvedInStore`) beside the outcome: the outcome is what must match.
      if (stored !== null && !isDeepStrictEqual(withoutAudit(stored), { ok: true, output: effect.result.output, receipt: effect.result.receipt })) {
        this.violations.push({ kind: 'lost-result', message: `${call.name}: effect ${effect.n} was applied, yet the stored result is ${JSON.stringify(stored)}` });
      }
    }
  }

  /**
   * A later attempt may make "nothing applied" durable before it reports it (fence 42bb6ed): it
   * claims the ready checkpoint itself, with no time to send anything, and stores the refusal as
   * the call's result, so no other attempt can claim it. Such a claim is the refusal, not an
   * attempt that could apply the effect: allowed only when every claim the call ever had was the
   * reporting attempt's, that attempt never called the tool, and the stored result is the refusal
   * of the reported code.
   */
  private durableRefusal(call: Call, final: FinalOutcome, stored: JsonValue | null): boolean {
    if (final.by === null) return false;
    const reporter = call.attempts.find((a) => a.n === final.by);
    const onlyReporter = [...call.claimFences].every((f) => f.startsWith(`attempt-${final.by}-`) || call.releasedFences.has(f));
    const refusal =
      stored !== null && typeof stored === 'object' && !Array.isArray(stored) && stored.ok === false && (stored.error as { type?: unknown } | null)?.type === final.type;
    return reporter !== undefined && reporter.executes === 0 && onlyReporter && refusal;
  }

  private knownResultsNotStored(): number {
    let n = 0;
    for (const call of this.calls) {
      for (const a of call.attempts) {
        for (const e of a.known) if (!isDeepStrictEqual(call.stored?.payload ?? null, { ok: true, output: e.result.output, receipt: e.result.receipt })) n += 1;
      }
    }
    return n;
  }
}

/** The workflow's reading of a final failure (src/workflows/common/failures.ts). */
function classify(type: string): OutcomeKind {
  if ((NOTHING_APPLIED_CODES as readonly string[]).includes(type)) return 'nothing-applied';
  if (type === 'RECONCILE_PENDING') return 'reconcile-pending';
  return 'paused';
}

/** What Temporal makes of an error thrown by an attempt (an ApplicationFailure keeps its type; anything else is a retryable failure named after the error). */
function failureOf(error: unknown): AttemptEnd {
  if (error instanceof ApplicationFailure) {
    return {
      ok: false,
      type: error.type ?? 'Error',
      nonRetryable: error.nonRetryable === true,
      nextRetryDelayMs: error.nextRetryDelay === undefined || error.nextRetryDelay === null ? undefined : msToNumber(error.nextRetryDelay),
      message: error.message,
    };
  }
  const e = error instanceof Error ? error : new Error(String(error));
  return { ok: false, type: e.name, nonRetryable: false, nextRetryDelayMs: undefined, message: e.message };
}

/** A stored outcome without the audit a person's resolution keeps beside it. */
function withoutAudit(stored: unknown): unknown {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return stored;
  const { resolvedInStore: _audit, ...outcome } = stored as { resolvedInStore?: unknown };
  return outcome;
}
