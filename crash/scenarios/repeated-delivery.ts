/**
 * Result delivery fails several times after the effect: three workers in turn die right after
 * the checkpoint records the delivery (TTC_CRASH_AT=after-delivery-completed), before Temporal
 * hears of it; the first one after executing send_email, the next two after finding the
 * delivered checkpoint. A fourth worker delivers. The email is sent once, the checkpoint is
 * never rewritten after the first delivery, and the run receives exactly the stored bytes.
 */
import { canonicalJson } from '../../src/checkpoint/canonical-json';
import { checkEffects, countLostResults, settleWithOperator, within } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { emailCall } from '../transcripts';

/** Workers that die right after delivery, one after the other. */
const FAILED_DELIVERIES = 3;

export const repeatedDeliveryScenario: Scenario = {
  id: 'repeated-delivery-failure',
  title: `delivery fails ${FAILED_DELIVERIES} times after the effect: each worker dies right after completing delivery (send_email)`,
  forced: `${FAILED_DELIVERIES} workers, each with TTC_CRASH_AT=after-delivery-completed:send_email, join one after the other (gated standbys); a fourth delivers`,
  expected: 'one email; the checkpoint is not rewritten after the first delivery; the run receives the stored bytes, source store',
  async run(rep: Repetition): Promise<RunOutcome> {
    const x = new Expectations();
    const call = emailCall(rep.tag, 1);
    const crashAt = { point: 'after-delivery-completed' as const, toolName: 'send_email' };
    const first = await rep.worker({ crashAt });
    const next = Array.from({ length: FAILED_DELIVERIES - 1 }, () => rep.standby({ crashAt }));
    const last = rep.standby();
    const handle = await rep.start([call]);

    x.equal(await within(first.exited, 90_000), 'SIGKILL', 'worker 1 exit after delivery');
    const firstKillAt = Date.now();
    const delivered = await rep.record(call);
    x.equal(delivered?.status, 'delivered', 'checkpoint after the first crash');
    for (const [i, standby] of next.entries()) {
      standby.open();
      await rep.forgetStickyWorker();
      const worker = await standby.ready;
      x.equal(await within(worker.exited, 90_000), 'SIGKILL', `worker ${i + 2} exit after redelivering`);
      const again = await rep.record(call);
      x.equal(again?.revision, delivered?.revision, `checkpoint revision after crash ${i + 2} (never rewritten)`);
    }
    last.open();
    await rep.forgetStickyWorker();

    const { state, pauses } = await settleWithOperator(rep, handle, [call], x);
    x.equal(pauses, [], 'pauses');
    const final = await rep.record(call);
    x.equal(final?.revision, delivered?.revision, 'checkpoint revision at the end');
    if (state.kind === 'finished') {
      const got = state.result.calls[0];
      x.equal(got?.source, 'store', 'call source');
      x.check(
        got?.outcome != null && delivered?.result != null && canonicalJson(got.outcome) === canonicalJson(delivered.result.payload),
        'the run received the bytes stored at the first delivery',
      );
    }
    const effects = await checkEffects(rep, [call], x);
    const resultsLost = await countLostResults(rep, [call], state, x);
    const event = (await rep.callEvents(handle)).get(call.id);
    x.equal(event?.attempt, FAILED_DELIVERIES + 1, 'attempt that delivered to Temporal');
    return {
      ...effects,
      resultsLost,
      paused: pauses.length > 0,
      unknownNotPaused: false,
      recoveryMs: event?.completedAt == null ? null : event.completedAt - firstKillAt,
      failures: x.failures,
    };
  },
};
