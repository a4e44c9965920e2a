// activities.ts: your activities, unchanged but for the idempotency key they send.
import { fencedCallContext, type FencedLookupContext } from 'temporal-tool-checkpoint/plugin';
import type { LookupResult } from 'temporal-tool-checkpoint';

export type Order = { orderId: string; amountCents: number };
export type Receipt = { chargeId: string; amountCents: number };

// Stands in for your payment provider's API: it charges, and finds a charge by idempotency key or by order.
const charges = new Map<string, Receipt & { orderId: string }>();
const payments = {
  async charge(order: Order, options: { idempotencyKey?: string }): Promise<Receipt> {
    const receipt = { chargeId: `ch_${charges.size + 1}`, amountCents: order.amountCents };
    charges.set(options.idempotencyKey ?? receipt.chargeId, { ...receipt, orderId: order.orderId });
    return receipt;
  },
  async find(query: { idempotencyKey: string } | { orderId: string }): Promise<Receipt | undefined> {
    const found = 'idempotencyKey' in query ? charges.get(query.idempotencyKey) : [...charges.values()].find((c) => c.orderId === query.orderId);
    return found === undefined ? undefined : { chargeId: found.chargeId, amountCents: found.amountCents };
  },
};

// 3. In the activity, send the call's idempotency key to the provider.
export async function chargeCard(order: Order): Promise<Receipt> {
  return payments.charge(order, { idempotencyKey: fencedCallContext()?.idempotencyKey });
}

// The lookup: after an attempt died mid-call, proves whether its charge went through, by the
// call's idempotency key or by the activity's own arguments (`ctx.args`, as chargeCard got them).
export async function findCharge(ctx: FencedLookupContext): Promise<LookupResult> {
  const [order] = ctx.args as [Order];
  const receipt = (await payments.find({ idempotencyKey: ctx.idempotencyKey })) ?? (await payments.find({ orderId: order.orderId }));
  return receipt === undefined ? { found: false } : { found: true, output: receipt };
}
