/**
 * The pool behind the console's and `ttc pending`'s list of waiting runs (`askWaitingRuns`), under
 * every order in which status queries answer (fast-check's scheduler): never more than
 * `concurrency` queries in flight, each run asked at most once, the runs kept (a call waiting, or
 * no answer) in the order visibility listed them, exactly `min(limit, runs to keep)` of them, and
 * every run asked while the limit is not reached.
 */
import fc from 'fast-check';
import { askWaitingRuns } from '../../src/operator/waiting-runs';
import type { RunStatusView } from '../../src/workflows/agent/types';

type Behaviour = 'waiting' | 'idle' | 'no-answer';

const statusOf = (behaviour: Behaviour) =>
  ({ pendingCalls: behaviour === 'waiting' ? [{ callId: 'c1', status: 'awaiting-approval' }] : [{ callId: 'c0', status: 'completed' }] }) as unknown as RunStatusView;

describe('asking runs for their status', () => {
  it('bounded concurrency, list order, each run asked once, min(limit, kept) runs, under any answer order (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.constantFrom<Behaviour>('waiting', 'idle', 'no-answer'), { maxLength: 14 }),
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 1, max: 5 }),
        async (s, behaviours, limit, concurrency) => {
          const runs = behaviours.map((behaviour, i) => ({ workflowId: `run-${i}`, behaviour }));
          let inFlight = 0;
          let maxInFlight = 0;
          const asked: string[] = [];
          async function* executions() {
            for (const run of runs) yield { workflowId: run.workflowId };
          }
          const ask = async (workflowId: string): Promise<RunStatusView> => {
            asked.push(workflowId);
            inFlight += 1;
            maxInFlight = Math.max(maxInFlight, inFlight);
            const run = runs.find((r) => r.workflowId === workflowId)!;
            try {
              await s.schedule(Promise.resolve(), `answer ${workflowId}`);
            } finally {
              inFlight -= 1;
            }
            if (run.behaviour === 'no-answer') throw new Error(`${workflowId} did not answer`);
            return statusOf(run.behaviour);
          };

          const result = await s.waitFor(askWaitingRuns(executions(), ask, { limit, concurrency }));

          const toKeep = runs.filter((r) => r.behaviour !== 'idle').map((r) => r.workflowId);
          const kept = result.map((r) => r.workflowId);
          expect(maxInFlight).toBeLessThanOrEqual(concurrency);
          expect(new Set(asked).size).toBe(asked.length);
          expect(kept.length).toBe(Math.min(limit, toKeep.length));
          expect(kept.every((id, i) => i === 0 || toKeep.indexOf(id) > toKeep.indexOf(kept[i - 1]!))).toBe(true);
          expect(kept.every((id) => toKeep.includes(id))).toBe(true);
          for (const run of result) expect('error' in run).toBe(runs.find((r) => r.workflowId === run.workflowId)!.behaviour === 'no-answer');
          if (limit >= toKeep.length) expect(kept).toEqual(toKeep);
          // Below the limit every run is asked (at the limit, taking stops: as the list did before).
          if (limit > toKeep.length) expect(asked.slice().sort()).toEqual(runs.map((r) => r.workflowId).sort());
        },
      ),
      { numRuns: 300 },
    );
  });
});
