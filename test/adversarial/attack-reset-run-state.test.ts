/**
 * Adversarial (resets, unit): RunState's call ids across resets — model ids that parse as another
 * run's, `_t<turn>` scoped ids, retries of replayed calls, `get()` aliases a person's short id
 * resolves through (the agent's `named()` update normalization uses `get`).
 */
import { callIdWithoutRun, runOfCallId } from '../../src/checkpoint/run-scope';
import { RunState } from '../../src/workflows/agent/run-state';
import type { ToolCallRequest } from '../../src/model/types';

const CHAIN = '00000000-0000-4000-8000-000000000001';
const R2 = '00000000-0000-4000-8000-000000000002';
const R3 = '00000000-0000-4000-8000-000000000003';
const FORGED = '00000000-0000-4000-8000-0000000000ff';
const budget = { maxTurns: 50, maxToolCalls: 500, deadlineMs: 3_600_000 };

function state(runId: string): RunState {
  const s = new RunState(budget, 0, undefined, CHAIN);
  s.addressCallsIn(runId);
  return s;
}
const request = (callId: string): ToolCallRequest => ({ callId, toolName: 'charge', input: { orderId: 'o-1' } });

test("first run: a model id ending in @<uuid> is the first run's own call, not another run's", () => {
  const first = state(CHAIN);
  first.startTurn([request('toolu_a')], 0, true, [], CHAIN);
  const [b] = first.startTurn([request(`toolu_b@${FORGED}`)], 1, true, [], CHAIN);
  // The first run keeps model ids, except one that ends as another run's address: that one is addressed in the first run.
  expect([b!.callId, b!.modelCallId]).toEqual([`toolu_b@${FORGED}@${CHAIN}`, `toolu_b@${FORGED}`]);
  expect({ others: first.callIdsOfOtherRuns(), run: runOfCallId(b!.callId, CHAIN) }).toEqual({ others: [], run: CHAIN });
});

test("a reset run's ids: model ids with @, /, _t scoping and retries are addressed in the planning run", () => {
  const r2 = state(R2);
  const [a] = r2.startTurn([request('toolu_a')], 0, true, [], CHAIN); // replayed from the first run
  const own = r2.startTurn([request('toolu_a'), request(`x@${CHAIN}`), request(`y@${CHAIN}/z`)], 1, true, [], R2);
  expect(own.map((c) => c.callId)).toEqual([`toolu_a_t1@${R2}`, `x@${CHAIN}@${R2}`, `y@${CHAIN}/z@${R2}`]);
  for (const c of own) expect(runOfCallId(c.callId, CHAIN)).toBe(R2);
  // A retry of the replayed call is addressed in the first run (the same action whichever run asks).
  a!.status = 'resolved-absent';
  expect(r2.addRetry(a!).callId).toBe('toolu_a~retry1');
  // A retry of the reset run's own call stays in the reset run.
  own[0]!.status = 'resolved-absent';
  expect(r2.addRetry(own[0]!).callId).toBe(`toolu_a_t1~retry1@${R2}`);
  expect(r2.callIdsOfOtherRuns().sort()).toEqual(['toolu_a', 'toolu_a~retry1']);
});

test('get(): a short id prefers the current run, then a unique other run, never a wrong call', () => {
  const r3 = state(R3);
  r3.startTurn([request('e1')], 0, true, [], CHAIN); // the first run's e1
  r3.startTurn([request('e2')], 1, true, [], R2); // e2@R2, replayed
  const [e2own] = r3.startTurn([request('e2')], 2, true, [], R3); // the model reuses e2 in R3: not a reuse of e2@R2 by id
  expect(e2own!.callId).toBe(`e2@${R3}`);
  expect(r3.get('e1')?.callId).toBe('e1');
  expect(r3.get('e2')?.callId).toBe(`e2@${R3}`);
  expect(r3.get(`e2@${R2}`)?.callId).toBe(`e2@${R2}`);
  expect(callIdWithoutRun(`e2@${R2}`)).toBe('e2');
  // A person naming the first run's id of a call the model reused in R3 is never sent to another call silently.
  const [e1again] = r3.startTurn([request('e1')], 3, true, [], R3);
  expect(e1again!.callId).toBe(`e1_t3@${R3}`);
  expect(r3.get('e1')?.callId).toBe('e1');
  expect(r3.get('e1_t3')?.callId).toBe(`e1_t3@${R3}`);
});
