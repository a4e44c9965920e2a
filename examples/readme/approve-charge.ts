// approve-charge.ts: your approval UI's server side signs what the person saw; workers verify it.
import { parseGrantSigningKey, signFencedCallApproval, type FencedCallDescription, type RunIdentity } from 'temporal-tool-checkpoint/operator';

/**
 * `shown` is what the workflow's `chargeToApprove` query answered, its `arguments` what the person read;
 * `run` is the run you queried (your handle's namespace and workflow id), never what the run says.
 */
export function approveCharge(shown: FencedCallDescription, approver: string, run: RunIdentity): string {
  const key = parseGrantSigningKey('TTC_APPROVAL_SIGNING_KEY', process.env.TTC_APPROVAL_SIGNING_KEY ?? '');
  // Refuses arguments whose digest is not the one reported, and a request naming another run; lives 15 minutes at most.
  return signFencedCallApproval(shown, { approver, key, run });
}
