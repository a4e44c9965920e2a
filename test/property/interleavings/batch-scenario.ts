/**
 * What one explored schedule of a BATCH call is made of ("prove the batch's rules by
 * kind"): the batch tool (lookup / dedupe by key / neither) and its `groupSize`, 3 to 8 items,
 * 2 or 3 planned attempts of the one call (each may be killed at a fence point of one item or of
 * the call, and times out into the next attempt while it still runs), every item request's
 * latency and answer (applied and answered, answer lost, connection reset after the effect,
 * refused for good, transient failure, dropped before the provider), every lookup's timing, and
 * the store's latency. fast-check generates and shrinks it; the order of everything ready at one
 * virtual instant is left to `fc.scheduler()`.
 */
import fc from 'fast-check';
import type { FencePoint } from '../../../src/activities/fence/crash-points';
import type { LookupPlan } from './scenario';

/** Where a worker may die: a fence point (`hooks.step`) or while an item's request is in flight. */
export const BATCH_CRASH_POINTS = [
  'before-claim',
  'after-claim',
  'before-execute',
  'mid-request',
  'after-effect',
  'after-result-stored',
  'after-delivery-claimed',
  'after-delivery-completed',
] as const;
export type BatchCrashPoint = FencePoint | 'mid-request';

/**
 * A worker killed at `point` of item `item` (0-based; the first time this attempt passes that
 * point for that item), or of the batch call itself (`item: 'call'`). A point an attempt never
 * passes for that target kills nothing.
 */
export interface BatchCrash {
  readonly item: number | 'call';
  readonly point: BatchCrashPoint;
}

export interface BatchAttemptPlan {
  readonly crash: BatchCrash | null;
  /** Temporal gives up on the attempt this long after it started and schedules the next one; the attempt keeps running unaware. */
  readonly timeoutMs: number;
}

/**
 * One item request. ok: applied, answered; lost: applied, the answer never comes (the fence's
 * deadline aborts: unknown); reset: applied, then an unknown-outcome error; rejected: refused for
 * good (no effect, the item's final error result); transient: a 503 before anything was applied
 * (the fence retries it within the attempt); dropped: lost before the provider (nothing applied,
 * the outcome is unknown to the fence).
 */
export const REQUEST_ANSWERS = ['ok', 'lost', 'reset', 'rejected', 'transient', 'dropped'] as const;
export type RequestAnswer = (typeof REQUEST_ANSWERS)[number];

export interface BatchRequestPlan {
  /** Virtual ms from sending to landing at the provider (a request whose abort time + margin comes first never lands). */
  readonly latencyMs: number;
  readonly answer: RequestAnswer;
  readonly answerDelayMs: number;
}

export interface BatchToolPlan {
  readonly lookup: boolean;
  readonly dedupesByKey: boolean;
  readonly keyRetentionMs: number;
  /** Per item (`forEachItem`'s deadline is the tool's `callDeadlineMs`). */
  readonly callDeadlineMs: number;
  /** `forEachItem`'s `groupSize`; undefined = the default (100 with key dedupe, else 1). More than 1 only for a tool that can reconcile an item. */
  readonly groupSize: number | undefined;
}

export interface BatchScenario {
  readonly tool: BatchToolPlan;
  /** Number of items (3 to 8); item i's key is `user-<i+1>`. */
  readonly items: number;
  readonly reconcileMarginMs: number;
  /** Plans of attempts 1, 2, …; attempts after them run on a steady worker (no crash, no timeout). */
  readonly attempts: readonly BatchAttemptPlan[];
  /** Temporal's maximumAttempts for the call. */
  readonly maxAttempts: number;
  /** Consumed in order by the items' requests (cyclically). */
  readonly requests: readonly BatchRequestPlan[];
  readonly lookups: readonly LookupPlan[];
  /** Virtual latency of the store's calls, before the call reaches the database and before its answer returns (cyclically). */
  readonly storeLatencyMs: readonly number[];
}

/** Virtual ms; ≥ 10 s so the fence's real-time deadline timer never fires during a schedule. */
const DEADLINES = [10_000, 20_000] as const;

const crash = (items: number): fc.Arbitrary<BatchCrash> =>
  fc.record({
    item: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: items - 1 }) }, { weight: 1, arbitrary: fc.constant<'call'>('call') }),
    point: fc.constantFrom<BatchCrashPoint>(...BATCH_CRASH_POINTS),
  });

const attemptPlan = (items: number, deadline: number): fc.Arbitrary<BatchAttemptPlan> =>
  fc.record({
    crash: fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: crash(items) }),
    timeoutMs: fc.oneof(
      { weight: 2, arbitrary: fc.integer({ min: 1, max: deadline }) },
      { weight: 2, arbitrary: fc.integer({ min: deadline, max: deadline * items }) },
      { weight: 1, arbitrary: fc.constant(deadline * 100) },
    ),
  });

const requestPlan = (deadline: number, margin: number): fc.Arbitrary<BatchRequestPlan> =>
  fc.record({
    latencyMs: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 0, max: Math.floor(deadline / 4) }) },
      { weight: 1, arbitrary: fc.integer({ min: deadline, max: deadline + margin + 1_000 }) },
      { weight: 2, arbitrary: fc.constant(0) },
    ),
    answer: fc.oneof(
      { weight: 8, arbitrary: fc.constant<RequestAnswer>('ok') },
      { weight: 3, arbitrary: fc.constantFrom<RequestAnswer>('lost', 'reset', 'rejected', 'transient', 'dropped') },
    ),
    answerDelayMs: fc.integer({ min: 0, max: Math.floor(deadline / 4) }),
  });

const lookupPlan = (deadline: number): fc.Arbitrary<LookupPlan> =>
  fc.record({
    readDelayMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: deadline })),
    answerDelayMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: deadline })),
    fails: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  });

/** The batch scenario arbitrary; every number is virtual time. */
export const batchScenarioArbitrary: fc.Arbitrary<BatchScenario> = fc
  .record({
    deadline: fc.constantFrom(...DEADLINES),
    margin: fc.constantFrom(10, 500, 2_000),
    lookup: fc.boolean(),
    dedupesByKey: fc.boolean(),
    shortRetention: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    items: fc.integer({ min: 3, max: 8 }),
  })
  .chain(({ deadline, margin, lookup, dedupesByKey, shortRetention, items }) =>
    fc.record({
      tool: fc.record({
        lookup: fc.constant(lookup),
        dedupesByKey: fc.constant(dedupesByKey),
        keyRetentionMs: shortRetention ? fc.integer({ min: 1_000, max: deadline * 4 }) : fc.constant(86_400_000),
        callDeadlineMs: fc.constant(deadline),
        // groupSize > 1 only where the fence allows it (an item can be reconciled by lookup or key).
        groupSize: lookup || dedupesByKey ? fc.constantFrom<number | undefined>(undefined, 1, 2, 3, 100) : fc.constantFrom<number | undefined>(undefined, 1),
      }),
      items: fc.constant(items),
      reconcileMarginMs: fc.constant(margin),
      attempts: fc.array(attemptPlan(items, deadline), { minLength: 2, maxLength: 3 }),
      maxAttempts: fc.integer({ min: 4, max: 8 }),
      requests: fc.array(requestPlan(deadline, margin), { minLength: 1, maxLength: 8 }),
      lookups: fc.array(lookupPlan(deadline), { minLength: 1, maxLength: 3 }),
      storeLatencyMs: fc.array(fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: deadline }) }), { minLength: 1, maxLength: 6 }),
    }),
  );
