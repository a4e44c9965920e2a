/**
 * A person's resolution applies only to the pause they saw: over random sequences of pauses (a
 * call, its compensation at some generation, one of its batch items at some generation), ends of
 * pauses and decisions carrying the id of any pause seen so far (or none), the run's bookkeeping
 * (`RunState.resolutionRefusal`, what the workflow's update validator asks) accepts exactly the
 * decisions made for the pause waiting now; every pause, even of the same call, what and
 * generation, gets an identity of its own. Pure: no Temporal.
 */
import fc from 'fast-check';
import { RunState, chainTagOf, type CallState } from '../../src/workflows/agent/run-state';

const CALL_IDS = ['c1', 'c2', 'b1'] as const;

/** What is paused next: the call, its compensation or a batch item, at a generation. */
const pauseOf = fc.record({
  callId: fc.constantFrom(...CALL_IDS),
  what: fc.constantFrom('call', 'compensation', 'item'),
  itemKey: fc.constantFrom('n1', 'n20'),
  generation: fc.integer({ min: 1, max: 3 }),
});

/** A decision: for the call `callId`, carrying the id of the `seen`-th pause seen so far (modulo), or none, or an unknown one. */
const decisionOf = fc.record({
  callId: fc.constantFrom(...CALL_IDS),
  pause: fc.oneof(
    fc.nat({ max: 20 }).map((seen) => ({ seen })),
    fc.constant({ none: true as const }),
    fc.constant({ forged: 'c1#999' }),
  ),
  inFlight: fc.boolean(),
});

const event = fc.oneof(
  pauseOf.map((pause) => ({ kind: 'pause' as const, pause })),
  fc.constant({ kind: 'end' as const }),
  decisionOf.map((decision) => ({ kind: 'decide' as const, decision })),
);

function newRun(runChainId?: string): { state: RunState; calls: Map<string, CallState> } {
  const state = new RunState({ maxTurns: 5, maxToolCalls: 10, deadlineMs: 3_600_000 }, 0, undefined, runChainId);
  const started = state.startTurn(
    CALL_IDS.map((callId) => ({ callId, toolName: 'charge', input: {} })),
    0,
  );
  return { state, calls: new Map(started.map((call) => [call.callId, call])) };
}

/** Marks `call` paused on `pause.what` (as the workflow does before it sets `state.paused`) and sets it. */
function beginPause(state: RunState, call: CallState, pause: { what: string; itemKey: string; generation: number }): void {
  call.status = 'paused';
  call.pausedItem = pause.what === 'item' ? { key: pause.itemKey, generation: pause.generation, index: 0, idempotencyKey: null } : null;
  call.compensation =
    pause.what === 'compensation'
      ? {
          status: 'paused',
          generation: pause.generation,
          toolName: null,
          toolRevision: null,
          source: null,
          outcome: null,
          idempotencyKey: null,
          errorType: 'OUTCOME_UNKNOWN',
          reason: 'lost',
          pausedAt: 0,
        }
      : null;
  state.paused = call;
}

describe('pause identity', () => {
  it('accepts exactly the decisions made for the pause waiting now; every pause has its own id', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (events) => {
        const { state, calls } = newRun();
        const seen: string[] = [];
        for (const step of events) {
          if (step.kind === 'pause') {
            if (state.paused !== null) state.paused.status = 'completed';
            beginPause(state, calls.get(step.pause.callId)!, step.pause);
            const id = state.pauseId!;
            expect(seen).not.toContain(id);
            expect(state.view(0).paused?.pauseId).toBe(id);
            seen.push(id);
          } else if (step.kind === 'end') {
            if (state.paused !== null) state.paused.status = 'completed';
            state.paused = null;
            expect(state.pauseId).toBeNull();
          } else {
            const { callId, pause, inFlight } = step.decision;
            const pauseId = 'seen' in pause ? seen[pause.seen % Math.max(1, seen.length)] : 'forged' in pause ? pause.forged : undefined;
            const refusal = state.resolutionRefusal(callId, pauseId, inFlight);
            const waitingNow = state.paused !== null && pauseId !== undefined && !inFlight && state.paused.callId === callId && pauseId === state.pauseId;
            expect(refusal === null).toBe(waitingNow);
            if (pauseId === undefined) expect(refusal?.type).toBe('INVALID_REQUEST');
            // A decision for the call waiting now, but made for another of its pauses, names the pause it is stale against.
            else if (state.paused !== null && !inFlight && state.paused.callId === callId && pauseId !== state.pauseId)
              expect(refusal).toMatchObject({ type: 'STALE_PAUSE', message: expect.stringContaining(state.pauseId!) });
          }
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('two run chains of one workflow id, pausing alike (same call ids, same order), never share a pause id: a decision seen on one is refused by the other', () => {
    fc.assert(
      fc.property(fc.uuid({ version: [4, 7] }), fc.uuid({ version: [4, 7] }), fc.array(pauseOf, { minLength: 1, maxLength: 12 }), (chainA, chainB, pauses) => {
        fc.pre(chainTagOf(chainA) !== chainTagOf(chainB));
        const runs = [newRun(chainA), newRun(chainB)];
        const ids = runs.map(({ state, calls }) =>
          pauses.map((pause) => {
            if (state.paused !== null) state.paused.status = 'completed';
            beginPause(state, calls.get(pause.callId)!, pause);
            return state.pauseId!;
          }),
        );
        expect(ids[0]!.filter((id) => ids[1]!.includes(id))).toEqual([]);
        const [, b] = runs;
        for (const id of ids[0]!) expect(b!.state.resolutionRefusal(b!.state.paused!.callId, id, false)).toMatchObject({ type: 'STALE_PAUSE' });
        expect(b!.state.resolutionRefusal(b!.state.paused!.callId, ids[1]!.at(-1), false)).toBeNull();
      }),
      { numRuns: 500 },
    );
  });

  it('the chain part of a pause id is the random tail of the run id (UUID v4 and v7 alike)', () => {
    expect(chainTagOf('0192f3a1-7c4d-7e2b-9a61-5f2a9c0d1e3b')).toBe('5f2a9c0d1e3b');
    expect(chainTagOf('0192f3a1-7c4d-7e2b-9a61-000000000001')).not.toBe(chainTagOf('0192f3a1-7c4d-7e2b-9a61-000000000002'));
    expect(chainTagOf('')).toBe('');
  });

  it('the stale decision of the charge-then-refund scenario: the charge pause and its compensation pause differ, and only the latter is accepted', () => {
    const { state, calls } = newRun();
    const charge = calls.get('c1')!;
    beginPause(state, charge, { what: 'call', itemKey: '', generation: 1 });
    const seenByA = state.pauseId!;
    charge.status = 'resolved-applied';
    state.paused = null;
    beginPause(state, charge, { what: 'compensation', itemKey: '', generation: 1 });
    expect(state.resolutionRefusal('c1', seenByA, false)).toMatchObject({ type: 'STALE_PAUSE' });
    expect(state.resolutionRefusal('c1', state.pauseId, false)).toBeNull();
    expect([seenByA, state.pauseId]).toEqual(['c1#1', 'c1/compensation@1#2']);
  });
});
