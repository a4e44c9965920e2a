/**
 * The embedded side store (SPEC §3): one SQLite file shared safely by several processes on one
 * host, through better-sqlite3 (major 12; 13 needs Node 22). Crash-safe settings: WAL,
 * `synchronous = FULL` (every commit is fsynced), a busy timeout, and `BEGIN IMMEDIATE` for every
 * write so a writer takes the lock up front and SQLite never answers BUSY before the timeout.
 *
 * better-sqlite3 is synchronous; writes issued in the same event-loop turn are committed
 * together in one transaction (group commit), and each promise settles only after that commit
 * is durable. A compare-and-swap is one `UPDATE … WHERE key = ? AND revision = ?` (and, when the
 * caller passes the record it read, `AND ttc_sha256(body) = ?`: the body must be the one read).
 */
import type BetterSqlite3 from 'better-sqlite3';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import type { Binding, CheckpointRecord, JsonValue, Status } from '../checkpoint/types';
import { checkpointKey } from './checkpoint-key';
import type { CheckpointStore, CheckpointStoreOptions, ConversationEntry, CreateResult, ListOptions, ListQuarantinedOptions, PruneOptions, QuarantinedRow } from './checkpoint-store';
import { assertGetArguments, conversationConflict, encodeEntries, entryMissing, EntryCodec, type EncodedEntry } from './entry-codec';
import { SQLITE_MIGRATIONS } from './migrations/sqlite';
import { assertCallArguments, assertCasArguments, bodyDigest, assertStatuses, normalizeTimestamp, resolveLimit, RowCodec, scanQuarantined, type EncodedRow, type StoredRow } from './row-codec';

/** Default `busyTimeoutMs`: how long a writer waits for another process's lock. */
export const DEFAULT_SQLITE_BUSY_TIMEOUT_MS = 5_000;

/** Counters for benchmarks: committed write transactions (each one fsync of the WAL) and write operations. */
export interface SqliteStoreStats {
  readonly commits: number;
  readonly writes: number;
}

interface Job {
  readonly run: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

interface Row {
  key: string;
  status: string;
  revision: number;
  updated_at: string;
  body: unknown;
}

interface EntryRow {
  entry_key: string;
  body: unknown;
  bytes: unknown;
}

const COLUMNS = 'key, status, revision, updated_at, body';
const PAGE = 500;
/** Keys per conversation read: below SQLite's default limit of 32,766 bound parameters (999 before 3.32). */
const KEY_CHUNK = 500;
const MAX_SNAPSHOT_RETRIES = 20;

/**
 * A {@link CheckpointStore} on one SQLite file (or `:memory:`). Open it with
 * `openCheckpointStore('sqlite:<path>')` or {@link SqliteCheckpointStore.open}.
 */
export class SqliteCheckpointStore implements CheckpointStore {
  private readonly statements: ReturnType<typeof prepare>;
  private queue: Job[] = [];
  private flushScheduled = false;
  private closed = false;
  private commits = 0;
  private writes = 0;
  private readonly entries: EntryCodec;

  private constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly path: string,
    private readonly codec: RowCodec,
    private readonly busyTimeoutMs: number,
    options: CheckpointStoreOptions,
  ) {
    this.statements = prepare(db);
    this.entries = new EntryCodec(options);
  }

  /**
   * Opens (creating when absent) the database at `path` (`:memory:` for a private in-memory
   * database), sets WAL, `synchronous = FULL` and the busy timeout, and runs the migrations.
   *
   * @param options see {@link CheckpointStoreOptions}; `busyTimeoutMs` @default 5,000 ms.
   * @throws {@link CheckpointError} STORE_UNAVAILABLE when the file cannot be opened or
   *   migrated (missing directory, locked past the timeout, not a database), with the driver
   *   error as `cause`; INVALID_ARGUMENT for bad options; UNSUPPORTED_SCHEMA when the file was
   *   migrated by newer code.
   */
  static open(path: string, options: CheckpointStoreOptions = {}): SqliteCheckpointStore {
    const codec = new RowCodec(options);
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_SQLITE_BUSY_TIMEOUT_MS;
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > 600_000) {
      throw new CheckpointError('INVALID_ARGUMENT', `busyTimeoutMs must be an integer from 0 to 600,000 ms, got ${String(busyTimeoutMs)}`, { field: 'busyTimeoutMs', limit: 600_000 });
    }
    // Lazily required: a PostgreSQL-only deployment never loads the native module.
     
