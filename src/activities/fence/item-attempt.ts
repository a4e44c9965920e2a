/**
 * The attempt of one item of a batch call (`./batch-fence.ts`): the attempt logic of a call
 * (`./attempt.ts`) run inside the call's attempt, its span and its store.
 */
import { CheckpointError } from '../../checkpoint/errors';
import type { AttemptObserver } from '../../telemetry/attempt-telemetry';
import type { FencedToolResult } from '../contract/contract';
import type { PreparedCall } from './prepare-call';
import type { ClaimedItem } from './batch-types';
import type { FencedToolDeps } from './fence-deps';
import { Attempt, MAX_ROUNDS, REREAD, type ItemSettler } from './attempt';

/** The observer of an item's attempt: items are traced as the store operations of their call's span. */
const ITEM_OBSERVER: AttemptObserver = { decided: () => undefined };

/**
 * Settles one item of a batch call (`./batch-fence`) with the attempt logic of a call: claim,
 * apply under the claim, store; or deliver a stored result; or reconcile a claim another attempt
 * left (lookup, same-key repeat, pause). Runs inside the call's attempt (its span, its store).
 * @throws {@link CheckpointError} as {@link settleCall}.
 */
export async function settleItem(deps: FencedToolDeps, item: PreparedCall): Promise<FencedToolResult> {
  const attempt = new Attempt(deps, item, { claimSent: false, seen: null }, ITEM_OBSERVER);
  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    const step = await attempt.round();
    if (step !== REREAD) return step;
  }
  throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `item ${item.binding.callId}: the checkpoint kept changing under this attempt (${MAX_ROUNDS} lost compare-and-swaps)`, {
    callId: item.input.callId,
  });
}

/** The {@link ClaimedItem} of `item` (its claim was made with `item.attemptId`). */
export function claimedItem(deps: FencedToolDeps, item: PreparedCall): ClaimedItem {
  const attempt = new Attempt(deps, item, { claimSent: true, seen: null }, ITEM_OBSERVER);
  return {
    apply: (claimed) => attempt.applyClaimed(claimed),
    completion: (claimed, outcome) => attempt.completion(claimed, outcome),
    recordUnknown: async (claimed, reason) => {
      await attempt.recordUnknown(claimed, reason);
      throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `item ${item.binding.callId}: its unknown outcome was recorded`, { callId: item.input.callId });
    },
  };
}

/** The {@link ItemSettler} a batch call's attempt is given. */
export const ITEM_SETTLER: ItemSettler = { settle: settleItem, claimed: claimedItem };
