/**
 * docs/protocol.md#transitions as a table: every status × transition cell, legal and illegal, with
 * exact next records, exact error codes and details, and the input never mutated.
 */
import {
  claimDelivery,
  claimExecution,
  completeDelivery,
  completeExecution,
  markExecutionUncertain,
  reclaimExecution,
  releaseExecution,
  renewExecution,
  releaseDelivery,
  STATUSES,
  validateCheckpoint,
  type CheckpointRecord,
  type Status,
  type TransitionResult,
} from '../../../src/protocol';
import { at, caught, isDeepFrozen, OWNER_ATTEMPT, OWNER_DELIVERY, plainCopy, RESULT, recordIn } from './fixtures';

type TransitionName = 'claimExecution' | 'reclaimExecution' | 'completeExecution' | 'markExecutionUncertain' | 'claimDelivery' | 'releaseDelivery' | 'completeDelivery';

const AT = at(10);
const DEADLINE = at(40);
const NEW_RESULT = { status: 'created', id: 'T-9' };

/** Each transition called with the owning fence (or a fresh one for claims). */
const OWNER_CALLS: Record<TransitionName, (record: CheckpointRecord) => TransitionResult> = {
  claimExecution: (r) => claimExecution(r, { attemptId: 'attempt-2', at: AT, deadlineAt: DEADLINE }),
  reclaimExecution: (r) => reclaimExecution(r, { attemptId: 'attempt-2', previousAttemptId: OWNER_ATTEMPT, at: AT, deadlineAt: DEADLINE }),
  completeExecution: (r) => completeExecution(r, { attemptId: OWNER_ATTEMPT, at: AT, result: NEW_RESULT }),
  markExecutionUncertain: (r) => markExecutionUncertain(r, { attemptId: OWNER_ATTEMPT, at: AT, reason: 'heartbeat timeout' }),
  claimDelivery: (r) => claimDelivery(r, { deliveryId: 'delivery-2', at: AT }),
  releaseDelivery: (r) => releaseDelivery(r, { deliveryId: OWNER_DELIVERY, at: AT }),
  completeDelivery: (r) => completeDelivery(r, { deliveryId: OWNER_DELIVERY, at: AT }),
};

const ALLOWED_FROM: Record<TransitionName, Status[]> = {
  claimExecution: ['ready'],
  reclaimExecution: ['executing', 'uncertain'],
  completeExecution: ['executing', 'uncertain'],
  markExecutionUncertain: ['executing'],
  claimDelivery: ['completed'],
  releaseDelivery: ['delivering'],
  completeDelivery: ['delivering'],
};

/** The exact result of every legal cell, written out from the docs/protocol.md#statuses-and-actions. */
function expectedLegal(name: TransitionName, from: CheckpointRecord): { action: string; next: Record<string, unknown> } {
  const base = { ...plainCopy(from), revision: from.revision + 1, updatedAt: AT };
  const execution = from.execution;
  switch (name) {
    case 'claimExecution':
      return {
        action: 'execute',
        next: {
          ...base,
          status: 'executing',
          execution: { attemptId: 'attempt-2', claimedAt: AT, finishedAt: null, uncertainAt: null, uncertainReason: null, previousAttemptId: null, deadlineAt: DEADLINE },
        },
      };
    case 'reclaimExecution':
      return {
        action: 'execute',
        next: {
          ...base,
          status: 'executing',
          execution: { attemptId: 'attempt-2', claimedAt: AT, finishedAt: null, uncertainAt: null, uncertainReason: null, previousAttemptId: OWNER_ATTEMPT, deadlineAt: DEADLINE },
        },
      };
    case 'completeExecution':
      return {
        action: 'deliver',
        next: { ...base, status: 'completed', execution: { ...execution, finishedAt: AT }, result: { payload: NEW_RESULT } },
      };
    case 'markExecutionUncertain':
      return {
        action: 'reconcile-execution',
        next: { ...base, status: 'uncertain', execution: { ...execution, uncertainAt: AT, uncertainReason: 'heartbeat timeout' } },
      };
    case 'claimDelivery':
      return { action: 'deliver', next: { ...base, status: 'delivering', delivery: { deliveryId: 'delivery-2', claimedAt: AT, releasedAt: null, deliveredAt: null } } };
    case 'releaseDelivery':
      return { action: 'deliver', next: { ...base, status: 'completed', delivery: { ...from.delivery, releasedAt: AT } } };
    case 'completeDelivery':
      return { action: 'none', next: { ...base, status: 'delivered', delivery: { ...from.delivery, deliveredAt: AT } } };
  }
}

