/**
 * HTTP plumbing of the demo provider (`server.ts` and its route modules): problem details
 * (RFC 9457), JSON bodies, the `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header).
 */
import { createHash } from 'node:crypto';
import type * as http from 'node:http';

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Longest idempotency key accepted, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** Base of every problem `type` URI. */
export const PROBLEM_BASE = 'https://provider.example/problems/';

/** An HTTP error answer: sent as RFC 9457 problem details (`type` = the problem base + `slug`). */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    readonly detail?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(`${status} ${title}${detail ? `: ${detail}` : ''}`);
  }
}

/** Hex SHA-256 of UTF-8 text. */
export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The current time, ISO-8601 UTC. */
export function nowIso(): string {
  return new Date().toISOString();
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Parse an `Idempotency-Key` header. The draft defines the value as a Structured Field
 * String (`"…"`, with `\"` and `\\` escapes); a bare token of visible ASCII is accepted too.
 */
export function parseIdempotencyKey(raw: string | string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) {
    if (raw.length !== 1) throw new HttpProblem(400, 'invalid-idempotency-key', 'Invalid Idempotency-Key', 'the header must appear once');
    raw = raw[0] as string;
  }
  let key = raw.trim();
  if (key.startsWith('"')) {
    const match = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(key);
    if (!match) throw new HttpProblem(400, 'invalid-idempotency-key', 'Invalid Idempotency-Key', 'not a valid structured-field string');
    key = (match[1] as string).replace(/\\(["\\])/g, '$1');
  } else if (!/^[\x21-\x7e]+$/.test(key)) {
    throw new HttpProblem(400, 'invalid-idempotency-key', 'Invalid Idempotency-Key', 'the key must be visible ASCII');
  }
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new HttpProblem(400, 'invalid-idempotency-key', 'Invalid Idempotency-Key', `the key must be 1..${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  return key;
}

/**
 * The body as an object of exactly `fields`, each a non-empty string of at most the given length.
 * @throws HttpProblem 400 naming the first bad or unknown field.
 */
export function requireFields<T extends object>(value: unknown, fields: Readonly<Record<keyof T & string, number>>): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpProblem(400, 'invalid-body', 'Invalid request body', 'the body must be a JSON object');
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!(key in fields)) throw new HttpProblem(400, 'invalid-body', 'Invalid request body', `unknown field "${key}"`);
  }
  for (const [field, maxLength] of Object.entries(fields) as [string, number][]) {
    const v = record[field];
    if (typeof v !== 'string' || v.length === 0 || v.length > maxLength) {
      throw new HttpProblem(400, 'invalid-body', 'Invalid request body', `"${field}" must be a string of 1..${maxLength} characters`);
    }
  }
  return record as T;
}

/** Sends `body` with `status`, its length and `headers` (unless the response is already sent or gone). */
export function sendRaw(res: http.ServerResponse, status: number, body: string, headers: Record<string, string>, contentType = 'application/json'): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** Sends `value` as JSON. */
export function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  sendRaw(res, status, JSON.stringify(value), {});
}

/** Sends `problem` as `application/problem+json`. */
export function sendProblem(res: http.ServerResponse, problem: HttpProblem): void {
  const body = {
    type: `${PROBLEM_BASE}${problem.slug}`,
    title: problem.title,
    status: problem.status,
    ...(problem.detail !== undefined ? { detail: problem.detail } : {}),
  };
  sendRaw(res, problem.status, JSON.stringify(body), problem.headers, 'application/problem+json');
}

/** Reads and discards the request body. */
export function drain(req: http.IncomingMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    req.on('data', () => undefined);
    req.on('end', resolve);
    req.on('error', reject);
  });
}

/** The request body as JSON. @throws HttpProblem 415 (not JSON), 413 (over {@link MAX_BODY_BYTES}), 400 (unparsable). */
export async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    await drain(req).catch(() => undefined);
    throw new HttpProblem(415, 'unsupported-media-type', 'Unsupported Media Type', 'send application/json');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpProblem(413, 'body-too-large', 'Content Too Large', `at most ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new HttpProblem(400, 'invalid-json', 'Invalid JSON', 'the body is not valid JSON');
  }
}
