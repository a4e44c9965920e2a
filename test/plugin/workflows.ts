/**
 * A user's plain workflows, unaware of the fence: they call their activities through
 * `proxyActivities` as any Temporal workflow does. The plugin fences them from the worker.
 */
import { continueAsNew, proxyActivities } from '@temporalio/workflow';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import type { PaymentActivities } from './payment-activities';

const { chargeCard, sendInvoice } = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '30s',
  heartbeatTimeout: '3s',
  retry: { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 10 },
});

/** `chargeCard` with the README's options: a start-to-close timeout, no heartbeat timeout. */
const readme = proxyActivities<PaymentActivities>({ startToCloseTimeout: '1 minute' });

/** Charges a card with the README's activity options. */
export async function readmeCheckoutWorkflow(customer: string, amountCents: number): Promise<{ chargeId: string }> {
  return readme.chargeCard(customer, amountCents);
}

/** Charges a card, then returns the charge. */
export async function checkoutWorkflow(customer: string, amountCents: number): Promise<{ chargeId: string }> {
  return chargeCard(customer, amountCents);
}

/** Sends an invoice through the activity another plugin registers. */
export async function invoiceWorkflow(customer: string): Promise<{ invoiceId: string }> {
  return sendInvoice(customer);
}

/** Calls the `create_ticket` tool the plugin registers as its own activity type. */
export async function ticketWorkflow(input: FencedToolInput): Promise<FencedToolResult> {
  const { create_ticket } = proxyActivities<Record<'create_ticket', (input: FencedToolInput) => Promise<FencedToolResult>>>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '100ms', maximumAttempts: 5 },
  });
  return create_ticket(input);
}

/** Charges once per run, over `runs` runs of one chain (continue-as-new restarts the activity sequence numbers). */
export async function chargeEachRunWorkflow(customer: string, runs: number): Promise<{ chargeId: string }> {
  const charge = await chargeCard(customer, runs);
  if (runs > 1) return continueAsNew<typeof chargeEachRunWorkflow>(customer, runs - 1);
  return charge;
}
