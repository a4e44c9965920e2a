// activities.ts: your activities, unchanged but for the idempotency key they send.
import { fencedCallContext } from 'temporal-tool-checkpoint/plugin';
import type { LookupResult, ToolContext } from 'temporal-tool-checkpoint';

export type Order = { orderId: string; amountCents: number };
export type Receipt = { chargeId: string; amountCents: number };

// Stands in for your payment provider's API: it charges, and finds a charge by idempotency key.
const charges = new Map<string, Receipt>();
const payments = {
  async charge(order: Order, options: { idempotencyKey?: string }): Promise<Receipt> {
    const receipt = { chargeId: `ch_${charges.size + 1}`, amountCents: order.amountCents };
    charges.set(options.idempotencyKey ?? receipt.chargeId, receipt);
    return receipt;
  },
  async findByKey(idempotencyKey: string): Promise<Receipt | undefined> {
    return charges.get(idempotencyKey);
  },
};

// 3. In the activity, send the call's idempotency key to the provider.
export async function chargeCard(order: Order): Promise<Receipt> {
  return payments.charge(order, { idempotencyKey: fencedCallContext()?.idempotencyKey });
}

// The lookup: after an attempt died mid-call, proves whether its charge went through.
export async function findCharge(ctx: ToolContext): Promise<LookupResult> {
  const receipt = await payments.findByKey(ctx.idempotencyKey);
  return receipt === undefined ? { found: false } : { found: true, output: receipt };
}
