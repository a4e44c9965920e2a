/**
 * The model world of the interleaving explorer: virtual time driven with fast-check's scheduler,
 * a provider that applies effects when requests land, and a store proxy that puts latency and
 * faults around the real SQLite store.
 *
 * Time: nothing advances the virtual clock but {@link Sim.run}. Everything that is ready at the
 * current instant (store calls, fence steps, answers) is a task of `fc.scheduler()`, which picks
 * the order; only when no task is ready does the clock jump to the next timer. Real asynchrony
 * (the SQLite store commits in a `setImmediate`) is drained before each decision, so a schedule
 * is reproducible from its seed.
 */
import { Context } from '@temporalio/activity';
import type fc from 'fast-check';
import { CheckpointError } from '../../../src/checkpoint/errors';
import type { Binding, CheckpointRecord, JsonValue } from '../../../src/checkpoint/types';
import type {
  CheckpointStore,
  ConversationEntry,
  CreateOptions,
  CreateResult,
  GroupWrite,
  GroupWriteResult,
  ListOptions,
  ListQuarantinedOptions,
  PruneOptions,
  QuarantinedRow,
} from '../../../src/stores/checkpoint-store';
import type { Status } from '../../../src/checkpoint/types';
import type { StoreFault } from './scenario';

/** 2026-01-01T00:00:00Z: virtual time 0. */
export const EPOCH_MS = Date.UTC(2026, 0, 1);

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly label: string;
  readonly fire: () => void;
}

/** Raised into whatever still waits on the schedule once it is over (crashed workers, unanswered requests). */
export class ScheduleOver extends Error {}

/** Raised when a schedule does not come to rest (a livelock in the fence or the harness). */
export class RunawayError extends Error {}

/** Virtual time plus fast-check's scheduler. */
export class Sim {
  /** Virtual ms since {@link EPOCH_MS}. */
  now = 0;
  /** Real store calls in flight (they settle in a later macrotask). */
  inflight = 0;
  steps = 0;
  /** Set when the schedule is over: every later scheduling point fails at once, so blocked attempts wind down. */
  closed = false;
  private timers: Timer[] = [];
  private seq = 0;

  constructor(
    private readonly scheduler: fc.Scheduler,
    private readonly maxSteps = 20_000,
  ) {}

  /** The fence's clock. */
  readonly clock = (): Date => new Date(EPOCH_MS + this.now);

  /** Calls `fire` (synchronously) when virtual time reaches now + `delayMs`. */
  timer(delayMs: number, label: string, fire: () => void): void {
    this.timers.push({ at: this.now + Math.max(0, delayMs), seq: this.seq++, label, fire });
  }

  /**
   * A scheduling point `delayMs` from now: resolves when fast-check picks it among the tasks
   * ready at that instant.
   */
  point(label: string, delayMs = 0): Promise<void> {
    if (this.closed) return Promise.reject(new ScheduleOver(`${label}: the schedule is over`));
    if (delayMs <= 0) return this.scheduler.schedule(Promise.resolve(), label).then(() => undefined);
    return new Promise((resolve) => this.timer(delayMs, label, () => resolve(this.point(label))));
  }

  /** Runs until no task is ready and no timer is left. */
  async run(): Promise<void> {
    for (;;) {
      await this.quiesce();
      if (this.scheduler.count() > 0) {
        if (++this.steps > this.maxSteps) throw new RunawayError(`schedule did not come to rest after ${this.maxSteps} steps (virtual time ${this.now} ms)`);
        await this.scheduler.waitNext(1);
        continue;
      }
      if (this.timers.length === 0) return;
      let at = Infinity;
      for (const t of this.timers) at = Math.min(at, t.at);
      const due = this.timers.filter((t) => t.at === at).sort((a, b) => a.seq - b.seq);
      this.timers = this.timers.filter((t) => t.at !== at);
      this.now = Math.max(this.now, at);
      for (const t of due) t.fire();
    }
  }

  /** Drains microtasks and the real store's commits until two macrotask turns pass with nothing in flight. */
  private async quiesce(): Promise<void> {
    let calm = 0;
    while (calm < 2) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      calm = this.inflight === 0 ? calm + 1 : 0;
    }
  }
}

/** An effect the provider applied. */
export interface Effect {
  /** 1, 2, … over the schedule. */
  readonly n: number;
  readonly key: string;
  readonly at: number;
  /** The fence whose request made it. */
  readonly fence: string;
  readonly result: { readonly output: JsonValue; readonly receipt: JsonValue };
}

/**
 * The provider: applies an effect when a request lands; optionally deduplicates by idempotency
 * key for `retentionMs` after the key's first answer (then forgets it, as Stripe does after 24 h).
 * `lookup` finds an effect by key whatever the retention (the provider's own records).
 */
