/**
 * The embedded side store (docs/protocol.md#side-stores): one SQLite file shared safely by several
 * processes on one host, through better-sqlite3 (major 12; 13 needs Node 22). Crash-safe settings:
 * WAL, `synchronous = FULL` (every commit is fsynced), a busy timeout, and `BEGIN IMMEDIATE` for
 * every write so a writer takes the lock up front and SQLite never answers BUSY before the timeout.
 *
 * What runs where (docs/protocol.md#cost: store work never blocks the worker's event loop for long):
 * - The connection lives on a worker thread of its own (`./sqlite-thread.ts`,
 *   `./sqlite-worker.js`, `./sqlite-executor.js`): every SQL statement, every fsync of a commit
 *   and every busy wait for another process's lock happens there. `:memory:` (tests only: no
 *   fsync, no other connection) runs the same executor on the calling thread.
 * - Encoding and decoding stay on the calling thread (this file, `./row-codec.ts`,
 *   `./entry-codec.ts`): validation, canonical JSON, the HMAC seal, payload encryption, parsing
 *   and verification. Only SQL parameters and stored bodies (strings) cross to the thread.
 *   Measured (2-core machine under load, per record with a 50 B / 4 KiB payload): encode
 *   34 / 52 µs plain and 0.4 / 0.9 ms sealed+encrypted, decode 0.3 / 0.4 ms and 0.5 / 1.4 ms,
 *   while a structured clone of the record to another thread costs 10–30 µs. So the codec on
 *   the thread would free this thread further; it stays here because it is TypeScript: a worker
 *   running it from the sources (jest, tsx) needs a TypeScript loader, which took 0.55–0.63 s
 *   per thread start against 0.05–0.1 s for the plain-JavaScript executor (the test suites and
 *   the interleaving explorer open hundreds of stores); one thread would also serialize all the
 *   process's codec work behind fsyncs and lock waits; and `RowCodec` remembers on this thread
 *   which body each returned record came from (a compare-and-swap with `expected` needs it).
 *   What moved is what blocks for milliseconds to seconds: SQL, fsyncs and busy waits. With 16
 *   concurrent lifecycles the calling thread was busy 1.0 ms per lifecycle instead of 2.6 ms,
 *   with one client 4.2 ms instead of 19.9 ms (`performance.eventLoopUtilization`; load average
 *   9–10 on 2 cores, so rough figures).
 *
 * Group commit: the writes issued in one event-loop turn are sent to the thread together and
 * commit in one transaction, and every write queued while a commit is in flight joins the next
 * one; each write runs under its own savepoint, so one failing statement fails only its own
 * call; each promise settles only after its commit is durable. A failed COMMIT that leaves the
 * outcome unknown is settled by re-read or reported STORE_OUTCOME_UNKNOWN (`./sqlite-executor.js`).
 *
 * A compare-and-swap is one `UPDATE … WHERE key = ? AND revision = ?` (and, when the caller
 * passes the record it read, `AND body = ?`: the body must be exactly the one read).
 */
import { assertPeersInstalled } from '../optional-peer';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { bindingSnapshot } from '../checkpoint/record';
import type { Binding, CheckpointRecord, JsonValue, Status } from '../checkpoint/types';
import { checkpointKey } from './checkpoint-key';
import type {
  CheckpointStore,
  CheckpointStoreOptions,
  ConversationEntry,
  CreateOptions,
  CreateResult,
  GroupWrite,
  GroupWriteResult,
  ListOptions,
  ListQuarantinedOptions,
  PruneOptions,
  QuarantinedRow,
} from './checkpoint-store';
import { encodeGroup, groupResults, keysOf, recordsOf, type GroupAnswer } from './group-writes';
import { assertGetArguments, conversationConflict, encodeEntries, entryMissing, EntryCodec } from './entry-codec';
import { SQLITE_MIGRATIONS } from './migrations/sqlite';
import {
  assertCallArguments,
  assertCasArguments,
  dedupeColumns,
  releaseArguments,
  assertStatuses,
  normalizeTimestamp,
  resolveLimit,
  RowCodec,
  scanQuarantined,
  type StoredRow,
} from './row-codec';
import type { SqliteEntryRow, SqliteGroupWrite, SqliteGroupWriteAnswer, SqliteRow } from './sqlite-protocol';
import { SqliteThread } from './sqlite-thread';
import { assertSqliteBindingLoads } from './sqlite-errors';

/** Default `busyTimeoutMs`: how long a writer waits for another process's lock. */
export const DEFAULT_SQLITE_BUSY_TIMEOUT_MS = 5_000;

