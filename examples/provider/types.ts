/**
 * Wire types of the demo provider (the external ticket-and-email system the example tools act
 * on). Shared by `server.ts` and `client.ts`; type-only, no runtime code.
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
export type EffectKind = 'ticket.create' | 'ticket.close' | 'email.send';

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
