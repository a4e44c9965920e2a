/**
 * A call dispatched in a reset run with the input a discarded run built (docs/protocol.md#resets).
 * Temporal dispatches an activity still scheduled at a reset point again in the reset run, with
 * the input of the run the reset discarded: that input counts occurrences as that run did (its own
 * calls, its history), not as the reset run's calls do. Such a call goes on only as the call an
 * attempt already claimed. Before any claim it is refused, and the failure path stores the refusal
 * as the call's result (`./call-failure`): an attempt of the discarded run still about to claim
 * loses its compare-and-swap, and the reset run's model may ask for the action again.
 */
import { CheckpointError } from '../../checkpoint/errors';
import { findCallRecord, type CallLocator } from './call-failure';
import type { FencedToolDeps } from './fence-deps';
import { builtInAnotherRun } from './occurrence';

/**
 * Refuses a call built in another run than the one it runs in (`occurrences.builtInRun`) when no
 * attempt has claimed it: its checkpoint is absent or `ready`. One read, only for such a call.
 *
 * @throws {@link CheckpointError} DISCARDED_BY_RESET (non-retryable; nothing ran); the store's codes.
 */
export async function refuseIfDiscardedByReset(deps: FencedToolDeps, where: CallLocator): Promise<void> {
  const { input, context } = where;
  if (!builtInAnotherRun(input, context.runId)) return;
  const record = await findCallRecord(deps, where);
  if (record !== null && record.status !== 'ready') return;
  throw new CheckpointError(
    'DISCARDED_BY_RESET',
    `call ${JSON.stringify(input.callId)} was built by run ${input.occurrences!.builtInRun}, which a reset discarded, and no attempt had claimed it: ` +
      `it is not run in run ${context.runId}; nothing ran, and the model may ask for it again`,
    { callId: input.callId, builtInRun: input.occurrences!.builtInRun!, runId: context.runId },
  );
}
