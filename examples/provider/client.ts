/**
 * A small typed client for the demo provider (`server.ts`), used by the example tools.
 * Built on Node 20's global `fetch`. Every failure is a {@link ProviderError} whose `kind`
 * tells the tool layer what it may do next. An HTTP error status is classified by the
 * project's one table, `classifyHttpFailure` (with `keyed: true` when the request carried an
 * `Idempotency-Key`):
 *
 * | outcome | kind | `sent` | safe to retry? |
 * |---|---|---|---|
 * | 408, 429, 503 (answered before any effect) | `transient` | `yes` | yes, after `retryAfterMs` |
 * | 409 to a keyed request, or a `…/idempotency-key-in-flight` problem (the same key is still in flight) | `transient` | `yes` | only with the same key (the first request may still apply) |
 * | connection refused / DNS failure / connect timeout | `transient` | `no` | yes: nothing reached the provider |
 * | 400, 401, 403, 404, 409 without a key, 413, 415, 422, other 4xx | `rejected` | `yes` | no: the same request fails again |
 * | reset, timeout or abort after sending; 500, 502, 504; unreadable 2xx | `unknown-outcome` | `maybe` | only with the same idempotency key, or after a lookup |
 */
import { classifyHttpFailure } from '../../src/activities/contract/error-classes';
import type { CloseTicketResult, CreateTicketInput, EffectsReport, EmailReceipt, FaultSettings, ProblemDetails, SendEmailInput, Ticket, TicketReceipt } from './types';

export type { CloseTicketResult, CreateTicketInput, EffectsReport, EmailReceipt, FaultSettings, ProblemDetails, SendEmailInput, Ticket, TicketReceipt } from './types';

/** How a tool should treat a failed provider call. */
export type ProviderErrorKind = 'transient' | 'rejected' | 'unknown-outcome';

/**
 * Whether the request reached the provider: `no` (the connection never delivered it),
 * `yes` (the provider answered it, so it knows what it did), or `maybe` (sent, no answer).
 */
export type SentState = 'no' | 'yes' | 'maybe';

/** Facts carried by every {@link ProviderError}. */
export interface ProviderErrorInit {
  /** Operation name, e.g. `createTicket`. */
  readonly operation: string;
  /** HTTP status, when the provider answered. */
  readonly status?: number;
  /** The problem+json body, when the provider sent one. */
  readonly problem?: ProblemDetails;
  readonly sent: SentState;
  /** The request carried an `Idempotency-Key` header. @default false */
  readonly keyed?: boolean;
  /** Low-level error code of a network failure (`ECONNREFUSED`, `ECONNRESET`, `UND_ERR_SOCKET`, …). */
  readonly networkCode?: string;
  readonly cause?: unknown;
}

/**
 * Base of the three provider error classes. Identify them across module copies with
 * {@link isProviderError} (checks `name` and `kind`), not only `instanceof`.
 */
export abstract class ProviderError extends Error {
  abstract readonly kind: ProviderErrorKind;
  readonly operation: string;
  readonly status: number | undefined;
  readonly problem: ProblemDetails | undefined;
  readonly sent: SentState;
  /** The request carried an `Idempotency-Key` header (pass it to `classifyHttpFailure` as `keyed`). */
  readonly keyed: boolean;
  readonly networkCode: string | undefined;

  constructor(message: string, init: ProviderErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.operation = init.operation;
    this.status = init.status;
    this.problem = init.problem;
    this.sent = init.sent;
    this.keyed = init.keyed ?? false;
    this.networkCode = init.networkCode;
  }
}

/**
 * A failure that a later attempt may overcome: 408/429/503 (with `retryAfterMs` from
 * `Retry-After`) or a connection that never reached the provider (refused, DNS, connect
 * timeout), where nothing was applied; or a key still in flight (409 to a keyed request),
 * where the first request may still apply, so retry only with the same key.
 */
