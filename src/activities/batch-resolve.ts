/**
 * A person's resolution of one paused item of a batch call (issue 14): stored in the item's own
 * checkpoint. Implemented by the batch fence's owner.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { ResolveToolCallInput, ResolveToolCallResult } from './contract';
import type { CallLocator } from './call-failure';
import type { FencedToolDeps } from './fenced-tool';

/**
 * Stores `input.resolution` for the item `input.item` of the batch call `input.callId`.
 * @throws {@link CheckpointError} INVALID_ARGUMENT when the item has no checkpoint to resolve.
 */
export async function resolveBatchItem(deps: FencedToolDeps, where: CallLocator, input: ResolveToolCallInput): Promise<ResolveToolCallResult> {
  void deps;
  void where;
  throw new CheckpointError('INVALID_ARGUMENT', `item ${JSON.stringify(input.item?.key)} of call ${JSON.stringify(input.callId)} cannot be resolved yet`, { callId: input.callId });
}
