/**
 * What a route module of the demo provider (`notification-routes.ts`, `order-routes.ts`) gets
 * from the server: its database, the shared `Idempotency-Key` store, the effect counter and the
 * injected faults, so every endpoint counts its effects and honours `/_faults` the same way.
 */
import type * as http from 'node:http';
import type Database from 'better-sqlite3';
import type { IdempotencyKeys } from './idempotency-keys';
import type { EffectKind } from './types';

/** One request as a route module sees it. */
export interface RouteRequest {
  readonly req: http.IncomingMessage;
  readonly res: http.ServerResponse;
  readonly method: string;
  readonly pathname: string;
  /** Path segments, percent-decoded. */
  readonly segments: readonly string[];
  readonly query: URLSearchParams;
}

/** The server's parts a route module uses. */
export interface RouteKit {
  readonly db: Database.Database;
  readonly keys: IdempotencyKeys;
  /** Counts one applied effect (call inside the effect's transaction). `logicalKey` identifies the logical request (a duplicate has the same one). */
  recordEffect(kind: EffectKind, logicalKey: string, idempotencyKey: string | null, subjectId: string, detail: string | null): void;
  /** Injected faults before the effect (429 / 503 answered, or the injected delay waited): true when the request was answered. */
  beforeEffect(pathname: string, res: http.ServerResponse): Promise<boolean>;
  /** Injected fault after the effect (the connection dropped unanswered): true when it fired. */
  afterEffect(pathname: string, req: http.IncomingMessage): boolean;
}

/** A route module: handles the request and returns true, or returns false when the path is not its. */
export type RouteHandler = (request: RouteRequest) => Promise<boolean>;
