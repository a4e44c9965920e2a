/**
 * The demo provider's order steps (the order example: "reserve inventory → charge payment →
 * create shipment") and their compensations. Every mutating request takes an `Idempotency-Key`
 * (a repeat with the same key replays the stored receipt and applies nothing), and every keyed
 * request can be looked up by its key (200 receipt, 404 nothing applied, 409 in flight):
 *
 * - `POST /inventory/reservations` `{orderId, sku, quantity}` → `Reservation`;
 *   `POST /inventory/reservations/:id/release` → `ReleaseReceipt` (410 `already-released`);
 *   `GET /inventory/by-idempotency-key/:key`.
 * - `POST /payments/charges` `{orderId, amountCents, card}` → `Charge`;
 *   `POST /payments/charges/:id/refund` → `RefundReceipt` (410 `already-refunded`; 403
 *   `refund-not-permitted` for a charge to `card_norefund`: the compensation refused for good);
 *   `GET /payments/by-idempotency-key/:key`.
 * - `POST /shipments` `{orderId, destination}` → `ShipmentReceipt` (422 `destination-not-served`
 *   for {@link UNSERVED_DESTINATION}: a business rejection on demand); `GET /shipments/by-idempotency-key/:key`.
 * - `GET /orders/:orderId/effects`: the order's applied effects in the order they were applied.
 */
import { HttpProblem, nowIso, parseIdempotencyKey, readJson, sendJson, sendRaw, sha256 } from './http';
import type { RouteHandler, RouteKit } from './routes';
import type { Charge, ChargeInput, CreateShipmentInput, OrderEffect, RefundReceipt, ReleaseReceipt, Reservation, ReserveInventoryInput, ShipmentReceipt } from './types';

/** The destination no carrier serves: `POST /shipments` there is refused (422 `destination-not-served`). */
export const UNSERVED_DESTINATION = 'Atlantis';

/** The card whose charges cannot be refunded through the API (refund: 403 `refund-not-permitted`). */
export const NO_REFUND_CARD = 'card_norefund';

type ResourceKind = 'reservation' | 'charge' | 'shipment';

interface ResourceRow {
  id: string;
  kind: ResourceKind;
  order_id: string;
  data: string;
  status: string;
  created_at: string;
  undone_at: string | null;
}

const ORDER_EFFECT_KINDS = ['inventory.reserve', 'inventory.release', 'payment.charge', 'payment.refund', 'shipment.create'] as const;

/** The body as an object of exactly these string and positive-integer fields. @throws HttpProblem 400 */
function body<T>(value: unknown, strings: readonly string[], integers: readonly string[] = []): T {
  const bad = (detail: string) => new HttpProblem(400, 'invalid-body', 'Invalid request body', detail);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('the body must be a JSON object');
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) if (!strings.includes(key) && !integers.includes(key)) throw bad(`unknown field "${key}"`);
  for (const key of strings) {
    const v = record[key];
    if (typeof v !== 'string' || v.length === 0 || v.length > 200) throw bad(`"${key}" must be a string of 1..200 characters`);
  }
  for (const key of integers) {
    const v = record[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw bad(`"${key}" must be a positive integer`);
  }
  return record as T;
}

