/**
 * The fixed checkout workflow an operator resets runs onto: a small refund first, then the same
 * charges in another order. Every charge is an action the first release applied.
 */
import { proxyActivities } from '@temporalio/workflow';
import { activityOptions, type LedgerActivities } from './shared';

const { chargeCard, refundCard } = proxyActivities<LedgerActivities>(activityOptions);

export async function checkout(customer: string): Promise<string[]> {
  const refund = await refundCard(customer, 5);
  const first = await chargeCard(customer, 100);
  const third = await chargeCard(customer, 250);
  const second = await chargeCard(customer, 100);
  return [refund.refundId, first.chargeId, third.chargeId, second.chargeId];
}
