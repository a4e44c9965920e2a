/**
 * The demo provider: a small external system (tickets, emails, notifications, orders) the example tools act on.
 * It runs as its own OS process with its own SQLite file, so killing a Temporal worker never
 * kills it, and it counts every effect it applies so tests can prove "applied once".
 *
 *     tsx examples/provider/server.ts --port 0 --db .data/provider.sqlite [--faults] [--host 127.0.0.1]
 *
 * prints one JSON line `{"event":"listening","port":N,"url":"http://127.0.0.1:N"}` on stdout
 * when ready, and `{"event":"stopped"}` after a graceful SIGTERM/SIGINT.
 *
 * Endpoints (JSON in, JSON out, errors as RFC 9457 `application/problem+json`):
 * - `POST /tickets` `{title, body, queue}`, optional `Idempotency-Key` header
 *   (draft-ietf-httpapi-idempotency-key-header): the first request creates the ticket and
 *   stores its response under the key together with a fingerprint of the request; the same
 *   key and body replay the stored response (header `Idempotent-Replayed: true`) and apply
 *   nothing; the same key with another body is 422; a request whose key is still in flight
 *   is 409. The effect and the stored response commit in one transaction, so a key is never
 *   "applied but unrecorded"; keys left in flight by a crash are dropped at start-up.
 * - `GET /tickets/by-idempotency-key/:key`: 200 with the stored response, 404 when the key
 *   was never applied, 409 while it is in flight.
 * - `GET /tickets/:id`, `GET /tickets`: read tickets.
 * - `POST /tickets/:id/close`: idempotent by nature; an effect only when it changes state.
 * - `POST /emails` `{to, subject, body}`: no idempotency support; every call sends again.
 * - `GET /emails`: the outbox.
 * - Notifications (`notification-routes.ts`): keyed sends the provider deduplicates, a lookup
 *   by key, unkeyed sends without idempotency support, and the request log.
 * - Orders (`order-routes.ts`): reserve / release inventory, charge / refund payment, create
 *   shipment (refused on demand), each keyed and looked up by key.
 * - `GET /effects`: applied effects per kind and per idempotency key, plus every logical
 *   request applied more than once.
 * - `GET /healthz`.
 * - With `--faults` only: `GET|POST|DELETE /_faults` (see {@link FaultSettings}).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { drain, HttpProblem, nowIso, parseIdempotencyKey, readJson, requireFields, sendJson, sendProblem, sendRaw, sha256, sleep } from './http';
import { createIdempotencyKeys } from './idempotency-keys';
import { notificationRoutes } from './notification-routes';
import { orderRoutes } from './order-routes';
import type { RouteHandler, RouteKit } from './routes';

export { MAX_BODY_BYTES, MAX_IDEMPOTENCY_KEY_LENGTH, parseIdempotencyKey } from './http';
import type { CloseTicketResult, CreateTicketInput, DuplicateEffect, EffectKind, EffectsReport, EmailReceipt, FaultSettings, SendEmailInput, Ticket, TicketReceipt } from './types';

const EFFECT_KINDS: readonly EffectKind[] = [
  'ticket.create',
  'ticket.close',
  'email.send',
  'notification.send',
  'inventory.reserve',
  'inventory.release',
  'payment.charge',
  'payment.refund',
  'shipment.create',
];

/** Options of {@link createProviderServer}. */
export interface ProviderServerOptions {
  /** Path of the provider's SQLite file; created if missing. */
  readonly dbFile: string;
  /** Enable the `/_faults` endpoint and fault injection. @default false */
  readonly faults?: boolean;
  /** Write one JSON line per request to stderr. @default false */
  readonly logRequests?: boolean;
}

/** A provider server bound to its database, not yet listening. */
export interface ProviderServer {
  readonly server: http.Server;
  /** Start listening; resolves with the bound port. */
  listen(port: number, host: string): Promise<number>;
  /** Stop accepting, let in-flight requests finish for up to `graceMs`, then close the database. */
  close(graceMs?: number): Promise<void>;
}

interface TicketRow {
  ticket_id: string;
  title: string;
  body: string;
  queue: string;
  status: 'open' | 'closed';
  created_at: string;
  closed_at: string | null;
  idempotency_key: string | null;
}

