/**
 * A user's plain workflow for the overlap test: its activity's start-to-close timeout is much
 * shorter than the activity takes, so Temporal starts new attempts while the first still runs.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface SlowActivities {
  slowCharge(customer: string): Promise<{ chargeId: string }>;
}

const { slowCharge } = proxyActivities<SlowActivities>({
  startToCloseTimeout: '1s',
  retry: { initialInterval: '200ms', backoffCoefficient: 1, maximumAttempts: 60 },
});

/** Charges once through an activity that outlives its start-to-close timeout. */
export async function slowCheckoutWorkflow(customer: string): Promise<{ chargeId: string }> {
  return slowCharge(customer);
}