export class ProviderTransientError extends ProviderError {
  override readonly name = 'ProviderTransientError';
  readonly kind = 'transient' as const;
  /** Delay the provider asked for (from `Retry-After`, seconds or HTTP date), if any. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, init: ProviderErrorInit & { readonly retryAfterMs?: number }) {
    super(message, init);
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** The provider refused the request for good (validation, permission, not found, key reused with another body). */
export class ProviderRejectedError extends ProviderError {
  override readonly name = 'ProviderRejectedError';
  readonly kind = 'rejected' as const;
}

/**
 * The request may have been applied: the connection failed after sending, the call timed
 * out or was aborted in flight, the provider failed with 500/502/504, or a 2xx body could
 * not be read. Never retry blindly: look up by idempotency key or repeat with the same key.
 */
export class ProviderUnknownOutcomeError extends ProviderError {
  override readonly name = 'ProviderUnknownOutcomeError';
  readonly kind = 'unknown-outcome' as const;
}

const ERROR_NAMES: Readonly<Record<ProviderErrorKind, string>> = {
  transient: 'ProviderTransientError',
  rejected: 'ProviderRejectedError',
  'unknown-outcome': 'ProviderUnknownOutcomeError',
};

/** True when `value` is a provider error (by `name` and `kind`, so it works across realms), optionally of one kind. */
export function isProviderError(value: unknown, kind?: ProviderErrorKind): value is ProviderError {
  if (typeof value !== 'object' || value === null) return false;
  const { name, kind: actual } = value as { name?: unknown; kind?: unknown };
  if (typeof actual !== 'string' || !(actual in ERROR_NAMES) || ERROR_NAMES[actual as ProviderErrorKind] !== name) return false;
  return kind === undefined || actual === kind;
}

/**
 * Parse a `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP date.
 * Returns milliseconds from `now` (never negative), or undefined when absent or malformed.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Error codes of a connection attempt that never delivered a byte of the request. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/** The network error codes inside a `fetch failed` error (its cause, or an AggregateError's members). */
function networkCodes(error: unknown): string[] {
  const codes: string[] = [];
  const visit = (e: unknown, depth: number): void => {
    if (typeof e !== 'object' || e === null || depth > 4) return;
    const { code, cause, errors } = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string') codes.push(code);
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1);
    if (cause !== undefined) visit(cause, depth + 1);
  };
  visit(error, 0);
  return codes;
}

/** Options of every call. */
export interface CallOptions {
  /** Abort the call (e.g. activity cancellation). Aborting after sending is an unknown outcome. */
  readonly signal?: AbortSignal;
  /** Per-call timeout; overrides the client's. */
  readonly timeoutMs?: number;
}

/** Options of {@link ProviderClient.createTicket}. */
export interface CreateTicketOptions extends CallOptions {
  /** Sent as the `Idempotency-Key` header (a structured-field string). Keep it stable across retries. */
  readonly idempotencyKey?: string;
}

/** Result of {@link ProviderClient.createTicket}: the provider's receipt and whether it was a replay. */
export interface CreateTicketResult extends TicketReceipt {
  /** True when the provider replayed the stored response of an earlier request with the same key. */
  readonly replayed: boolean;
}

