/**
 * Property tests (fast-check) over random interleavings of transitions and fences, applied by
 * several actors through an in-memory compare-and-swap cell. Actors act on snapshots that may
 * be stale, as workers racing on one record do. 10,000 generated sequences per property run.
 */
import fc from 'fast-check';
import {
  claimDelivery,
  claimExecution,
  completeDelivery,
  completeExecution,
  createCheckpoint,
  decideCheckpoint,
  markExecutionUncertain,
  parseCheckpoint,
  reclaimExecution,
  releaseExecution,
  renewExecution,
  releaseDelivery,
  serializeCheckpoint,
  validateCheckpoint,
  type CheckpointRecord,
  type Status,
  type TransitionResult,
} from '../../src/protocol';
import { isCheckpointError, type CheckpointErrorCode } from '../../src';
import { BINDING } from '../unit/checkpoint/fixtures';

/** A side store of one record: compare the revision, then replace (what every real store does atomically). */
class CasCell {
  private current: CheckpointRecord;
  readonly history: CheckpointRecord[];

  constructor(initial: CheckpointRecord) {
    this.current = initial;
    this.history = [initial];
  }

  get(): CheckpointRecord {
    return this.current;
  }

  compareAndSwap(expectedRevision: number, next: CheckpointRecord): boolean {
    if (this.current.revision !== expectedRevision) return false;
    this.current = next;
    this.history.push(next);
    return true;
  }
}

const TRANSITIONS = [
  'claimExecution',
  'reclaimExecution',
  'renewExecution',
  'releaseExecution',
  'completeExecution',
  'markExecutionUncertain',
  'claimDelivery',
  'releaseDelivery',
  'completeDelivery',
] as const;
type TransitionName = (typeof TRANSITIONS)[number];
const ATTEMPTS = ['attempt-a', 'attempt-b', 'attempt-c'] as const;
const DELIVERIES = ['delivery-a', 'delivery-b', 'delivery-c'] as const;
const RESULTS = [{ ok: true, id: 'T-1' }, { ok: false, error: { type: 'Rejected' } }, ['x', 1, null], 'plain text', 0] as const;

interface Step {
  readonly actor: number;
  readonly refresh: boolean;
  readonly transition: TransitionName;
  readonly attemptId: string;
  readonly previousAttemptId: string;
  readonly deliveryId: string;
  readonly result: unknown;
}

const stepArbitrary: fc.Arbitrary<Step> = fc.record({
  actor: fc.integer({ min: 0, max: 2 }),
  refresh: fc.boolean(),
  transition: fc.constantFrom(...TRANSITIONS),
  attemptId: fc.constantFrom(...ATTEMPTS),
  previousAttemptId: fc.constantFrom(...ATTEMPTS),
  deliveryId: fc.constantFrom(...DELIVERIES),
  result: fc.constantFrom(...RESULTS),
});
const sequenceArbitrary = fc.array(stepArbitrary, { minLength: 1, maxLength: 12 });

const START_MS = Date.UTC(2026, 0, 1);

function apply(step: Step, record: CheckpointRecord, at: string): TransitionResult {
  switch (step.transition) {
    case 'claimExecution':
      return claimExecution(record, { attemptId: step.attemptId, at });
    case 'reclaimExecution':
      return reclaimExecution(record, { attemptId: step.attemptId, previousAttemptId: step.previousAttemptId, at });
    case 'renewExecution':
      return renewExecution(record, { attemptId: step.attemptId, at, deadlineAt: at });
    case 'releaseExecution':
      return releaseExecution(record, { attemptId: step.attemptId, at });
    case 'completeExecution':
      return completeExecution(record, { attemptId: step.attemptId, at, result: step.result });
    case 'markExecutionUncertain':
      return markExecutionUncertain(record, { attemptId: step.attemptId, at, reason: 'worker lost' });
    case 'claimDelivery':
      return claimDelivery(record, { deliveryId: step.deliveryId, at });
    case 'releaseDelivery':
      return releaseDelivery(record, { deliveryId: step.deliveryId, at });
    case 'completeDelivery':
      return completeDelivery(record, { deliveryId: step.deliveryId, at });
  }
}

const ALLOWED_FROM: Record<TransitionName, readonly Status[]> = {
  claimExecution: ['ready'],
  reclaimExecution: ['executing', 'uncertain'],
  renewExecution: ['executing'],
  releaseExecution: ['executing'],
  completeExecution: ['executing', 'uncertain'],
  markExecutionUncertain: ['executing'],
  claimDelivery: ['completed'],
  releaseDelivery: ['delivering'],
  completeDelivery: ['delivering'],
};

