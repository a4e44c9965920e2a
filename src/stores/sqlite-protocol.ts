/**
 * The messages between the SQLite store (`./sqlite-store`, on the calling thread) and its
 * executor (`./sqlite-executor.js`, on the store's worker thread, or inline for `:memory:`).
 * Types only: the executor is plain JavaScript that names these types in JSDoc, so `tsc`
 * checks both sides against this one file. Everything here crosses `postMessage` (structured
 * clone): plain data, no class instances, no functions.
 *
 * Row and entry bodies cross as the exact stored text; encoding and decoding (seal,
 * encryption, parsing) stay on the calling thread.
 */
import type { EncodedRow } from './row-codec';

/** A `ttc_checkpoints` row as the executor reads it (a damaged row may hold anything in `body`). */
export interface SqliteRow {
  readonly key: string;
  readonly status: string;
  readonly revision: number;
  /** ISO-8601 UTC text. */
  readonly updated_at: string;
  readonly body: unknown;
}

/** A `ttc_conversation_entries` row as the executor reads it. */
export interface SqliteEntryRow {
  readonly entry_key: string;
  readonly body: unknown;
  readonly bytes: unknown;
}

/** The columns a write sets on one checkpoint row. */
export type SqliteRowColumns = EncodedRow;

/** Reads: run outside any transaction (a WAL read takes no lock), in arrival order. */
export type SqliteReadRequest =
  | { readonly op: 'get'; readonly key: string }
  | { readonly op: 'getByCall'; readonly namespace: string; readonly callId: string }
  /** The rows of `keys` (distinct; absent keys are simply missing; read in chunks). `getMany`. */
  | { readonly op: 'getMany'; readonly keys: readonly string[] }
  /** One page of `listByStatus`: rows in `statuses`, `updated_at < olderThan`, after the `(updated_at, key)` cursor. */
  | { readonly op: 'list'; readonly statuses: readonly string[]; readonly olderThan: string; readonly after: readonly [string, string]; readonly limit: number }
  /** One page of every row by key, after `after` (`listQuarantined`). */
  | { readonly op: 'scan'; readonly after: string; readonly limit: number }
  /** One page of delivered rows older than `olderThan` whose dedupe window (if any) ended by `now`, after the cursor (`prune`). */
  | { readonly op: 'pruneCandidates'; readonly olderThan: string; readonly now: string; readonly after: readonly [string, string]; readonly limit: number }
  /** The stored entries of `keys` in `logId` (absent keys are simply missing; read in chunks). */
  | { readonly op: 'entries'; readonly logId: string; readonly keys: readonly string[] }
  /** The connection's settings (tests and operators): journal mode, synchronous, busy timeout, schema version. */
  | { readonly op: 'settings' };

/**
 * Writes: every write queued while a commit is in flight joins the next transaction (group
 * commit), each under its own savepoint, so a failing statement undoes only its own write.
 */
export type SqliteWriteRequest =
  /**
   * `INSERT … ON CONFLICT DO NOTHING`, after releasing the row's dedupe key from a settled holder
   * whose `dedupe_until` is at or before the row's `updatedAt`; when nothing was inserted, the row
   * holding the key, the call or the dedupe key.
   */
  | { readonly op: 'insert'; readonly row: SqliteRowColumns }
  /** Clears the dedupe key of the row at `key` if it is still at `revision`; answers whether it did. */
  | { readonly op: 'releaseDedupeKey'; readonly key: string; readonly revision: number }
  /** One conditional UPDATE on key and revision (and, when `expectedBody` is given, the exact stored body). */
  | { readonly op: 'cas'; readonly row: SqliteRowColumns; readonly expectedRevision: number; readonly expectedBody: string | null }
  /**
   * `writeGroup`: each write as `insert` / `cas` would run it, in order, all under this request's
   * one savepoint (a failing statement undoes the whole group). Answers one
   * {@link SqliteGroupWriteAnswer} per write.
   */
  | { readonly op: 'group'; readonly writes: readonly SqliteGroupWrite[] }
  /** Deletes every conversation log whose newest entry is older than `olderThan`; counts the logs. */
  | { readonly op: 'pruneLogs'; readonly olderThan: string }
  /** Deletes delivered rows by key, revision and exact body (rows verified by the caller); counts them. */
  | { readonly op: 'deleteRows'; readonly rows: readonly { readonly key: string; readonly revision: number; readonly body: string }[] }
  /**
   * Inserts the `fresh` entries of `logId` if, under the write lock, every `present` entry still
   * holds exactly the body the caller decoded and compared, and no `fresh` key exists yet; else
   * writes nothing and answers `'stale'` (the caller reads again and decides again).
   */
  | {
      readonly op: 'putEntries';
      readonly logId: string;
      readonly present: readonly { readonly key: string; readonly body: string }[];
      readonly fresh: readonly { readonly key: string; readonly body: string; readonly bytes: number }[];
      /** ISO-8601 UTC. */
      readonly createdAt: string;
    };

