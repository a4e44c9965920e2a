/**
 * The side store goes down after a send_email was claimed and stays down longer than the
 * activity's retry policy (docs/protocol.md#nothing-applied): attempt 1
 * claims, the store goes away while its request is held, the email is sent, and neither attempt
 * 1 nor any retry can write (or, on PostgreSQL, even read) the checkpoint. The retry policy of
 * this run is short (4 attempts, 200 ms → 1 s) so the retries run out during the outage.
 *
 * Right: the call may have been claimed, so the run pauses (or keeps retrying); it never
 * reports the call as failed / not run (the model would re-issue the action under a new id).
 * Once the store is back a person resolves the pause (the operator finds the email): one email.
 */
import { writeFileSync } from 'node:fs';
import { checkEffects, countLostResults, settleWithOperator } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { emailCall } from '../transcripts';
import { waitForFile } from '../waits';

/** The run's activity retry policy: attempts, first and longest interval. */
const RETRY = { maximumAttempts: 4, initialIntervalMs: 200, maximumIntervalMs: 1_000 } as const;
/** Types a paused call may show: the outcome is unknown, or reconciliation could not read the store. */
const PAUSE_TYPES = ['OUTCOME_UNKNOWN', 'RECONCILE_PENDING'];

export const storeOutageAfterClaimScenario: Scenario = {
  id: 'store-outage-after-claim',
  title: `side store down after the claim, longer than the retry policy (send_email, ${RETRY.maximumAttempts} attempts)`,
  forced: `the worker holds the claimed send_email request (TTC_CRASH_REQUEST_HOLD) while the store is taken away (PostgreSQL: pg_ctl stop -m fast; SQLite: BEGIN EXCLUSIVE on another connection), then sends it; the store stays away until the run pauses; retry policy ${RETRY.maximumAttempts} attempts, ${RETRY.initialIntervalMs} ms → ${RETRY.maximumIntervalMs} ms`,
  expected: `the run pauses (${PAUSE_TYPES.join(' or ')}), never reports the call as failed / not run; after the store returns the operator finds the email and resolves applied: one email`,
  recovery: 'from the store going away to the ActivityTaskFailed event that pauses the run (the retries running out)',
  exclusive: true,
  async run(rep: Repetition): Promise<RunOutcome> {
    const x = new Expectations();
    const call = emailCall(rep.tag, 1);
    const hold = rep.path('hold');
    await rep.worker({ env: { TTC_CRASH_REQUEST_HOLD: `send_email:${hold}` } });
    const handle = await rep.start([call], { retry: RETRY });
    const held = await waitForFile(`${hold}.held`, 90_000);
    if (!x.check(held !== null, 'attempt 1 never reached its request')) return failedEarly(x);
    const claimed = await rep.record(call);
    x.equal(claimed?.status, 'executing', 'checkpoint when the store goes away (claimed)');
    const restore = await rep.stack.breakStore();
    const brokenAt = Date.now();
    let restored = false;
    const watch = rep.watchAttempts(handle, 200);
    try {
      writeFileSync(hold, '');
      const during = await rep.settle(handle, 120_000);
      await watch.stop();
      x.equal(await rep.effectCounts([call]), [1], 'emails sent (the claimed request went out once)');
      if (during.kind === 'finished') {
        x.check(false, `the run finished during the outage: ${JSON.stringify(during.result.calls.map((c) => [c.status, c.errorType]))} (must pause)`);
      } else if (during.kind === 'paused') {
        x.check(PAUSE_TYPES.includes(during.status.paused!.errorType), `the run paused on ${during.status.paused!.errorType} (expected ${PAUSE_TYPES.join(' or ')})`);
      } else {
        x.check(false, `the run neither paused nor finished during the outage: ${during.reason}`);
      }
      const event = (await rep.callEvents(handle)).get(call.id);
      const pausedAt = event?.failedAt ?? null;
      await restore();
      restored = true;

      const { state, pauses } = await settleWithOperator(rep, handle, [call], x);
      x.equal(
        pauses.map((p) => [p.callId, p.resolution]),
        [[call.id, 'applied']],
        'pause (call, what the operator found)',
      );
      if (state.kind === 'finished')
        x.equal(
          state.result.calls.map((c) => [c.status, c.source]),
          [['resolved-applied', 'resolution']],
          'calls (status, source)',
        );
      const effects = await checkEffects(rep, [call], x);
      const resultsLost = await countLostResults(rep, [call], state, x);
      return {
        ...effects,
        resultsLost,
        paused: pauses.length > 0,
        unknownNotPaused: pauses.length === 0,
        recoveryMs: pausedAt === null ? null : pausedAt - brokenAt,
        failures: x.failures,
        note: `attempts ${event?.attempt ?? '?'}, last failure ${event?.failureType ?? '?'}; seen ${watch.types().join(' → ')}`,
      };
    } finally {
      await watch.stop();
      if (!restored) await restore();
    }
  },
};

function failedEarly(x: Expectations): RunOutcome {
  return { effectsApplied: 0, duplicates: 0, resultsLost: 1, paused: false, unknownNotPaused: false, recoveryMs: null, failures: x.failures };
}
