/**
 * Call ids addressed by run (docs/protocol.md#resets): a run other than its chain's first addresses
 * a turn's calls in the run whose model turn planned them, taken from history, never from the run
 * that happens to replay it. So a reset run replaying turns the discarded run took gives their calls
 * the ids they ran under, and the turns it plans itself get ids of its own.
 */
import fc from 'fast-check';
import { runOfCallId } from '../../../src/checkpoint/run-scope';
import { RunState } from '../../../src/workflows/agent/run-state';
import type { ToolCallRequest } from '../../../src/model/types';

const CHAIN = '00000000-0000-4000-8000-000000000001';
const FIRST = CHAIN;
const RESET = '00000000-0000-4000-8000-000000000002';
const budget = { maxTurns: 50, maxToolCalls: 500, deadlineMs: 3_600_000 };

function state(runId: string): RunState {
  const s = new RunState(budget, 0, undefined, CHAIN);
  s.addressCallsIn(runId);
  return s;
}

const request = (callId: string): ToolCallRequest => ({ callId, toolName: 'charge', input: { amountCents: 1 } });

test("the chain's first run keeps the model's ids; a turn planned in another run is addressed in that run", () => {
  const first = state(FIRST);
  expect(first.startTurn([request('toolu_1')], 0, true, [], FIRST).map((c) => c.callId)).toEqual(['toolu_1']);
  const reset = state(RESET);
  // Replaying the first run's turn, then planning its own.
  expect(reset.startTurn([request('toolu_1')], 0, true, [], FIRST).map((c) => c.callId)).toEqual(['toolu_1']);
  const own = reset.startTurn([request('toolu_2')], 1, true, [], RESET);
  expect(own.map((c) => [c.callId, c.modelCallId])).toEqual([[`toolu_2@${RESET}`, 'toolu_2']]);
  // The reset run's history: the first run's call is another run's; a person may name its own call by the model's id.
  expect(reset.callIdsOfOtherRuns()).toEqual(['toolu_1']);
  expect(reset.get('toolu_2')?.callId).toBe(`toolu_2@${RESET}`);
});

test('property: the ids of replayed turns never depend on the run that replays them', () => {
  const turns = fc.array(fc.array(fc.constantFrom('a', 'b', 'c', 'ollama_0'), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 6 });
  fc.assert(
    fc.property(turns, fc.nat(6), (plans, cut) => {
      const original = state(FIRST);
      const originalIds = plans.map((ids, turn) => original.startTurn(ids.map(request), turn, true, [], FIRST).map((c) => c.callId));
      const replaying = state(RESET);
      const k = Math.min(cut, plans.length);
      const replayedIds = plans.slice(0, k).map((ids, turn) => replaying.startTurn(ids.map(request), turn, true, [], FIRST).map((c) => c.callId));
      expect(replayedIds).toEqual(originalIds.slice(0, k));
      // The reset run's own turns never reuse an id of the discarded ones.
      const own = plans.slice(k).flatMap((ids, i) => replaying.startTurn(ids.map(request), k + i, true, [], RESET).map((c) => c.callId));
      for (const id of own) expect(runOfCallId(id, CHAIN)).toBe(RESET);
      expect(new Set(own).size).toBe(own.length);
    }),
    { seed: 20261221, numRuns: 300 },
  );
});