const NAMES = Object.keys(OWNER_CALLS) as TransitionName[];
const CELLS = STATUSES.flatMap((status) => NAMES.map((name) => ({ status, name, legal: ALLOWED_FROM[name].includes(status) })));
const INPUT_KINDS = [
  { kind: 'a frozen record', make: (s: Status) => recordIn(s) },
  { kind: 'a plain unfrozen record from JSON.parse', make: (s: Status) => plainCopy(recordIn(s)) },
] as const;

function isAnyPartFrozen(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Object.isFrozen(v)) return true;
    stack.push(...Object.values(v));
  }
  return false;
}

describe('the status × transition table (docs/protocol.md#transitions)', () => {
  it('covers all 42 cells, 9 of them legal', () => {
    const legal = CELLS.filter((c) => c.legal).map((c) => `${c.name} from ${c.status}`);

    expect(CELLS).toHaveLength(42);
    expect(legal.sort()).toEqual([
      'claimDelivery from completed',
      'claimExecution from ready',
      'completeDelivery from delivering',
      'completeExecution from executing',
      'completeExecution from uncertain',
      'markExecutionUncertain from executing',
      'reclaimExecution from executing',
      'reclaimExecution from uncertain',
      'releaseDelivery from delivering',
    ]);
  });

  describe.each(INPUT_KINDS)('given $kind', ({ kind, make }) => {
    const legal = CELLS.filter((c) => c.legal);
    const illegal = CELLS.filter((c) => !c.legal);

    it.each(legal)('$name from $status succeeds with the exact next record and revision + 1, leaving the input unchanged', ({ status, name }) => {
      const input = make(status);
      const snapshot = plainCopy(input);
      const { action, next } = expectedLegal(name, input);

      const result = OWNER_CALLS[name](input);

      expect(result.action).toBe(action);
      expect(result.expectedRevision).toBe(input.revision);
      expect(result.next).toEqual(next);
      expect(result.next.revision).toBe(snapshot.revision + 1);
      expect(isDeepFrozen(result.next)).toBe(true);
      expect(validateCheckpoint(result.next)).toBe(true);
      expect(input).toEqual(snapshot);
      if (kind !== 'a frozen record') expect(isAnyPartFrozen(input)).toBe(false);
    });

    it.each(illegal)('$name from $status is refused with INVALID_TRANSITION, leaving the input unchanged', ({ status, name }) => {
      const input = make(status);
      const snapshot = plainCopy(input);

      const error = caught(() => OWNER_CALLS[name](input));

      expect(error.code).toBe('INVALID_TRANSITION');
      expect(error.details).toEqual({ transition: name, fromStatus: status, allowedFrom: ALLOWED_FROM[name] });
      expect(error.message).toBe(`INVALID_TRANSITION: ${name} is not allowed from status ${status} (only from ${ALLOWED_FROM[name].join(' or ')})`);
      expect(input).toEqual(snapshot);
      if (kind !== 'a frozen record') expect(isAnyPartFrozen(input)).toBe(false);
    });
  });
});

