/**
 * A call dispatched in a reset run with the input a discarded run built (docs/protocol.md#resets).
 * Temporal dispatches an activity still scheduled at a reset point again in the reset run, with
 * the input of the run the reset discarded. A call that claims an occurrence of its intent counts
 * the occurrences as that input says (that run's own calls, its history), not as the reset run's
 * calls do. Such a call goes on only once it holds an occurrence: a row at its own address (its
 * claim, however that ended, or its adoption record). Before that it is refused, and the failure
 * path stores the refusal at its own address (`./call-failure`), which holds no occurrence: an
 * attempt of the discarded run still about to claim loses its compare-and-swap, and the reset
 * run's model may ask for the action again. A business key or an intent key is the same wherever
 * the call runs: such calls go on.
 */
import { CheckpointError } from '../../checkpoint/errors';
import type { CallLocator } from './call-failure';
import type { FencedToolDeps } from './fence-deps';
import { builtInAnotherRun } from './occurrence';

/**
 * Refuses a call that claims an occurrence, built in another run than the one it runs in
 * (`occurrences.builtInRun`), when its own address holds no row. One read, only for such a call.
 *
 * @throws {@link CheckpointError} DISCARDED_BY_RESET (non-retryable; nothing ran); the store's codes.
 */
export async function refuseIfDiscardedByReset(deps: FencedToolDeps, where: CallLocator): Promise<void> {
  const { context, call } = where;
  // Occurrence keys have a next occurrence; business and intent keys have none.
  if (call?.dedupe?.next === undefined || !builtInAnotherRun(call.input, context.runId)) return;
  if ((await deps.store.getByCall(call.binding.namespace, call.binding.callId)) !== null) return;
  const built = call.input.occurrences!.builtInRun!;
  throw new CheckpointError(
    'DISCARDED_BY_RESET',
    `call ${JSON.stringify(call.input.callId)} was built by run ${built}, which a reset discarded, and no attempt had claimed it: ` +
      `it is not run in run ${context.runId}; nothing ran, and the model may ask for it again`,
    { callId: call.input.callId, builtInRun: built, runId: context.runId },
  );
}