/** The fence a finishing transition presents, and the one the record holds (undefined: none of that kind). */
function fences(step: Step, record: CheckpointRecord): { presented: string; held: string | undefined } | null {
  switch (step.transition) {
    case 'renewExecution':
    case 'releaseExecution':
    case 'completeExecution':
    case 'markExecutionUncertain':
      return { presented: step.attemptId, held: record.execution?.attemptId };
    case 'releaseDelivery':
    case 'completeDelivery':
      return { presented: step.deliveryId, held: record.delivery?.deliveryId };
    default:
      return null;
  }
}

/** The model: what the protocol must answer for `step` on `record` (null: success). */
function expectedError(step: Step, record: CheckpointRecord): CheckpointErrorCode | null {
  const fence = fences(step, record);
  if (fence !== null && fence.held !== undefined && fence.held !== fence.presented) return 'FENCE_CONFLICT';
  if (!ALLOWED_FROM[step.transition].includes(record.status)) return 'INVALID_TRANSITION';
  if (step.transition === 'reclaimExecution') {
    if (step.previousAttemptId !== record.execution?.attemptId) return 'FENCE_CONFLICT';
    if (step.attemptId === step.previousAttemptId) return 'INVALID_ARGUMENT';
  }
  return null;
}

/** A cheap assertion for the hot path (jest's expect is slow at 10,000 runs × 12 steps). */
function check(condition: boolean, message: () => string): void {
  if (!condition) throw new Error(message());
}

/** Every stored record must validate, survive the stored form unchanged and decide consistently. */
function checkStored(record: CheckpointRecord): void {
  check(validateCheckpoint(record), () => 'validateCheckpoint returned false');
  const text = serializeCheckpoint(record);
  // Equal canonical texts are equal JSON values: the round trip lost and changed nothing.
  check(serializeCheckpoint(parseCheckpoint(text)) === text, () => `round trip changed ${text}`);
  const decision = decideCheckpoint(record, BINDING);
  check((decision.action === 'execute') === (record.status === 'ready'), () => `decide gave ${decision.action} for ${record.status}`);
  check(decision.status === record.status && decision.revision === record.revision, () => 'decide reported another status or revision');
}

interface RunSummary {
  readonly cell: CasCell;
  readonly executionClaims: number;
  /** Successful releaseExecution (a holder gave the call back, its requests proven not applied). */
  readonly releases: number;
}

/**
 * Runs one interleaving. Asserts at every step: the outcome (success or the exact error code)
 * matches the model of docs/protocol.md#transitions, including FENCE_CONFLICT for every non-owner
 * fence; the snapshot acted on is unchanged; a success has expectedRevision = revision and
 * next.revision = revision + 1; every next record validates; with `checkStoredRecords`, every
 * stored record passes {@link checkStored}.
 */
function run(steps: readonly Step[], options: { checkStoredRecords: boolean }): RunSummary {
  const cell = new CasCell(createCheckpoint(BINDING, { createdAt: new Date(START_MS).toISOString() }));
  if (options.checkStoredRecords) checkStored(cell.get());
  const snapshots: Array<CheckpointRecord | undefined> = [undefined, undefined, undefined];
  let executionClaims = 0;
  let releases = 0;
  steps.forEach((step, index) => {
    const at = new Date(START_MS + (index + 1) * 1000).toISOString();
    if (step.refresh || snapshots[step.actor] === undefined) snapshots[step.actor] = cell.get();
    const seen = snapshots[step.actor]!;
    const seenText = JSON.stringify(seen);
    const expected = expectedError(step, seen);
    const where = (): string => `step ${index} ${step.transition} by ${step.attemptId}/${step.deliveryId} on ${seen.status}`;

    let result: TransitionResult | undefined;
    let thrown: unknown;
    try {
      result = apply(step, seen, at);
    } catch (error) {
      thrown = error;
    }

    check(JSON.stringify(seen) === seenText, () => `${where()} mutated its input`);
    if (expected !== null) {
      check(isCheckpointError(thrown, expected), () => `${where()}: expected ${expected}, got ${thrown === undefined ? 'success' : String(thrown)}`);
      return;
    }
    check(thrown === undefined, () => `${where()}: expected success, got ${String(thrown)}`);
    const { expectedRevision, next } = result!;
    check(expectedRevision === seen.revision && next.revision === seen.revision + 1, () => `${where()}: revision ${seen.revision} → ${next.revision}`);
    const fence = fences(step, seen);
    check(fence === null || fence.presented === fence.held, () => `${where()}: a non-owner fence finished`);
    check(validateCheckpoint(next), () => `${where()}: next does not validate`);

    const before = cell.get();
    if (cell.compareAndSwap(expectedRevision, next)) {
      check(before === seen, () => `${where()}: a CAS from a stale snapshot succeeded`);
      if (step.transition === 'claimExecution') executionClaims += 1;
      if (step.transition === 'releaseExecution') releases += 1;
      if (options.checkStoredRecords) checkStored(next);
      snapshots[step.actor] = next;
    } else {
      check(before.revision !== seen.revision, () => `${where()}: a CAS from the current revision failed`);
    }
  });
  return { cell, executionClaims, releases };
}