describe('fences: only the owning attempt or delivery finishes its claim', () => {
  /** Cells called with a fence that is not the stored one. */
  const STALE_CALLS = {
    completeExecution: (r: CheckpointRecord) => completeExecution(r, { attemptId: 'attempt-stale', at: AT, result: NEW_RESULT }),
    markExecutionUncertain: (r: CheckpointRecord) => markExecutionUncertain(r, { attemptId: 'attempt-stale', at: AT, reason: 'lost' }),
    releaseDelivery: (r: CheckpointRecord) => releaseDelivery(r, { deliveryId: 'delivery-stale', at: AT }),
    completeDelivery: (r: CheckpointRecord) => completeDelivery(r, { deliveryId: 'delivery-stale', at: AT }),
  } as const;
  type StaleName = keyof typeof STALE_CALLS;
  const FENCE_FIELD: Record<StaleName, 'attemptId' | 'deliveryId'> = {
    completeExecution: 'attemptId',
    markExecutionUncertain: 'attemptId',
    releaseDelivery: 'deliveryId',
    completeDelivery: 'deliveryId',
  };
  const heldBy = (r: CheckpointRecord, field: 'attemptId' | 'deliveryId'): string | undefined => (field === 'attemptId' ? r.execution?.attemptId : r.delivery?.deliveryId);

  const cells = STATUSES.flatMap((status) => (Object.keys(STALE_CALLS) as StaleName[]).map((name) => ({ status, name })));
  const fenced = cells.filter(({ status, name }) => heldBy(recordIn(status), FENCE_FIELD[name]) !== undefined);
  const unfenced = cells.filter(({ status, name }) => heldBy(recordIn(status), FENCE_FIELD[name]) === undefined);

  it.each(fenced)('a stale fence calling $name on a record in status $status is refused with FENCE_CONFLICT naming the holder', ({ status, name }) => {
    const input = plainCopy(recordIn(status));
    const snapshot = plainCopy(input);
    const field = FENCE_FIELD[name];

    const error = caught(() => STALE_CALLS[name](input));

    expect(error.code).toBe('FENCE_CONFLICT');
    expect(error.details).toEqual({
      transition: name,
      field,
      actual: field === 'attemptId' ? 'attempt-stale' : 'delivery-stale',
      heldBy: field === 'attemptId' ? OWNER_ATTEMPT : OWNER_DELIVERY,
      fromStatus: status,
    });
    expect(input).toEqual(snapshot);
  });

  it.each(unfenced)('$name on a record in status $status, which holds no such fence is INVALID_TRANSITION, not FENCE_CONFLICT', ({ status, name }) => {
    const error = caught(() => STALE_CALLS[name](recordIn(status)));

    expect(error.code).toBe('INVALID_TRANSITION');
    expect(error.details).toMatchObject({ transition: name, fromStatus: status });
  });

  it.each(['executing', 'uncertain'] as const)('reclaimExecution naming a fence that is not the stored one is FENCE_CONFLICT (from %s)', (status) => {
    const input = recordIn(status);

    const error = caught(() => reclaimExecution(input, { attemptId: 'attempt-3', previousAttemptId: 'attempt-stale', at: AT }));

    expect(error.code).toBe('FENCE_CONFLICT');
    expect(error.details).toEqual({ transition: 'reclaimExecution', field: 'attemptId', actual: 'attempt-stale', heldBy: OWNER_ATTEMPT, fromStatus: status });
  });

  it('after a takeover the earlier attempt can neither complete nor mark uncertain: FENCE_CONFLICT, and its result is discarded', () => {
    const taken = reclaimExecution(recordIn('uncertain'), { attemptId: 'attempt-2', previousAttemptId: OWNER_ATTEMPT, at: at(5) }).next;
    const completedByNew = completeExecution(taken, { attemptId: 'attempt-2', at: at(6), result: { winner: 'attempt-2' } }).next;

    const beforeCompletion = caught(() => completeExecution(taken, { attemptId: OWNER_ATTEMPT, at: at(7), result: { winner: 'attempt-1' } }));
    const afterCompletion = caught(() => completeExecution(completedByNew, { attemptId: OWNER_ATTEMPT, at: at(7), result: { winner: 'attempt-1' } }));
    const markAfterCompletion = caught(() => markExecutionUncertain(completedByNew, { attemptId: OWNER_ATTEMPT, at: at(7), reason: 'late' }));

    expect(beforeCompletion).toMatchObject({ code: 'FENCE_CONFLICT', details: { heldBy: 'attempt-2', actual: OWNER_ATTEMPT, fromStatus: 'executing' } });
    expect(afterCompletion).toMatchObject({ code: 'FENCE_CONFLICT', details: { heldBy: 'attempt-2', actual: OWNER_ATTEMPT, fromStatus: 'completed' } });
    expect(markAfterCompletion).toMatchObject({ code: 'FENCE_CONFLICT', details: { heldBy: 'attempt-2', fromStatus: 'completed' } });
    expect(completedByNew.result).toEqual({ payload: { winner: 'attempt-2' } });
  });

  it('a released delivery fence cannot complete or release after a new delivery claimed: FENCE_CONFLICT', () => {
    const released = releaseDelivery(recordIn('delivering'), { deliveryId: OWNER_DELIVERY, at: at(5) }).next;
    const reclaimed = claimDelivery(released, { deliveryId: 'delivery-2', at: at(6) }).next;

    expect(caught(() => completeDelivery(reclaimed, { deliveryId: OWNER_DELIVERY, at: at(7) }))).toMatchObject({
      code: 'FENCE_CONFLICT',
      details: { transition: 'completeDelivery', field: 'deliveryId', actual: OWNER_DELIVERY, heldBy: 'delivery-2', fromStatus: 'delivering' },
    });
    expect(caught(() => releaseDelivery(reclaimed, { deliveryId: OWNER_DELIVERY, at: at(7) }))).toMatchObject({ code: 'FENCE_CONFLICT', details: { heldBy: 'delivery-2' } });
    expect(completeDelivery(reclaimed, { deliveryId: 'delivery-2', at: at(7) }).next.status).toBe('delivered');
  });

  it('the released owner of a completed record gets INVALID_TRANSITION when it tries to complete the delivery again', () => {
    const released = releaseDelivery(recordIn('delivering'), { deliveryId: OWNER_DELIVERY, at: at(5) }).next;

    expect(caught(() => completeDelivery(released, { deliveryId: OWNER_DELIVERY, at: at(6) }))).toEqual({
      code: 'INVALID_TRANSITION',
      details: { transition: 'completeDelivery', fromStatus: 'completed', allowedFrom: ['delivering'] },
      message: 'INVALID_TRANSITION: completeDelivery is not allowed from status completed (only from delivering)',
    });
  });
});

