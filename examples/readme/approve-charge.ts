// approve-charge.ts: your approval UI's server side signs what the person approved; workers verify it.
import { parseGrantSigningKey, signApprovalGrant, type GrantedCall } from 'temporal-tool-checkpoint/operator';

/** `request` is the workflow's `chargeRequest`; the grant is valid for 15 minutes, for that call only. */
export function approveCharge(request: GrantedCall, approver: string): string {
  const key = parseGrantSigningKey('TTC_APPROVAL_SIGNING_KEY', process.env.TTC_APPROVAL_SIGNING_KEY ?? '');
  const now = new Date();
  return signApprovalGrant(request, { approver, expiresAt: new Date(now.getTime() + 15 * 60_000).toISOString() }, key, now);
}
