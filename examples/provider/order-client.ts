/**
 * Client of the demo provider's order steps (`order-routes.ts`): reserve / release inventory,
 * charge / refund payment, create shipment, each with an idempotency key and a lookup by key,
 * and the order's applied effects. Errors are the provider client's (`client.ts`).
 */
import { ProviderClient, toStructuredString, type CallOptions } from './client';
import type { Charge, ChargeInput, CreateShipmentInput, OrderEffect, RefundReceipt, ReleaseReceipt, Reservation, ReserveInventoryInput, ShipmentReceipt } from './types';

/** Options of a mutating order request: its idempotency key (keep it stable across retries). */
export interface KeyedCallOptions extends CallOptions {
  readonly idempotencyKey: string;
}

/** The families whose keyed requests can be looked up by key. */
export type OrderFamily = 'inventory' | 'payments' | 'shipments';

/** The provider client with the order endpoints. */
export class OrderClient extends ProviderClient {
  /** `POST /inventory/reservations`. */
  reserve(input: ReserveInventoryInput, options: KeyedCallOptions): Promise<Reservation> {
    return this.keyed('reserveInventory', '/inventory/reservations', input, options);
  }

  /** `POST /inventory/reservations/:id/release` (410 when already released: rejected). */
  release(reservationId: string, options: KeyedCallOptions): Promise<ReleaseReceipt> {
    return this.keyed('releaseInventory', `/inventory/reservations/${encodeURIComponent(reservationId)}/release`, undefined, options);
  }

  /** `POST /payments/charges`. */
  charge(input: ChargeInput, options: KeyedCallOptions): Promise<Charge> {
    return this.keyed('chargePayment', '/payments/charges', input, options);
  }

  /** `POST /payments/charges/:id/refund` (403 for a charge that cannot be refunded, 410 when already refunded: rejected). */
  refund(chargeId: string, options: KeyedCallOptions): Promise<RefundReceipt> {
    return this.keyed('refundPayment', `/payments/charges/${encodeURIComponent(chargeId)}/refund`, undefined, options);
  }

  /** `POST /shipments` (422 `destination-not-served`: rejected). */
  ship(input: CreateShipmentInput, options: KeyedCallOptions): Promise<ShipmentReceipt> {
    return this.keyed('createShipment', '/shipments', input, options);
  }

  /** `GET /<family>/by-idempotency-key/:key`: the stored receipt of the request applied under `key`, or null when none was (proven absent). */
  async findByKey<T>(family: OrderFamily, key: string, options: CallOptions = {}): Promise<T | null> {
    const res = await this.request('findOrderRequestByKey', 'GET', `/${family}/by-idempotency-key/${encodeURIComponent(key)}`, { ...options, notFoundIsNull: true });
    return res.status === 404 ? null : (res.body as T);
  }

  /** `GET /orders/:orderId/effects`: the order's applied effects, in the order the provider applied them. */
  async orderEffects(orderId: string, options: CallOptions = {}): Promise<OrderEffect[]> {
    return (await this.request('orderEffects', 'GET', `/orders/${encodeURIComponent(orderId)}/effects`, options)).body as OrderEffect[];
  }

  private async keyed<T>(operation: string, path: string, body: unknown, options: KeyedCallOptions): Promise<T> {
    const { idempotencyKey, ...rest } = options;
    const res = await this.request(operation, 'POST', path, {
      ...rest,
      ...(body === undefined ? {} : { body }),
      headers: { 'Idempotency-Key': toStructuredString(idempotencyKey) },
    });
    return res.body as T;
  }
}
