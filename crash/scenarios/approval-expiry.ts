/**
 * An approval that expires between attempts (docs/protocol.md#agent-workflow: approvals expire): a
 * send_email needs approval; a person approves it with little time left (the approval lives {@link
 * APPROVAL_MS} ms); the store is down, so the first attempts fail before any claim
 * (STORE_UNAVAILABLE); the store comes back only after the approval expired. The attempt that runs
 * after the expiry must refuse with APPROVAL_EXPIRED before any claim: no email, the call is
 * reported rejected / failed with that type, and its checkpoint holds no claim that could send
 * anything (absent, `ready`, or closed with the refusal as its result).
 */
import { approveCallUpdate, runStatusQuery } from '../../src/workflows/agent/messages';
import { settleWithOperator } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { emailCall } from '../transcripts';
import { sleep, waitFor } from '../waits';

/** How long an approval of send_email lives in this run, ms (longer than the crash workers' 1 s SQLite busy timeout). */
const APPROVAL_MS = 4_000;
/** The store comes back this long after the approval expired, ms. */
const AFTER_EXPIRY_MS = 1_000;

export const approvalExpiryScenario: Scenario = {
  id: 'approval-expires-between-attempts',
  title: `approval expires between attempts (send_email, approval lifetime ${APPROVAL_MS} ms, store down before the claim)`,
  forced: `the store is taken away (PostgreSQL stopped / SQLite locked) while the call awaits approval; a person approves it at once; the store comes back once an attempt failed STORE_UNAVAILABLE and at least ${AFTER_EXPIRY_MS} ms after the approval expired`,
  expected:
    'the first attempts fail before the claim (STORE_UNAVAILABLE); the attempt after the expiry fails APPROVAL_EXPIRED; no email; the call is reported rejected / failed with APPROVAL_EXPIRED; its checkpoint is absent, ready, or closed with the refusal as its result; the run completes without a pause',
  recovery: "from the approval's expiry to the ActivityTaskFailed (APPROVAL_EXPIRED) event",
  exclusive: true,
  async run(rep: Repetition): Promise<RunOutcome> {
    const x = new Expectations();
    const call = emailCall(rep.tag, 1);
    await rep.worker();
    const handle = await rep.start([call], { approvalRequired: { send_email: { expiresAfterMs: APPROVAL_MS } } });
    const pending = await waitFor(
      async () => {
        const status = await handle.query(runStatusQuery).catch(() => null);
        const p = status?.pendingCalls.find((c) => c.callId === call.id && c.status === 'awaiting-approval' && c.intentDigest !== null);
        return p === undefined ? undefined : { status: status!, call: p };
      },
      90_000,
      50,
    );
    if (!x.check(pending !== undefined, 'the call never awaited approval')) return outcome(x, null);
    const restore = await rep.stack.breakStore();
    let restored = false;
    const watch = rep.watchAttempts(handle, 200);
    try {
      const decision = await handle.executeUpdate(approveCallUpdate, {
        args: [{ callId: call.id, intentDigest: pending!.call.intentDigest!, stateVersion: pending!.status.stateVersion }],
      });
      const expiresAt = Date.parse(decision.approvalExpiresAt);
      x.check(expiresAt > Date.now(), 'the approval was still valid when given');
      await sleep(Math.max(0, expiresAt + AFTER_EXPIRY_MS - Date.now()));
      await waitFor(() => (watch.types().includes('STORE_UNAVAILABLE') ? true : undefined), 15_000, 100);
      x.check(
        watch.types().includes('STORE_UNAVAILABLE'),
        `an attempt failed closed with STORE_UNAVAILABLE while the store was down (saw ${watch.types().join(', ') || 'no failure'})`,
      );
      x.equal(await rep.effectCounts([call]), [0], 'emails sent while the store was down');
      await restore();
      restored = true;

      const { state, pauses } = await settleWithOperator(rep, handle, [call], x);
      await watch.stop();
      x.equal(pauses, [], 'pauses');
      const event = (await rep.callEvents(handle)).get(call.id);
      x.equal(event?.failureType, 'APPROVAL_EXPIRED', 'final failure of the tool activity');
      if (event?.failedAt != null) x.check(event.failedAt >= expiresAt, 'APPROVAL_EXPIRED came from an attempt after the expiry');
      if (state.kind === 'finished') {
        x.equal(state.result.status, 'completed', 'run status');
        const c = state.result.calls[0];
        const expired = c !== undefined && (c.errorType === 'APPROVAL_EXPIRED' || /APPROVAL_EXPIRED|approval expired/i.test(c.reason ?? ''));
        x.check(
          c !== undefined && (c.status === 'rejected' || c.status === 'failed') && expired,
          `the call is reported rejected / failed with APPROVAL_EXPIRED (got ${c?.status} ${c?.errorType} ${c?.reason?.slice(0, 80)})`,
        );
        x.equal(state.result.calls.length, 1, 'calls in the result');
      } else {
        x.check(false, `the run did not finish (${state.kind === 'paused' ? `paused on ${state.status.paused?.errorType}` : state.reason})`);
      }
      x.equal(await rep.effectCounts([call]), [0], 'emails sent');
      // Absent or ready (attempt 1 refused), or closed by the refusal a later attempt made durable
      // (claimed with no time to send anything, its result the refusal, delivered).
      const record = await rep.record(call);
      const refusal = record?.result?.payload as { ok?: boolean; error?: { type?: string } } | undefined;
      const closed = record !== null && record.status === 'delivered' && refusal?.ok === false && refusal.error?.type === 'APPROVAL_EXPIRED';
      x.check(
        record === null || record.status === 'ready' || closed,
        `checkpoint of the call: ${record?.status ?? 'none'} ${JSON.stringify(refusal ?? null)} (expected none, ready, or the APPROVAL_EXPIRED refusal stored and delivered)`,
      );
      return outcome(x, event?.failedAt == null ? null : event.failedAt - expiresAt, `seen ${watch.types().join(' → ')}; final attempt ${event?.attempt ?? '?'}`);
    } finally {
      await watch.stop();
      if (!restored) await restore();
    }
  },
};

function outcome(x: Expectations, recoveryMs: number | null, note?: string): RunOutcome {
  return { effectsApplied: 0, duplicates: 0, resultsLost: 0, paused: false, unknownNotPaused: false, recoveryMs, failures: x.failures, ...(note ? { note } : {}) };
}
