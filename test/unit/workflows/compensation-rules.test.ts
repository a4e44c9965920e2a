// The compensation rules both workflow surfaces share (src/workflows/common/compensation-rules.ts): the
// order compensations run in, how an attempt is classified, and that a wind-down activity's
// failure is returned rather than thrown.
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import fc from 'fast-check';
import {
  attemptWindDown,
  compensationVerdict,
  failedAttemptVerdict,
  lastAppliedFirst,
  untypedAsErrorName,
  untypedAsUnclassified,
} from '../../../src/workflows/common/compensation-rules';

function activityFailure(cause: Error): ActivityFailure {
  return new ActivityFailure('activity failed', 'refund', 'act-1', RetryState.NON_RETRYABLE_FAILURE, undefined, cause);
}

describe('lastAppliedFirst', () => {
  it('keeps the applied entries, highest place in the order of application first', () => {
    const entries = [
      { id: 'a', seq: 1 },
      { id: 'b', seq: null },
      { id: 'c', seq: 3 },
      { id: 'd', seq: 2 },
    ];
    expect(lastAppliedFirst(entries, (e) => e.seq).map((e) => e.id)).toEqual(['c', 'd', 'a']);
    expect(entries.map((e) => e.id)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('is the reverse of recording order when entries are recorded as they apply', () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { maxLength: 20 }), (names) => {
        const recorded = names.map((name, i) => ({ name, seq: i + 1 }));
        expect(lastAppliedFirst(recorded, (r) => r.seq).map((r) => r.name)).toEqual([...names].reverse());
      }),
    );
  });
});

describe('compensation verdicts', () => {
  it('OUTCOME_UNKNOWN is outcome-unknown, with the failure type and innermost message', () => {
    const error = activityFailure(ApplicationFailure.create({ type: 'OUTCOME_UNKNOWN', message: 'the refund may have applied' }));
    expect(failedAttemptVerdict(error, untypedAsUnclassified)).toEqual({ kind: 'outcome-unknown', error: { type: 'OUTCOME_UNKNOWN', message: 'the refund may have applied' } });
  });

  it('a stored rejection or a timeout is a known failure', () => {
    const rejected = activityFailure(ApplicationFailure.create({ type: 'CARD_CLOSED', message: 'refused' }));
    expect(failedAttemptVerdict(rejected, untypedAsErrorName)).toEqual({ kind: 'failed', error: { type: 'CARD_CLOSED', message: 'refused' } });
    const timedOut = activityFailure(new TimeoutFailure('timed out', undefined, TimeoutType.START_TO_CLOSE));
    expect(failedAttemptVerdict(timedOut, untypedAsErrorName)).toEqual({ kind: 'failed', error: { type: 'TIMEOUT_START_TO_CLOSE', message: 'timed out' } });
  });

  it('an untyped failure is named by the surface: the error name (plugin) or UNCLASSIFIED (agent)', () => {
    const error = new TypeError('boom');
    expect(failedAttemptVerdict(error, untypedAsErrorName).error).toEqual({ type: 'TypeError', message: 'boom' });
    expect(failedAttemptVerdict(error, untypedAsUnclassified).error).toEqual({ type: 'UNCLASSIFIED', message: 'boom' });
    expect(failedAttemptVerdict('text', untypedAsErrorName).error).toEqual({ type: 'Error', message: 'text' });
  });

  it('a returned value is compensated unless the surface reads a refusal in it', () => {
    const refusal = (v: { ok: boolean }) => (v.ok ? null : { type: 'REFUSED', message: 'no' });
    expect(compensationVerdict({ kind: 'ok', value: { ok: true } }, untypedAsUnclassified, refusal)).toEqual({ kind: 'compensated' });
    expect(compensationVerdict({ kind: 'ok', value: { ok: false } }, untypedAsUnclassified, refusal)).toEqual({ kind: 'failed', error: { type: 'REFUSED', message: 'no' } });
    expect(compensationVerdict({ kind: 'ok', value: 1 }, untypedAsUnclassified)).toEqual({ kind: 'compensated' });
  });
});

describe('attemptWindDown', () => {
  it('returns the value, or the failure thrown (also synchronously), never rethrown', async () => {
    await expect(attemptWindDown(async () => 7)).resolves.toEqual({ kind: 'ok', value: 7 });
    const error = new Error('no');
    await expect(attemptWindDown(async () => Promise.reject(error))).resolves.toEqual({ kind: 'failed', error });
    await expect(
      attemptWindDown(() => {
        throw error;
      }),
    ).resolves.toEqual({ kind: 'failed', error });
  });
});
