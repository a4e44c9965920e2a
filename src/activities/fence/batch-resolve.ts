/**
 * A person's resolution of one paused item of a batch call: stored in the item's own
 * checkpoint under the fence it holds, never in the call's. `applied` stores the item's result
 * (the person proved the effect happened); `absent` stores the marker `RESOLVED_ABSENT`, so the
 * next attempt of the call runs the item again under its next generation (a new checkpoint and
 * key). Nothing is reset to ready. The workflow then runs the call again, which resumes the batch.
 */
import { randomUUID } from 'node:crypto';
import { sanitizeReason } from '../../checkpoint/bounds';
import { itemBinding, itemIdempotencyKey } from '../../checkpoint/batch-identity';
import { CheckpointError } from '../../checkpoint/errors';
import { idempotencyKey } from '../../checkpoint/digest';
import type { ResolveToolCallInput, ResolveToolCallResult, ToolOutcome } from '../contract/contract';
import type { CallLocator } from './call-failure';
import { AGENT_ABSENT_RESOLUTION_POLICY, AGENT_RESOLUTION_POLICY, resolveUnknownOutcome } from './resolution';
import { RESOLVED_ABSENT } from './batch-fence';
import type { FencedToolDeps } from './fence-deps';

/**
 * Stores `input.resolution` for the item `input.item` of the batch call `input.callId`, through
 * `resolveUnknownOutcome` (`./resolution`; `absent` under its `AGENT_ABSENT_RESOLUTION_POLICY`).
 * Idempotent: an item already settled is returned as stored.
 * @returns the item's stored outcome, its idempotency key, and the call's tool and revision.
 * @throws {@link CheckpointError} INVALID_ARGUMENT when this worker cannot prepare the call (its
 *   tool is gone), the tool is not a batch tool, `applied` comes without a result, or the item
 *   has no checkpoint; RECONCILE_PENDING (`details.retryAfterMs`) for `absent` while the item is
 *   executing before its settle time (its holder's request may still land); INVALID_TRANSITION
 *   when the item is neither executing, uncertain nor settled; STORE_OUTCOME_UNKNOWN when the
 *   item changed while being resolved (retry).
 */
export async function resolveBatchItem(deps: FencedToolDeps, where: CallLocator, input: ResolveToolCallInput): Promise<ResolveToolCallResult> {
  const { call } = where;
  const ref = input.item!;
  const what = `item ${JSON.stringify(ref.key)} (generation ${ref.generation}) of call ${JSON.stringify(input.callId)}`;
  if (call === undefined)
    throw new CheckpointError('INVALID_ARGUMENT', `${what}: this worker cannot prepare the call (its tool is gone or its input no longer parses), so its items cannot be found`, {
      callId: input.callId,
    });
  if (call.tool.batch !== true) throw new CheckpointError('INVALID_ARGUMENT', `${what}: ${call.tool.name} is not a batch tool`, { callId: input.callId, field: 'item' });
  // The item's checkpoint is found by call id (its fingerprint needs the item, which the person does not send).
  const callId = itemBinding(call.binding, ref.key, ref.generation, null).callId;
  const record = await deps.store.getByCall(call.binding.namespace, callId);
  if (record === null) throw new CheckpointError('INVALID_ARGUMENT', `${what} has no checkpoint to resolve`, { callId: input.callId, field: 'item' });
  const { record: current } = await resolveUnknownOutcome(
    deps,
    {
      record,
      kind: input.resolution === 'applied' ? 'applied' : 'not-applied',
      outcome: () => {
        if (input.resolution !== 'applied')
          return {
            ok: false,
            error: { type: RESOLVED_ABSENT, message: sanitizeReason(`a person proved the effect absent: ${input.reason}`, 'a person proved the effect absent') },
          };
        if (input.result === undefined) throw new CheckpointError('INVALID_ARGUMENT', `${what}: an applied resolution needs the item's result`, { field: 'result' });
        return input.result;
      },
      by: input.decidedBy ?? null,
      reason: input.reason,
      deliveryId: `delivery-resolve-${randomUUID()}`,
      tool: call.tool,
      what,
      details: { callId: input.callId },
    },
    input.resolution === 'applied' ? AGENT_RESOLUTION_POLICY : AGENT_ABSENT_RESOLUTION_POLICY,
  );
  return {
    callId: input.callId,
    toolName: current.binding.toolName,
    toolRevision: current.binding.toolRevision,
    outcome: current.result!.payload as ToolOutcome,
    // The key the item was sent under: the call's key under the tool and revision the item's checkpoint was made with (a deploy may have changed them since).
    idempotencyKey: itemIdempotencyKey(
      idempotencyKey(
        {
          namespace: call.binding.namespace,
          runChainId: call.runChainId,
          workflowId: call.workflowId,
          callId: call.keyCallId,
          toolName: current.binding.toolName,
          toolRevision: current.binding.toolRevision,
        },
        where.context.idempotencyKeySecret,
      ),
      ref.key,
      ref.generation,
    ),
    intentDigest: null,
  };
}