    const Database = require('better-sqlite3') as typeof BetterSqlite3;
    let db: BetterSqlite3.Database | undefined;
    try {
      db = new Database(path, { timeout: busyTimeoutMs });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      // The body digest a compare-and-swap with `expected` matches.
      db.function('ttc_sha256', { deterministic: true }, (body: unknown) => (typeof body === 'string' ? bodyDigest(body) : null));
      migrate(db);
      return new SqliteCheckpointStore(db, path, codec, busyTimeoutMs, options);
    } catch (error) {
      try {
        db?.close();
      } catch {
        // already failing; the first error is the one to report
      }
      if (isCheckpointError(error)) throw error;
      throw unavailable(path, 'open', error, busyTimeoutMs);
    }
  }

  /** Counters since open (see {@link SqliteStoreStats}). */
  stats(): SqliteStoreStats {
    return { commits: this.commits, writes: this.writes };
  }

  async createIfAbsent(record: CheckpointRecord): Promise<CreateResult> {
    const row = this.codec.encode(record);
    return this.write(() => {
      if (this.statements.insert.run(insertParams(row)).changes === 1) return { created: true, record: this.codec.remember(record, row.body) };
      const existing = (this.statements.get.get(row.key) ?? this.statements.getByCall.get(row.namespace, row.callId)) as Row | undefined;
      if (existing === undefined) throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `SQLite insert of ${row.key} changed nothing yet no row exists`, { key: row.key });
      return { created: false, record: this.codec.decode(stored(existing)) };
    }) as Promise<CreateResult>;
  }

  async get(binding: Binding): Promise<CheckpointRecord | null> {
    const key = checkpointKey(binding);
    const row = this.read(() => this.statements.get.get(key) as Row | undefined);
    return row === undefined ? null : this.codec.decode(stored(row));
  }

  async getByCall(namespace: string, callId: string): Promise<CheckpointRecord | null> {
    assertCallArguments(namespace, callId);
    const row = this.read(() => this.statements.getByCall.get(namespace, callId) as Row | undefined);
    return row === undefined ? null : this.codec.decode(stored(row));
  }

  async compareAndSwap(expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord): Promise<boolean> {
    assertCasArguments(expectedRevision, next);
    const row = this.codec.encode(next);
    const expectedBody = this.codec.expectedBodyDigest(expectedRevision, row.key, expected);
    const swapped = (await this.write(() =>
      expectedBody === null ? this.statements.cas.run({ ...updateParams(row), expectedRevision }).changes === 1 : this.statements.casBody.run({ ...updateParams(row), expectedRevision, expectedBody }).changes === 1,
    )) as boolean;
    if (swapped) this.codec.remember(next, row.body);
    return swapped;
  }

  async listByStatus(statuses: readonly Status[], options: ListOptions = {}): Promise<CheckpointRecord[]> {
    const wanted = assertStatuses(statuses);
    const limit = resolveLimit(options.limit);
    // Without olderThan, '~' sorts after every ISO-8601 text, so the bound matches every row.
    const olderThan = options.olderThan === undefined ? '~' : normalizeTimestamp(options.olderThan, 'olderThan');
    const placeholders = wanted.map(() => '?').join(', ');
    const page = this.read(() =>
      this.db.prepare(`SELECT ${COLUMNS} FROM ttc_checkpoints WHERE status IN (${placeholders}) AND updated_at < ? AND (updated_at, key) > (?, ?) ORDER BY updated_at, key LIMIT ?`),
    );
    const records: CheckpointRecord[] = [];
    let cursor: [string, string] = ['', ''];
    while (records.length < limit) {
      const rows = this.read(() => page.all(...wanted, olderThan, ...cursor, PAGE) as Row[]);
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
      cursor = [last.updated_at, last.key];
    }
    return records;
  }

  async listQuarantined(options: ListQuarantinedOptions = {}): Promise<QuarantinedRow[]> {
    return scanQuarantined(this.codec, async (after) => this.read(() => this.statements.scan.all(after, PAGE) as Row[]).map(stored), PAGE, resolveLimit(options.limit));
  }

  /**
   * Each page of candidates is read and decoded outside any transaction (a WAL read takes no
   * lock, so other processes keep writing while this decodes); then one short write
   * transaction deletes the verified rows by key, revision, status and exact body, so a row
   * that changed (or was damaged) after it was decoded is left alone.
   */
  async prune(options: PruneOptions): Promise<number> {
    const olderThan = normalizeTimestamp(options?.olderThan, 'olderThan');
    const conversationsOlderThan = options.conversationsOlderThan === undefined ? undefined : normalizeTimestamp(options.conversationsOlderThan, 'conversationsOlderThan');
    let deleted = 0;
    if (conversationsOlderThan !== undefined) {
      // One write transaction: the logs counted are exactly the logs deleted.
      deleted += (await this.write(() => {
        const logs = (this.statements.staleLogs.get(conversationsOlderThan) as { n: number }).n;
        if (logs > 0) this.statements.deleteStaleLogs.run(conversationsOlderThan);
        return logs;
      })) as number;
    }
    let cursor: [string, string] = ['', ''];
    for (;;) {
      const rows = this.read(() => this.statements.pruneCandidates.all(olderThan, ...cursor, PAGE) as Row[]);
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
      if (verified.length > 0) {
        deleted += (await this.write(() => verified.reduce((count, row) => count + this.statements.delete.run(row).changes, 0))) as number;
      }
      if (rows.length < PAGE) return deleted;
      const last = rows[rows.length - 1]!;
      cursor = [last.updated_at, last.key];
    }
  }

  /**
   * Every existing entry is read, decoded and compared inside the write transaction (`BEGIN
   * IMMEDIATE` holds the lock) before anything is inserted, so a conflict or a damaged entry
   * fails the call with nothing of it written.
   */
  async putConversationEntries(logId: string, entries: readonly ConversationEntry[]): Promise<void> {
    const encoded = encodeEntries(this.entries, logId, entries);
    if (encoded.length === 0) return;
    const createdAt = new Date().toISOString();
    await this.write(() => {
      const fresh: EncodedEntry[] = [];
      for (const entry of encoded) {
        const existing = this.statements.getEntry.get(logId, entry.key) as EntryRow | undefined;
        if (existing === undefined) fresh.push(entry);
        else if (this.entries.decode({ logId, key: entry.key, body: existing.body, bytes: existing.bytes }).text !== entry.text) throw conversationConflict(logId, entry.key);
      }
      for (const entry of fresh) this.statements.insertEntry.run({ logId, key: entry.key, body: entry.body, bytes: entry.bytes, createdAt });
    });
  }

  async getConversationEntries(logId: string, keys: readonly string[]): Promise<JsonValue[]> {
    assertGetArguments(logId, keys);
    const unique = [...new Set(keys)];
    const found = new Map<string, JsonValue>();
    for (let i = 0; i < unique.length; i += KEY_CHUNK) {
      const chunk = unique.slice(i, i + KEY_CHUNK);
      const rows = this.read(() => this.db.prepare(`SELECT entry_key, body, bytes FROM ttc_conversation_entries WHERE log_id = ? AND entry_key IN (${chunk.map(() => '?').join(', ')})`).all(logId, ...chunk) as EntryRow[]);
      for (const row of rows) found.set(row.entry_key, this.entries.decode({ logId, key: row.entry_key, body: row.body, bytes: row.bytes }).value);
    }
    return keys.map((key) => {
      if (!found.has(key)) throw entryMissing(logId, key);
      return found.get(key)!;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.queue.length > 0) this.flush();
    this.db.close();
  }

  /** Runs a read outside any transaction (WAL readers never block and are never blocked). */
  private read<T>(fn: () => T): T {
    if (this.closed) throw closedError(this.path);
    try {
      return fn();
    } catch (error) {
      if (isCheckpointError(error)) throw error;
      throw unavailable(this.path, 'read', error, this.busyTimeoutMs);
    }
  }

  /** Queues a write; every write queued in this event-loop turn commits in one transaction. */
  private write(run: () => unknown): Promise<unknown> {
    if (this.closed) return Promise.reject(closedError(this.path));
    return new Promise((resolve, reject) => {
      this.queue.push({ run, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const jobs = this.queue;
    this.queue = [];
    if (jobs.length === 0) return;
    for (let attempt = 0; ; attempt += 1) {
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      try {
        this.statements.begin.run();
        for (const job of jobs) {
          try {
            outcomes.push({ ok: true, value: job.run() });
          } catch (error) {
            // A checkpoint error (a quarantined row) is raised before that job wrote anything;
            // a driver error dooms the whole transaction.
            if (!isCheckpointError(error)) throw error;
            outcomes.push({ ok: false, error });
          }
        }
        this.statements.commit.run();
      } catch (error) {
        if (this.db.inTransaction) {
          try {
            this.statements.rollback.run();
          } catch {
            // the connection is gone; the transaction did not commit
          }
        }
        if (driverCode(error) === 'SQLITE_BUSY_SNAPSHOT' && attempt < MAX_SNAPSHOT_RETRIES) continue;
        const failure = isCheckpointError(error) ? error : unavailable(this.path, 'write', error, this.busyTimeoutMs);
        for (const job of jobs) job.reject(failure);
        return;
      }
      this.commits += 1;
      this.writes += jobs.length;
      jobs.forEach((job, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) job.resolve(outcome.value);
        else job.reject(outcome.error);
      });
      return;
    }
  }
}

/** The conversation logs whose newest entry is older than the bound parameter. */
const STALE_LOGS = 'SELECT log_id FROM ttc_conversation_entries GROUP BY log_id HAVING max(created_at) < ?';

function prepare(db: BetterSqlite3.Database) {
  return {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    insert: db.prepare(
      `INSERT INTO ttc_checkpoints (key, namespace, call_id, tool_name, status, revision, updated_at, body)
       VALUES (@key, @namespace, @callId, @toolName, @status, @revision, @updatedAt, @body)
       ON CONFLICT DO NOTHING`,
    ),
    get: db.prepare(`SELECT ${COLUMNS} FROM ttc_checkpoints WHERE key = ?`),
    getByCall: db.prepare(`SELECT ${COLUMNS} FROM ttc_checkpoints WHERE namespace = ? AND call_id = ?`),
    cas: db.prepare(
      `UPDATE ttc_checkpoints SET status = @status, revision = @revision, updated_at = @updatedAt, body = @body
       WHERE key = @key AND revision = @expectedRevision`,
    ),
    casBody: db.prepare(
      `UPDATE ttc_checkpoints SET status = @status, revision = @revision, updated_at = @updatedAt, body = @body
       WHERE key = @key AND revision = @expectedRevision AND ttc_sha256(body) = @expectedBody`,
    ),
    scan: db.prepare(`SELECT ${COLUMNS} FROM ttc_checkpoints WHERE key > ? ORDER BY key LIMIT ?`),
    pruneCandidates: db.prepare(
      `SELECT ${COLUMNS} FROM ttc_checkpoints WHERE status = 'delivered' AND updated_at < ? AND (updated_at, key) > (?, ?) ORDER BY updated_at, key LIMIT ?`,
    ),
    delete: db.prepare(`DELETE FROM ttc_checkpoints WHERE key = @key AND revision = @revision AND status = 'delivered' AND body = @body`),
    getEntry: db.prepare('SELECT entry_key, body, bytes FROM ttc_conversation_entries WHERE log_id = ? AND entry_key = ?'),
    insertEntry: db.prepare('INSERT INTO ttc_conversation_entries (log_id, entry_key, body, bytes, created_at) VALUES (@logId, @key, @body, @bytes, @createdAt)'),
    staleLogs: db.prepare(`SELECT count(*) AS n FROM (${STALE_LOGS})`),
    deleteStaleLogs: db.prepare(`DELETE FROM ttc_conversation_entries WHERE log_id IN (${STALE_LOGS})`),
  };
}

function migrate(db: BetterSqlite3.Database): void {
  const latest = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;
  const current = (): number => db.pragma('user_version', { simple: true }) as number;
  if (current() === latest) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    const version = current();
    if (version > latest) {
      throw new CheckpointError('UNSUPPORTED_SCHEMA', `SQLite database schema version ${version} is newer than this code knows (${latest}); upgrade the code`, { field: 'user_version', actual: version, supported: String(latest) });
    }
    for (const step of SQLITE_MIGRATIONS) {
      if (step.version <= version) continue;
      db.exec(step.sql);
      db.pragma(`user_version = ${step.version}`);
    }
    db.exec('COMMIT');
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

function insertParams(row: EncodedRow): Record<string, string | number> {
  return { key: row.key, namespace: row.namespace, callId: row.callId, toolName: row.toolName, status: row.status, revision: row.revision, updatedAt: row.updatedAt, body: row.body };
}

function updateParams(row: EncodedRow): Record<string, string | number> {
  return { key: row.key, status: row.status, revision: row.revision, updatedAt: row.updatedAt, body: row.body };
}

function stored(row: Row): StoredRow {
  return { key: row.key, status: row.status, revision: row.revision, updatedAt: row.updated_at, body: row.body };
}

/** The driver's error code (`SQLITE_BUSY`, …), or the error's name for the driver's own argument checks. */
function driverCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : undefined;
}

function unavailable(path: string, what: string, error: unknown, busyTimeoutMs: number): CheckpointError {
  const code = driverCode(error) ?? 'unknown';
  const hint = code.startsWith('SQLITE_BUSY') ? ` (still locked after busyTimeoutMs=${busyTimeoutMs})` : '';
  const message = error instanceof Error ? error.message : String(error);
  return new CheckpointError('STORE_UNAVAILABLE', `SQLite database ${path} failed to ${what}: ${code} ${message}${hint}; nothing was written, nothing may be claimed or executed`, { path, driverCode: code }, { cause: error });
}

function closedError(path: string): CheckpointError {
  return new CheckpointError('STORE_UNAVAILABLE', `SQLite store ${path} is closed`, { path, reason: 'closed' });
}
