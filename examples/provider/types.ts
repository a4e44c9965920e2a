/**
 * Wire types of the demo provider (the external ticket, email, notification, inventory, payment
 * and shipment system the example tools act on). Shared by `server.ts` and `client.ts`; type-only, no runtime code.
 */

/** Body of `POST /tickets`. Exactly these three fields, each a non-empty string. */
export interface CreateTicketInput {
  readonly title: string;
  readonly body: string;
  readonly queue: string;
}

/**
 * Response of `POST /tickets` and of `GET /tickets/by-idempotency-key/:key`. For one
 * idempotency key it is stored once and replayed byte for byte.
 */
export interface TicketReceipt {
  /** Provider-assigned ticket id, e.g. `T-000042`. */
  readonly ticketId: string;
  /** Opaque provider receipt proving the create was applied, e.g. `rcpt_…`. */
  readonly receipt: string;
  /** ISO-8601 UTC time the ticket was created. */
  readonly createdAt: string;
}

/** A ticket as `GET /tickets/:id` returns it. */
export interface Ticket extends CreateTicketInput {
  readonly ticketId: string;
  readonly status: 'open' | 'closed';
  readonly createdAt: string;
  readonly closedAt: string | null;
  /** The idempotency key the ticket was created under, if any. */
  readonly idempotencyKey: string | null;
}

/** Response of `POST /tickets/:id/close`. */
export interface CloseTicketResult {
  readonly ticketId: string;
  readonly status: 'closed';
  /** True when this call closed the ticket (an effect); false when it was already closed. */
  readonly changed: boolean;
  readonly closedAt: string;
}

/** Body of `POST /emails`. */
export interface SendEmailInput {
  readonly to: string;
  readonly subject: string;
  readonly body: string;
}

/** Response of `POST /emails`. Every successful call sends one more email. */
export interface EmailReceipt {
  readonly messageId: string;
  readonly sentAt: string;
}

/** Kinds of effect the provider counts. */
export type EffectKind =
  'ticket.create' | 'ticket.close' | 'email.send' | 'notification.send' | 'inventory.reserve' | 'inventory.release' | 'payment.charge' | 'payment.refund' | 'shipment.create';

/**
 * One logical request applied more than once. `logicalKey` is the idempotency key for a
 * keyed create, `body:<sha256>` of the request body for an unkeyed create or an email, and
 * the ticket id for a close.
 */
export interface DuplicateEffect {
  readonly kind: EffectKind;
  readonly logicalKey: string;
  readonly count: number;
  /** For `email.send`: the email that was sent more than once. */
  readonly email?: SendEmailInput;
}

/** Response of `GET /effects`: what the provider actually applied, persisted in its SQLite file. */
export interface EffectsReport {
  readonly total: number;
  readonly byKind: Readonly<Record<EffectKind, number>>;
  /** Applied effects per idempotency key (keyed creates only). */
  readonly byIdempotencyKey: Readonly<Record<string, number>>;
  /** Every logical request applied more than once; empty when everything was applied at most once. */
  readonly duplicates: readonly DuplicateEffect[];
}

/** RFC 9457 problem details, the body of every 4xx/5xx response (`application/problem+json`). */
export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  readonly [extension: string]: unknown;
}

/**
 * Faults a provider started with `--faults` injects into its mutating requests (every `POST`
 * except `/_faults`), set with `POST /_faults`. Counters decrement as they fire.
 * 429 and 503 are answered *before* any effect, so a client may safely retry them.
 */
export interface FaultSettings {
  /** Answer the next n mutating requests with 429 Too Many Requests. */
  readonly rateLimitNext?: number;
  /** Retry-After advertised with an injected 429/503 (rounded up to whole seconds). @default 1000 */
  readonly retryAfterMs?: number;
  /** Send Retry-After as delay-seconds (default) or as an HTTP date. */
  readonly retryAfterFormat?: 'seconds' | 'http-date';
  /** Answer the next n mutating requests with 503 Service Unavailable. */
  readonly fail5xxNext?: number;
  /** Apply the effect of the next n mutating requests, then drop the connection without answering. */
  readonly dropAfterEffectNext?: number;
  /** Wait this long inside every mutating request (a keyed create holds its key in flight meanwhile). */
  readonly delayMs?: number;
  /** Only requests whose path starts with this prefix are affected, e.g. `/emails`. */
  readonly pathPrefix?: string;
}

