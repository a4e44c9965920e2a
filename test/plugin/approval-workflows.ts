/**
 * A user's own workflow that runs a fenced activity only after a person approved it: it
 * describes the call (the plugin's describe activity), shows the description through a query,
 * waits for an update carrying the approved digest and expiry, then runs the call under
 * `withApprovedIntent`. Imports only the workflow-safe entry and `@temporalio/workflow`.
 */
import { condition, defineQuery, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import {
  activityFailureType,
  fencedCallDescriber,
  grantRequestDescriber,
  withApprovalGrant,
  withApprovedIntent,
  type ApprovedIntent,
  type FencedCallDescription,
  type GrantedCall,
} from '../../src/workflow';
import type { PaymentActivities } from './payment-activities';

/** The call's description once the workflow has it (what a person is shown). */
export const pendingChargeQuery = defineQuery<FencedCallDescription | null>('pendingCharge');
/** A person's approval: the digest they were shown and when it expires. */
export const approveChargeUpdate = defineUpdate<void, [ApprovedIntent]>('approveCharge');

/** What the workflow reports: the description it showed and the charge, or the failure type of the refused call. */
export interface ApprovedCheckoutResult {
  readonly description: FencedCallDescription;
  readonly charge: { chargeId: string } | null;
  readonly failureType: string | null;
}

const { chargeCard } = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 5 },
});

/** Describes a charge, waits for a person's approval, then charges under it. */
export async function approvedCheckoutWorkflow(customer: string, amountCents: number): Promise<ApprovedCheckoutResult> {
  let description: FencedCallDescription | null = null;
  let approval: ApprovedIntent | undefined;
  setHandler(pendingChargeQuery, () => description);
  setHandler(approveChargeUpdate, (given) => {
    approval = given;
  });
  description = await fencedCallDescriber<PaymentActivities>()('chargeCard', customer, amountCents);
  await condition(() => approval !== undefined);
  try {
    const charge = await withApprovedIntent(approval!, () => chargeCard(customer, amountCents));
    return { description, charge, failureType: null };
  } catch (error) {
    return { description, charge: null, failureType: activityFailureType(error) ?? String(error) };
  }
}

/** The call a signed grant must name, once the workflow has described it (with its `approvalRequest`). */
export const chargeGrantRequestQuery = defineQuery<FencedCallDescription | null>('chargeGrantRequest');
/** A person's signed grant, from the approve path (`signApprovalGrant`). */
export const grantChargeUpdate = defineUpdate<void, [string]>('grantCharge');

/**
 * Describes a charge for a grant under call id `callId`, waits for a signed grant, then charges
 * under it. With `forge`, the workflow makes up its own grant from the request instead of waiting
 * (workflow code holds no key: what it makes is refused).
 */
export async function grantedCheckoutWorkflow(customer: string, amountCents: number, callId: string, forge = false): Promise<Omit<ApprovedCheckoutResult, 'description'>> {
  let description: FencedCallDescription | null = null;
  let grant: string | undefined;
  setHandler(chargeGrantRequestQuery, () => description);
  setHandler(grantChargeUpdate, (given) => {
    grant = given;
  });
  description = await grantRequestDescriber<PaymentActivities>()(callId, 'chargeCard', customer, amountCents);
  if (forge) grant = forgedGrant(description.approvalRequest!);
  await condition(() => grant !== undefined);
  try {
    const charge = await withApprovalGrant({ callId, grant: grant! }, () => chargeCard(customer, amountCents));
    return { charge, failureType: null };
  } catch (error) {
    return { charge: null, failureType: activityFailureType(error) ?? String(error) };
  }
}

/** A grant-shaped text workflow code can make: the request's claims, a key id and a signature it invented. */
function forgedGrant(request: GrantedCall): string {
  const b64 = (value: unknown) => base64url(new TextEncoder().encode(JSON.stringify(value)));
  const { intentDigest: _digest, ...claims } = request;
  const header = { alg: 'HS256', kid: 'ops', typ: 'ttc-approval-grant' };
  const body = {
    v: 1,
    grantId: 'AAAAAAAAAAAAAAAAAAAAAA',
    ...claims,
    approver: 'workflow',
    issuedAt: new Date().toISOString(),
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  };
  // Claims in canonical form (keys sorted), so only the signature gives it away.
  const sorted = Object.fromEntries(Object.entries(body).sort(([a], [b]) => (a < b ? -1 : 1)));
  return `${b64(header)}.${b64(sorted)}.${b64('not a signature')}`;
}

/** Unpadded base64url of `bytes` (the sandbox has no Buffer). */
function base64url(bytes: Uint8Array): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = [(n >> 18) & 63, (n >> 12) & 63, (n >> 6) & 63, n & 63].slice(0, Math.min(4, bytes.length - i + 1));
    out += chars.map((c) => alphabet[c]).join('');
  }
  return out;
}
