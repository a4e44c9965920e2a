/**
 * Signing a person's approval as a grant (docs/protocol.md#approval-grants), for the approve
 * paths: `ttc approve`, the console, and a team's own UI through `temporal-tool-checkpoint/operator`.
 * The key stays with the approve path; workers hold the key that verifies (the same HMAC secret,
 * or the approver's Ed25519 public key); workflow code holds neither. Node side.
 */
import { signApprovalGrant, type GrantSigningKey } from '../checkpoint/approval-grant';
import type { GrantedCall } from '../checkpoint/approval';
import { CheckpointError } from '../checkpoint/errors';
import type { WaitingCall } from './run-decisions';

export { signApprovalGrant } from '../checkpoint/approval-grant';
export type { GrantSigningKey, GrantVerificationKey } from '../checkpoint/approval-grant';
export type { GrantedCall } from '../checkpoint/approval';
export { parseGrantSigningKey, parseGrantVerificationKeys, newEd25519GrantKeyEntries } from '../approval-grant-keys';

/**
 * The call an approval of `waiting` (an agent run's call awaiting approval, read with
 * `readWaitingCall`) grants, with the intent digest the person reviewed.
 *
 * @param namespace the Temporal namespace of the run.
 * @throws {@link CheckpointError} INVALID_ARGUMENT (details `field`) when the run does not report its
 *   tenant or run chain (older code) or the call shows no intent digest; nothing can be signed.
 */
export function grantedAgentCall(waiting: WaitingCall, namespace: string, intentDigest: string): GrantedCall {
  const { tenant, runChainId } = waiting.status;
  if (tenant === undefined || runChainId === undefined) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `run ${waiting.workflowId} does not report its ${tenant === undefined ? 'tenant' : 'run chain'} (older code): no grant can name the call`,
      {
        field: tenant === undefined ? 'tenant' : 'runChainId',
      },
    );
  }
  if (intentDigest === '') throw new CheckpointError('INVALID_ARGUMENT', `call ${waiting.call.callId} shows no intent digest yet; nothing was signed`, { field: 'intentDigest' });
  return { namespace, tenant, workflowId: waiting.workflowId, runChainId, callId: waiting.call.callId, toolName: waiting.call.toolName, intentDigest };
}

/**
 * A grant of `waiting`'s call for `approver`, expiring with the call's approval (`approvalExpiresAt`).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT as {@link grantedAgentCall}, or when the call shows
 *   no approval expiry or it has passed.
 */
export function signAgentApproval(waiting: WaitingCall, options: { namespace: string; intentDigest: string; approver: string; key: GrantSigningKey; now?: Date }): string {
  const call = grantedAgentCall(waiting, options.namespace, options.intentDigest);
  const expiresAt = waiting.call.approvalExpiresAt;
  if (expiresAt === null) throw new CheckpointError('INVALID_ARGUMENT', `call ${call.callId} shows no approval expiry; nothing was signed`, { field: 'approvalExpiresAt' });
  return signApprovalGrant(call, { approver: options.approver, expiresAt }, options.key, options.now ?? new Date());
}
