/**
 * Workflows for heartbeat-default-routing.test.ts: a workflow bundled with the plugin schedules an
 * activity type the plugin fences on its own worker, but routes the call to another task queue,
 * served by a worker that does not fence it (another team's worker, or one not yet on the plugin).
 */
import { proxyActivities } from '@temporalio/workflow';

export interface RoutedActivities {
  /** Fenced by the plugin on the workflow's worker; runs plainly on the `payments` queue. */
  slowCharge(customer: string): Promise<{ chargeId: string }>;
}

/** Schedules `slowCharge` on `paymentsQueue`, without a heartbeat timeout (the user asked for none), retried as usual. */
export async function routedChargeWorkflow(customer: string, paymentsQueue: string): Promise<string> {
  const { slowCharge } = proxyActivities<RoutedActivities>({ taskQueue: paymentsQueue, startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3, initialInterval: '100ms' } });
  return (await slowCharge(customer)).chargeId;
}
