// approve-charge.ts: your approval UI's server side signs what the person saw; workers verify it.
import { parseGrantSigningKey, signFencedCallApproval, type FencedCallDescription } from 'temporal-tool-checkpoint/operator';

/** `shown` is the workflow's `chargeToApprove`, its `arguments` what the person read; the grant lives 15 minutes at most. */
export function approveCharge(shown: FencedCallDescription, approver: string): string {
  const key = parseGrantSigningKey('TTC_APPROVAL_SIGNING_KEY', process.env.TTC_APPROVAL_SIGNING_KEY ?? '');
  return signFencedCallApproval(shown, { approver, key }); // refuses arguments whose digest is not the one reported
}