function openDatabase(dbFile: string): Database.Database {
  fs.mkdirSync(path.dirname(path.resolve(dbFile)), { recursive: true });
  const db = new Database(dbFile, { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS tickets (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      ticket_id TEXT NOT NULL UNIQUE,
      title TEXT NOT NULL, body TEXT NOT NULL, queue TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('open', 'closed')),
      created_at TEXT NOT NULL, closed_at TEXT,
      idempotency_key TEXT
    );
    CREATE TABLE IF NOT EXISTS idempotency_keys (
      key TEXT PRIMARY KEY,
      fingerprint TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('in-flight', 'done')),
      status_code INTEGER,
      response TEXT,
      created_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS emails (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      message_id TEXT NOT NULL UNIQUE,
      to_addr TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,
      sent_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS effects (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      kind TEXT NOT NULL,
      logical_key TEXT NOT NULL,
      idempotency_key TEXT,
      subject_id TEXT NOT NULL,
      detail TEXT,
      at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS effects_logical ON effects (kind, logical_key);
  `);
  // The effect and the stored response commit together, so a key still in flight at start-up
  // belongs to a request that died before its effect: drop it, a retry may apply it afresh.
  db.prepare(`DELETE FROM idempotency_keys WHERE state = 'in-flight'`).run();
  return db;
}

/**
 * Build the provider's HTTP server over its SQLite file (WAL). The process entry point
 * (`main`) uses it; exported so the request logic can be reused, e.g. embedded in a script.
 */
export function createProviderServer(options: ProviderServerOptions): ProviderServer {
  const db = openDatabase(options.dbFile);
  let faults: FaultSettings = {};
  const counters = { rateLimit: 0, fail5xx: 0, dropAfterEffect: 0 };

  const keys = createIdempotencyKeys(db);
  const stmt = {
    insertTicket: db.prepare(`INSERT INTO tickets (ticket_id, title, body, queue, status, created_at, idempotency_key) VALUES (?, ?, ?, ?, 'open', ?, ?)`),
    nextTicketSeq: db.prepare<[], { next: number }>(`SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM tickets`),
    getTicket: db.prepare<[string], TicketRow>(`SELECT * FROM tickets WHERE ticket_id = ?`),
    listTickets: db.prepare<[], TicketRow>(`SELECT * FROM tickets ORDER BY seq`),
    closeTicket: db.prepare(`UPDATE tickets SET status = 'closed', closed_at = ? WHERE ticket_id = ? AND status = 'open'`),
    insertEmail: db.prepare(`INSERT INTO emails (message_id, to_addr, subject, body, sent_at) VALUES (?, ?, ?, ?, ?)`),
    listEmails: db.prepare<[], { message_id: string; to_addr: string; subject: string; body: string; sent_at: string }>(`SELECT * FROM emails ORDER BY seq`),
    insertEffect: db.prepare(`INSERT INTO effects (kind, logical_key, idempotency_key, subject_id, detail, at) VALUES (?, ?, ?, ?, ?, ?)`),
    countByKind: db.prepare<[], { kind: EffectKind; n: number }>(`SELECT kind, COUNT(*) AS n FROM effects GROUP BY kind`),
    countByKey: db.prepare<[], { idempotency_key: string; n: number }>(
      `SELECT idempotency_key, COUNT(*) AS n FROM effects WHERE idempotency_key IS NOT NULL GROUP BY idempotency_key ORDER BY idempotency_key`,
    ),
    duplicates: db.prepare<[], { kind: EffectKind; logical_key: string; n: number; detail: string | null }>(
      `SELECT kind, logical_key, COUNT(*) AS n, MIN(detail) AS detail FROM effects GROUP BY kind, logical_key HAVING COUNT(*) > 1 ORDER BY MIN(seq)`,
    ),
  };

  function createTicketEffect(input: CreateTicketInput, key: string | undefined, fingerprint: string): TicketReceipt {
    const seq = stmt.nextTicketSeq.get()!.next;
    const ticketId = `T-${String(seq).padStart(6, '0')}`;
    const createdAt = nowIso();
    stmt.insertTicket.run(ticketId, input.title, input.body, input.queue, createdAt, key ?? null);
    stmt.insertEffect.run('ticket.create', key ?? `body:${fingerprint}`, key ?? null, ticketId, null, createdAt);
    return { ticketId, receipt: `rcpt_${randomBytes(12).toString('hex')}`, createdAt };
  }

  const applyUnkeyedCreate = db.transaction((input: CreateTicketInput, fingerprint: string) => createTicketEffect(input, undefined, fingerprint));

  const applyKeyedCreate = db.transaction((input: CreateTicketInput, key: string, fingerprint: string): string => {
    const response = JSON.stringify(createTicketEffect(input, key, fingerprint));
    keys.finish(key, 201, response);
    return response;
  });

  const applyClose = db.transaction((ticketId: string): CloseTicketResult => {
    const row = stmt.getTicket.get(ticketId);
    if (!row) throw new HttpProblem(404, 'ticket-not-found', 'Ticket not found', `no ticket ${ticketId}`);
    if (row.status === 'closed') return { ticketId, status: 'closed', changed: false, closedAt: row.closed_at as string };
    const closedAt = nowIso();
    stmt.closeTicket.run(closedAt, ticketId);
    stmt.insertEffect.run('ticket.close', ticketId, null, ticketId, null, closedAt);
    return { ticketId, status: 'closed', changed: true, closedAt };
  });

  const applyEmail = db.transaction((input: SendEmailInput): EmailReceipt => {
    const messageId = `msg_${randomBytes(12).toString('hex')}`;
    const sentAt = nowIso();
    stmt.insertEmail.run(messageId, input.to, input.subject, input.body, sentAt);
    const detail = JSON.stringify({ to: input.to, subject: input.subject, body: input.body });
    stmt.insertEffect.run('email.send', `body:${sha256(detail)}`, null, messageId, detail, sentAt);
    return { messageId, sentAt };
  });

  function effectsReport(): EffectsReport {
    const byKind = Object.fromEntries(EFFECT_KINDS.map((k) => [k, 0])) as Record<EffectKind, number>;
    let total = 0;
    for (const { kind, n } of stmt.countByKind.all()) {
      byKind[kind] = n;
      total += n;
    }
    const byIdempotencyKey: Record<string, number> = {};
    for (const { idempotency_key, n } of stmt.countByKey.all()) byIdempotencyKey[idempotency_key] = n;
    const duplicates: DuplicateEffect[] = stmt.duplicates.all().map((d) => ({
      kind: d.kind,
      logicalKey: d.logical_key,
      count: d.n,
      ...(d.kind === 'email.send' && d.detail ? { email: JSON.parse(d.detail) as SendEmailInput } : {}),
    }));
    return { total, byKind, byIdempotencyKey, duplicates };
  }

  function toTicket(row: TicketRow): Ticket {
    return {
      ticketId: row.ticket_id,
      title: row.title,
      body: row.body,
      queue: row.queue,
      status: row.status,
      createdAt: row.created_at,
      closedAt: row.closed_at,
      idempotencyKey: row.idempotency_key,
    };
  }

  /** Injected faults that answer before any effect; returns true when a response was sent. */
  function injectEarlyFault(pathname: string, res: http.ServerResponse): boolean {
    if (!options.faults || (faults.pathPrefix !== undefined && !pathname.startsWith(faults.pathPrefix))) return false;
    const retryAfterMs = faults.retryAfterMs ?? 1000;
    const retryAfter = faults.retryAfterFormat === 'http-date' ? new Date(Date.now() + retryAfterMs).toUTCString() : String(Math.max(0, Math.ceil(retryAfterMs / 1000)));
    if (counters.rateLimit > 0) {
      counters.rateLimit -= 1;
      sendProblem(res, new HttpProblem(429, 'rate-limited', 'Too Many Requests', 'injected fault', { 'Retry-After': retryAfter }));
      return true;
    }
    if (counters.fail5xx > 0) {
      counters.fail5xx -= 1;
      sendProblem(res, new HttpProblem(503, 'unavailable', 'Service Unavailable', 'injected fault', { 'Retry-After': retryAfter }));
      return true;
    }
    return false;
  }

  /** Fault that fires after the effect: drop the connection so the client never sees the answer. */
  function dropAfterEffect(pathname: string, req: http.IncomingMessage): boolean {
    if (!options.faults || (faults.pathPrefix !== undefined && !pathname.startsWith(faults.pathPrefix))) return false;
    if (counters.dropAfterEffect <= 0) return false;
    counters.dropAfterEffect -= 1;
    req.socket.destroy();
    return true;
  }

  async function injectedDelay(pathname: string): Promise<void> {
    if (!options.faults || !faults.delayMs || (faults.pathPrefix !== undefined && !pathname.startsWith(faults.pathPrefix))) return;
    await sleep(faults.delayMs);
  }

  function setFaults(value: unknown): FaultSettings {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new HttpProblem(400, 'invalid-body', 'Invalid fault settings', 'expected a JSON object');
    }
    const v = value as Record<string, unknown>;
    const allowed = ['rateLimitNext', 'retryAfterMs', 'retryAfterFormat', 'fail5xxNext', 'dropAfterEffectNext', 'delayMs', 'pathPrefix'];
    for (const key of Object.keys(v)) {
      if (!allowed.includes(key)) throw new HttpProblem(400, 'invalid-body', 'Invalid fault settings', `unknown field "${key}"`);
    }
    for (const key of ['rateLimitNext', 'retryAfterMs', 'fail5xxNext', 'dropAfterEffectNext', 'delayMs']) {
      const n = v[key];
      if (n !== undefined && (typeof n !== 'number' || !Number.isInteger(n) || n < 0)) {
        throw new HttpProblem(400, 'invalid-body', 'Invalid fault settings', `"${key}" must be a non-negative integer`);
      }
    }
    if (v.retryAfterFormat !== undefined && v.retryAfterFormat !== 'seconds' && v.retryAfterFormat !== 'http-date') {
      throw new HttpProblem(400, 'invalid-body', 'Invalid fault settings', `"retryAfterFormat" must be "seconds" or "http-date"`);
    }
    if (v.pathPrefix !== undefined && typeof v.pathPrefix !== 'string') {
      throw new HttpProblem(400, 'invalid-body', 'Invalid fault settings', `"pathPrefix" must be a string`);
    }
    faults = v as FaultSettings;
    counters.rateLimit = faults.rateLimitNext ?? 0;
    counters.fail5xx = faults.fail5xxNext ?? 0;
    counters.dropAfterEffect = faults.dropAfterEffectNext ?? 0;
    return faults;
  }

  const kit: RouteKit = {
    db,
    keys,
    recordEffect: (kind, logicalKey, idempotencyKey, subjectId, detail) => void stmt.insertEffect.run(kind, logicalKey, idempotencyKey, subjectId, detail, nowIso()),
    async beforeEffect(pathname, res) {
      if (injectEarlyFault(pathname, res)) return true;
      await injectedDelay(pathname);
      return false;
    },
    afterEffect: dropAfterEffect,
  };
  const routes: RouteHandler[] = [notificationRoutes(kit), orderRoutes(kit)];

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://provider.invalid');
    const pathname = url.pathname;
    const method = req.method ?? 'GET';
    let segments: string[];
    try {
      segments = pathname
        .split('/')
        .filter((s) => s.length > 0)
        .map((s) => decodeURIComponent(s));
    } catch {
      throw new HttpProblem(400, 'invalid-path', 'Invalid path', 'malformed percent-encoding');
    }

    if (method === 'GET' && pathname === '/healthz') return sendJson(res, 200, { ok: true });
    if (method === 'GET' && pathname === '/effects') return sendJson(res, 200, effectsReport());

    if (pathname === '/_faults' && options.faults) {
      if (method === 'GET') return sendJson(res, 200, faults);
      if (method === 'DELETE') return sendJson(res, 200, setFaults({}));
      if (method === 'POST') return sendJson(res, 200, setFaults(await readJson(req)));
      throw new HttpProblem(405, 'method-not-allowed', 'Method Not Allowed', undefined, { Allow: 'GET, POST, DELETE' });
    }

    if (segments[0] === 'tickets') {
      if (segments.length === 1 && method === 'POST') {
        const key = parseIdempotencyKey(req.headers['idempotency-key']);
        const input = requireFields<CreateTicketInput>(await readJson(req), { title: 200, body: 10_000, queue: 64 });
        const fingerprint = sha256(JSON.stringify(['POST /tickets', input.title, input.body, input.queue]));
        if (injectEarlyFault(pathname, res)) return;
        if (key === undefined) {
          await injectedDelay(pathname);
          const receipt = applyUnkeyedCreate(input, fingerprint);
          if (dropAfterEffect(pathname, req)) return;
          return sendJson(res, 201, receipt);
        }
        const stored = keys.reserve(key, fingerprint);
        if (stored) {
          return sendRaw(res, stored.status_code ?? 200, stored.response ?? '{}', { 'Idempotent-Replayed': 'true' });
        }
        let response: string;
        try {
          await injectedDelay(pathname);
          response = applyKeyedCreate(input, key, fingerprint);
        } catch (error) {
          keys.drop(key);
          throw error;
        }
        if (dropAfterEffect(pathname, req)) return;
        return sendRaw(res, 201, response, {});
      }
      if (segments.length === 1 && method === 'GET') return sendJson(res, 200, stmt.listTickets.all().map(toTicket));
      if (segments.length === 3 && segments[1] === 'by-idempotency-key' && method === 'GET') {
        const key = segments[2] as string;
        return sendRaw(res, 200, keys.lookup(key), {});
      }
      if (segments.length === 2 && method === 'GET') {
        const row = stmt.getTicket.get(segments[1] as string);
        if (!row) throw new HttpProblem(404, 'ticket-not-found', 'Ticket not found', `no ticket ${segments[1]}`);
        return sendJson(res, 200, toTicket(row));
      }
      if (segments.length === 3 && segments[2] === 'close' && method === 'POST') {
        await drain(req);
        if (injectEarlyFault(pathname, res)) return;
        await injectedDelay(pathname);
        const result = applyClose(segments[1] as string);
        if (dropAfterEffect(pathname, req)) return;
        return sendJson(res, 200, result);
      }
    }

    if (segments[0] === 'emails' && segments.length === 1) {
      if (method === 'POST') {
        // Deliberately no Idempotency-Key support: every call sends one more email.
        const input = requireFields<SendEmailInput>(await readJson(req), { to: 254, subject: 200, body: 10_000 });
        if (!input.to.includes('@')) throw new HttpProblem(400, 'invalid-body', 'Invalid request body', '"to" must be an email address');
        if (injectEarlyFault(pathname, res)) return;
        await injectedDelay(pathname);
        const receipt = applyEmail(input);
        if (dropAfterEffect(pathname, req)) return;
        return sendJson(res, 200, receipt);
      }
      if (method === 'GET') {
        return sendJson(
          res,
          200,
          stmt.listEmails.all().map((e) => ({ messageId: e.message_id, to: e.to_addr, subject: e.subject, body: e.body, sentAt: e.sent_at })),
        );
      }
    }

    for (const route of routes) if (await route({ req, res, method, pathname, segments, query: url.searchParams })) return;
    throw new HttpProblem(404, 'not-found', 'Not Found', `${method} ${pathname}`);
  }

  const active = new Set<Promise<void>>();
  const server = http.createServer((req, res) => {
    const started = Date.now();
    const work = handle(req, res)
      .catch((error: unknown) => {
        if (error instanceof HttpProblem) return sendProblem(res, error);
        process.stderr.write(`${JSON.stringify({ event: 'error', message: String((error as Error)?.stack ?? error) })}\n`);
        return sendProblem(res, new HttpProblem(500, 'internal', 'Internal Server Error'));
      })
      .finally(() => {
        active.delete(work);
        if (options.logRequests) {
          process.stderr.write(`${JSON.stringify({ event: 'request', method: req.method, url: req.url, status: res.statusCode, ms: Date.now() - started })}\n`);
        }
      });
    active.add(work);
  });
  server.keepAliveTimeout = 5000;

  return {
    server,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as { port: number }).port);
        });
      });
    },
    async close(graceMs = 5000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await Promise.allSettled([...active]);
      server.closeIdleConnections();
      await closed;
      clearTimeout(timer);
      db.close();
    },
  };
}

/** Process entry point: parse the command line, listen, print the listening line, stop on SIGTERM/SIGINT. */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      db: { type: 'string' },
      faults: { type: 'boolean', default: false },
      'log-requests': { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (!values.db) throw new Error('--db <file> is required');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535, got ${values.port}`);
  const provider = createProviderServer({ dbFile: values.db, faults: values.faults, logRequests: values['log-requests'] });
  const bound = await provider.listen(port, values.host!);
  const host = values.host!.includes(':') ? `[${values.host}]` : values.host;
  process.stdout.write(`${JSON.stringify({ event: 'listening', port: bound, url: `http://${host}:${bound}` })}\n`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    provider.close().then(
      () => {
        process.stdout.write(`${JSON.stringify({ event: 'stopped', signal })}\n`);
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`${JSON.stringify({ event: 'error', message: String(error) })}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${JSON.stringify({ event: 'error', message: error instanceof Error ? error.message : String(error) })}\n`);
    process.exit(1);
  });
}