describe('transition arguments', () => {
  it.each([
    ['missing', undefined, { field: 'attemptId', actual: 'undefined' }],
    ['empty', '', { field: 'attemptId', actual: '""' }],
    ['not a string', 42, { field: 'attemptId', actual: '42' }],
    ['257 characters long', 'a'.repeat(257), { field: 'attemptId', limit: 256, actual: 257 }],
    ['holding a newline', 'attempt\n1', { field: 'attemptId' }],
  ])('claimExecution with an attemptId that is %s is INVALID_ARGUMENT naming the field', (_label, attemptId, details) => {
    const error = caught(() => claimExecution(recordIn('ready'), { attemptId: attemptId as string, at: AT }));

    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.details).toEqual(details);
  });

  it('claimExecution accepts an attemptId of exactly 256 characters', () => {
    expect(claimExecution(recordIn('ready'), { attemptId: 'a'.repeat(256), at: AT }).next.execution?.attemptId).toBe('a'.repeat(256));
  });

  it.each([
    ['claimDelivery', () => claimDelivery(recordIn('completed'), { deliveryId: '', at: AT })],
    ['releaseDelivery', () => releaseDelivery(recordIn('delivering'), { deliveryId: '', at: AT })],
    ['completeDelivery', () => completeDelivery(recordIn('delivering'), { deliveryId: '', at: AT })],
  ])('%s with an empty deliveryId is INVALID_ARGUMENT naming deliveryId', (_name, call) => {
    expect(caught(call)).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'deliveryId', actual: '""' } });
  });

  it.each([
    ['not a timestamp', 'yesterday', { field: 'at', actual: '"yesterday"' }],
    ['not UTC', '2026-01-01T00:00:10+01:00', { field: 'at', actual: '"2026-01-01T00:00:10+01:00"' }],
    ['an impossible date (30 February)', '2026-02-30T00:00:00.000Z', { field: 'at', actual: '"2026-02-30T00:00:00.000Z"' }],
    ['hour 24', '2026-01-01T24:00:00.000Z', { field: 'at', actual: '"2026-01-01T24:00:00.000Z"' }],
    ['missing', undefined, { field: 'at', actual: 'undefined' }],
    ['before the record was last updated', at(0), { field: 'at', actual: at(0), updatedAt: at(1) }],
  ])('a transition whose `at` is %s is INVALID_ARGUMENT', (_label, when, details) => {
    const error = caught(() => markExecutionUncertain(recordIn('executing'), { attemptId: OWNER_ATTEMPT, at: when as string, reason: 'x' }));

    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.details).toEqual(details);
  });

  it('a transition may happen at the same instant as the last update', () => {
    expect(claimExecution(recordIn('ready'), { attemptId: 'attempt-2', at: at(0) }).next.updatedAt).toBe(at(0));
  });

  it.each([
    ['empty', ''],
    ['only spaces', '   '],
    ['2,049 characters long', 'r'.repeat(2049)],
  ])('markExecutionUncertain with a reason that is %s is INVALID_ARGUMENT naming reason', (_label, reason) => {
    const error = caught(() => markExecutionUncertain(recordIn('executing'), { attemptId: OWNER_ATTEMPT, at: AT, reason }));

    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.details).toMatchObject({ field: 'reason', limit: 2048 });
  });

  it('reclaimExecution refuses to take over with the same attemptId it names as previous: INVALID_ARGUMENT', () => {
    const error = caught(() => reclaimExecution(recordIn('uncertain'), { attemptId: OWNER_ATTEMPT, previousAttemptId: OWNER_ATTEMPT, at: AT }));

    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'attemptId' } });
  });
});