export class Provider {
  readonly effects: Effect[] = [];
  /** First answer per key and when it was given (what a deduplicating provider remembers). */
  private readonly answers: Array<{ readonly key: string; readonly at: number; readonly effect: Effect | null }> = [];
  deduplicated = 0;
  rejected = 0;

  constructor(
    private readonly sim: Sim,
    readonly dedupes: boolean,
    readonly retentionMs: number,
  ) {}

  /**
   * A request lands now. A deduplicating provider answers a key it remembers with the first
   * answer it gave that key (the effect, or the refusal: every request with one key gets one
   * answer while the key is retained).
   * @returns the effect it made or repeated, or null when refused.
   */
  land(key: string, fence: string, refuse: boolean): Effect | null {
    if (this.dedupes) {
      const remembered = this.answers.find((a) => a.key === key && this.sim.now < a.at + this.retentionMs);
      if (remembered !== undefined) {
        this.deduplicated += 1;
        return remembered.effect;
      }
    }
    let effect: Effect | null = null;
    if (refuse) {
      this.rejected += 1;
    } else {
      const n = this.effects.length + 1;
      effect = { n, key, at: this.sim.now, fence, result: { output: { ticketId: `T-${n}` }, receipt: { key, effect: n } } };
      this.effects.push(effect);
    }
    this.answers.push({ key, at: this.sim.now, effect });
    return effect;
  }

  find(key: string): Effect | undefined {
    return this.effects.find((e) => e.key === key);
  }

  effectsOf(keys: ReadonlySet<string>): Effect[] {
    return this.effects.filter((e) => keys.has(e.key));
  }
}

/** What the store proxy saw: every committed record in order. */
export interface StoreObserver {
  committed(record: CheckpointRecord): void;
  log(line: string): void;
}

/** Store plan of a schedule. */
export interface StorePlan {
  readonly latencyMs: readonly number[];
  readonly delays?: readonly { readonly match: string; readonly delayMs: number; readonly at: 'before' | 'answer' }[];
  readonly failures?: readonly { readonly match: string; readonly kind: StoreFault['kind'] }[];
  readonly faults: readonly StoreFault[];
  readonly outage: { readonly from: number; readonly to: number } | null;
}

/**
 * The real store behind virtual latency and injected faults: each call waits a scheduling point
 * (or a latency) before it reaches the database and another before its answer returns; the n-th
 * call may fail with the real STORE_UNAVAILABLE (nothing written) or STORE_OUTCOME_UNKNOWN
 * (written or not), and so does every call during an outage.
 */
export class ExplorerStore implements CheckpointStore {
  calls = 0;
  faultsInjected = 0;
  private readonly matched = new Set<string>();
  private gates = 0;

  constructor(
    readonly inner: CheckpointStore,
    private readonly sim: Sim,
    private readonly plan: StorePlan,
    private readonly observer: StoreObserver,
  ) {}

  createIfAbsent(record: CheckpointRecord, options?: CreateOptions): Promise<CreateResult> {
    return this.call(
      'createIfAbsent',
      true,
      () => this.inner.createIfAbsent(record, options),
      (r) => {
        if (r.created) this.observer.committed(r.record);
      },
    );
  }

  releaseDedupeKey(holder: CheckpointRecord): Promise<boolean> {
    return this.call('releaseDedupeKey', true, () => this.inner.releaseDedupeKey(holder));
  }

  get(binding: Binding): Promise<CheckpointRecord | null> {
    return this.call('get', false, () => this.inner.get(binding));
  }

  getByCall(namespace: string, callId: string): Promise<CheckpointRecord | null> {
    return this.call('getByCall', false, () => this.inner.getByCall(namespace, callId));
  }

  compareAndSwap(expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord): Promise<boolean> {
    return this.call(
      `compareAndSwap r${expectedRevision}→${next.status}`,
      true,
      () => this.inner.compareAndSwap(expectedRevision, next, expected),
      (swapped) => {
        if (swapped) this.observer.committed(next);
      },
    );
  }

  getMany(bindings: readonly Binding[]): Promise<(CheckpointRecord | null)[]> {
    return this.call(`getMany ×${bindings.length}`, false, () => this.inner.getMany(bindings));
  }

  writeGroup(writes: readonly GroupWrite[]): Promise<GroupWriteResult[]> {
    return this.call(
      `writeGroup ×${writes.length}`,
      true,
      () => this.inner.writeGroup(writes),
      (results) => {
        results.forEach((result, i) => {
          const write = writes[i];
          if (result.kind === 'create' && result.created) this.observer.committed(result.record);
          if (result.kind === 'cas' && result.swapped && write?.kind === 'cas') this.observer.committed(write.next);
        });
      },
    );
  }

