/**
 * Composed transitions (docs/protocol.md#cost): the critical path of a fresh call holds at most two
 * synchronous durable writes, the claim before the effect and the result after it. Each write here
 * is still made of the protocol's transitions (docs/protocol.md#transitions), applied one after the
 * other to the record in memory and written with one compare-and-swap (or one insert): every step
 * checks its guards and fences as it would alone, the revision counts every step, and every state's
 * fields stay in the record (`createdAt`, `execution.claimedAt`, `execution.finishedAt`, `result`,
 * `delivery.claimedAt`, `delivery.deliveredAt`). Pure: no clock, no I/O.
 */
import { createCheckpoint } from './record';
import { claimDelivery, claimExecution, completeDelivery, completeExecution, releaseDelivery } from './transitions';
import type { Binding, CheckpointRecord, TransitionResult } from './types';

/**
 * Applies `then` in order to the `next` of `first`. @returns one transition: `first`'s
 * `expectedRevision`, the last step's `action` and `next` (its revision is
 * `expectedRevision` + the number of steps). Throws what the failing step throws.
 */
export function composeTransitions(first: TransitionResult, ...then: ReadonlyArray<(record: CheckpointRecord) => TransitionResult>): TransitionResult {
  let last = first;
  for (const step of then) last = step(last.next);
  return { action: last.action, expectedRevision: first.expectedRevision, next: last.next };
}

/**
 * create → ready → claimExecution → executing, as one record to insert with `createIfAbsent`
 * (revision 1, `createdAt` = `claimedAt` = `at`). Inserted, it is the claim; when a record
 * already exists the store returns that one and nothing is written.
 *
 * @param args as {@link claimExecution}.
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad binding, fence or time.
 */
export function createClaimed(binding: Binding, args: { attemptId: string; at: string; deadlineAt?: string }): CheckpointRecord {
  return claimExecution(createCheckpoint(binding, { createdAt: args.at }), args).next;
}

/**
 * executing | uncertain → completed → delivering → delivered in one write: the owning attempt
 * stores its result and records its own delivery of it (completeExecution, claimDelivery,
 * completeDelivery at the same `at`).
 *
 * @param args as {@link completeExecution}, plus the `deliveryId` of this attempt.
 * @returns action `none`; `next.revision` = `record.revision + 3`.
 * @throws {@link CheckpointError} as {@link completeExecution} (FENCE_CONFLICT, INVALID_TRANSITION,
 *   PAYLOAD_TOO_LARGE, NOT_JSON, INVALID_ARGUMENT).
 */
export function completeAndDeliver(
  record: CheckpointRecord,
  args: { attemptId: string; deliveryId: string; at: string; result: unknown; maxPayloadBytes?: number },
): TransitionResult {
  const { deliveryId, at } = args;
  return composeTransitions(
    completeExecution(record, args),
    (r) => claimDelivery(r, { deliveryId, at }),
    (r) => completeDelivery(r, { deliveryId, at }),
  );
}

/**
 * A record created already delivered with `result` (claimed, completed and delivered at `at`): what
 * the fence writes whole to say something about another call (an adoption record, a grant's use).
 *
 * @throws {@link CheckpointError} as {@link createClaimed} and {@link completeAndDeliver}.
 */
export function createDelivered(binding: Binding, args: { attemptId: string; deliveryId: string; at: string; result: unknown }): CheckpointRecord {
  const { attemptId, at } = args;
  return completeAndDeliver(createClaimed(binding, { attemptId, at, deadlineAt: at }), args).next;
}

/**
 * completed → delivering → delivered in one write (a stored result delivered again), or, from
 * `delivering` (a delivery that may have been accepted: Temporal records at most one completion
 * per activity, docs/protocol.md#the-fenced-attempt), delivering → completed → delivering →
 * delivered under the new fence.
 *
 * @returns action `none`.
 * @throws {@link CheckpointError} INVALID_TRANSITION from any other status; INVALID_ARGUMENT.
 */
export function redeliver(record: CheckpointRecord, args: { deliveryId: string; at: string }): TransitionResult {
  const claimAndComplete = [(r: CheckpointRecord) => claimDelivery(r, args), (r: CheckpointRecord) => completeDelivery(r, args)] as const;
  if (record.status === 'delivering') {
    return composeTransitions(releaseDelivery(record, { deliveryId: record.delivery!.deliveryId, at: args.at }), ...claimAndComplete);
  }
  return composeTransitions(claimDelivery(record, args), claimAndComplete[1]);
}