describe('completeExecution stores the exact JSON result', () => {
  it("stores a frozen copy: changing the caller's object afterwards does not change the record", () => {
    const result = { items: [{ n: 1 }], note: 'ok' };
    const { next } = completeExecution(recordIn('executing'), { attemptId: OWNER_ATTEMPT, at: AT, result });

    result.items[0]!.n = 2;
    result.note = 'changed';

    expect(next.result).toEqual({ payload: { items: [{ n: 1 }], note: 'ok' } });
    expect(isDeepFrozen(next)).toBe(true);
  });

  it('stores a handler error payload exactly as given (the host chooses success or error)', () => {
    const failure = { error: { type: 'TicketRejected', message: 'queue closed', retryable: false } };

    expect(completeExecution(recordIn('executing'), { attemptId: OWNER_ATTEMPT, at: AT, result: failure }).next.result).toEqual({ payload: failure });
  });

  it.each([null, 0, false, 'text', []])('stores the scalar or empty result %p as itself, never dropped', (result) => {
    expect(completeExecution(recordIn('executing'), { attemptId: OWNER_ATTEMPT, at: AT, result }).next.result).toEqual({ payload: result });
  });

  it('refuses {x: NaN} with NOT_JSON instead of storing {x: null}', () => {
    const error = caught(() => completeExecution(recordIn('executing'), { attemptId: OWNER_ATTEMPT, at: AT, result: { x: Number.NaN } }));

    expect(error.code).toBe('NOT_JSON');
    expect(error.details).toEqual({ field: 'result', path: '$.x', kind: 'NaN' });
  });

  it('refuses a result with an undefined member with NOT_JSON instead of dropping the member', () => {
    const error = caught(() => completeExecution(recordIn('executing'), { attemptId: OWNER_ATTEMPT, at: AT, result: { id: 1, extra: undefined } }));

    expect(error).toMatchObject({ code: 'NOT_JSON', details: { field: 'result', path: '$.extra', kind: 'undefined' } });
  });

  it('keeps the stored payload through delivery claims, releases and completion', () => {
    const completed = recordIn('completed');
    const delivering = claimDelivery(completed, { deliveryId: 'd-a', at: at(5) }).next;
    const released = releaseDelivery(delivering, { deliveryId: 'd-a', at: at(6) }).next;
    const delivered = completeDelivery(claimDelivery(released, { deliveryId: 'd-b', at: at(7) }).next, { deliveryId: 'd-b', at: at(8) }).next;

    for (const record of [delivering, released, delivered]) expect(record.result).toEqual({ payload: RESULT });
  });

  it('a record read with plain JSON.parse yields a next record that does not share its mutable payload', () => {
    const input = plainCopy(recordIn('completed'));

    const { next } = claimDelivery(input, { deliveryId: 'delivery-2', at: AT });
    (input.result!.payload as { ok: boolean }).ok = false;

    expect(next.result).toEqual({ payload: RESULT });
    expect(isDeepFrozen(next)).toBe(true);
  });

  it('a record this module made shares its (already frozen) payload with the next record', () => {
    const completed = recordIn('completed');

    expect(claimDelivery(completed, { deliveryId: 'delivery-2', at: AT }).next.result!.payload).toBe(completed.result!.payload);
  });
});