/** Options of {@link ProviderClient}. */
export interface ProviderClientOptions {
  /** Base URL, e.g. `http://127.0.0.1:4100`. */
  readonly baseUrl: string;
  /** Default per-call timeout in ms. @default 10000 */
  readonly timeoutMs?: number;
  /** A `fetch` implementation. @default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

/** A 2xx (or tolerated 404) answer: status, headers and the parsed JSON body. */
export interface RawResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

/** Typed client of the demo provider. Methods throw {@link ProviderError}s; see the table at the top of this file. */
export class ProviderClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ProviderClientOptions | string) {
    const opts = typeof options === 'string' ? { baseUrl: options } : options;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
  }

  /**
   * `POST /tickets`. With an idempotency key, a repeat with the same key and input returns
   * the same receipt and applies nothing; the same key with other input is rejected (422).
   */
  async createTicket(input: CreateTicketInput, options: CreateTicketOptions = {}): Promise<CreateTicketResult> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey !== undefined) headers['Idempotency-Key'] = toStructuredString(options.idempotencyKey);
    const res = await this.request('createTicket', 'POST', '/tickets', { body: input, headers, ...options });
    const receipt = asTicketReceipt(res.body, 'createTicket', res.status, options.idempotencyKey !== undefined);
    return { ...receipt, replayed: res.headers.get('idempotent-replayed') === 'true' };
  }

  /**
   * `GET /tickets/by-idempotency-key/:key`: the stored receipt of the create applied under
   * `key`, or null when no create was applied under it (proven absent). A key still in
   * flight is a transient error.
   */
  async findTicketByKey(key: string, options: CallOptions = {}): Promise<TicketReceipt | null> {
    const res = await this.request('findTicketByKey', 'GET', `/tickets/by-idempotency-key/${encodeURIComponent(key)}`, {
      ...options,
      notFoundIsNull: true,
    });
    if (res.status === 404) return null;
    return asTicketReceipt(res.body, 'findTicketByKey', res.status);
  }

  /** `GET /tickets/:id`, or null when there is no such ticket. */
  async getTicket(ticketId: string, options: CallOptions = {}): Promise<Ticket | null> {
    const res = await this.request('getTicket', 'GET', `/tickets/${encodeURIComponent(ticketId)}`, { ...options, notFoundIsNull: true });
    return res.status === 404 ? null : (res.body as Ticket);
  }

  /** `GET /tickets`: every ticket, oldest first. */
  async listTickets(options: CallOptions = {}): Promise<Ticket[]> {
    return (await this.request('listTickets', 'GET', '/tickets', options)).body as Ticket[];
  }

  /** `POST /tickets/:id/close`: idempotent by nature; `changed` says whether this call closed it. Unknown ticket: rejected. */
  async closeTicket(ticketId: string, options: CallOptions = {}): Promise<CloseTicketResult> {
    return (await this.request('closeTicket', 'POST', `/tickets/${encodeURIComponent(ticketId)}/close`, options)).body as CloseTicketResult;
  }

  /** `POST /emails`: no idempotency support, every successful call sends one more email. */
  async sendEmail(input: SendEmailInput, options: CallOptions = {}): Promise<EmailReceipt> {
    return (await this.request('sendEmail', 'POST', '/emails', { body: input, ...options })).body as EmailReceipt;
  }

  /** `GET /emails`: the outbox, oldest first (what an operator checks before resolving an unknown send). */
  async listEmails(options: CallOptions = {}): Promise<Array<SendEmailInput & EmailReceipt>> {
    return (await this.request('listEmails', 'GET', '/emails', options)).body as Array<SendEmailInput & EmailReceipt>;
  }

  /** `GET /effects`: what the provider applied, for "applied once" assertions. */
  async effects(options: CallOptions = {}): Promise<EffectsReport> {
    return (await this.request('effects', 'GET', '/effects', options)).body as EffectsReport;
  }

  /** `POST /_faults` (provider started with `--faults`): replace the injected faults. */
  async setFaults(faults: FaultSettings, options: CallOptions = {}): Promise<FaultSettings> {
    return (await this.request('setFaults', 'POST', '/_faults', { body: faults, ...options })).body as FaultSettings;
  }

  /** `DELETE /_faults`: clear every injected fault. */
  async clearFaults(options: CallOptions = {}): Promise<void> {
    await this.request('clearFaults', 'DELETE', '/_faults', options);
  }

  /** One request; every failure a {@link ProviderError} (see the table at the top of this file). For subclasses of other endpoints. */
  protected async request(
    operation: string,
    method: string,
    path: string,
    options: CallOptions & { body?: unknown; headers?: Record<string, string>; notFoundIsNull?: boolean },
  ): Promise<RawResponse> {
    if (options.signal?.aborted) {
      // Nothing was sent: surface the caller's own abort reason unchanged.
      throw options.signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
    }
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const headers: Record<string, string> = { Accept: 'application/json, application/problem+json', ...options.headers };
    const keyed = headers['Idempotency-Key'] !== undefined;
    let payload: string | undefined;
    if (options.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(options.body);
    }

    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, { method, headers, body: payload, signal });
    } catch (error) {
      throw classifyNetworkError(operation, error, signal, timeout, keyed);
    }

    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      // The provider answered (so it processed the request) but the body was lost.
      if (response.ok) {
        throw new ProviderUnknownOutcomeError(`${operation}: the response body was lost after status ${response.status}`, {
          operation,
          status: response.status,
          sent: 'maybe',
          keyed,
          cause: error,
        });
      }
      text = '';
    }
    let body: unknown;
    try {
      body = text.length === 0 ? undefined : (JSON.parse(text) as unknown);
    } catch (error) {
      if (response.ok) {
        throw new ProviderUnknownOutcomeError(`${operation}: unreadable ${response.status} response`, {
          operation,
          status: response.status,
          sent: 'maybe',
          keyed,
          cause: error,
        });
      }
    }
    if (response.ok) return { status: response.status, headers: response.headers, body };
    if (response.status === 404 && options.notFoundIsNull) return { status: 404, headers: response.headers, body };
    throw classifyStatus(operation, response, body, keyed);
  }
}

