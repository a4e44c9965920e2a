/**
 * A codec server for the Temporal UI and CLI (Temporal docs, "Codec Server"):
 * `POST /decode` and `POST /encode` with the JSON body of `./json-payloads`, run through the
 * payload codec. With it the Temporal UI (`Settings → Codec Server`) and
 * `temporal workflow show --codec-endpoint http://127.0.0.1:8888` show decrypted payloads, while
 * Temporal itself keeps ciphertext.
 *
 * Anyone who can reach the server can decrypt, so it binds 127.0.0.1 by default, answers browsers
 * only from the configured CORS origins (other `Origin`s get 403), requires a JSON content type
 * (so a cross-site page cannot post without a preflight), requires the `X-Namespace` header (the
 * Temporal UI and CLI send it; 400 without it) and refuses one that names another namespace than
 * the configured one, and bounds the request size. With an {@link AesGcmPayloadCodec} each
 * request is encoded and decoded for the namespace it names (`forNamespace`): a payload bound to
 * another namespace does not decrypt, whatever the header says.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PayloadCodec } from '@temporalio/common';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { payloadsFromJson, payloadsToJson } from './json-payloads';
import { AesGcmPayloadCodec } from './payload-codec';

/** Port of `ttc codec-server` when `--port` is not given. */
export const DEFAULT_CODEC_SERVER_PORT = 8888;
/** Address the codec server binds when none is given (loopback only). */
export const DEFAULT_CODEC_SERVER_HOST = '127.0.0.1';
/** Largest request body in bytes (4 MiB, twice Temporal's default 2 MiB payload size limit). */
export const MAX_CODEC_REQUEST_BYTES = 4 * 1024 * 1024;
/** Request headers a browser may send (the Temporal UI sends `X-Namespace`, and `Authorization` when configured). */
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization';

/** Options of {@link startCodecServer}. */
export interface CodecServerOptions {
  /** The codec; an {@link AesGcmPayloadCodec} is bound, per request, to the namespace the request names. */
  readonly codec: PayloadCodec;
  /** TCP port; 0 picks a free one. @default {@link DEFAULT_CODEC_SERVER_PORT} */
  readonly port?: number;
  /** @default {@link DEFAULT_CODEC_SERVER_HOST} */
  readonly host?: string;
  /** Browser origins allowed to call the server (e.g. the Temporal UI, `http://localhost:8233`), as from {@link parseCorsOrigin}. @default none */
  readonly corsOrigins?: readonly string[];
  /** The namespace served: a request whose `X-Namespace` header names another is refused (403). @default any (each request still names one) */
  readonly namespace?: string;
  /** @default {@link MAX_CODEC_REQUEST_BYTES} */
  readonly maxBodyBytes?: number;
  /** Called with unexpected errors (answered 500 without details). @default ignore */
  readonly onError?: (error: unknown) => void;
}

/** A listening codec server. */
export interface RunningCodecServer {
  /** `http://<host>:<port>`, the value for `--codec-endpoint`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Starts the codec server and resolves once it listens.
 *
 * Answers: 200 `{ payloads }`; 204 to an allowed CORS preflight; 400 `{ error, code }` for a
 * request without `X-Namespace` (NAMESPACE_REQUIRED), a malformed body (INVALID_ARGUMENT) or a
 * payload that does not decrypt in that namespace (DECRYPTION_FAILED, naming the key id, never a
 * key); 403 for another origin or namespace; 404 other paths; 405 other methods;
 * 413 a body over the limit; 415 a body that is not JSON; 500 anything else.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<RunningCodecServer> {
  const host = options.host ?? DEFAULT_CODEC_SERVER_HOST;
  const server = createServer((request, response) => {
    handle(options, request, response).catch((error: unknown) => {
      options.onError?.(error);
      if (!response.headersSent) reply(response, 500, { error: 'internal error' });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_CODEC_SERVER_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/**
 * A CORS origin from `--cors-origin`: an http(s) URL with nothing after the host and port.
 *
 * @returns the origin (`scheme://host[:port]`, as browsers send it).
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the option for anything else.
 */
export function parseCorsOrigin(text: string, option = '--cors-origin'): string {
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    // reported below
  }
  if (
    url === null ||
    !['http:', 'https:'].includes(url.protocol) ||
    url.username !== '' ||
    url.password !== '' ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== '' ||
    text.replace(/\/$/, '') !== url.origin
  ) {
    throw new CheckpointError('INVALID_ARGUMENT', `${option} must be an origin such as http://localhost:8233 (scheme, host and port only), got ${JSON.stringify(text)}`, {
      field: option,
    });
  }
  return url.origin;
}

async function handle(options: CodecServerOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const origin = request.headers.origin;
  if (origin !== undefined) {
    if (!(options.corsOrigins ?? []).includes(origin)) return reply(response, 403, { error: `origin ${origin} is not allowed (ttc codec-server --cors-origin)` });
    response.setHeader('Access-Control-Allow-Origin', origin);
    response.setHeader('Access-Control-Allow-Credentials', 'true');
    response.setHeader('Vary', 'Origin');
  }
  const path = new URL(request.url ?? '/', 'http://codec.invalid').pathname;
  const operation = path === '/encode' || path === '/decode' ? path.slice(1) : null;
  if (operation === null) return reply(response, 404, { error: 'not found: POST /encode or /decode' });
  if (request.method === 'OPTIONS') {
    response.writeHead(204, { 'Access-Control-Allow-Methods': 'POST, OPTIONS', 'Access-Control-Allow-Headers': ALLOWED_HEADERS, 'Access-Control-Max-Age': '600' });
    response.end();
    return;
  }
  if (request.method !== 'POST') return reply(response, 405, { error: 'method not allowed: POST /encode or /decode' }, { Allow: 'POST, OPTIONS' });
  const namespace = request.headers['x-namespace'];
  if (typeof namespace !== 'string' || namespace === '') {
    return reply(response, 400, { error: 'the X-Namespace header is required: it names the namespace whose payloads to encode or decode', code: 'NAMESPACE_REQUIRED' });
  }
  if (options.namespace !== undefined && namespace !== options.namespace) {
    return reply(response, 403, { error: `this codec server serves namespace ${JSON.stringify(options.namespace)} only` });
  }
  const codec = options.codec instanceof AesGcmPayloadCodec ? options.codec.forNamespace(namespace) : options.codec;
  if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) return reply(response, 415, { error: 'the body must be application/json' });
  const limit = options.maxBodyBytes ?? MAX_CODEC_REQUEST_BYTES;
  const tooLarge = (): void => reply(response, 413, { error: `the body exceeds ${limit} bytes` }, { Connection: 'close' });
  if (Number(request.headers['content-length'] ?? 0) > limit) return tooLarge();
  const text = await readBody(request, limit);
  if (text === null) return tooLarge();
  try {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new CheckpointError('INVALID_ARGUMENT', 'codec request body is not JSON', { field: 'body' }, { cause: error });
    }
    const payloads = payloadsFromJson(body);
    const result = operation === 'encode' ? await codec.encode(payloads) : await codec.decode(payloads);
    reply(response, 200, payloadsToJson(result));
  } catch (error) {
    if (isCheckpointError(error, 'INVALID_ARGUMENT') || isCheckpointError(error, 'DECRYPTION_FAILED')) return reply(response, 400, { error: error.message, code: error.code });
    throw error;
  }
}

/** The body as UTF-8 text, or null (after draining it) when it exceeds `limit` bytes. */
function readBody(request: IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    request.on('end', () => resolve(size > limit ? null : Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function reply(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store', ...headers });
  response.end(text);
}