describe('transitions on records that fail validation', () => {
  it('an invalid record is INVALID_CHECKPOINT and is never reset to ready', () => {
    const broken = { ...plainCopy(recordIn('executing')), execution: null } as unknown as CheckpointRecord;

    expect(caught(() => claimExecution(broken, { attemptId: 'attempt-2', at: AT }))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: 'execution' } });
    expect(caught(() => completeExecution(broken, { attemptId: OWNER_ATTEMPT, at: AT, result: 1 }))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: 'execution' } });
  });

  it('a record of schema version 3 is UNSUPPORTED_SCHEMA for every transition', () => {
    const future = { ...plainCopy(recordIn('executing')), schemaVersion: 3 } as unknown as CheckpointRecord;

    for (const name of NAMES) expect(caught(() => OWNER_CALLS[name](future)).code).toBe('UNSUPPORTED_SCHEMA');
  });
});

describe('the claim declares its deadline (docs/protocol.md#overlapping-attempts, schema version 2)', () => {
  it('without deadlineAt the claim records null', () => {
    expect(claimExecution(recordIn('ready'), { attemptId: 'a', at: AT }).next.execution?.deadlineAt).toBeNull();
  });

  it.each([
    ['before the claim', at(5)],
    ['not a timestamp', 'soon'],
  ])('a deadlineAt %s is INVALID_ARGUMENT and nothing is built', (_label, deadlineAt) => {
    expect(caught(() => claimExecution(recordIn('ready'), { attemptId: 'a', at: AT, deadlineAt }))).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'deadlineAt' } });
    expect(caught(() => reclaimExecution(recordIn('executing'), { attemptId: 'b', previousAttemptId: OWNER_ATTEMPT, at: AT, deadlineAt }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'deadlineAt' },
    });
  });

  it('a stored claim whose deadline lies before the claim is INVALID_CHECKPOINT', () => {
    const record = plainCopy(claimExecution(recordIn('ready'), { attemptId: 'a', at: AT, deadlineAt: DEADLINE }).next) as unknown as { execution: Record<string, unknown> };
    record.execution.deadlineAt = at(1);
    expect(caught(() => validateCheckpoint(record))).toMatchObject({ code: 'INVALID_CHECKPOINT', details: { field: 'execution.deadlineAt' } });
  });
});

