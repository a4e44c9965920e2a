// order-charge.ts: one charge per order and tenant for 24 hours, whichever run asks (a retried job, a second webhook).
import { z } from 'zod/v4';
import { defineTool } from 'temporal-tool-checkpoint';

// Stand in for your payment provider: a charge saved under its idempotency key, found by it.
const charges = new Map<string, { chargeId: string; amountCents: number }>();

export const chargeOrder = defineTool({
  name: 'charge_order',
  revision: 'v1',
  input: z.object({ orderId: z.string().min(1), amountCents: z.number().int().positive() }).strict(),
  businessKey: (input) => input.orderId, // from the validated arguments
  businessKeyWindowMs: 24 * 60 * 60 * 1000,
  async lookup(ctx) {
    const found = charges.get(ctx.idempotencyKey);
    return found ? { found: true, output: found } : { found: false };
  },
  async execute(input, ctx) {
    const charge = { chargeId: `ch_${input.orderId}`, amountCents: input.amountCents };
    charges.set(ctx.idempotencyKey, charge); // send ctx.idempotencyKey to your provider
    return { output: charge };
  },
});
export const tools = [chargeOrder];
