/**
 * The demo provider's batch and order endpoints as a real process over real HTTP (what the crash
 * scenarios count on): notifications deduplicated by key, sent again without one, looked up by
 * key, and the request log in arrival order; the order steps and their compensations, each
 * keyed, refusals on demand, and the order's effects in the order applied.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ProviderRejectedError } from '../../examples/provider/client';
import { NotificationClient } from '../../examples/provider/notification-client';
import { OrderClient } from '../../examples/provider/order-client';
import { NO_REFUND_CARD, UNSERVED_DESTINATION } from '../../examples/provider/order-routes';
import { startProvider, type RunningProvider } from '../../examples/provider/start-provider';

let dir: string;
let provider: RunningProvider;
let notifications: NotificationClient;
let orders: OrderClient;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'provider-14-'));
  provider = await startProvider({ dbFile: path.join(dir, 'provider.sqlite') });
  notifications = new NotificationClient(provider.url);
  orders = new OrderClient(provider.url);
});

afterAll(async () => {
  await provider?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The rejection of `promise` (fails the test when it resolves). */
async function failure(promise: Promise<unknown>): Promise<ProviderRejectedError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: ProviderRejectedError) => error,
  );
}

describe('notifications', () => {
  it('a keyed send is applied once and replayed for the same key; an unkeyed send is applied every time; lookups find the key or prove it absent; the log keeps arrival order', async () => {
    const first = await notifications.send({ recipient: 'n1-r001', message: 'hi' }, { idempotencyKey: 'nk-1' });
    const again = await notifications.send({ recipient: 'n1-r001', message: 'hi' }, { idempotencyKey: 'nk-1' });
    expect(again).toEqual({ ...first, replayed: true });
    await notifications.send({ recipient: 'n1-r002', message: 'hi' });
    await notifications.send({ recipient: 'n1-r002', message: 'hi' });
    expect(await notifications.findByKey('nk-1')).toEqual({ notificationId: first.notificationId, recipient: 'n1-r001', sentAt: first.sentAt });
    expect(await notifications.findByKey('nk-never')).toBeNull();
    expect((await notifications.list('n1-r')).map((n) => n.recipient)).toEqual(['n1-r001', 'n1-r002', 'n1-r002']);
    const log = await notifications.requests('n1-r');
    expect(log.map((q) => [q.operation, q.recipient, q.outcome])).toEqual([
      ['send', 'n1-r001', 'applied'],
      ['send', 'n1-r001', 'replayed'],
      ['send', 'n1-r002', 'applied'],
      ['send', 'n1-r002', 'applied'],
      ['lookup', 'n1-r001', 'found'],
    ]);
    expect(log.every((q, i) => q.answeredAtMs !== null && q.answeredAtMs >= q.receivedAtMs && (i === 0 || q.seq > log[i - 1]!.seq))).toBe(true);
    // The unkeyed repeat is a duplicate the provider reports.
    expect((await provider.client.effects()).duplicates.filter((d) => d.kind === 'notification.send')).toHaveLength(1);
  });
});

describe('orders', () => {
  it('reserve → charge → refund → release, each keyed and looked up by key; an undo is refused once done; a shipment to the unserved destination and a refund of a no-refund card are refused; effects in the order applied', async () => {
    const orderId = 'o-1';
    const reservation = await orders.reserve({ orderId, sku: 'A', quantity: 2 }, { idempotencyKey: 'ok-r' });
    expect(await orders.reserve({ orderId, sku: 'A', quantity: 2 }, { idempotencyKey: 'ok-r' })).toEqual(reservation);
    const charge = await orders.charge({ orderId, amountCents: 500, card: 'card_visa' }, { idempotencyKey: 'ok-c' });
    const refused = await failure(orders.ship({ orderId, destination: UNSERVED_DESTINATION }, { idempotencyKey: 'ok-s' }));
    expect([refused.status, refused.problem?.type]).toEqual([422, 'https://provider.example/problems/destination-not-served']);
    expect(await orders.findByKey('shipments', 'ok-s')).toBeNull();
    const refund = await orders.refund(charge.chargeId, { idempotencyKey: 'ok-rf' });
    expect(await orders.refund(charge.chargeId, { idempotencyKey: 'ok-rf' })).toEqual(refund);
    expect(await orders.findByKey('payments', 'ok-rf')).toEqual(refund);
    expect((await failure(orders.refund(charge.chargeId, { idempotencyKey: 'ok-rf-2' }))).status).toBe(410);
    const release = await orders.release(reservation.reservationId, { idempotencyKey: 'ok-rl' });
    expect(await orders.findByKey('inventory', 'ok-rl')).toEqual(release);
    expect((await orders.orderEffects(orderId)).map((e) => [e.kind, e.idempotencyKey])).toEqual([
      ['inventory.reserve', 'ok-r'],
      ['payment.charge', 'ok-c'],
      ['payment.refund', 'ok-rf'],
      ['inventory.release', 'ok-rl'],
    ]);
    const noRefund = await orders.charge({ orderId: 'o-2', amountCents: 100, card: NO_REFUND_CARD }, { idempotencyKey: 'ok-c2' });
    expect((await failure(orders.refund(noRefund.chargeId, { idempotencyKey: 'ok-rf2' }))).status).toBe(403);
    expect((await orders.orderEffects('o-2')).map((e) => e.kind)).toEqual(['payment.charge']);
  });
});