/** One write of a `group` request (distinct keys and calls, checked by the caller). */
export type SqliteGroupWrite =
  | { readonly kind: 'create'; readonly row: SqliteRowColumns }
  | { readonly kind: 'cas'; readonly row: SqliteRowColumns; readonly expectedRevision: number; readonly expectedBody: string };

/** The answer to one write of a `group` request: an insert's (created, or the row it found) or a CAS's (swapped). */
export type SqliteGroupWriteAnswer = { readonly created: true } | { readonly created: false; readonly row: SqliteRow } | boolean;

/**
 * Test hook: the next group commit fails like a COMMIT whose outcome the driver could not report.
 * `open`: the error comes before COMMIT and the transaction stays open (the executor rolls it
 * back: nothing written). `committed` / `rolled-back`: the transaction did commit / was rolled
 * back, and the COMMIT still reports an I/O error (the executor settles the outcome by re-read).
 */
export type SqliteCommitFault = 'open' | 'committed' | 'rolled-back';

/** Control requests (not SQL work), answered with the reads. */
export type SqliteControlRequest = { readonly op: 'fault'; readonly commit: SqliteCommitFault };

/** The last message to a worker thread: it closes the connection, answers {@link SqliteClosedAnswer} and exits. */
export interface SqliteCloseRequest {
  readonly op: 'close';
}

/** The worker thread's answer to {@link SqliteCloseRequest}. */
export interface SqliteClosedAnswer {
  readonly closed: true;
}

/** Any request, numbered by the calling side. */
export type SqliteRequest = (SqliteReadRequest | SqliteWriteRequest | SqliteControlRequest) & { readonly id: number };

/** A driver error as it crosses threads (better-sqlite3's `SqliteError` keeps only these). */
export interface WireDriverError {
  /** `SqliteError`, `TypeError`, `RangeError`, … */
  readonly name: string;
  readonly message: string;
  /** `SQLITE_BUSY`, `SQLITE_CANTOPEN`, … (absent for the driver's own argument checks). */
  readonly code?: string;
}

/**
 * Why a request failed:
 * - `unavailable`: nothing of it was written (a read failed, BEGIN failed, its statement failed
 *   and its savepoint was rolled back, or the commit failed and provably did not commit).
 * - `unknown`: a write was sent and its COMMIT failed; a re-read could not settle whether it is stored.
 * - `schema`: the file was migrated by newer code (open only; the file is left untouched).
 */
export type WireError =
  | { readonly kind: 'unavailable'; readonly what: 'open' | 'read' | 'write'; readonly driver: WireDriverError; readonly note?: string }
  | { readonly kind: 'unknown'; readonly message: string; readonly driver?: WireDriverError; readonly key?: string }
  | { readonly kind: 'schema'; readonly actual: number; readonly supported: number };

/** The answer to one request. */
export type SqliteResponse = { readonly id: number; readonly ok: true; readonly value: unknown } | { readonly id: number; readonly ok: false; readonly error: WireError };

/** What the executor reports about one group commit (the store's `stats()`). */
export interface SqliteGroupReport {
  /** True when the group's transaction committed. */
  readonly committed: boolean;
  /** Write requests in the group. */
  readonly writes: number;
  /** Writes that changed a row. A transaction that changed none appends nothing to the WAL, so it makes no fsync. */
  readonly changed: number;
}

/** One message from the executor: answers, and for a write group its report. */
export interface SqliteBatchAnswer {
  readonly responses: readonly SqliteResponse[];
  readonly group?: SqliteGroupReport;
}

/** The first message of a worker thread: the database is open and migrated, or why not. */
export type SqliteOpenAnswer = { readonly open: true } | { readonly open: false; readonly error: WireError };

/** How the executor opens its database (the worker thread's `workerData`). */
export interface SqliteExecutorOptions {
  /** File path as given to better-sqlite3, or `:memory:`. */
  readonly path: string;
  /** How long a writer waits for another connection's lock, ms (0 to 600,000). */
  readonly busyTimeoutMs: number;
  /** The schema steps, in order (`./migrations/sqlite`), passed in because the executor loads no TypeScript. */
  readonly migrations: readonly { readonly version: number; readonly sql: string }[];
}
