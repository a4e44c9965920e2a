/**
 * What one explored schedule is made of ("Prove the kind"): the tool and its provider,
 * each attempt's worker (revision changes between attempts), crash point and start-to-close
 * timeout, every tool request's latency and answer, every lookup's timing, the store's latency,
 * faults and outage, a person's resolution, and a neighbouring run whose identity could be
 * confused with this call's. fast-check generates and shrinks it; the order of everything that
 * happens at one virtual instant is left to `fc.scheduler()`.
 */
import fc from 'fast-check';
import type { FencePoint } from '../../../src/activities/fence/crash-points';

/** The fence points (src/activities/fence/crash-points.ts `FENCE_POINTS`), plus a worker killed while its request is in flight. */
export const CRASH_AT = [
  'before-claim',
  'after-claim',
  'before-execute',
  'mid-request',
  'after-effect',
  'after-result-stored',
  'after-delivery-claimed',
  'after-delivery-completed',
] as const;
export type CrashAt = FencePoint | 'mid-request';

/**
 * The worker an attempt lands on: the deployed tool (`same`), a new revision of it, the same
 * revision with a schema `.default()` that changes the parsed input, or a worker without the tool.
 */
export const WORKERS = ['same', 'new-revision', 'schema-default', 'missing'] as const;
export type WorkerKind = (typeof WORKERS)[number];

export interface ToolPlan {
  readonly lookup: boolean;
  /** The provider deduplicates by idempotency key for `keyRetentionMs` after a key's first effect. */
  readonly dedupesByKey: boolean;
  readonly keyRetentionMs: number;
  readonly callDeadlineMs: number;
}

export interface AttemptPlan {
  readonly worker: WorkerKind;
  readonly crashAt: CrashAt | null;
  /** Temporal gives up on the attempt this long after it started (start-to-close or heartbeat timeout) and schedules the next one. */
  readonly timeoutMs: number;
  /** Whether the timed-out attempt's worker learns it (heartbeat answered NotFound → cancellation) or keeps running unaware. */
  readonly cancelOnTimeout: boolean;
}

/**
 * One tool request: it reaches the provider `latencyMs` after it was sent (if that is before the
 * holder's settle time, claim + deadline + margin: the world's promise that a request aborted at
 * the deadline is not outstanding after the margin), then the provider answers.
 */
export interface RequestPlan {
  readonly latencyMs: number;
  /**
   * ok: the answer arrives; lost: never (the fence's deadline aborts); reset: unknown-outcome error;
   * rejected: the provider refuses (no effect); transient: a 503 before the provider accepted the
   * request (no effect: the attempt releases its claim unless it is the last one).
   */
  readonly answer: 'ok' | 'lost' | 'reset' | 'rejected' | 'transient';
  readonly answerDelayMs: number;
}

/** One lookup: the provider is read `readDelayMs` after the call, the answer returns `answerDelayMs` later. */
export interface LookupPlan {
  readonly readDelayMs: number;
  readonly answerDelayMs: number;
  readonly fails: boolean;
}

/** What the store does to its n-th call (counted over the schedule). */
export type StoreFaultKind = 'unavailable' | 'outcome-unknown-applied' | 'outcome-unknown-not-applied';
export interface StoreFault {
  readonly call: number;
  readonly kind: StoreFaultKind;
}

export interface Scenario {
  readonly tool: ToolPlan;
  readonly reconcileMarginMs: number;
  /** Temporal retry policy: attempts and backoff (initial interval × 2^(n-1), at most 100 s), unless the failure names a next retry delay. */
  readonly maxAttempts: number;
  readonly initialIntervalMs: number;
  /** Plans for attempts 1, 2, … (attempt n uses entry (n-1) mod length). */
  readonly attempts: readonly AttemptPlan[];
  /** Consumed in order by the call's tool requests (cyclically). */
  readonly requests: readonly RequestPlan[];
  readonly lookups: readonly LookupPlan[];
  /** Virtual latency of the store's calls, before the call reaches the database and before its answer returns (cyclically; 0 = at once). */
  readonly storeLatencyMs: readonly number[];
  readonly storeFaults: readonly StoreFault[];
  /**
   * Extra delays for named store calls (fixed schedules of the named tests; the arbitrary leaves
   * it out): every call whose label (`<activityId>#<attempt> <operation>`, e.g.
   * `main-tool#1 compareAndSwap r1→delivered`) is `match`, or begins with `match` and a space, waits `delayMs` more before it
   * reaches the database (`before`) or before its answer returns (`answer`).
   */
  readonly storeDelays?: readonly { readonly match: string; readonly delayMs: number; readonly at: 'before' | 'answer' }[];
  /** Faults for named store calls (fixed schedules of the named tests): every call whose label matches as in {@link storeDelays} fails. A rule that never meets its call is a harness violation. */
  readonly storeFailures?: readonly { readonly match: string; readonly kind: StoreFaultKind }[];
  /** The store answers STORE_UNAVAILABLE to every call in [from, to) (virtual ms). */
  readonly outage: { readonly from: number; readonly to: number } | null;
  /** A person resolves a paused call `delayMs` after the pause: applied with the provider's result when it has an effect for the call, else absent. */
  readonly resolution: { readonly delayMs: number } | null;
  /**
   * Another run in the same store whose identity the old call-id encoding confused with this
   * call's: the same workflow id and call id in a new run chain, or workflow `a` call `b/c` next
   * to workflow `a/b` call `c`. It runs one attempt starting at `startAt`.
   */
  readonly neighbour: { readonly kind: 'new-run-chain' | 'slash'; readonly startAt: number } | null;
}