  listByStatus(statuses: readonly Status[], options?: ListOptions): Promise<CheckpointRecord[]> {
    return this.inner.listByStatus(statuses, options);
  }

  listQuarantined(options?: ListQuarantinedOptions): Promise<QuarantinedRow[]> {
    return this.inner.listQuarantined(options);
  }

  prune(options: PruneOptions): Promise<number> {
    return this.inner.prune(options);
  }

  putConversationEntries(logId: string, entries: readonly ConversationEntry[]): Promise<void> {
    return this.inner.putConversationEntries(logId, entries);
  }

  getConversationEntries(logId: string, keys: readonly string[]): Promise<JsonValue[]> {
    return this.inner.getConversationEntries(logId, keys);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private latency(): number {
    const list = this.plan.latencyMs;
    return list.length === 0 ? 0 : list[this.gates++ % list.length]!;
  }

  /** The `match` of every named delay or failure of the plan that never met its operation (a named scenario that missed its window). */
  unmatchedRules(): string[] {
    return [...(this.plan.delays ?? []), ...(this.plan.failures ?? [])].map((r) => r.match).filter((m) => !this.matched.has(m));
  }

  /** Whether the operation `name` (`<caller> <operation>`) is the one a rule names: the whole name, or the name up to an operation's details. */
  private matches(name: string, match: string): boolean {
    const hit = name === match || name.startsWith(`${match} `);
    if (hit) this.matched.add(match);
    return hit;
  }

  private extra(name: string, at: 'before' | 'answer'): number {
    let ms = 0;
    for (const d of this.plan.delays ?? []) if (d.at === at && this.matches(name, d.match)) ms += d.delayMs;
    return ms;
  }

  private async call<T>(name: string, write: boolean, run: () => Promise<T>, seen?: (value: T) => void): Promise<T> {
    const index = this.calls++;
    name = `${caller()} ${name}`;
    const before = this.latency() + this.extra(name, 'before');
    this.observer.log(`store #${index} ${name}${before > 0 ? ` is delayed ${before} ms` : ''}`);
    await this.sim.point(`store:${name}#${index}`, before);
    const outage = this.plan.outage !== null && this.sim.now >= this.plan.outage.from && this.sim.now < this.plan.outage.to;
    const fault = outage ? 'unavailable' : (this.plan.faults.find((f) => f.call === index)?.kind ?? this.plan.failures?.find((f) => this.matches(name, f.match))?.kind);
    if (fault === 'unavailable' || (fault === 'outcome-unknown-not-applied' && write)) {
      this.faultsInjected += 1;
      this.observer.log(`store #${index} ${name} fails ${fault === 'unavailable' ? `STORE_UNAVAILABLE${outage ? ' (outage)' : ''}` : 'STORE_OUTCOME_UNKNOWN (not written)'}`);
      throw storeFault(fault === 'unavailable' ? 'STORE_UNAVAILABLE' : 'STORE_OUTCOME_UNKNOWN', name, index);
    }
    this.sim.inflight += 1;
    let value: T;
    try {
      value = await run();
    } finally {
      this.sim.inflight -= 1;
    }
    seen?.(value);
    this.observer.log(`store #${index} ${name} → ${typeof value === 'boolean' ? value : value === null ? 'null' : 'record'}`);
    const after = this.latency() + this.extra(name, 'answer');
    if (after > 0) this.observer.log(`store #${index} ${name}'s answer is delayed ${after} ms`);
    await this.sim.point(`store:${name}#${index}:answer`, after);
    if (fault === 'outcome-unknown-applied' && write) {
      this.faultsInjected += 1;
      this.observer.log(`store #${index} ${name} fails STORE_OUTCOME_UNKNOWN (written)`);
      throw storeFault('STORE_OUTCOME_UNKNOWN', name, index);
    }
    return value;
  }
}

/** The activity calling the store: `<activityId>#<attempt>` (main-tool#2, resolve#1). */
function caller(): string {
  try {
    const info = Context.current().info;
    return `${info.activityId}#${info.attempt}`;
  } catch {
    return 'harness';
  }
}

function storeFault(code: 'STORE_UNAVAILABLE' | 'STORE_OUTCOME_UNKNOWN', name: string, index: number): CheckpointError {
  return code === 'STORE_UNAVAILABLE'
    ? new CheckpointError('STORE_UNAVAILABLE', `explorer: store call #${index} (${name}) could not reach the database; nothing was written`, { injected: true, call: index })
    : new CheckpointError('STORE_OUTCOME_UNKNOWN', `explorer: store call #${index} (${name}) was sent and its outcome is unknown`, { injected: true, call: index });
}