/** Convenience constructor: `createProviderClient('http://127.0.0.1:4100')`. */
export function createProviderClient(options: ProviderClientOptions | string): ProviderClient {
  return new ProviderClient(options);
}

/** An idempotency key as a structured-field string header value. @throws TypeError for non-printable ASCII. */
export function toStructuredString(key: string): string {
  if (!/^[\x20-\x7e]*$/.test(key)) throw new TypeError('an idempotency key must be printable ASCII');
  return `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function asTicketReceipt(body: unknown, operation: string, status: number, keyed = false): TicketReceipt {
  const b = body as Partial<TicketReceipt> | undefined;
  if (!b || typeof b.ticketId !== 'string' || typeof b.receipt !== 'string' || typeof b.createdAt !== 'string') {
    throw new ProviderUnknownOutcomeError(`${operation}: ${status} response without a ticket receipt`, { operation, status, sent: 'maybe', keyed });
  }
  return { ticketId: b.ticketId, receipt: b.receipt, createdAt: b.createdAt };
}

function classifyNetworkError(operation: string, error: unknown, signal: AbortSignal, timeout: AbortSignal, keyed: boolean): ProviderError {
  const codes = networkCodes(error);
  const networkCode = codes[0];
  if (codes.length > 0 && codes.every((c) => NOT_SENT_CODES.has(c))) {
    return new ProviderTransientError(`${operation}: the provider could not be reached (${codes.join(', ')}); nothing was sent`, {
      operation,
      sent: 'no',
      keyed,
      networkCode,
      cause: error,
    });
  }
  const why = timeout.aborted ? 'timed out' : signal.aborted ? 'was aborted' : `failed (${codes.join(', ') || String(error)})`;
  return new ProviderUnknownOutcomeError(`${operation}: the request ${why} after it may have been sent; outcome unknown`, {
    operation,
    sent: 'maybe',
    keyed,
    networkCode,
    cause: error,
  });
}

/** An HTTP error answer as a {@link ProviderError} of the kind `classifyHttpFailure` gives it. */
function classifyStatus(operation: string, response: Response, body: unknown, keyed: boolean): ProviderError {
  const status = response.status;
  const problem = typeof body === 'object' && body !== null && typeof (body as ProblemDetails).title === 'string' ? (body as ProblemDetails) : undefined;
  const summary = `${operation}: ${status} ${problem?.title ?? response.statusText}${problem?.detail ? ` (${problem.detail})` : ''}`;
  const base = { operation, status, problem, sent: 'yes' as const, keyed };
  const { kind } = classifyHttpFailure({ status, problemType: typeof problem?.type === 'string' ? problem.type : undefined, sent: 'yes', keyed });
  if (kind === 'transient') return new ProviderTransientError(summary, { ...base, retryAfterMs: parseRetryAfter(response.headers.get('retry-after')) });
  if (kind === 'rejected') return new ProviderRejectedError(summary, base);
  return new ProviderUnknownOutcomeError(summary, { ...base, sent: 'maybe' });
}