/** Virtual milliseconds. Every call deadline is ≥ 10 s so the fence's real-time deadline timer never fires during a schedule (a schedule runs in milliseconds). */
const DEADLINES = [10_000, 20_000, 30_000] as const;

const attemptPlan = (deadline: number): fc.Arbitrary<AttemptPlan> =>
  fc.record({
    worker: fc.oneof(
      { weight: 12, arbitrary: fc.constant<WorkerKind>('same') },
      { weight: 1, arbitrary: fc.constantFrom<WorkerKind>('new-revision', 'schema-default', 'missing') },
    ),
    crashAt: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: fc.constantFrom<CrashAt>(...CRASH_AT) }),
    timeoutMs: fc.oneof(
      { weight: 2, arbitrary: fc.integer({ min: 1, max: Math.floor(deadline / 2) }) },
      { weight: 2, arbitrary: fc.integer({ min: Math.floor(deadline / 2), max: deadline * 3 }) },
      { weight: 1, arbitrary: fc.constant(deadline * 20) },
    ),
    cancelOnTimeout: fc.boolean(),
  });

const requestPlan = (deadline: number, margin: number): fc.Arbitrary<RequestPlan> =>
  fc.record({
    // Mostly within the deadline; sometimes between deadline and settle time (lands after the abort, inside the margin), sometimes never.
    latencyMs: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 0, max: deadline }) },
      { weight: 1, arbitrary: fc.integer({ min: deadline, max: deadline + margin + 1_000 }) },
      { weight: 1, arbitrary: fc.constant(0) },
    ),
    answer: fc.oneof(
      { weight: 6, arbitrary: fc.constant<RequestPlan['answer']>('ok') },
      { weight: 1, arbitrary: fc.constantFrom<RequestPlan['answer']>('lost', 'reset', 'rejected', 'transient') },
    ),
    answerDelayMs: fc.integer({ min: 0, max: Math.floor(deadline / 2) }),
  });

const lookupPlan = (deadline: number): fc.Arbitrary<LookupPlan> =>
  fc.record({
    readDelayMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: deadline })),
    answerDelayMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: deadline })),
    fails: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  });

/** The scenario arbitrary; every number is virtual time. */
export const scenarioArbitrary: fc.Arbitrary<Scenario> = fc
  .record({
    deadline: fc.constantFrom(...DEADLINES),
    margin: fc.constantFrom(10, 500, 2_000),
    lookup: fc.boolean(),
    dedupesByKey: fc.boolean(),
    shortRetention: fc.boolean(),
  })
  .chain(({ deadline, margin, lookup, dedupesByKey, shortRetention }) =>
    fc.record({
      tool: fc.record({
        lookup: fc.constant(lookup),
        dedupesByKey: fc.constant(dedupesByKey),
        keyRetentionMs: shortRetention ? fc.integer({ min: 1_000, max: deadline * 4 }) : fc.constant(86_400_000),
        callDeadlineMs: fc.constant(deadline),
      }),
      reconcileMarginMs: fc.constant(margin),
      maxAttempts: fc.oneof({ weight: 2, arbitrary: fc.constant(10) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 9 }) }),
      initialIntervalMs: fc.constantFrom(0, 100, 1_000),
      attempts: fc.array(attemptPlan(deadline), { minLength: 1, maxLength: 4 }),
      requests: fc.array(requestPlan(deadline, margin), { minLength: 1, maxLength: 4 }),
      lookups: fc.array(lookupPlan(deadline), { minLength: 1, maxLength: 3 }),
      storeLatencyMs: fc.array(fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: deadline * 2 }) }), {
        minLength: 1,
        maxLength: 8,
      }),
      storeFaults: fc.oneof(
        { weight: 2, arbitrary: fc.constant([]) },
        {
          weight: 1,
          arbitrary: fc.array(
            fc.record({ call: fc.nat(40), kind: fc.constantFrom<StoreFaultKind>('unavailable', 'unavailable', 'outcome-unknown-applied', 'outcome-unknown-not-applied') }),
            { minLength: 1, maxLength: 4 },
          ),
        },
      ),
      outage: fc.oneof(
        { weight: 5, arbitrary: fc.constant(null) },
        {
          weight: 1,
          arbitrary: fc
            .record({ from: fc.integer({ min: 0, max: deadline * 2 }), len: fc.integer({ min: 1, max: deadline * 6 }) })
            .map(({ from, len }) => ({ from, to: from + len })),
        },
      ),
      resolution: fc.oneof(fc.constant(null), fc.record({ delayMs: fc.integer({ min: 0, max: deadline * 3 }) })),
      neighbour: fc.oneof(
        { weight: 3, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom<'new-run-chain' | 'slash'>('new-run-chain', 'slash'), startAt: fc.integer({ min: 0, max: deadline * 2 }) }) },
      ),
    }),
  );