/** The order endpoints over `kit` (creates their table). */
export function orderRoutes(kit: RouteKit): RouteHandler {
  const { db, keys } = kit;
  db.exec(`
    CREATE TABLE IF NOT EXISTS order_resources (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      kind TEXT NOT NULL, order_id TEXT NOT NULL, data TEXT NOT NULL,
      status TEXT NOT NULL, created_at TEXT NOT NULL, undone_at TEXT
    );
    CREATE INDEX IF NOT EXISTS order_resources_order ON order_resources (order_id);
  `);
  const stmt = {
    insert: db.prepare(`INSERT INTO order_resources (id, kind, order_id, data, status, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
    nextSeq: db.prepare<[], { next: number }>(`SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM order_resources`),
    get: db.prepare<[string, string], ResourceRow>(`SELECT * FROM order_resources WHERE id = ? AND kind = ?`),
    undo: db.prepare(`UPDATE order_resources SET status = ?, undone_at = ? WHERE id = ?`),
    effects: db.prepare<[string], { seq: number; kind: OrderEffect['kind']; subject_id: string; idempotency_key: string | null; at: string }>(
      `SELECT seq, kind, subject_id, idempotency_key, at FROM effects WHERE kind IN (${ORDER_EFFECT_KINDS.map((k) => `'${k}'`).join(', ')}) AND json_extract(detail, '$.orderId') = ? ORDER BY seq`,
    ),
  };

  const create = (
    kind: ResourceKind,
    prefix: string,
    effect: OrderEffect['kind'],
    orderId: string,
    data: object,
    status: string,
    key: string | null,
  ): { id: string; at: string } => {
    const id = `${prefix}-${String(stmt.nextSeq.get()!.next).padStart(6, '0')}`;
    const at = nowIso();
    stmt.insert.run(id, kind, orderId, JSON.stringify(data), status, at);
    kit.recordEffect(effect, key ?? id, key, id, JSON.stringify({ orderId }));
    return { id, at };
  };
  /** Undoes a resource (release, refund): 404 unknown, 410 already undone; `refuse` may refuse it for good. */
  const undo = (
    kind: ResourceKind,
    id: string,
    undoneStatus: string,
    effect: OrderEffect['kind'],
    key: string | null,
    refuse?: (row: ResourceRow) => HttpProblem | null,
  ): { row: ResourceRow; at: string } => {
    const row = stmt.get.get(id, kind);
    if (!row) throw new HttpProblem(404, `${kind}-not-found`, `No such ${kind}`, id);
    if (row.status === undoneStatus)
      throw new HttpProblem(410, `already-${undoneStatus}`, `The ${kind} is already ${undoneStatus}`, `${id} was ${undoneStatus} at ${row.undone_at}; nothing was applied`);
    const refusal = refuse?.(row);
    if (refusal) throw refusal;
    const at = nowIso();
    stmt.undo.run(undoneStatus, at, id);
    // The logical request is "undo this resource": a second undo of it would be a duplicate.
    kit.recordEffect(effect, `${effect}:${id}`, key, id, JSON.stringify({ orderId: row.order_id }));
    return { row, at };
  };

  /** A keyed (or unkeyed) mutating request: faults, then the effect in one transaction with its stored receipt. */
  const mutate = async (r: Parameters<RouteHandler>[0], input: unknown, apply: () => { status: number; body: unknown }): Promise<true> => {
    const key = parseIdempotencyKey(r.req.headers['idempotency-key']) ?? null;
    if (await kit.beforeEffect(r.pathname, r.res)) return true;
    if (key === null) {
      const result = db.transaction(apply)();
      if (!kit.afterEffect(r.pathname, r.req)) sendJson(r.res, result.status, result.body);
      return true;
    }
    const done = keys.run(key, sha256(JSON.stringify([r.method, r.pathname, input])), apply);
    if (!done.replayed && kit.afterEffect(r.pathname, r.req)) return true;
    sendRaw(r.res, done.status, done.body, done.replayed ? { 'Idempotent-Replayed': 'true' } : {});
    return true;
  };
  const keyOf = (r: Parameters<RouteHandler>[0]) => parseIdempotencyKey(r.req.headers['idempotency-key']) ?? null;
  const found = (r: Parameters<RouteHandler>[0], key: string): true => {
    sendRaw(r.res, 200, keys.lookup(key), {});
    return true;
  };

  return async (r) => {
    const { method, segments: s } = r;
    const lookup = s.length === 3 && s[1] === 'by-idempotency-key' && method === 'GET';
    if (s[0] === 'inventory') {
      if (lookup) return found(r, s[2]!);
      if (s.length === 2 && s[1] === 'reservations' && method === 'POST') {
        const input = body<ReserveInventoryInput>(await readJson(r.req), ['orderId', 'sku'], ['quantity']);
        return mutate(r, input, () => {
          const { id, at } = create('reservation', 'R', 'inventory.reserve', input.orderId, input, 'reserved', keyOf(r));
          return { status: 201, body: { reservationId: id, ...input, status: 'reserved', reservedAt: at, releasedAt: null } satisfies Reservation };
        });
      }
      if (s.length === 4 && s[1] === 'reservations' && s[3] === 'release' && method === 'POST') {
        const id = s[2]!;
        return mutate(r, { id }, () => {
          const { at } = undo('reservation', id, 'released', 'inventory.release', keyOf(r));
          return { status: 200, body: { reservationId: id, releasedAt: at } satisfies ReleaseReceipt };
        });
      }
    }
    if (s[0] === 'payments') {
      if (lookup) return found(r, s[2]!);
      if (s.length === 2 && s[1] === 'charges' && method === 'POST') {
        const input = body<ChargeInput>(await readJson(r.req), ['orderId', 'card'], ['amountCents']);
        return mutate(r, input, () => {
          const { id, at } = create('charge', 'C', 'payment.charge', input.orderId, input, 'charged', keyOf(r));
          return { status: 201, body: { chargeId: id, ...input, status: 'charged', chargedAt: at, refundedAt: null } satisfies Charge };
        });
      }
      if (s.length === 4 && s[1] === 'charges' && s[3] === 'refund' && method === 'POST') {
        const id = s[2]!;
        return mutate(r, { id }, () => {
          const refuse = (row: ResourceRow) =>
            (JSON.parse(row.data) as ChargeInput).card === NO_REFUND_CARD
              ? new HttpProblem(403, 'refund-not-permitted', 'Refund not permitted', `charges to ${NO_REFUND_CARD} are refunded by the card issuer, not through the API`)
              : null;
          const { at } = undo('charge', id, 'refunded', 'payment.refund', keyOf(r), refuse);
          return { status: 200, body: { chargeId: id, refundId: `RF-${id}`, refundedAt: at } satisfies RefundReceipt };
        });
      }
    }
    if (s[0] === 'shipments') {
      if (lookup) return found(r, s[2]!);
      if (s.length === 1 && method === 'POST') {
        const input = body<CreateShipmentInput>(await readJson(r.req), ['orderId', 'destination']);
        return mutate(r, input, () => {
          if (input.destination === UNSERVED_DESTINATION)
            throw new HttpProblem(422, 'destination-not-served', 'No carrier serves this destination', `nothing ships to ${UNSERVED_DESTINATION}`);
          const { id, at } = create('shipment', 'S', 'shipment.create', input.orderId, input, 'created', keyOf(r));
          return { status: 201, body: { shipmentId: id, orderId: input.orderId, createdAt: at } satisfies ShipmentReceipt };
        });
      }
    }
    if (s[0] === 'orders' && s.length === 3 && s[2] === 'effects' && method === 'GET') {
      sendJson(
        r.res,
        200,
        stmt.effects.all(s[1]!).map((e): OrderEffect => ({ seq: e.seq, kind: e.kind, subjectId: e.subject_id, idempotencyKey: e.idempotency_key, at: e.at })),
      );
      return true;
    }
    return false;
  };
}