/**
 * Counters for benchmarks: committed write transactions that changed a row (each one fsync of the
 * WAL) and the write operations that changed one. A transaction that changed nothing (a
 * re-delivery's insert of an existing key, a lost compare-and-swap) appends no WAL frame, so it
 * makes no fsync and is not counted. `requests`: the store's requests to the database (one per
 * read or write operation; an insert that finds the row reads it in the same request).
 */
export interface SqliteStoreStats {
  readonly commits: number;
  readonly writes: number;
  readonly requests: number;
}

/** The connection's settings, as the connection reports them (`settings()`). */
export interface SqliteStoreSettings {
  /** `wal` for a file, `memory` for `:memory:`. */
  readonly journalMode: string;
  /** 2 = FULL. */
  readonly synchronous: number;
  /** ms. */
  readonly busyTimeoutMs: number;
  /** Schema version (`PRAGMA user_version`). */
  readonly userVersion: number;
}

const PAGE = 500;
/** Rounds of `putConversationEntries` when entries keep changing between its read and its write. */
const MAX_ENTRY_ROUNDS = 20;

/**
 * A {@link CheckpointStore} on one SQLite file (or `:memory:`). Open it with
 * `openCheckpointStore('sqlite:<path>')` or {@link SqliteCheckpointStore.open}.
 */
export class SqliteCheckpointStore implements CheckpointStore {
  private readonly entries: EntryCodec;

  private constructor(
    private readonly thread: SqliteThread,
    private readonly path: string,
    private readonly codec: RowCodec,
    options: CheckpointStoreOptions,
  ) {
    this.entries = new EntryCodec(options);
  }

