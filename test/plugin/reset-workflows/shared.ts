/**
 * What the two releases of the checkout workflow in this folder share (test/plugin/resets.test.ts).
 */
export interface LedgerActivities {
  chargeCard(customer: string, amountCents: number): Promise<{ chargeId: string; amountCents: number }>;
  refundCard(customer: string, amountCents: number): Promise<{ refundId: string; amountCents: number }>;
}

export const activityOptions = { startToCloseTimeout: '30s', retry: { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 3 } } as const;
