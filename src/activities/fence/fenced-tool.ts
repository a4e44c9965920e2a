/**
 * One fenced tool-call attempt (docs/protocol.md#the-fenced-attempt, #overlapping-attempts):
 * create-if-absent, decide, then execute, deliver or reconcile. Every change to the checkpoint is a
 * compare-and-swap; the tool never runs without a durable claim; a claim held by another attempt is
 * taken over only once its holder's request can no longer be outstanding (its settle time), except
 * by a same-key repeat to a provider that deduplicates by key within its key retention.
 */
import { Context } from '@temporalio/activity';
import { CheckpointError } from '../../checkpoint/errors';
import { observeAttempt } from '../../telemetry/attempt-telemetry';
import type { FencedToolResult } from '../contract/contract';
import type { PreparedCall } from './prepare-call';
import { fenceLost } from './attempt-standing';
import { type AttemptEvidence, type FencedToolDeps } from './fence-deps';
import { Attempt, MAX_ROUNDS, REREAD } from './attempt';
import { ITEM_SETTLER } from './item-attempt';

export { fenceLost, supersededAttempt } from './attempt-standing';
export type { AttemptStanding } from './attempt-standing';
export { DEFAULT_RECONCILE_MARGIN_MS, settleTime } from './fence-deps';
export type { AttemptEvidence, FencedToolDeps } from './fence-deps';

/**
 * Runs one attempt of a prepared call to a result, reading and deciding again whenever a
 * delivery compare-and-swap loses (at most 8 rounds). The attempt is traced (an `execute_tool`
 * span with the store's operations as child spans) and counted on the activity's metric meter
 * (see `../../telemetry/attempt-telemetry`).
 *
 * @param evidence filled in as the attempt goes (see {@link AttemptEvidence}).
 * @throws {@link CheckpointError} OUTCOME_UNKNOWN (pause for a person); RECONCILE_PENDING (retryable:
 *   the holder's settle time has not come, a competitor won the claim, or the outcome is unknown
 *   and the next attempt reconciles; `details.retryAfterMs` when the wait is known);
 *   APPROVAL_EXPIRED before a claim; BINDING_CONFLICT; FENCE_CONFLICT (this attempt's claim was
 *   taken over and Temporal has given up on it, see {@link fenceLost}; its result is discarded; the
 *   attempt Temporal still waits for gets RECONCILE_PENDING instead); INVALID_CHECKPOINT and the store codes.
 */
export async function settleCall(deps: FencedToolDeps, call: PreparedCall, evidence: AttemptEvidence): Promise<FencedToolResult> {
  const ctx = Context.current();
  const observed = {
    toolName: call.tool.name,
    toolRevision: call.tool.revision,
    callId: call.input.callId,
    idempotencyKey: call.idempotencyKey,
    attempt: ctx.info.attempt,
    approved: call.input.expectedIntentDigest !== undefined,
    ...(call.input.approvedBy === undefined ? {} : { approvedBy: call.input.approvedBy }),
  };
  return observeAttempt(observed, deps.store, ctx.metricMeter, async (store, observer) => {
    const attempt = new Attempt({ ...deps, store }, call, evidence, observer, ITEM_SETTLER);
    try {
      for (let round = 0; round < MAX_ROUNDS; round += 1) {
        const step = await attempt.round();
        if (step !== REREAD) return step;
      }
    } catch (error) {
      throw fenceLost(error, evidence.adopted ?? call, { attempt: ctx.info.attempt, cancellation: ctx.cancellationDetails });
    }
    throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `call ${call.binding.callId}: the checkpoint kept changing under this attempt (${MAX_ROUNDS} lost compare-and-swaps)`, {
      callId: call.binding.callId,
    });
  });
}
