/**
 * A loopback HTTP server (node:http on 127.0.0.1, random port) that speaks the two provider
 * APIs the SDK adapters call, for tests without the internet:
 *
 * - `POST /v1/messages` (Anthropic Messages; point `new Anthropic({ baseURL: server.anthropicBaseURL })`)
 * - `POST /v1/chat/completions` (OpenAI Chat Completions; `new OpenAI({ baseURL: server.openaiBaseURL })`)
 *
 * Each API answers from its own FIFO queue of replies ({@link LoopbackLlm.enqueue}); every
 * request is recorded (method, path, headers, parsed JSON body). With `apiKey` set, requests
 * with another key get the provider's real 401 body. An empty queue answers 500 with
 * `x-should-retry: false` so the test fails fast and clearly. Error helpers build realistic
 * provider error replies (bodies and headers as the real APIs send them).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Which API a request or reply belongs to. */
export type LoopbackApi = 'anthropic' | 'openai';

/** One queued answer. `body` is sent as JSON (`rawBody`, when given, as written); `delayMs` waits before answering. */
export interface LoopbackReply {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: unknown;
  readonly rawBody?: string;
  readonly delayMs?: number;
}

/** A request the server received. */
export interface RecordedRequest {
  readonly api: LoopbackApi | 'unknown';
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** Parsed JSON body (or the raw text when it was not JSON). */
  readonly body: unknown;
  readonly receivedAt: number;
}

/** Options of {@link LoopbackLlm.start}. */
export interface LoopbackOptions {
  /** When set, requests must carry it (Anthropic: `x-api-key` or `Authorization: Bearer`; OpenAI: `Authorization: Bearer`). */
  readonly apiKey?: string;
}

let counter = 0;
const nextId = (prefix: string): string => `${prefix}${(++counter).toString(36).padStart(8, '0')}${Date.now().toString(36)}`;

/** The server. Start with {@link LoopbackLlm.start}, stop with {@link LoopbackLlm.close}. */
export class LoopbackLlm {
  readonly requests: RecordedRequest[] = [];
  private readonly queues: Record<LoopbackApi, LoopbackReply[]> = { anthropic: [], openai: [] };
  private readonly delays = new Set<{ timer: NodeJS.Timeout; done: () => void }>();

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>` */
    readonly url: string,
    private readonly options: LoopbackOptions,
  ) {}

  /** Starts a server on 127.0.0.1 and an ephemeral port. */
  static async start(options: LoopbackOptions = {}): Promise<LoopbackLlm> {
    const holder: { self?: LoopbackLlm } = {};
    const server = createServer((req, res) => {
      void holder.self!.handle(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    holder.self = new LoopbackLlm(server, `http://127.0.0.1:${port}`, options);
    return holder.self;
  }

  /** Base URL for `new Anthropic({ baseURL })` (the SDK appends `/v1/messages`). */
  get anthropicBaseURL(): string {
    return this.url;
  }

  /** Base URL for `new OpenAI({ baseURL })` (the SDK appends `/chat/completions`). */
  get openaiBaseURL(): string {
    return `${this.url}/v1`;
  }

  /** Queues replies for one API, answered in order. */
  enqueue(api: LoopbackApi, ...replies: LoopbackReply[]): this {
    this.queues[api].push(...replies);
    return this;
  }

  /** Replies still queued for an API. */
  pending(api: LoopbackApi): number {
    return this.queues[api].length;
  }

  /** Recorded requests of one API. */
  requestsFor(api: LoopbackApi): RecordedRequest[] {
    return this.requests.filter((r) => r.api === api);
  }

  /** Stops the server (closing idle keep-alive connections). */
  async close(): Promise<void> {
    for (const delay of this.delays) {
      clearTimeout(delay.timer);
      delay.done();
    }
    this.delays.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = text;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      // keep the raw text
    }
    const path = (req.url ?? '/').split('?')[0]!;
    const api: LoopbackApi | 'unknown' =
      req.method === 'POST' && path === '/v1/messages' ? 'anthropic' : req.method === 'POST' && path === '/v1/chat/completions' ? 'openai' : 'unknown';
    this.requests.push({ api, method: req.method ?? '', path, headers: req.headers, body, receivedAt: Date.now() });

    if (api === 'unknown') {
      return send(res, {
        status: 404,
        body: { error: { message: `Unknown request URL: ${req.method} ${path}`, type: 'invalid_request_error', param: null, code: 'unknown_url' } },
      });
    }
    if (this.options.apiKey !== undefined) {
      const bearer = req.headers.authorization?.replace(/^Bearer /, '');
      // Anthropic takes `x-api-key` (older SDKs) or `Authorization: Bearer` (SDK 1.x); OpenAI takes Bearer.
      const given = api === 'anthropic' ? (req.headers['x-api-key'] ?? bearer) : bearer;
      if (given !== this.options.apiKey) {
        return send(
          res,
          api === 'anthropic'
            ? anthropicError(401, 'authentication_error', 'invalid x-api-key')
            : openaiError(401, 'invalid_request_error', 'Incorrect API key provided.', 'invalid_api_key'),
        );
      }
    }
    const reply = this.queues[api].shift();
    if (reply === undefined) {
      return send(res, {
        status: 500,
        headers: { 'x-should-retry': 'false' },
        body:
          api === 'anthropic'
            ? { type: 'error', error: { type: 'api_error', message: 'loopback: no reply queued' } }
            : { error: { message: 'loopback: no reply queued', type: 'server_error', param: null, code: null } },
      });
    }
    if (reply.delayMs !== undefined) {
      await new Promise<void>((resolve) => {
        const delay = {
          timer: setTimeout(() => {
            this.delays.delete(delay);
            resolve();
          }, reply.delayMs),
          done: resolve,
        };
        this.delays.add(delay);
      });
    }
    const requestId: Record<string, string> = api === 'anthropic' ? { 'request-id': nextId('req_011C') } : { 'x-request-id': nextId('req_') };
    send(res, { ...reply, headers: { ...requestId, ...reply.headers } });
  }
}

