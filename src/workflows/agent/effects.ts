/**
 * The run's effects: each call of a finished run in exactly one list — applied and
 * left in place, compensated, compensation pending, not run, unknown. Pure and sandbox-safe.
 *
 * @see README.md "Effects that span steps": the run result lists effects applied, compensated,
 * compensation pending and not run
 */
import type { BatchCancellationReport } from '../../activities/contract/batch-items';
import type { CallReport, FinalCallStatus, RunEffects } from './types';

/**
 * Groups final calls by effect:
 * - `completed` / `resolved-applied` with an `ok` outcome: `compensated` when its compensation
 *   applied, `compensationPending` when one was started and did not finish, else `applied`
 *   (including `not-declared`: the tool has no compensation);
 * - `completed` with the tool's own error result (`ok: false`), `not-run`, `rejected`, `failed`,
 *   `resolved-absent`: `notRun`;
 * - a batch call cancelled part-way (`unknown` with its `batch` report): by its items, whose split
 *   the activity reported exactly: `unknown` while any item's outcome is unknown, else `applied`
 *   when some item applied (those stay in place), else `notRun`;
 * - any other `unknown`, `abandoned`: `unknown`.
 *
 * Pure: reads only `calls`.
 * @returns {@link RunEffects}, call ids in the order of `calls`
 */
export function listEffects(calls: readonly CallReport<FinalCallStatus>[]): RunEffects {
  const effects: { [K in keyof RunEffects]: string[] } = { applied: [], compensated: [], compensationPending: [], notRun: [], unknown: [] };
  for (const call of calls) effects[effectOf(call)].push(call.callId);
  return effects;
}

function effectOf(call: CallReport<FinalCallStatus>): keyof RunEffects {
  switch (call.status) {
    case 'completed':
    case 'resolved-applied': {
      if (call.outcome?.ok !== true) return 'notRun';
      const compensation = call.compensation?.status;
      if (compensation === 'compensated') return 'compensated';
      if (compensation === 'pending' || compensation === 'paused' || compensation === 'running') return 'compensationPending';
      return 'applied';
    }
    case 'unknown':
      return call.batch !== undefined ? batchEffect(call.batch) : 'unknown';
    case 'abandoned':
      return 'unknown';
    default:
      return 'notRun';
  }
}

/** The effect of a cancelled batch call by its items (see {@link listEffects}). */
function batchEffect(batch: BatchCancellationReport): keyof RunEffects {
  if (batch.unknown.count > 0) return 'unknown';
  return batch.applied.count > 0 ? 'applied' : 'notRun';
}
