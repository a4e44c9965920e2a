// workflows.ts: your workflow, unchanged; it does not know about the fence.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from './activities.js';

const { chargeCard } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });

export async function checkoutWorkflow(order: activities.Order): Promise<activities.Receipt> {
  return chargeCard(order);
}
