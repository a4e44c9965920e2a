/**
 * Workflows of the adversarial plugin tests: a user's plain workflow calling its activity as a
 * local activity whose retries back off with a workflow timer (past `localRetryThreshold`).
 */
import { proxyLocalActivities } from '@temporalio/workflow';
import type { PaymentActivities } from './payment-activities';

const { chargeCard } = proxyLocalActivities<PaymentActivities>({
  startToCloseTimeout: '10s',
  // Every retry waits longer than the threshold: the SDK schedules it again after a timer, under a new sequence number.
  localRetryThreshold: '100ms',
  retry: { initialInterval: '500ms', backoffCoefficient: 1, maximumAttempts: 6 },
});

/** Charges a card through a local activity. */
export async function localCheckoutWorkflow(customer: string, amountCents: number): Promise<{ chargeId: string }> {
  return chargeCard(customer, amountCents);
}
