/**
 * A user's own workflow that runs a fenced activity only after a person approved it: it
 * describes the call (the plugin's describe activity), shows the description through a query,
 * waits for an update carrying the approved digest and expiry, then runs the call under
 * `withApprovedIntent`. Imports only the workflow-safe entry and `@temporalio/workflow`.
 */
import { condition, defineQuery, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import { activityFailureType, fencedCallDescriber, withApprovedIntent, type ApprovedIntent, type FencedCallDescription } from '../../src/workflow';
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
