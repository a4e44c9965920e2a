/**
 * The side store becomes unavailable before a send_email is claimed: PostgreSQL is stopped (pg_ctl
 * stop -m fast), or the SQLite file is held under `BEGIN EXCLUSIVE` by another connection so no
 * write can take the lock. Every attempt fails closed (STORE_UNAVAILABLE): no email is sent without
 * a durable claim. Since the conversation log (claim check) the run's first model turn reads its
 * conversation from the store, so it is usually the model turn that fails closed and waits. When
 * the store returns, the run continues and the email is sent once.
 *
 * A synchronous SQLite wait blocks the worker's event loop; the crash workers' busy timeout
 * (1 s) is half their heartbeat timeout (2 s), as the configuration requires, so an attempt
 * waiting for the lock never outlives its heartbeat timeout and races its own retry.
 */
import { checkEffects, countLostResults, settleWithOperator } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { emailCall } from '../transcripts';
import { isToolCallActivityType } from '../../src/activities/contract/contract';

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** How long the store stays unavailable after the run starts, ms. */
const OUTAGE_MS = 7_000;

export const storeOutageScenario: Scenario = {
  id: 'store-unavailable',
  title: 'side store unavailable before the claim (send_email): PostgreSQL stopped / SQLite locked',
  forced: `PostgreSQL: pg_ctl stop -m fast, start again after ${OUTAGE_MS} ms; SQLite: another connection holds BEGIN EXCLUSIVE for ${OUTAGE_MS} ms`,
  expected: 'attempts fail closed (STORE_UNAVAILABLE), no email while the store is down; once it returns the run continues: one email, no pause',
  exclusive: true,
  async run(rep: Repetition): Promise<RunOutcome> {
    const x = new Expectations();
    const call = emailCall(rep.tag, 1);
    await rep.worker();
    const restore = await rep.stack.breakStore();
    let restored = false;
    try {
      const handle = await rep.start([call]);
      const failures = new Set<string>();
      const kinds = new Set<string>();
      let attempts = 0;
      const until = Date.now() + OUTAGE_MS;
      while (Date.now() < until) {
        const pending = (await handle.describe().catch(() => null))?.raw.pendingActivities ?? [];
        // The model turn needs the store too (it reads the conversation from it):
        // whichever of the run's activities is pending must fail closed.
        for (const activity of pending) {
          const kind = isToolCallActivityType(activity.activityType?.name) ? 'tool call' : (activity.activityType?.name ?? 'activity');
          kinds.add(kind);
          attempts = Math.max(attempts, activity.attempt ?? 0);
          const type = activity.lastFailure?.applicationFailureInfo?.type;
          if (type) failures.add(type);
        }
        await sleep(250);
      }
      x.equal(await rep.effectCounts([call]), [0], 'emails sent while the store was unavailable');
      x.check(
        failures.has('STORE_UNAVAILABLE'),
        `the run's activities (${[...kinds].join(', ') || 'none seen'}) failed closed with STORE_UNAVAILABLE while the store was down (saw ${[...failures].join(', ') || 'no failure'} over ${attempts} attempt(s))`,
      );
      await restore();
      restored = true;
      const restoredAt = Date.now();

      const { state, pauses } = await settleWithOperator(rep, handle, [call], x);
      x.equal(pauses, [], 'pauses');
      if (state.kind === 'finished')
        x.equal(
          state.result.calls.map((c) => c.source),
          ['executed'],
          'call source',
        );
      const effects = await checkEffects(rep, [call], x);
      const resultsLost = await countLostResults(rep, [call], state, x);
      const completedAt = (await rep.callEvents(handle)).get(call.id)?.completedAt;
      return {
        ...effects,
        resultsLost,
        paused: pauses.length > 0,
        unknownNotPaused: false,
        recoveryMs: completedAt == null ? null : completedAt - restoredAt,
        failures: x.failures,
      };
    } finally {
      if (!restored) await restore();
    }
  },
};
