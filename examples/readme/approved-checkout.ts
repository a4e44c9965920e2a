// approved-checkout.ts: workflow code that charges only under a person's signed grant (export it from your workflows file).
import { condition, defineQuery, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import { grantRequestDescriber, withApprovalGrant, type FencedCallDescription } from 'temporal-tool-checkpoint/workflow';
import type * as activities from './activities.js';

const { chargeCard } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });
export const chargeToApprove = defineQuery<FencedCallDescription | null>('chargeToApprove'); // what your approval UI shows and signs
export const grantCharge = defineUpdate<void, [string]>('grantCharge'); // the signed grant it sends back

export async function approvedCheckoutWorkflow(order: activities.Order): Promise<activities.Receipt> {
  let shown: FencedCallDescription | null = null;
  let grant: string | undefined;
  setHandler(chargeToApprove, () => shown);
  setHandler(grantCharge, (signed) => void (grant = signed));
  const callId = `charge-${order.orderId}`; // unique in the run: the grant names it
  shown = await grantRequestDescriber<typeof activities>()(callId, 'chargeCard', order);
  await condition(() => grant !== undefined);
  return withApprovalGrant({ callId, grant: grant! }, () => chargeCard(order));
}
