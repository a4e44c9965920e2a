/**
 * A user's plain workflow for the fenced-heartbeat test: it schedules a fenced activity without a
 * heartbeat timeout (as the README's adoption example does), the same activity with one of its
 * own, and an activity the plugin does not fence.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface HeartbeatActivities {
  /** Fenced: takes longer than the plugin's heartbeat timeout and heartbeats once, at its start. */
  slowCharge(customer: string): Promise<{ chargeId: string }>;
  /** Not fenced. */
  audit(customer: string): Promise<string>;
}

const once = { retry: { maximumAttempts: 1 } } as const;
const withoutHeartbeat = proxyActivities<HeartbeatActivities>({ startToCloseTimeout: '1 minute', ...once });
const withOwnHeartbeat = proxyActivities<HeartbeatActivities>({ startToCloseTimeout: '1 minute', heartbeatTimeout: '45s', ...once });

/** Charges twice (without, then with its own heartbeat timeout) and audits; one attempt each, so a heartbeat timeout fails the run. */
export async function heartbeatDefaultsWorkflow(customer: string): Promise<string[]> {
  const first = await withoutHeartbeat.slowCharge(customer);
  const second = await withOwnHeartbeat.slowCharge(customer);
  return [first.chargeId, second.chargeId, await withoutHeartbeat.audit(customer)];
}