/** Body of `POST /notifications`. */
export interface SendNotificationInput {
  /** Who is notified, 1..200 characters (e.g. a user id). */
  readonly recipient: string;
  readonly message: string;
}

/**
 * Response of `POST /notifications` and of `GET /notifications/by-idempotency-key/:key`. With an
 * `Idempotency-Key` it is stored once and replayed byte for byte; without one every request
 * sends one more notification (the provider's mode without idempotency support).
 */
export interface NotificationReceipt {
  /** Provider-assigned id, e.g. `N-000042`. */
  readonly notificationId: string;
  readonly recipient: string;
  readonly sentAt: string;
}

/** A sent notification as `GET /notifications` lists it. */
export interface Notification extends SendNotificationInput, NotificationReceipt {
  readonly idempotencyKey: string | null;
}

/**
 * One request of the notification endpoints as the provider received it (`GET
 * /notifications/requests`), in arrival order: what the provider saw, and when, so a test can
 * prove which request came first.
 */
export interface NotificationRequest {
  /** Arrival order over all notification requests. */
  readonly seq: number;
  /** `send` (`POST /notifications`) or `lookup` (`GET /notifications/by-idempotency-key/:key`). */
  readonly operation: 'send' | 'lookup';
  /** The recipient (for a lookup: of the notification found; null when none was). */
  readonly recipient: string | null;
  readonly idempotencyKey: string | null;
  /** `applied`, `replayed` (same key again), `found`, `absent`, or the HTTP status of a refusal as text. */
  readonly outcome: string;
  /** Epoch ms when the request arrived and when it was answered (null while in flight). */
  readonly receivedAtMs: number;
  readonly answeredAtMs: number | null;
}

/** Body of `POST /inventory/reservations` (keyed). */
export interface ReserveInventoryInput {
  readonly orderId: string;
  readonly sku: string;
  readonly quantity: number;
}

/** A reservation (the receipt of a reserve, and what `GET /inventory/reservations?orderId=` lists). */
export interface Reservation extends ReserveInventoryInput {
  /** e.g. `R-000042`. */
  readonly reservationId: string;
  readonly status: 'reserved' | 'released';
  readonly reservedAt: string;
  readonly releasedAt: string | null;
}

/** Response of `POST /inventory/reservations/:id/release` (keyed). Releasing a released reservation is 410 `already-released` (nothing applied). */
export interface ReleaseReceipt {
  readonly reservationId: string;
  readonly releasedAt: string;
}

/** Body of `POST /payments/charges` (keyed). */
export interface ChargeInput {
  readonly orderId: string;
  readonly amountCents: number;
  /**
   * The card. Charges to `card_norefund` cannot be refunded through the API (refund: 403
   * `refund-not-permitted`): the provider refuses the compensation for good.
   */
  readonly card: string;
}

/** A charge (the receipt of a charge, and what `GET /payments/charges?orderId=` lists). */
export interface Charge extends ChargeInput {
  /** e.g. `C-000042`. */
  readonly chargeId: string;
  readonly status: 'charged' | 'refunded';
  readonly chargedAt: string;
  readonly refundedAt: string | null;
}

/** Response of `POST /payments/charges/:id/refund` (keyed). Refunding a refunded charge is 410 `already-refunded` (nothing applied). */
export interface RefundReceipt {
  readonly chargeId: string;
  readonly refundId: string;
  readonly refundedAt: string;
}

/** Body of `POST /shipments` (keyed). A destination no carrier serves (`Atlantis`, `UNSERVED_DESTINATION` in `order-routes.ts`) is refused: 422 `destination-not-served`. */
export interface CreateShipmentInput {
  readonly orderId: string;
  readonly destination: string;
}

/** Response of `POST /shipments`. */
export interface ShipmentReceipt {
  readonly shipmentId: string;
  readonly orderId: string;
  readonly createdAt: string;
}

/** One applied order effect (`GET /orders/:orderId/effects`), in the order the provider applied them. */
export interface OrderEffect {
  readonly seq: number;
  readonly kind: Extract<EffectKind, 'inventory.reserve' | 'inventory.release' | 'payment.charge' | 'payment.refund' | 'shipment.create'>;
  /** The reservation, charge or shipment it acted on. */
  readonly subjectId: string;
  readonly idempotencyKey: string | null;
  readonly at: string;
}