  /**
   * Opens (creating it and any missing directories above it when absent) the database at
   * `path` (`:memory:` for a private in-memory database) on its own worker thread, sets WAL,
   * `synchronous = FULL` and the busy timeout, and runs the migrations.
   *
   * @param options see {@link CheckpointStoreOptions}; `busyTimeoutMs` @default 5,000 ms.
   * @throws {@link CheckpointError} INVALID_CONFIG when `better-sqlite3` is not installed or its
   *   native binding does not load in this Node;
   *   STORE_UNAVAILABLE when the file cannot be opened or migrated (a directory that cannot be
   *   created, locked past the timeout, not a database), with the driver's or file system's error
   *   as `cause`; INVALID_ARGUMENT for bad options; UNSUPPORTED_SCHEMA when the file was
   *   migrated by newer code.
   */
  static async open(path: string, options: CheckpointStoreOptions = {}): Promise<SqliteCheckpointStore> {
    const codec = new RowCodec(options);
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_SQLITE_BUSY_TIMEOUT_MS;
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > 600_000) {
      throw new CheckpointError('INVALID_ARGUMENT', `busyTimeoutMs must be an integer from 0 to 600,000 ms, got ${String(busyTimeoutMs)}`, {
        field: 'busyTimeoutMs',
        limit: 600_000,
      });
    }
    assertPeersInstalled(['better-sqlite3'], 'the SQLite store');
    assertSqliteBindingLoads();
    const migrations = SQLITE_MIGRATIONS.map(({ version, sql }) => ({ version, sql }));
    const thread = await SqliteThread.open({ path, busyTimeoutMs, migrations });
    return new SqliteCheckpointStore(thread, path, codec, options);
  }

  /** Counters since open (see {@link SqliteStoreStats}). */
  stats(): SqliteStoreStats {
    return this.thread.stats();
  }

  /** The connection's settings as it reports them (see {@link SqliteStoreSettings}). @throws {@link CheckpointError} STORE_UNAVAILABLE. */
  settings(): Promise<SqliteStoreSettings> {
    return this.thread.request({ op: 'settings' });
  }

  async createIfAbsent(record: CheckpointRecord, options?: CreateOptions): Promise<CreateResult> {
    const dedupe = dedupeColumns(options);
    const row = { ...this.codec.encode(record), ...dedupe };
    const answer = await this.thread.request<{ created: true } | { created: false; row: SqliteRow }>({ op: 'insert', row });
    if (answer.created) return { created: true, record: this.codec.remember(record, row.body) };
    return { created: false, record: this.codec.decode(stored(answer.row)) };
  }

  async releaseDedupeKey(holder: CheckpointRecord): Promise<boolean> {
    return this.thread.request<boolean>({ op: 'releaseDedupeKey', ...releaseArguments(holder) });
  }

  async get(binding: Binding): Promise<CheckpointRecord | null> {
    const lookedUp = bindingSnapshot(binding);
    const key = checkpointKey(lookedUp);
    const row = await this.thread.request<SqliteRow | null>({ op: 'get', key });
    return row === null ? null : this.codec.decode(stored(row), { binding: lookedUp, key });
  }

  async getByCall(namespace: string, callId: string): Promise<CheckpointRecord | null> {
    assertCallArguments(namespace, callId);
    const row = await this.thread.request<SqliteRow | null>({ op: 'getByCall', namespace, callId });
    return row === null ? null : this.codec.decode(stored(row));
  }

  async compareAndSwap(expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord): Promise<boolean> {
    assertCasArguments(expectedRevision, next);
    const row = this.codec.encode(next);
    const expectedBody = this.codec.expectedBody(expectedRevision, row.key, expected);
    const swapped = await this.thread.request<boolean>({ op: 'cas', row, expectedRevision, expectedBody });
    if (swapped) this.codec.remember(next, row.body);
    return swapped;
  }

  /** One read request; the executor reads the keys in chunks of 500 (one statement each). */
  async getMany(bindings: readonly Binding[]): Promise<(CheckpointRecord | null)[]> {
    const keys = keysOf(bindings);
    if (keys.length === 0) return [];
    const rows = await this.thread.request<SqliteRow[]>({ op: 'getMany', keys: [...new Set(keys)] });
    return recordsOf(this.codec, keys, rows.map(stored));
  }

  /**
   * One `group` write request: the executor runs every write, in order, under one savepoint of
   * its group transaction (`BEGIN IMMEDIATE … COMMIT`, with whatever other writes joined it):
   * one commit, one fsync. A failing statement undoes the whole group (STORE_UNAVAILABLE); a
   * failed COMMIT is settled by re-reading the rows the group changed, as for single writes.
   */
  async writeGroup(writes: readonly GroupWrite[]): Promise<GroupWriteResult[]> {
    const encoded = encodeGroup(this.codec, writes);
    if (encoded.length === 0) return [];
    const wire: SqliteGroupWrite[] = encoded.map((w) =>
      w.kind === 'create' ? { kind: 'create', row: w.row } : { kind: 'cas', row: w.row, expectedRevision: w.expectedRevision, expectedBody: w.expectedBody },
    );
    const answers = await this.thread.request<SqliteGroupWriteAnswer[]>({ op: 'group', writes: wire });
    return groupResults(
      this.codec,
      encoded,
      answers.map((answer): GroupAnswer =>
        typeof answer === 'boolean' ? { kind: 'swapped', swapped: answer } : answer.created ? { kind: 'inserted' } : { kind: 'existing', row: stored(answer.row) },
      ),
    );
  }

  async listByStatus(statuses: readonly Status[], options: ListOptions = {}): Promise<CheckpointRecord[]> {
    const wanted = assertStatuses(statuses);
    const limit = resolveLimit(options.limit);
    // Without olderThan, '~' sorts after every ISO-8601 text, so the bound matches every row.
    const olderThan = options.olderThan === undefined ? '~' : normalizeTimestamp(options.olderThan, 'olderThan');
    const records: CheckpointRecord[] = [];
    let after: [string, string] = ['', ''];
    while (records.length < limit) {
      const rows = await this.thread.request<SqliteRow[]>({ op: 'list', statuses: wanted, olderThan, after, limit: PAGE });
      for (const row of rows) {
        try {
          records.push(this.codec.decode(stored(row)));
        } catch (error) {
          if (!isCheckpointError(error)) throw error; // quarantined: reported by listQuarantined
        }
        if (records.length === limit) break;
      }
      if (rows.length < PAGE) break;
      const last = rows[rows.length - 1]!;
      after = [last.updated_at, last.key];
    }
    return records;
  }

  async listQuarantined(options: ListQuarantinedOptions = {}): Promise<QuarantinedRow[]> {
    const limit = resolveLimit(options.limit);
    return scanQuarantined(this.codec, async (after) => (await this.thread.request<SqliteRow[]>({ op: 'scan', after, limit: PAGE })).map(stored), PAGE, limit);
  }

  /**
   * Each page of candidates is read (a WAL read takes no lock, so other processes keep writing)
   * and decoded on the calling thread outside any transaction; then one short write
   * transaction deletes the verified rows by key, revision, status and exact body, so a row
   * that changed (or was damaged) after it was decoded is left alone.
   */
  async prune(options: PruneOptions): Promise<number> {
    const olderThan = normalizeTimestamp(options?.olderThan, 'olderThan');
    const conversationsOlderThan = options.conversationsOlderThan === undefined ? undefined : normalizeTimestamp(options.conversationsOlderThan, 'conversationsOlderThan');
    let deleted = 0;
    // One write transaction: the logs counted are exactly the logs deleted.
    if (conversationsOlderThan !== undefined) deleted += await this.thread.request<number>({ op: 'pruneLogs', olderThan: conversationsOlderThan });
    let after: [string, string] = ['', ''];
    for (;;) {
      const rows = await this.thread.request<SqliteRow[]>({ op: 'pruneCandidates', olderThan, now: new Date().toISOString(), after, limit: PAGE });
      const verified: Array<{ key: string; revision: number; body: string }> = [];
      for (const row of rows) {
        let record: CheckpointRecord;
        try {
          record = this.codec.decode(stored(row));
        } catch (error) {
          if (!isCheckpointError(error)) throw error;
          continue; // quarantined rows are never deleted
        }
        if (record.status !== 'delivered' || normalizeTimestamp(record.updatedAt, 'updatedAt') >= olderThan) continue;
        verified.push({ key: row.key, revision: record.revision, body: row.body as string });
      }
      if (verified.length > 0) deleted += await this.thread.request<number>({ op: 'deleteRows', rows: verified });
      if (rows.length < PAGE) return deleted;
      const last = rows[rows.length - 1]!;
      after = [last.updated_at, last.key];
    }
  }

  /**
   * The existing entries are read and decoded (verified, decrypted) on the calling thread and
   * compared with the new values; a conflict or a damaged entry fails the call with nothing of
   * it written. Then one write inserts the new entries only if, under the write lock, every
   * existing entry still holds exactly the body that was compared and no new key appeared
   * meanwhile; otherwise it writes nothing and the call reads and compares again.
   */
  async putConversationEntries(logId: string, entries: readonly ConversationEntry[]): Promise<void> {
    const encoded = encodeEntries(this.entries, logId, entries);
    if (encoded.length === 0) return;
    const createdAt = new Date().toISOString();
    for (let round = 0; round < MAX_ENTRY_ROUNDS; round += 1) {
      const rows = await this.thread.request<SqliteEntryRow[]>({ op: 'entries', logId, keys: encoded.map((e) => e.key) });
      const existing = new Map(rows.map((row) => [row.entry_key, row]));
      const present: Array<{ key: string; body: string }> = [];
      const fresh: Array<{ key: string; body: string; bytes: number }> = [];
      for (const entry of encoded) {
        const row = existing.get(entry.key);
        if (row === undefined) {
          fresh.push({ key: entry.key, body: entry.body, bytes: entry.bytes });
          continue;
        }
        if (this.entries.decode({ logId, key: entry.key, body: row.body, bytes: row.bytes }).text !== entry.text) throw conversationConflict(logId, entry.key);
        present.push({ key: entry.key, body: row.body as string });
      }
      if (fresh.length === 0) return;
      if ((await this.thread.request<'ok' | 'stale'>({ op: 'putEntries', logId, present, fresh, createdAt })) === 'ok') return;
    }
    throw new CheckpointError(
      'STORE_UNAVAILABLE',
      `SQLite database ${this.path}: conversation log ${logId} kept changing between the read and the write of ${encoded.length} entries (${MAX_ENTRY_ROUNDS} rounds); nothing of this call was written`,
      {
        path: this.path,
        logId,
      },
    );
  }

  async getConversationEntries(logId: string, keys: readonly string[]): Promise<JsonValue[]> {
    assertGetArguments(logId, keys);
    const unique = [...new Set(keys)];
    const found = new Map<string, JsonValue>();
    if (unique.length > 0) {
      const rows = await this.thread.request<SqliteEntryRow[]>({ op: 'entries', logId, keys: unique });
      for (const row of rows) found.set(row.entry_key, this.entries.decode({ logId, key: row.entry_key, body: row.body, bytes: row.bytes }).value);
    }
    return keys.map((key) => {
      if (!found.has(key)) throw entryMissing(logId, key);
      return found.get(key)!;
    });
  }

  /** Lets pending calls finish, then closes the connection and ends the worker thread. Idempotent; later calls are STORE_UNAVAILABLE (`details.reason` `closed`). */
  close(): Promise<void> {
    return this.thread.close();
  }
}

function stored(row: SqliteRow): StoredRow {
  return { key: row.key, status: row.status, revision: row.revision, updatedAt: row.updated_at, body: row.body };
}
