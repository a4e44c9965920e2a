/**
 * A deploy between two attempts of one call (docs/protocol.md#nothing-applied): the worker that ran
 * attempt 1 of a send_email is SIGKILLed (after the result was stored, or after the effect and
 * before it was stored), and the next attempt lands on a worker of the new deploy, where send_email
 * has a new revision (v2) or is gone.
 *
 * The call's checkpoint is past `ready`, so whatever the new worker thinks of the call (a binding
 * conflict, an unknown tool), it must not report it as "nothing applied": a stored result is
 * delivered as stored (source `store`, `storedUnder` naming the old revision), an executing
 * claim pauses the run as OUTCOME_UNKNOWN for a person (who resolves it on the new deploy). The
 * email is never sent again.
 */
import type { CrashPoint } from '../../src/activities/fence/crash-points';
import { checkEffects, countLostResults, settleWithOperator, within } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { emailCall } from '../transcripts';

interface RedeploySpec {
  readonly id: string;
  readonly deploy: 'new-revision' | 'tool-removed';
  readonly window: Extract<CrashPoint, 'after-result-stored' | 'after-effect'>;
}

function redeployScenario(spec: RedeploySpec): Scenario {
  const stored = spec.window === 'after-result-stored';
  const deploy = spec.deploy === 'new-revision' ? 'send_email at revision v2' : 'no send_email at all';
  return {
    id: spec.id,
    title: `deploy between attempts, ${stored ? 'result stored' : 'effect applied, result not stored'} (send_email v1 → ${spec.deploy === 'new-revision' ? 'v2' : 'removed'})`,
    forced: `TTC_CRASH_AT=${spec.window}:send_email on the only worker (send_email v1); the standby that joins after the SIGKILL has ${deploy} (crash/tools.ts ${spec.deploy === 'new-revision' ? 'TTC_CRASH_TOOL_REVISIONS=send_email=v2' : 'TTC_CRASH_REMOVE_TOOLS=send_email'})`,
    expected: stored
      ? 'the stored result is delivered as stored: one email, source store, storedUnder = send_email v1; never failed / nothing applied'
      : 'pauses as OUTCOME_UNKNOWN (never failed / nothing applied, never sent again); the operator finds the email and resolves applied on the new deploy: one email',
    recovery: `from the SIGKILL to the ${stored ? 'ActivityTaskCompleted' : 'ActivityTaskFailed (OUTCOME_UNKNOWN)'} of the call: the heartbeat timeout and the first retry`,
    async run(rep: Repetition): Promise<RunOutcome> {
      const x = new Expectations();
      const call = emailCall(rep.tag, 1);
      const armed = await rep.worker({ crashAt: { point: spec.window, toolName: 'send_email' } });
      const standby = rep.standby({ env: spec.deploy === 'new-revision' ? { TTC_CRASH_TOOL_REVISIONS: 'send_email=v2' } : { TTC_CRASH_REMOVE_TOOLS: 'send_email' } });
      const handle = await rep.start([call]);
      const exit = await within(armed.exited, 90_000);
      const killedAt = Date.now();
      x.equal(exit, 'SIGKILL', `the armed worker's exit at ${spec.window}`);
      const atKill = await rep.record(call);
      // The result and its delivery are one write (docs/protocol.md#cost): a stored result is
      // `delivered` in the record.
      x.equal(atKill?.status, stored ? 'delivered' : 'executing', 'checkpoint when worker 1 died');
      standby.open();
      await rep.forgetStickyWorker();

      const { state, pauses } = await settleWithOperator(rep, handle, [call], x);
      const paused = pauses.length > 0;
      const unknownNotPaused = !stored && !paused;
      const event = (await rep.callEvents(handle)).get(call.id);
      if (state.kind === 'finished') {
        const report = state.result.calls.map((c) => ({ status: c.status, source: c.source, errorType: c.errorType }));
        x.check(
          !state.result.calls.some((c) => c.status === 'failed' || c.status === 'not-run'),
          `a call with a claimed checkpoint was reported as not applied: ${JSON.stringify(report)}`,
        );
      }
      if (stored) {
        x.equal(pauses, [], 'pauses (the stored result must be delivered)');
        if (state.kind === 'finished')
          x.equal(
            state.result.calls.map((c) => [c.status, c.source]),
            [['completed', 'store']],
            'calls (status, source)',
          );
        x.equal(event?.result?.source, 'store', 'source of the result the new worker returned');
        x.equal(event?.result?.storedUnder, { toolName: 'send_email', toolRevision: 'v1' }, 'storedUnder of the result the new worker returned');
      } else {
        x.check(!unknownNotPaused, 'the outcome was unknown but the run did not pause');
        x.equal(
          pauses.map((p) => [p.callId, p.errorType, p.resolution]),
          [[call.id, 'OUTCOME_UNKNOWN', 'applied']],
          'pause (call, type, what the operator found)',
        );
        if (state.kind === 'finished')
          x.equal(
            state.result.calls.map((c) => [c.status, c.source]),
            [['resolved-applied', 'resolution']],
            'calls (status, source)',
          );
      }
      const final = await rep.record(call);
      x.equal(final?.binding.toolRevision, 'v1', 'the checkpoint keeps the revision it was claimed under');
      const effects = await checkEffects(rep, [call], x);
      const resultsLost = await countLostResults(rep, [call], state, x);
      const endAt = paused ? event?.failedAt : event?.completedAt;
      return { ...effects, resultsLost, paused, unknownNotPaused, recoveryMs: endAt == null ? null : endAt - killedAt, failures: x.failures };
    },
  };
}

export const redeployScenarios: Scenario[] = [
  redeployScenario({ id: 'redeploy-revision-stored', deploy: 'new-revision', window: 'after-result-stored' }),
  redeployScenario({ id: 'redeploy-revision-executing', deploy: 'new-revision', window: 'after-effect' }),
  redeployScenario({ id: 'redeploy-removed-stored', deploy: 'tool-removed', window: 'after-result-stored' }),
  redeployScenario({ id: 'redeploy-removed-executing', deploy: 'tool-removed', window: 'after-effect' }),
];