describe('renewExecution: the holder of a running claim declares a later deadline (docs/protocol.md#overlapping-attempts)', () => {
  const claimed = claimExecution(recordIn('ready'), { attemptId: OWNER_ATTEMPT, at: at(1), deadlineAt: at(20) }).next;

  it('moves only deadlineAt (claim time, fence and status kept), revision + 1, action execute', () => {
    const renewed = renewExecution(claimed, { attemptId: OWNER_ATTEMPT, at: AT, deadlineAt: DEADLINE });
    expect(renewed.action).toBe('execute');
    expect(renewed.expectedRevision).toBe(claimed.revision);
    expect(renewed.next).toEqual({ ...claimed, revision: claimed.revision + 1, updatedAt: AT, execution: { ...claimed.execution, deadlineAt: DEADLINE } });
  });

  it('never shortens a claim: a deadline before the current one is INVALID_ARGUMENT', () => {
    expect(caught(() => renewExecution(claimed, { attemptId: OWNER_ATTEMPT, at: AT, deadlineAt: at(15) }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'deadlineAt' },
    });
  });

  it('a deadline before the renewal itself is INVALID_ARGUMENT', () => {
    const open = claimExecution(recordIn('ready'), { attemptId: OWNER_ATTEMPT, at: at(1) }).next;
    expect(caught(() => renewExecution(open, { attemptId: OWNER_ATTEMPT, at: AT, deadlineAt: at(5) }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'deadlineAt' },
    });
  });

  it('only the holder renews: another attempt gets FENCE_CONFLICT, also after a takeover', () => {
    expect(caught(() => renewExecution(claimed, { attemptId: 'attempt-2', at: AT, deadlineAt: DEADLINE }))).toMatchObject({ code: 'FENCE_CONFLICT' });
    const taken = reclaimExecution(claimed, { attemptId: 'attempt-2', previousAttemptId: OWNER_ATTEMPT, at: at(30), deadlineAt: at(50) }).next;
    expect(caught(() => renewExecution(taken, { attemptId: OWNER_ATTEMPT, at: at(31), deadlineAt: at(60) }))).toMatchObject({ code: 'FENCE_CONFLICT' });
  });

  it.each(['ready', 'uncertain', 'completed', 'delivering', 'delivered'] as const)(
    'from %s it is INVALID_TRANSITION (an uncertain claim is reconciled, never renewed)',
    (status) => {
      expect(caught(() => renewExecution(recordIn(status), { attemptId: OWNER_ATTEMPT, at: AT, deadlineAt: DEADLINE }))).toMatchObject({ code: 'INVALID_TRANSITION' });
    },
  );
});

describe('releaseExecution: the holder gives back a claim whose requests are proven not applied', () => {
  it('executing → ready under the owning fence: execution cleared, revision + 1, updatedAt = at, action execute; the record validates and the next claim takes it', () => {
    const executing = recordIn('executing');
    const { action, expectedRevision, next } = releaseExecution(executing, { attemptId: OWNER_ATTEMPT, at: AT });
    expect({ action, expectedRevision }).toEqual({ action: 'execute', expectedRevision: executing.revision });
    expect(next).toEqual({ ...plainCopy(executing), status: 'ready', execution: null, revision: executing.revision + 1, updatedAt: AT });
    expect(validateCheckpoint(next)).toBe(true);
    expect(isDeepFrozen(next)).toBe(true);
    const reclaimed = claimExecution(next, { attemptId: 'attempt-2', at: at(11), deadlineAt: DEADLINE });
    expect({ status: reclaimed.next.status, attemptId: reclaimed.next.execution?.attemptId, revision: reclaimed.next.revision }).toEqual({
      status: 'executing',
      attemptId: 'attempt-2',
      revision: executing.revision + 2,
    });
  });

  it('refuses another fence with FENCE_CONFLICT, whatever the status it holds', () => {
    for (const status of ['executing', 'uncertain', 'completed', 'delivering', 'delivered'] as Status[]) {
      expect([status, caught(() => releaseExecution(recordIn(status), { attemptId: 'attempt-9', at: AT }))]).toEqual([status, expect.objectContaining({ code: 'FENCE_CONFLICT' })]);
    }
  });

  it('refuses every status but executing with INVALID_TRANSITION: never after an uncertain mark or a stored result, never from ready', () => {
    for (const status of ['ready', 'uncertain', 'completed', 'delivering', 'delivered'] as Status[]) {
      const record = recordIn(status);
      expect([status, caught(() => releaseExecution(record, { attemptId: OWNER_ATTEMPT, at: AT }))]).toEqual([status, expect.objectContaining({ code: 'INVALID_TRANSITION' })]);
    }
  });

  it('refuses a time before updatedAt and a missing fence with INVALID_ARGUMENT', () => {
    const executing = recordIn('executing');
    expect(caught(() => releaseExecution(executing, { attemptId: OWNER_ATTEMPT, at: '2025-01-01T00:00:00.000Z' }))).toEqual(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(caught(() => releaseExecution(executing, { attemptId: '', at: AT }))).toEqual(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
