/**
 * The demo provider's notifications (the batch example: "send 100 notifications in batches"):
 *
 * - `POST /notifications` `{recipient, message}`: with an `Idempotency-Key` the provider
 *   deduplicates (the first request sends and stores its receipt under the key, a repeat replays
 *   it, see `idempotency-keys.ts`); without one it has no idempotency support: every request
 *   sends one more notification.
 * - `GET /notifications/by-idempotency-key/:key`: the stored receipt (200), 404 when nothing was
 *   sent under the key, 409 while it is in flight.
 * - `GET /notifications?recipientPrefix=p`: the notifications sent to recipients starting with `p`.
 * - `GET /notifications/requests?recipientPrefix=p`: every send and lookup request for those
 *   recipients in arrival order, with when it arrived and was answered (which request came first).
 */
import type Database from 'better-sqlite3';
import { HttpProblem, nowIso, parseIdempotencyKey, readJson, requireFields, sendJson, sendRaw, sha256 } from './http';
import type { RouteHandler, RouteKit } from './routes';
import type { Notification, NotificationReceipt, NotificationRequest, SendNotificationInput } from './types';

interface NotificationRow {
  notification_id: string;
  recipient: string;
  message: string;
  idempotency_key: string | null;
  sent_at: string;
}

interface RequestRow {
  seq: number;
  operation: 'send' | 'lookup';
  recipient: string | null;
  idempotency_key: string | null;
  outcome: string;
  received_at_ms: number;
  answered_at_ms: number | null;
}

function createTables(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS notifications (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      notification_id TEXT NOT NULL UNIQUE,
      recipient TEXT NOT NULL, message TEXT NOT NULL,
      idempotency_key TEXT,
      sent_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS notifications_recipient ON notifications (recipient);
    CREATE TABLE IF NOT EXISTS notification_requests (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      operation TEXT NOT NULL, recipient TEXT, idempotency_key TEXT,
      outcome TEXT NOT NULL,
      received_at_ms INTEGER NOT NULL, answered_at_ms INTEGER
    );
    CREATE INDEX IF NOT EXISTS notification_requests_recipient ON notification_requests (recipient);
  `);
}

/** The notification endpoints over `kit` (creates their tables). */
export function notificationRoutes(kit: RouteKit): RouteHandler {
  const { db, keys } = kit;
  createTables(db);
  const stmt = {
    insert: db.prepare(`INSERT INTO notifications (notification_id, recipient, message, idempotency_key, sent_at) VALUES (?, ?, ?, ?, ?)`),
    nextSeq: db.prepare<[], { next: number }>(`SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM notifications`),
    list: db.prepare<[{ prefix: string }], NotificationRow>(`SELECT * FROM notifications WHERE substr(recipient, 1, length(@prefix)) = @prefix ORDER BY seq`),
    logRequest: db.prepare(`INSERT INTO notification_requests (operation, recipient, idempotency_key, outcome, received_at_ms) VALUES (?, ?, ?, 'in-flight', ?)`),
    answerRequest: db.prepare(`UPDATE notification_requests SET recipient = COALESCE(?, recipient), outcome = ?, answered_at_ms = ? WHERE seq = ?`),
    requests: db.prepare<[{ prefix: string }], RequestRow>(`SELECT * FROM notification_requests WHERE substr(recipient, 1, length(@prefix)) = @prefix ORDER BY seq`),
  };

  const send = (input: SendNotificationInput, key: string | null): NotificationReceipt => {
    const notificationId = `N-${String(stmt.nextSeq.get()!.next).padStart(6, '0')}`;
    const sentAt = nowIso();
    stmt.insert.run(notificationId, input.recipient, input.message, key, sentAt);
    const logical = key ?? `body:${sha256(JSON.stringify([input.recipient, input.message]))}`;
    kit.recordEffect('notification.send', logical, key, notificationId, null);
    return { notificationId, recipient: input.recipient, sentAt };
  };
  const sendUnkeyed = db.transaction((input: SendNotificationInput) => send(input, null));

  /** Logs the request on arrival; the returned function records how it was answered. */
  const logged = (operation: 'send' | 'lookup', recipient: string | null, key: string | null) => {
    const seq = Number(stmt.logRequest.run(operation, recipient, key, Date.now()).lastInsertRowid);
    return (outcome: string, foundRecipient: string | null = null) => void stmt.answerRequest.run(foundRecipient, outcome, Date.now(), seq);
  };

  return async ({ req, res, method, pathname, segments, query }) => {
    if (segments[0] !== 'notifications') return false;
    if (segments.length === 1 && method === 'POST') {
      const key = parseIdempotencyKey(req.headers['idempotency-key']) ?? null;
      const input = requireFields<SendNotificationInput>(await readJson(req), { recipient: 200, message: 2_000 });
      const answered = logged('send', input.recipient, key);
      const done = (outcome: string): true => {
        answered(outcome);
        return true;
      };
      try {
        if (await kit.beforeEffect(pathname, res)) return done(String(res.statusCode));
        if (key === null) {
          const receipt = sendUnkeyed(input);
          if (kit.afterEffect(pathname, req)) return done('dropped');
          sendJson(res, 201, receipt);
          return done('applied');
        }
        const fingerprint = sha256(JSON.stringify(['POST /notifications', input.recipient, input.message]));
        const r = keys.run(key, fingerprint, () => ({ status: 201, body: send(input, key) }));
        if (!r.replayed && kit.afterEffect(pathname, req)) return done('dropped');
        sendRaw(res, r.status, r.body, r.replayed ? { 'Idempotent-Replayed': 'true' } : {});
        return done(r.replayed ? 'replayed' : 'applied');
      } catch (error) {
        answered(error instanceof HttpProblem ? String(error.status) : 'error');
        throw error;
      }
    }
    if (segments.length === 3 && segments[1] === 'by-idempotency-key' && method === 'GET') {
      const key = segments[2]!;
      const answered = logged('lookup', null, key);
      let body: string;
      try {
        body = keys.lookup(key);
      } catch (error) {
        answered(error instanceof HttpProblem && error.status === 404 ? 'absent' : error instanceof HttpProblem ? String(error.status) : 'error');
        throw error;
      }
      sendRaw(res, 200, body, {});
      answered('found', (JSON.parse(body) as Partial<NotificationReceipt>).recipient ?? null);
      return true;
    }
    if (segments.length === 2 && segments[1] === 'requests' && method === 'GET') {
      const rows = stmt.requests.all({ prefix: query.get('recipientPrefix') ?? '' });
      sendJson(
        res,
        200,
        rows.map((r): NotificationRequest => ({
          seq: r.seq,
          operation: r.operation,
          recipient: r.recipient,
          idempotencyKey: r.idempotency_key,
          outcome: r.outcome,
          receivedAtMs: r.received_at_ms,
          answeredAtMs: r.answered_at_ms,
        })),
      );
      return true;
    }
    if (segments.length === 1 && method === 'GET') {
      const rows = stmt.list.all({ prefix: query.get('recipientPrefix') ?? '' });
      sendJson(
        res,
        200,
        rows.map((r): Notification => ({ notificationId: r.notification_id, recipient: r.recipient, message: r.message, idempotencyKey: r.idempotency_key, sentAt: r.sent_at })),
      );
      return true;
    }
    return false;
  };
}
