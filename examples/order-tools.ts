/**
 * The demo's order tools (the order example: "reserve inventory → charge payment →
 * create shipment"), each keyed, deduplicated by the provider and looked up by key:
 * - `reserve_inventory`, compensated by a function (`reserve_inventory~compensation`, revision
 *   v1) that releases the reservation under the compensation's own key, with a lookup;
 * - `charge_payment`, compensated by another tool, `refund_payment` (a refund of a charge to
 *   `card_norefund` is refused for good: 403, PERMISSION_DENIED);
 * - `create_shipment`, refused for the unserved destination with a business rejection
 *   (BUSINESS_REJECTION: what a run's `compensateOn` names); no compensation.
 */
import { z } from 'zod/v4';
import { defineTool, ToolError, type ToolContext, type ToolDefinition } from '../src/activities';
import { classifyProviderError } from './demo-tools';
import { isProviderError } from './provider/client';
import { OrderClient, type OrderFamily } from './provider/order-client';
import type { Charge, RefundReceipt, ReleaseReceipt, Reservation, ShipmentReceipt } from './provider/types';

const KEY_RETENTION_MS = 24 * 60 * 60 * 1_000;

/** The four order tools against the provider at `url`. */
export function createOrderTools(url: string): ToolDefinition<any>[] {
  const provider = new OrderClient({ baseUrl: url, timeoutMs: 5_000 });
  const classified = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw classifyProviderError(error);
    }
  };
  /** A lookup by the call's key in `family`, mapping the stored receipt to the tool's output. */
  const lookupIn =
    <T>(family: OrderFamily, output: (receipt: T) => Record<string, string>) =>
    async (ctx: ToolContext) => {
      const found = await classified(() => provider.findByKey<T>(family, ctx.idempotencyKey, { signal: ctx.signal }));
      return found === null ? { found: false as const } : { found: true as const, output: output(found), receipt: { ...(found as object), foundBy: 'lookup' } as never };
    };
  const reservationOutput = (r: Reservation) => ({ reservationId: r.reservationId });
  const releaseOutput = (r: ReleaseReceipt) => ({ reservationId: r.reservationId, releasedAt: r.releasedAt });
  const chargeOutput = (c: Charge) => ({ chargeId: c.chargeId });
  const refundOutput = (r: RefundReceipt) => ({ chargeId: r.chargeId, refundId: r.refundId });
  const shipmentOutput = (s: ShipmentReceipt) => ({ shipmentId: s.shipmentId });
  const keyed = { dedupesByKey: true, keyRetentionMs: KEY_RETENTION_MS } as const;

  const reserve = defineTool({
    name: 'reserve_inventory',
    revision: 'v1',
    description: 'Reserve stock for an order.',
    input: z.object({ orderId: z.string().min(1).max(200), sku: z.string().min(1).max(200), quantity: z.number().int().min(1) }).strict(),
    ...keyed,
    async execute(input, ctx) {
      const r = await classified(() => provider.reserve(input, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }));
      return { output: reservationOutput(r), receipt: { reservationId: r.reservationId, reservedAt: r.reservedAt } };
    },
    lookup: lookupIn('inventory', reservationOutput),
    compensation: {
      revision: 'v1',
      ...keyed,
      async execute(applied, ctx) {
        const { reservationId } = applied.output as { reservationId: string };
        const r = await classified(() => provider.release(reservationId, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }));
        return { output: releaseOutput(r), receipt: { releasedAt: r.releasedAt } };
      },
      lookup: lookupIn('inventory', releaseOutput),
    },
  });
  const refund = defineTool({
    name: 'refund_payment',
    revision: 'v1',
    description: 'Refund a charge.',
    input: z.object({ chargeId: z.string().min(1).max(200) }).strict(),
    ...keyed,
    async execute(input, ctx) {
      const r = await classified(() => provider.refund(input.chargeId, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }));
      return { output: refundOutput(r), receipt: { refundId: r.refundId, refundedAt: r.refundedAt } };
    },
    lookup: lookupIn('payments', refundOutput),
  });
  const charge = defineTool({
    name: 'charge_payment',
    revision: 'v1',
    description: 'Charge the order to a card.',
    input: z.object({ orderId: z.string().min(1).max(200), amountCents: z.number().int().min(1), card: z.string().min(1).max(200) }).strict(),
    ...keyed,
    async execute(input, ctx) {
      const c = await classified(() => provider.charge(input, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }));
      return { output: chargeOutput(c), receipt: { chargeId: c.chargeId, chargedAt: c.chargedAt } };
    },
    lookup: lookupIn('payments', chargeOutput),
    compensation: { tool: 'refund_payment', input: (applied) => ({ chargeId: (applied.output as { chargeId: string }).chargeId }) },
  });
  const ship = defineTool({
    name: 'create_shipment',
    revision: 'v1',
    description: 'Ship the order.',
    input: z.object({ orderId: z.string().min(1).max(200), destination: z.string().min(1).max(200) }).strict(),
    ...keyed,
    async execute(input, ctx) {
      try {
        const s = await provider.ship(input, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal });
        return { output: shipmentOutput(s), receipt: { shipmentId: s.shipmentId, createdAt: s.createdAt } };
      } catch (error) {
        // The provider's refusal under its business rules (no carrier serves the destination).
        if (isProviderError(error, 'rejected') && String(error.problem?.type).endsWith('/destination-not-served'))
          throw new ToolError('rejected', error.message, undefined, 'BUSINESS_REJECTION');
        throw classifyProviderError(error);
      }
    },
    lookup: lookupIn('shipments', shipmentOutput),
  });
  return [reserve, charge, refund, ship];
}