const NUM_RUNS = 10_000;

describe(`random interleavings of transitions and fences through a compare-and-swap cell (${NUM_RUNS.toLocaleString('en-US')} sequences each)`, () => {
  it('one claim at a time: a claimExecution succeeds only from ready, so at most once plus once per release by the holder; only the owning fence finishes: every non-owner call is FENCE_CONFLICT and every outcome matches the transition table of docs/protocol.md', () => {
    fc.assert(
      fc.property(sequenceArbitrary, (steps) => {
        const { cell, executionClaims, releases } = run(steps, { checkStoredRecords: false });

        check(executionClaims <= 1 + releases, () => `${executionClaims} execution claims succeeded with ${releases} releases`);
        for (let i = 1; i < cell.history.length; i += 1) {
          const [prev, next] = [cell.history[i - 1]!, cell.history[i]!];
          if ((prev.status === 'executing' || prev.status === 'uncertain') && (next.status === 'completed' || next.status === 'uncertain')) {
            check(next.execution!.attemptId === prev.execution!.attemptId, () => 'an execution was finished under another fence');
          }
          if (prev.status === 'delivering') check(next.delivery!.deliveryId === prev.delivery!.deliveryId, () => 'a delivery was finished under another fence');
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('a stored payload never changes, the revision rises by exactly 1 per transition, only the holder releasing an executing claim returns to ready (never after a stored result), decide yields execute only for ready, and every stored record validates and round-trips', () => {
    fc.assert(
      fc.property(sequenceArbitrary, (steps) => {
        const { cell } = run(steps, { checkStoredRecords: true });

        const firstWithResult = cell.history.findIndex((r) => r.result !== null);
        const stored = firstWithResult === -1 ? null : JSON.stringify(cell.history[firstWithResult]!.result);
        cell.history.forEach((record, i) => {
          check(record.revision === i, () => `record ${i} has revision ${record.revision}`);
          if (i > 0 && record.status === 'ready') {
            const prev = cell.history[i - 1]!;
            check(prev.status === 'executing' && record.execution === null, () => `record ${i} is ready again from ${prev.status}`);
            check(
              cell.history.slice(0, i).every((r) => r.result === null),
              () => `record ${i} is ready again after a stored result`,
            );
          }
          if (firstWithResult !== -1 && i >= firstWithResult) check(JSON.stringify(record.result) === stored, () => `record ${i} changed the stored result`);
        });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('the interleaving harness itself', () => {
  it('reaches every status, so the properties are not vacuous', () => {
    const reached = new Set<Status>();
    fc.assert(
      fc.property(sequenceArbitrary, (steps) => {
        for (const record of run(steps, { checkStoredRecords: false }).cell.history) reached.add(record.status);
      }),
      { numRuns: 2_000, seed: 42 },
    );
    expect([...reached].sort()).toEqual(['completed', 'delivered', 'delivering', 'executing', 'ready', 'uncertain']);
  });

  it('lets exactly one of two actors that both saw ready win the claim; the other loses the compare-and-swap', () => {
    const step = (actor: number, refresh: boolean, transition: TransitionName, attemptId: string): Step => ({
      actor,
      refresh,
      transition,
      attemptId,
      previousAttemptId: 'attempt-a',
      deliveryId: 'delivery-a',
      result: 0,
    });
    const racing = [
      step(1, true, 'claimDelivery', 'attempt-b'), // actor 1 reads the ready record (its call is refused)
      step(0, true, 'claimExecution', 'attempt-a'), // actor 0 reads ready and wins
      step(1, false, 'claimExecution', 'attempt-b'), // actor 1 claims from its stale ready snapshot
    ];

    const { cell, executionClaims } = run(racing, { checkStoredRecords: true });

    expect(executionClaims).toBe(1);
    expect(cell.history.map((r) => r.status)).toEqual(['ready', 'executing']);
    expect(cell.get().execution?.attemptId).toBe('attempt-a');
  });
});
