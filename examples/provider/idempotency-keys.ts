/**
 * The demo provider's `Idempotency-Key` store (draft-ietf-httpapi-idempotency-key-header), shared
 * by every keyed endpoint: the first request with a key reserves it (`in-flight`), applies its
 * effect and stores its response in the same transaction (`done`); a repeat with the same key
 * and request replays the stored response and applies nothing; the same key with another request
 * is 422; a key still in flight is 409. Keys left in flight by a crash are dropped at start-up
 * (see `openDatabase` in `server.ts`), so a key is never "applied but unrecorded".
 */
import type Database from 'better-sqlite3';
import { HttpProblem, nowIso } from './http';

/** A stored key. */
export interface KeyRow {
  key: string;
  fingerprint: string;
  state: 'in-flight' | 'done';
  status_code: number | null;
  response: string | null;
}

/** What a keyed request got: the stored response (replayed, or just applied). */
export interface KeyedResponse {
  readonly status: number;
  /** The response body (JSON text), stored once and replayed byte for byte. */
  readonly body: string;
  readonly replayed: boolean;
}

/** The key store over the provider's database (table `idempotency_keys`). */
export interface IdempotencyKeys {
  /** The stored row of `key`, if any. */
  get(key: string): KeyRow | undefined;
  /**
   * Reserves `key` for a request with `fingerprint`: undefined when this request now owns it,
   * else the stored row to replay. @throws HttpProblem 422 (other request), 409 (in flight).
   */
  reserve(key: string, fingerprint: string): KeyRow | undefined;
  /** Marks an owned key done with its response; call inside the effect's transaction. @throws Error when the key was not in flight. */
  finish(key: string, status: number, response: string): void;
  /** Releases an owned key whose request failed before its effect. */
  drop(key: string): void;
  /**
   * Runs a keyed request: replays a stored response, or reserves the key and runs `apply` (the
   * effect, in one transaction with storing its response). A failing `apply` drops the key.
   */
  run(key: string, fingerprint: string, apply: () => { status: number; body: unknown }): KeyedResponse;
  /** The stored response of `key` for a lookup. @throws HttpProblem 404 (never applied), 409 (in flight). */
  lookup(key: string): string;
}

/** The key store of `db` (the table must exist). */
export function createIdempotencyKeys(db: Database.Database): IdempotencyKeys {
  const getKey = db.prepare<[string], KeyRow>(`SELECT key, fingerprint, state, status_code, response FROM idempotency_keys WHERE key = ?`);
  const insertKey = db.prepare(`INSERT INTO idempotency_keys (key, fingerprint, state, created_at) VALUES (?, ?, 'in-flight', ?)`);
  const finishKey = db.prepare(`UPDATE idempotency_keys SET state = 'done', status_code = ?, response = ? WHERE key = ? AND state = 'in-flight'`);
  const dropKey = db.prepare(`DELETE FROM idempotency_keys WHERE key = ? AND state = 'in-flight'`);
  const inFlight = () => new HttpProblem(409, 'idempotency-key-in-flight', 'A request with this Idempotency-Key is in progress', 'retry later', { 'Retry-After': '1' });

  const reserve = db.transaction((key: string, fingerprint: string): KeyRow | undefined => {
    const row = getKey.get(key);
    if (!row) {
      insertKey.run(key, fingerprint, nowIso());
      return undefined;
    }
    if (row.fingerprint !== fingerprint) {
      throw new HttpProblem(
        422,
        'idempotency-key-reused',
        'Idempotency-Key reused with a different request',
        'this key was first used with another request body; use a new key for a new request',
      );
    }
    if (row.state === 'in-flight') throw inFlight();
    return row;
  });
  const finish = (key: string, status: number, response: string): void => {
    if (finishKey.run(status, response, key).changes !== 1) throw new Error(`idempotency key ${key} was not in flight`);
  };
  const applyAndFinish = db.transaction((key: string, apply: () => { status: number; body: unknown }): { status: number; body: string } => {
    const { status, body } = apply();
    const text = JSON.stringify(body);
    finish(key, status, text);
    return { status, body: text };
  });

  return {
    get: (key) => getKey.get(key),
    reserve,
    finish,
    drop: (key) => void dropKey.run(key),
    run(key, fingerprint, apply) {
      const stored = reserve(key, fingerprint);
      if (stored) return { status: stored.status_code ?? 200, body: stored.response ?? '{}', replayed: true };
      try {
        return { ...applyAndFinish(key, apply), replayed: false };
      } catch (error) {
        dropKey.run(key);
        throw error;
      }
    },
    lookup(key) {
      const row = getKey.get(key);
      if (!row) throw new HttpProblem(404, 'idempotency-key-not-found', 'No request applied under this Idempotency-Key', key);
      if (row.state === 'in-flight') throw inFlight();
      return row.response ?? '{}';
    },
  };
}
