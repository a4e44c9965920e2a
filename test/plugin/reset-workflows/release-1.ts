/** The checkout workflow as first released: two charges of 100 and one of 250. */
import { proxyActivities } from '@temporalio/workflow';
import { activityOptions, type LedgerActivities } from './shared';

const { chargeCard } = proxyActivities<LedgerActivities>(activityOptions);

export async function checkout(customer: string): Promise<string[]> {
  const first = await chargeCard(customer, 100);
  const second = await chargeCard(customer, 100);
  const third = await chargeCard(customer, 250);
  return [first.chargeId, second.chargeId, third.chargeId];
}
