/**
 * The crash-window scenarios of docs/protocol.md#crash-windows: one worker process armed with
 * `TTC_CRASH_AT` kills itself with SIGKILL at the named point; a standby worker joins the task
 * queue right after the kill; the run must then recover as the window prescribes (or pause, and be
 * resolved by the harness as the operator).
 */
import type { CrashPoint } from '../../src/activities/fence/crash-points';
import { DEFAULT_RECONCILE_MARGIN_MS } from '../../src/activities/fence/fenced-tool';
import type { CallSource, FinalCallStatus } from '../../src/workflows/agent/types';
import { checkEffects, countLostResults, settleWithOperator, within } from '../checks';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { CRASH_CALL_DEADLINE_MS } from '../tools';
import type { ScriptedCall } from '../transcripts';

/** Tolerance for clock reads between the workers and the Temporal server, ms. */
const CLOCK_SLACK_MS = 250;

/** A crash-window scenario. */
export interface CrashWindowSpec {
  readonly id: string;
  readonly title: string;
  readonly expected: string;
  readonly crashAt: { readonly point: CrashPoint; readonly toolName: string; readonly occurrence?: number };
  /** The run's calls (one model turn). */
  readonly calls: (tag: string) => ScriptedCall[];
  /** Index of the call the kill interrupts. */
  readonly crashedCall: number;
  /**
   * Every call of the finished run, in order (a retry after `absent` right after its original). A
   * list of sources accepts any of them.
   */
  readonly expectCalls: ReadonlyArray<{ readonly status: FinalCallStatus; readonly source: CallSource | null | readonly CallSource[] }>;
  /** The run must pause on the crashed call; the operator finds the effect `applied` or `absent`. */
  readonly pause?: 'applied' | 'absent';
  /**
   * The killed claim must settle first (docs/protocol.md#overlapping-attempts): the call completes,
   * or pauses, no earlier than `settleAt` = the claim's deadline (`claimedAt + callDeadlineMs`) +
   * the fence's margin, and a completion takes the fence over from the killed attempt.
   */
  readonly settles?: boolean;
}

/** Builds the scenario. */
export function crashWindowScenario(spec: CrashWindowSpec): Scenario {
  const occurrence = spec.crashAt.occurrence === undefined ? '' : `#${spec.crashAt.occurrence}`;
  return {
    id: spec.id,
    title: spec.title,
    forced: `TTC_CRASH_AT=${spec.crashAt.point}:${spec.crashAt.toolName}${occurrence} on the only worker; a standby joins after the SIGKILL`,
    expected: spec.expected,
    async run(rep): Promise<RunOutcome> {
      const x = new Expectations();
      const calls = spec.calls(rep.tag);
      const armed = await rep.worker({ crashAt: spec.crashAt });
      const standby = rep.standby();
      const handle = await rep.start(calls);
      const exit = await within(armed.exited, 90_000);
      const killedAt = Date.now();
      x.equal(exit, 'SIGKILL', `the armed worker's exit at ${spec.crashAt.point}`);
      const atKill = spec.settles ? await rep.record(calls[spec.crashedCall]!) : null;
      standby.open();
      await rep.forgetStickyWorker();

      const { state, pauses } = await settleWithOperator(rep, handle, calls, x);
      const paused = pauses.length > 0;
      const unknownNotPaused = spec.pause !== undefined && !paused;
      if (spec.pause === undefined) x.equal(pauses, [], 'pauses (this window must recover by itself)');
      else {
        x.check(!unknownNotPaused, 'the outcome was unknown but the run did not pause');
        x.equal(
          pauses.map((p) => [p.callId, p.errorType, p.resolution]),
          [[calls[spec.crashedCall]!.id, 'OUTCOME_UNKNOWN', spec.pause]],
          'pause (call, type, what the operator found)',
        );
      }
      const effects = await checkEffects(rep, calls, x);
      const resultsLost = await countLostResults(rep, calls, state, x);
      if (state.kind === 'finished') {
        x.equal(
          // A list of sources accepts any of them (shown as the list when one of them came).
          state.result.calls.map((c, i): CrashWindowSpec['expectCalls'][number] => {
            const expected = spec.expectCalls[i]?.source;
            return { status: c.status, source: Array.isArray(expected) && c.source !== null && expected.includes(c.source) ? expected : c.source };
          }),
          spec.expectCalls,
          'calls (status, source)',
        );
      }
      const event = (await rep.callEvents(handle)).get(calls[spec.crashedCall]!.id);
      const recoveredAt = paused ? event?.failedAt : event?.completedAt;
      if (spec.settles) {
        const execution = atKill?.execution;
        if (x.check(atKill?.status === 'executing' && execution != null, `checkpoint when the worker died: ${atKill?.status ?? 'none'} (expected executing)`)) {
          const deadlineAt = execution!.deadlineAt === null ? Date.parse(execution!.claimedAt) + CRASH_CALL_DEADLINE_MS : Date.parse(execution!.deadlineAt);
          const settleAt = deadlineAt + DEFAULT_RECONCILE_MARGIN_MS;
          if (recoveredAt != null)
            x.check(
              recoveredAt >= settleAt - CLOCK_SLACK_MS,
              `the call ${paused ? 'paused' : 'completed'} ${recoveredAt - Date.parse(execution!.claimedAt)} ms after the killed claim, before it settled (${settleAt - Date.parse(execution!.claimedAt)} ms)`,
            );
          if (!paused) {
            const final = await rep.record(calls[spec.crashedCall]!);
            x.equal(final?.execution?.previousAttemptId, execution!.attemptId, 'the fence the completing attempt took over');
            if (final?.execution != null)
              x.check(
                Date.parse(final.execution.claimedAt) >= settleAt - CLOCK_SLACK_MS,
                `the fence was taken over ${Date.parse(final.execution.claimedAt) - Date.parse(execution!.claimedAt)} ms after the killed claim, before it settled`,
              );
          }
        }
      }
      return { ...effects, resultsLost, paused, unknownNotPaused, recoveryMs: recoveredAt == null ? null : recoveredAt - killedAt, failures: x.failures };
    },
  };
}