function send(res: import('node:http').ServerResponse, reply: LoopbackReply): void {
  if (res.destroyed) return;
  const payload = reply.rawBody ?? JSON.stringify(reply.body);
  res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...reply.headers });
  res.end(payload);
}

/** An Anthropic error reply: `{"type":"error","error":{"type","message"}}`. */
export function anthropicError(status: number, type: string, message: string, headers: Record<string, string> = {}): LoopbackReply {
  return { status, headers, body: { type: 'error', error: { type, message }, request_id: nextId('req_011C') } };
}

/** An OpenAI error reply: `{"error":{"message","type","param","code"}}`. */
export function openaiError(status: number, type: string, message: string, code: string | null, headers: Record<string, string> = {}): LoopbackReply {
  return { status, headers, body: { error: { message, type, param: null, code } } };
}

/** Anthropic 429 `rate_limit_error` with `retry-after` (seconds) and rate-limit headers. */
export function anthropicRateLimited(retryAfterSeconds: number): LoopbackReply {
  return anthropicError(429, 'rate_limit_error', 'This request would exceed the rate limit for your organization of 50 requests per minute.', {
    'retry-after': String(retryAfterSeconds),
    'anthropic-ratelimit-requests-limit': '50',
    'anthropic-ratelimit-requests-remaining': '0',
    'anthropic-ratelimit-requests-reset': new Date(Date.now() + retryAfterSeconds * 1000).toISOString(),
  });
}

/** Anthropic 529 `overloaded_error`. */
export function anthropicOverloaded(): LoopbackReply {
  return anthropicError(529, 'overloaded_error', 'Overloaded');
}

/** OpenAI 429 `rate_limit_exceeded` with `retry-after` (seconds) and `x-ratelimit-*` headers. */
export function openaiRateLimited(retryAfterSeconds: number): LoopbackReply {
  return openaiError(
    429,
    'requests',
    'Rate limit reached for gpt-4o in organization org-loopback on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 1s.',
    'rate_limit_exceeded',
    {
      'retry-after': String(retryAfterSeconds),
      'x-ratelimit-limit-requests': '500',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': `${retryAfterSeconds}s`,
    },
  );
}

/** A 200 reply with a body (e.g. a transcript response). */
export function ok(body: unknown): LoopbackReply {
  return { status: 200, body };
}
