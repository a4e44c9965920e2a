/**
 * The fleet side store (docs/protocol.md#side-stores): PostgreSQL through the `pg` driver and a
 * connection pool. A compare-and-swap is one `UPDATE … WHERE key = $1 AND revision = $2` (and, when
 * the caller passes the record it read, `AND` the SHA-256 of the stored body is that record's;
 * success only when exactly one row changed); create-if-absent is `INSERT … ON CONFLICT DO NOTHING`
 * plus, when the record exists, a read. The store creates and upgrades its own table with the
 * versioned steps in `./migrations`, in one transaction under a transaction-scoped advisory lock so
 * concurrent openers do not race.
 *
 * One round trip per write (docs/protocol.md#cost): every single statement (create-if-absent, CAS,
 * get, prune) is one Parse/Bind/Describe/Execute/Sync flight, autocommitted, with no BEGIN/COMMIT
 * around it. Only multi-statement work (a conversation-log write, the migration) runs in a
 * transaction; there BEGIN is pipelined with the first statement (`pg`'s `pipeline` client
 * option). The hot statements are prepared once per server connection under content-addressed
 * names (measured: about half the server CPU per statement of an unnamed one, which is parsed and
 * planned on every call); see `query`.
 *
 * Transaction-mode poolers (PgBouncer `pool_mode = transaction`, RDS Proxy, Supabase and Neon
 * poolers): the store relies on no state of a server session. Prepared statements are
 * named after their SQL's digest, so one of that name on any server connection is this SQL, and
 * the first 42P05 / 26000 (a pooler moving statements between server connections: nothing was
 * executed) turns the store to unnamed statements for good (the fixed names `ttc_insert`,
 * `ttc_cas` before failed 38 of 40 lifecycles behind PgBouncer 1.18). No session advisory lock, no
 * session `SET`, and no startup `options` (PgBouncer refuses an unknown startup parameter unless
 * `ignore_startup_parameters` lists it, and then drops it): every table, function, operator and
 * type in every statement is qualified (`./pg-statements`), so nothing depends on the
 * search_path. A URL's own `options` parameter is passed on as given.
 *
 * Fail closed: while the database cannot be reached every call throws STORE_UNAVAILABLE and
 * nothing is claimed. A statement the server or the pooler refused wrote nothing: STORE_UNAVAILABLE,
 * naming the pooler problem when there is one (`details.driverCode` the SQLSTATE, `details.pooler`).
 * A write whose connection was lost after sending has an unknown outcome (`./pg-errors` tells the
 * two apart); it is settled by re-reading the row (and re-sending the same conditional statement,
 * which can apply at most once), never assumed either way; if that is impossible the call throws
 * STORE_OUTCOME_UNKNOWN.
 */
import { assertPeersInstalled } from '../optional-peer';
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import type { Binding, CheckpointRecord, JsonValue, Status } from '../checkpoint/types';
import { checkpointKey } from './checkpoint-key';
import type { CheckpointStore, CheckpointStoreOptions, ConversationEntry, CreateResult, GroupWrite, GroupWriteResult, ListOptions, ListQuarantinedOptions, PruneOptions, QuarantinedRow } from './checkpoint-store';
import { encodeGroup, groupResults, keysOf, recordsOf, type EncodedGroupWrite, type GroupAnswer } from './group-writes';
import { assertGetArguments, conversationConflict, encodeEntries, entryMissing, EntryCodec, type EncodedEntry } from './entry-codec';
import { POSTGRES_MIGRATIONS } from './migrations/postgres';
import { classifyPgError } from './pg-errors';
import { pgStatements, quoteIdent, statementName, type PgStatements } from './pg-statements';
import { assertCallArguments, assertCasArguments, bodyDigest, assertStatuses, normalizeTimestamp, resolveLimit, RowCodec, scanQuarantined, type EncodedRow, type StoredRow } from './row-codec';

/** Default pool size. */
export const DEFAULT_POSTGRES_POOL_SIZE = 10;
/** Default schema of the store's tables. */
export const DEFAULT_POSTGRES_SCHEMA = 'public';
/** Default time to wait for a connection, in ms. */
export const DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS = 5_000;
/**
 * Key of the transaction-scoped advisory lock (`pg_advisory_xact_lock`) held while migrating (an
 * arbitrary, fixed bigint). Transaction-scoped, not a session lock: through a transaction-mode
 * pooler a session lock stays on whichever server connection took it, and the unlock runs on
 * another (the next opener then waits for ever).
 */
export const MIGRATION_LOCK_ID = '7467636b70740001';

const PAGE = 500;
/** Keys per conversation read (one `= ANY($2)` array each). */
const KEY_CHUNK = 1_000;

interface EntryRow extends QueryResultRow {
  entry_key: string;
  body: unknown;
  bytes: string;
}
const MAX_RESOLVE_ROUNDS = 5;

interface Row extends QueryResultRow {
  key: string;
  status: string;
  revision: string;
  updated_at: Date;
  body: unknown;
}

interface PutEntryRow extends EntryRow {
  inserted: boolean;
}

/** Thrown inside the store when a statement's outcome is unknown; never leaves the store. */
class OutcomeUnknown extends Error {
  constructor(readonly driverError: unknown) {
    super('outcome unknown');
  }
}

/** A `writeGroup` transaction whose connection was lost; `committing`: after its COMMIT was sent. */
class GroupLost extends Error {
  constructor(
    readonly driverError: unknown,
    readonly committing: boolean,
  ) {
    super('group transaction lost');
  }
}

/** A `writeGroup` transaction the server rolled back as a deadlock or serialization victim (nothing written; run it again). */
class GroupRetry extends Error {
  constructor(readonly driverError: unknown) {
    super('group transaction rolled back by the server');
  }
}

/** SQLSTATEs of a transaction rolled back only because of concurrent ones: deadlock_detected, serialization_failure. */
const RETRY_CODES = new Set(['40P01', '40001']);

/**
 * A {@link CheckpointStore} on PostgreSQL. Open it with
 * `openCheckpointStore('postgres://…')` or {@link PostgresCheckpointStore.open}.
 */
export class PostgresCheckpointStore implements CheckpointStore {
  private closed = false;
  /** Whether the hot statements go out named (prepared); false for good after a pooler showed it moves them between server connections. */
  private named = true;

  private readonly sql: PgStatements;
  private readonly entries: EntryCodec;

  private constructor(
    private readonly pool: Pool,
    private readonly where: string,
    private readonly codec: RowCodec,
    private readonly schema: string,
    options: CheckpointStoreOptions,
  ) {
    this.sql = pgStatements(schema);
    this.entries = new EntryCodec(options);
  }

  /**
   * Connects, runs the migrations and returns the store.
   *
   * @param url a `postgres://` or `postgresql://` connection string.
   * @param where the URL with any password masked, for messages.
   * @param options see {@link CheckpointStoreOptions}: `poolSize` @default 10,
   *   `connectTimeoutMs` @default 5,000 ms.
   * @throws {@link CheckpointError} STORE_UNAVAILABLE when the server cannot be reached or the
   *   migration fails (driver error as `cause`); UNSUPPORTED_SCHEMA when the database was
   *   migrated by newer code; INVALID_ARGUMENT for bad options; INVALID_CONFIG when `pg` is not
   *   installed.
   */
  static async open(url: string, where: string, options: CheckpointStoreOptions = {}): Promise<PostgresCheckpointStore> {
    const codec = new RowCodec(options);
    const poolSize = options.poolSize ?? DEFAULT_POSTGRES_POOL_SIZE;
    const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS;
    if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 1_000) {
      throw new CheckpointError('INVALID_ARGUMENT', `poolSize must be an integer from 1 to 1,000, got ${String(poolSize)}`, { field: 'poolSize', limit: 1_000 });
    }
    if (!Number.isInteger(connectTimeoutMs) || connectTimeoutMs < 1 || connectTimeoutMs > 600_000) {
      throw new CheckpointError('INVALID_ARGUMENT', `connectTimeoutMs must be an integer from 1 to 600,000 ms, got ${String(connectTimeoutMs)}`, { field: 'connectTimeoutMs', limit: 600_000 });
    }
    const schema = options.postgresSchema ?? DEFAULT_POSTGRES_SCHEMA;
    if (typeof schema !== 'string' || !SCHEMA_PATTERN.test(schema)) {
      throw new CheckpointError('INVALID_ARGUMENT', `postgresSchema must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 characters), got ${JSON.stringify(schema)}`, { field: 'postgresSchema' });
    }
    assertPeersInstalled(['pg'], 'the PostgreSQL store');
    // Lazily required: a SQLite-only deployment never loads pg.
     
    const pg = require('pg') as typeof import('pg');
    const pool = new pg.Pool({
      connectionString: checkedUrl(url),
      // BEGIN is sent with the first statement of a transaction (one round trip); single statements are unaffected.
      pipeline: true,
      max: poolSize,
      connectionTimeoutMillis: connectTimeoutMs,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'temporal-tool-checkpoint',
    });
    // An idle client whose server went away emits 'error' on the pool; without a listener
    // Node would crash. The pool drops that client; the next call reconnects or fails closed.
    pool.on('error', () => undefined);
    // A checked-out client has no listener of pg-pool's (pg-pool removes its idle listener while
    // the client is out), and a `pg` Client emits 'error' when its connection ends unexpectedly
    // (client.js `_handleErrorEvent`): unheard, that event kills the process. This listener stays
    // on the client for its whole life; the error itself also rejects the statement in flight,
    // whose caller classifies it (`./pg-errors`), releases the client as broken and, for a
    // write, settles the outcome by re-reading. ('connect' fires once per new client, before it
    // is first handed out.)
    pool.on('connect', (client) => {
      client.on('error', () => undefined);
    });
    const store = new PostgresCheckpointStore(pool, where, codec, schema, options);
    try {
      await store.migrate();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
    return store;
  }

  /** A fresh record: one statement, one round trip. An existing one: a second, reading it. */
  async createIfAbsent(record: CheckpointRecord): Promise<CreateResult> {
    const row = this.codec.encode(record);
    let inserted: boolean;
    try {
      inserted = (await this.write(this.sql.INSERT, insertParams(row))).rowCount === 1;
    } catch (error) {
      if (!(error instanceof OutcomeUnknown)) throw error;
      const cause = error.driverError;
      return this.settling(row.key, 'insert', cause, () => this.settleInsert(row, record, cause));
    }
    if (inserted) return { created: true, record: this.codec.remember(record, row.body) };
    // The server answered: nothing of this call was written, so a failed read of the row is STORE_UNAVAILABLE.
    return { created: false, record: await this.readExisting(row) };
  }

  async get(binding: Binding): Promise<CheckpointRecord | null> {
    const key = checkpointKey(binding);
    const rows = await this.read<Row>(this.sql.GET, [key]);
    return rows[0] === undefined ? null : this.codec.decode(stored(rows[0]));
  }

  async getByCall(namespace: string, callId: string): Promise<CheckpointRecord | null> {
    assertCallArguments(namespace, callId);
    const rows = await this.read<Row>(this.sql.GET_BY_CALL, [namespace, callId]);
    return rows[0] === undefined ? null : this.codec.decode(stored(rows[0]));
  }

  async compareAndSwap(expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord): Promise<boolean> {
    assertCasArguments(expectedRevision, next);
    const row = this.codec.encode(next);
    const expectedBody = this.codec.expectedBodyDigest(expectedRevision, row.key, expected);
    try {
      const swapped = (await this.sendCas(row, expectedRevision, expectedBody)).rowCount === 1;
      if (swapped) this.codec.remember(next, row.body);
      return swapped;
    } catch (error) {
      if (!(error instanceof OutcomeUnknown)) throw error;
      const cause = error.driverError;
      return this.settling(row.key, 'compare-and-swap', cause, () => this.settleCas(row, expectedRevision, expectedBody, next, cause));
    }
  }

  /** One statement (`key = ANY($1)`), one round trip. */
  async getMany(bindings: readonly Binding[]): Promise<(CheckpointRecord | null)[]> {
    const keys = keysOf(bindings);
    if (keys.length === 0) return [];
    const rows = await this.read<Row>(this.sql.GET_MANY, [[...new Set(keys)]]);
    return recordsOf(this.codec, keys, rows.map(stored));
  }

  /**
   * One transaction, usually two round trips: BEGIN, the creates' multi-row insert (in key
   * order), a lock of the compare-and-swaps' rows (in key order, so overlapping groups queue
   * instead of deadlocking) and their multi-row conditional UPDATE, all in one flight; the rows
   * the creates found, when any, in a second; then COMMIT. A deadlock or serialization victim
   * (rolled back: nothing written) runs again. A connection lost before COMMIT was sent:
   * STORE_UNAVAILABLE (the server rolls the transaction back). Lost after: the whole group is
   * sent again, and in that re-run a compare-and-swap that does not match counts as swapped when
   * its row holds exactly the body it writes (the lost transaction committed); when that cannot
   * settle it, STORE_OUTCOME_UNKNOWN.
   */
  async writeGroup(writes: readonly GroupWrite[]): Promise<GroupWriteResult[]> {
    const encoded = encodeGroup(this.codec, writes);
    if (encoded.length === 0) return [];
    let lost: unknown;
    let retried: unknown;
    for (let round = 0; round < MAX_RESOLVE_ROUNDS; round += 1) {
      let answers: GroupAnswer[];
      try {
        answers = await this.groupTransaction(encoded, lost !== undefined);
      } catch (error) {
        if (error instanceof GroupRetry) {
          retried = error.driverError;
          continue;
        }
        if (error instanceof GroupLost) {
          if (error.committing) lost ??= error.driverError;
          if (lost === undefined) throw this.unavailable('write a group (the connection was lost before COMMIT; the server rolls the transaction back)', error.driverError);
          continue;
        }
        if (lost !== undefined && isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.groupUnknown(encoded, lost, error);
        throw error;
      }
      return groupResults(this.codec, encoded, answers);
    }
    if (lost !== undefined) throw this.groupUnknown(encoded, lost);
    throw this.unavailable('write a group', retried);
  }

  async listByStatus(statuses: readonly Status[], options: ListOptions = {}): Promise<CheckpointRecord[]> {
    const wanted = assertStatuses(statuses);
    const limit = resolveLimit(options.limit);
    const olderThan = options.olderThan === undefined ? null : normalizeTimestamp(options.olderThan, 'olderThan');
    const records: CheckpointRecord[] = [];
    let cursor: [string, string] | null = null;
    while (records.length < limit) {
      const rows: Row[] = await this.read<Row>(this.sql.LIST, [wanted, olderThan, cursor?.[0] ?? null, cursor?.[1] ?? null, PAGE]);
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
      cursor = [last.updated_at.toISOString(), last.key];
    }
    return records;
  }

  async listQuarantined(options: ListQuarantinedOptions = {}): Promise<QuarantinedRow[]> {
    return scanQuarantined(this.codec, async (after) => (await this.read<Row>(this.sql.SCAN, [after, PAGE])).map(stored), PAGE, resolveLimit(options.limit));
  }

  async prune(options: PruneOptions): Promise<number> {
    const olderThan = normalizeTimestamp(options?.olderThan, 'olderThan');
    const conversationsOlderThan = options.conversationsOlderThan === undefined ? undefined : normalizeTimestamp(options.conversationsOlderThan, 'conversationsOlderThan');
    let deleted = 0;
    if (conversationsOlderThan !== undefined) {
      try {
        // One statement (atomic on its own): no BEGIN/COMMIT around it.
        deleted += Number((await this.write<{ n: number }>(this.sql.PRUNE_LOGS, [conversationsOlderThan])).rows[0]?.n ?? 0);
      } catch (error) {
        if (!(error instanceof OutcomeUnknown)) throw error;
        throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: the connection was lost while pruning conversation logs; they may be deleted (prune again: it is idempotent)`, { where: this.where }, { cause: error.driverError });
      }
    }
    let cursor: [string, string] | null = null;
    for (;;) {
      const rows: Row[] = await this.read<Row>(this.sql.PRUNABLE, [olderThan, cursor?.[0] ?? null, cursor?.[1] ?? null, PAGE]);
      const keys: string[] = [];
      const revisions: number[] = [];
      const digests: string[] = [];
      for (const row of rows) {
        try {
          const record = this.codec.decode(stored(row));
          if (record.status === 'delivered' && normalizeTimestamp(record.updatedAt, 'updatedAt') < olderThan) {
            keys.push(row.key);
            revisions.push(record.revision);
            digests.push(bodyDigest(row.body as string));
          }
        } catch (error) {
          if (!isCheckpointError(error)) throw error; // quarantined rows are never deleted
        }
      }
      if (keys.length > 0) {
        try {
          deleted += (await this.write(this.sql.PRUNE, [keys, revisions, digests])).rowCount ?? 0;
        } catch (error) {
          if (!(error instanceof OutcomeUnknown)) throw error;
          throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: the connection was lost while pruning; some of ${keys.length} delivered records may be deleted (prune again: it is idempotent)`, { where: this.where }, { cause: error.driverError });
        }
      }
      if (rows.length < PAGE) return deleted;
      const last = rows[rows.length - 1]!;
      cursor = [last.updated_at.toISOString(), last.key];
    }
  }

  /**
   * One transaction, two round trips: BEGIN pipelined with one statement that inserts the
   * entries that are absent (`ON CONFLICT DO NOTHING`, in key order) and returns the ones that
   * existed; they are compared, and any difference rolls everything back; else COMMIT. A
   * concurrent writer of the same key is waited for by the insert; its entry, committed after
   * the statement's snapshot, is read once more before comparing. A lost connection re-sends the
   * whole (idempotent) call; when that cannot settle it the call throws STORE_OUTCOME_UNKNOWN.
   */
  async putConversationEntries(logId: string, entries: readonly ConversationEntry[]): Promise<void> {
    const encoded = encodeEntries(this.entries, logId, entries);
    if (encoded.length === 0) return;
    let lost: unknown;
    for (let round = 0; round < MAX_RESOLVE_ROUNDS; round += 1) {
      try {
        await this.transaction((client) => this.insertEntries(client, logId, encoded));
        return;
      } catch (error) {
        if (error instanceof OutcomeUnknown) lost = error.driverError;
        else if (lost !== undefined && isCheckpointError(error, 'STORE_UNAVAILABLE')) break;
        else throw error;
      }
    }
    throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: the connection was lost while writing ${encoded.length} entries of conversation log ${logId}; they may be written (the write is idempotent: send it again)`, { logId, where: this.where }, { cause: lost });
  }

  async getConversationEntries(logId: string, keys: readonly string[]): Promise<JsonValue[]> {
    assertGetArguments(logId, keys);
    const unique = [...new Set(keys)];
    const found = new Map<string, JsonValue>();
    for (let i = 0; i < unique.length; i += KEY_CHUNK) {
      const rows = await this.read<EntryRow>(this.sql.GET_ENTRIES, [logId, unique.slice(i, i + KEY_CHUNK)]);
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
    await this.pool.end();
  }

  private async insertEntries(client: PoolClient, logId: string, encoded: readonly EncodedEntry[]): Promise<void> {
    const put = await client.query<PutEntryRow>(this.sql.PUT_ENTRIES, [logId, encoded.map((e) => e.key), encoded.map((e) => e.body), encoded.map((e) => e.bytes), new Date().toISOString()]);
    const fresh = new Set<string>();
    const stored = new Map<string, EntryRow>();
    for (const r of put.rows) {
      if (r.inserted) fresh.add(r.entry_key);
      else stored.set(r.entry_key, r);
    }
    const existing = encoded.filter((e) => !fresh.has(e.key));
    if (existing.length === 0) return;
    // Conflicted with an entry committed after the statement's snapshot: read it (a new snapshot).
    const unseen = existing.filter((e) => !stored.has(e.key)).map((e) => e.key);
    if (unseen.length > 0) for (const r of (await client.query<EntryRow>(this.sql.GET_ENTRIES, [logId, unseen])).rows) stored.set(r.entry_key, r);
    for (const entry of existing) {
      const row = stored.get(entry.key);
      // Not inserted yet not there: deleted by a concurrent prune; the retry of the call settles it.
      if (row === undefined) throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: conversation log ${logId} entry ${entry.key} conflicted on insert but is gone (pruned meanwhile); nothing of this write was stored, send it again`, { logId, key: entry.key, where: this.where });
      if (this.entries.decode({ logId, key: entry.key, body: row.body, bytes: row.bytes }).text !== entry.text) throw conversationConflict(logId, entry.key);
    }
  }

  /**
   * One try of `writeGroup` (see there) on one connection.
   * @param settling the group was sent before and its COMMIT lost: a compare-and-swap that does
   *   not match is swapped when its row holds exactly the body it writes.
   * @throws GroupLost (`committing` when COMMIT was sent), GroupRetry, STORE_UNAVAILABLE (refused, rolled back).
   */
  private async groupTransaction(encoded: readonly EncodedGroupWrite[], settling: boolean): Promise<GroupAnswer[]> {
    const client = await this.connect();
    let broken: Error | undefined;
    let committing = false;
    try {
      // Pipelined: BEGIN and the group's statements go out in one flight (see `transaction`).
      const begun = client.query('BEGIN');
      begun.catch(() => undefined);
      let answers: GroupAnswer[];
      try {
        answers = await this.groupStatements(client, encoded, settling);
      } finally {
        await begun;
      }
      committing = true;
      await client.query('COMMIT');
      return answers;
    } catch (error) {
      if (!isCheckpointError(error) && classifyPgError(error).kind === 'lost') {
        broken = error as Error;
        throw new GroupLost(error, committing);
      }
      await client.query('ROLLBACK').catch((rollback: unknown) => {
        broken = rollback as Error;
      });
      if (isCheckpointError(error)) throw error;
      const code = classifyPgError(error).code;
      if (code !== null && RETRY_CODES.has(code)) throw new GroupRetry(error);
      throw this.unavailable('write a group', error);
    } finally {
      client.release(broken);
    }
  }

  /** The statements of one group transaction (see {@link writeGroup}); answers in the order of `encoded`. */
  private async groupStatements(client: PoolClient, encoded: readonly EncodedGroupWrite[], settling: boolean): Promise<GroupAnswer[]> {
    const creates = encoded.flatMap((w, i) => (w.kind === 'create' ? [{ w, i }] : []));
    const swaps = encoded.flatMap((w, i) => (w.kind === 'cas' ? [{ w, i }] : []));
    const sent: Array<Promise<{ rows: Array<{ key: string }> }>> = [];
    if (creates.length > 0) {
      const rows = creates.map((c) => c.w.row);
      sent.push(client.query(this.sql.INSERT_MANY, [rows.map((r) => r.key), rows.map((r) => r.namespace), rows.map((r) => r.callId), rows.map((r) => r.toolName), rows.map((r) => r.status), rows.map((r) => r.revision), rows.map((r) => r.updatedAt), rows.map((r) => r.body)]));
    }
    if (swaps.length > 0) {
      const cas = swaps.map((c) => c.w as Extract<EncodedGroupWrite, { kind: 'cas' }>);
      sent.push(client.query(this.sql.LOCK_MANY, [cas.map((w) => w.row.key)]));
      sent.push(
        client.query(this.sql.CAS_MANY, [
          cas.map((w) => w.row.key),
          cas.map((w) => w.expectedRevision),
          cas.map((w) => w.row.status),
          cas.map((w) => w.row.revision),
          cas.map((w) => w.row.updatedAt),
          cas.map((w) => w.row.body),
          cas.map((w) => w.expectedBody),
        ]),
      );
    }
    for (const p of sent) p.catch(() => undefined);
    const results: Array<{ rows: Array<{ key: string }> }> = [];
    for (const p of sent) results.push(await p);
    const answers: GroupAnswer[] = new Array<GroupAnswer>(encoded.length);
    if (creates.length > 0) {
      const inserted = new Set(results[0]!.rows.map((r) => r.key));
      const found = creates.filter((c) => !inserted.has(c.w.row.key));
      for (const c of creates) if (inserted.has(c.w.row.key)) answers[c.i] = { kind: 'inserted' };
      if (found.length > 0) {
        const existing = await client.query<Row & { i: string }>(this.sql.EXISTING_MANY, [found.map((c) => c.w.row.key), found.map((c) => c.w.row.namespace), found.map((c) => c.w.row.callId)]);
        for (const row of existing.rows) answers[found[Number(row.i) - 1]!.i] = { kind: 'existing', row: stored(row) };
        const gone = found.find((c) => answers[c.i] === undefined);
        if (gone !== undefined) {
          throw new CheckpointError('STORE_UNAVAILABLE', `PostgreSQL ${this.where}: the insert of ${gone.w.row.key} conflicted but the row is gone (pruned meanwhile); nothing of this group was committed, send it again`, { key: gone.w.row.key, where: this.where });
        }
      }
    }
    if (swaps.length > 0) {
      const swapped = new Set(results[results.length - 1]!.rows.map((r) => r.key));
      const missed = swaps.filter((c) => !swapped.has(c.w.row.key));
      if (settling && missed.length > 0) {
        // The rows are locked by this transaction: what they hold now is what the lost one left.
        const rows = await client.query<Row>(this.sql.GET_MANY, [missed.map((c) => c.w.row.key)]);
        for (const row of rows.rows) if (row.body === missed.find((c) => c.w.row.key === row.key)!.w.row.body) swapped.add(row.key);
      }
      for (const c of swaps) answers[c.i] = { kind: 'swapped', swapped: swapped.has(c.w.row.key) };
    }
    return answers;
  }

  /** STORE_OUTCOME_UNKNOWN for a group whose COMMIT was lost and could not be settled (`details.keys`: its first 10 keys, `details.writes`). */
  private groupUnknown(encoded: readonly EncodedGroupWrite[], cause: unknown, reread?: unknown): CheckpointError {
    const extra = reread === undefined ? '' : ` and sending it again failed (${(reread as Error).message})`;
    return new CheckpointError(
      'STORE_OUTCOME_UNKNOWN',
      `PostgreSQL ${this.where}: the connection was lost after sending the COMMIT of a group of ${encoded.length} writes (first key ${encoded[0]!.row.key})${extra}; it may or may not be stored (read the records again before acting)`,
      { where: this.where, writes: encoded.length, keys: encoded.slice(0, 10).map((w) => w.row.key) },
      { cause },
    );
  }

  /**
   * Runs `work` in one transaction on one connection: BEGIN is pipelined with `work`'s first
   * statement (sent in the same flight, pg's pipeline mode), COMMIT when it returns, ROLLBACK when
   * it throws (its CheckpointError is rethrown as is). Through a transaction-mode pooler the
   * whole transaction runs on one server connection (the pooler holds it until COMMIT/ROLLBACK).
   * @throws OutcomeUnknown when the connection was lost after BEGIN was sent; STORE_UNAVAILABLE
   *   for a refused statement (rolled back, nothing written).
   */
  private async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      // Not awaited: `work`'s first statement goes out behind it. Should BEGIN fail, every
      // statement behind it fails too (only a broken or aborted session refuses a BEGIN).
      const begun = client.query('BEGIN');
      begun.catch(() => undefined);
      let result: T;
      try {
        result = await work(client);
      } finally {
        await begun;
      }
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (classifyPgError(error).kind === 'lost' && !isCheckpointError(error)) {
        broken = error as Error;
        throw new OutcomeUnknown(error);
      }
      await client.query('ROLLBACK').catch((rollback: unknown) => {
        broken = rollback as Error;
      });
      if (isCheckpointError(error)) throw error;
      throw this.unavailable('write', error);
    } finally {
      client.release(broken);
    }
  }

  /** Runs one read-only statement (one round trip; see {@link query}). @throws STORE_UNAVAILABLE for any driver error. */
  private async read<R extends QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    const client = await this.connect();
    try {
      const result = await this.query<R>(client, text, values);
      client.release();
      return result.rows;
    } catch (error) {
      client.release(classifyPgError(error).kind === 'lost' || isFatal(error) ? (error as Error) : undefined);
      throw this.unavailable('read', error);
    }
  }

  /**
   * Sends one statement as one Parse/Bind/Describe/Execute/Sync flight: named (prepared once per
   * server connection, under its content-addressed {@link statementName}) when it is one of
   * {@link PgStatements.prepared} and this store has not turned to unnamed statements, else
   * unnamed. A named statement refused because it was already prepared (42P05) or is missing
   * (26000) on the server connection the statement reached, or a pooler's refusal of prepared
   * statements, shows a transaction-mode pooler moving statements between server connections:
   * nothing was executed (the server stops at Parse or Bind), so the store turns to unnamed
   * statements for good and sends the same statement again, unnamed, on the same connection.
   * Through a pooler that supports prepared statements (PgBouncer 1.21+ with
   * max_prepared_statements) or directly, they stay named.
   */
  private async query<R extends QueryResultRow>(client: PoolClient, text: string, values: unknown[]): Promise<{ rowCount: number | null; rows: R[] }> {
    if (!this.named || !this.sql.prepared.has(text)) return client.query<R>({ text, values });
    try {
      return await client.query<R>({ name: statementName(text), text, values });
    } catch (error) {
      if (!isPreparedStatementRefusal(error)) throw error;
      this.named = false;
      // A FATAL refusal (PgBouncer's own) closed the connection: this re-send fails as never sent.
      return client.query<R>({ text, values });
    }
  }

  /**
   * Runs one autocommitted write statement: Parse (or not, when prepared)/Bind/Describe/Execute/
   * Sync in one flight, no BEGIN/COMMIT (one round trip; see {@link query}).
   * @throws OutcomeUnknown when the connection was lost after the statement was handed to it
   *   (`./pg-errors`: `lost`); STORE_UNAVAILABLE when it was never sent or the server or a pooler
   *   refused it (nothing written).
   */
  private async write<R extends QueryResultRow = QueryResultRow>(text: string, values: unknown[]): Promise<{ rowCount: number | null; rows: R[] }> {
    const client = await this.connect();
    try {
      const result = await this.query<R>(client, text, values);
      client.release();
      return result;
    } catch (error) {
      const lost = classifyPgError(error).kind === 'lost';
      // A refused statement leaves the connection usable unless the server or pooler closed it (FATAL).
      client.release(lost || isFatal(error) ? (error as Error) : undefined);
      if (lost) throw new OutcomeUnknown(error);
      throw this.unavailable('write', error);
    }
  }

  private async connect(): Promise<PoolClient> {
    if (this.closed) throw new CheckpointError('STORE_UNAVAILABLE', `PostgreSQL store ${this.where} is closed`, { where: this.where, reason: 'closed' });
    try {
      return await this.pool.connect();
    } catch (error) {
      throw this.unavailable('connect', error);
    }
  }

  /** The row an insert conflicted with: the same key, or another binding holding the same (namespace, call id). */
  private async readExisting(row: EncodedRow): Promise<CheckpointRecord> {
    const rows = await this.read<Row>(this.sql.EXISTING, [row.key, row.namespace, row.callId]);
    if (rows[0] === undefined) throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: insert of ${row.key} conflicted but the row is gone`, { key: row.key, where: this.where });
    return this.codec.decode(stored(rows[0]));
  }

  /**
   * Runs the settling of a write that may have been sent (`settleInsert`, `settleCas`): the
   * write may have committed, so no failure while settling it (a re-read, a re-send, the read of
   * the row a re-sent insert conflicted with, a connection the pool cannot give) may be reported
   * as STORE_UNAVAILABLE, which says nothing was written (the store's contract; the fence takes a
   * claiming insert that failed STORE_UNAVAILABLE for no claim). Every STORE_UNAVAILABLE becomes
   * STORE_OUTCOME_UNKNOWN (`details.key`, the driver error of the lost write as `cause`); other
   * errors (quarantine codes of a row that is there, STORE_OUTCOME_UNKNOWN) pass unchanged.
   */
  private async settling<T>(key: string, what: string, cause: unknown, settle: () => Promise<T>): Promise<T> {
    try {
      return await settle();
    } catch (error) {
      if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(key, what, cause, error);
      throw error;
    }
  }

  /**
   * The insert's connection was lost: re-read, re-sending the (idempotent) insert while the row
   * is absent. A re-send the server or a pooler refuses leaves the lost insert's outcome unknown
   * (it may still commit on the server): STORE_OUTCOME_UNKNOWN, never STORE_UNAVAILABLE. A
   * re-send that conflicts may have conflicted with the lost insert itself, which committed
   * meanwhile: the conflicting row is returned (`created: false`), and a failure to read it is
   * STORE_OUTCOME_UNKNOWN too. Run it inside {@link settling}, which turns any STORE_UNAVAILABLE
   * of a step into STORE_OUTCOME_UNKNOWN.
   */
  private async settleInsert(row: EncodedRow, record: CheckpointRecord, cause: unknown): Promise<CreateResult> {
    for (let round = 0; round < MAX_RESOLVE_ROUNDS; round += 1) {
      const current = await this.reread(row.key, cause);
      if (current !== null) return { created: false, record: current };
      let inserted: boolean;
      try {
        inserted = (await this.write(this.sql.INSERT, insertParams(row))).rowCount === 1;
      } catch (error) {
        if (error instanceof OutcomeUnknown) continue;
        if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(row.key, 'insert', cause, error);
        throw error;
      }
      if (inserted) return { created: true, record: this.codec.remember(record, row.body) };
      // The row it conflicted with may be the lost insert's own: reading it settles the write.
      return { created: false, record: await this.settling(row.key, 'insert', cause, () => this.readExisting(row)) };
    }
    throw this.outcomeUnknown(row.key, 'insert', cause);
  }

  /** Sends the conditional UPDATE: revision-only, or also on the stored body's digest. */
  private sendCas(row: EncodedRow, expectedRevision: number, expectedBody: string | null): Promise<{ rowCount: number | null }> {
    if (expectedBody === null) return this.write(this.sql.CAS, casParams(row, expectedRevision));
    return this.write(this.sql.CAS_BODY, [...casParams(row, expectedRevision), expectedBody]);
  }

  /**
   * The CAS's connection was lost. Re-read: the row holds exactly the body we sent → true;
   * still at `expectedRevision` but not with the expected body (when one is required) → false
   * (the UPDATE cannot have applied: revisions only grow, and the row is never touched);
   * `next`'s revision → whether the stored record is `next`; still at `expectedRevision` →
   * re-send the same conditional UPDATE (it and the lost one can apply at most once between
   * them); anything else → STORE_OUTCOME_UNKNOWN. Run it inside {@link settling}: no failure of
   * a step is STORE_UNAVAILABLE.
   */
  private async settleCas(row: EncodedRow, expectedRevision: number, expectedBody: string | null, next: CheckpointRecord, cause: unknown): Promise<boolean> {
    const won = (body: string): true => {
      this.codec.remember(next, body);
      return true;
    };
    for (let round = 0; round < MAX_RESOLVE_ROUNDS; round += 1) {
      const raw = await this.rereadRow(row.key, cause);
      if (raw === null) break;
      if (raw.body === row.body) return won(row.body);
      if (expectedBody !== null && Number(raw.revision) === expectedRevision && (typeof raw.body !== 'string' || bodyDigest(raw.body) !== expectedBody)) return false;
      const current = this.codec.decode(stored(raw));
      if (current.revision === next.revision) return this.codec.sameRecord(current, next) && won(raw.body as string);
      if (current.revision !== expectedRevision) break;
      try {
        if ((await this.sendCas(row, expectedRevision, expectedBody)).rowCount === 1) return won(row.body);
      } catch (error) {
        if (error instanceof OutcomeUnknown) continue;
        // The re-send was refused, so it wrote nothing; the lost one may still commit: unknown.
        if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(row.key, 'compare-and-swap', cause, error);
        throw error;
      }
    }
    throw this.outcomeUnknown(row.key, 'compare-and-swap', cause);
  }

  private async reread(key: string, cause: unknown): Promise<CheckpointRecord | null> {
    const row = await this.rereadRow(key, cause);
    return row === null ? null : this.codec.decode(stored(row));
  }

  /** The raw row after a lost write; a failed read makes the write's outcome unknown. */
  private async rereadRow(key: string, cause: unknown): Promise<Row | null> {
    try {
      return (await this.read<Row>(this.sql.GET, [key]))[0] ?? null;
    } catch (error) {
      if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(key, 'write', cause, error);
      throw error;
    }
  }

  /**
   * Creates or upgrades the tables: one transaction on one connection (through a
   * transaction-mode pooler, one server connection until COMMIT) holding the
   * transaction-scoped advisory lock {@link MIGRATION_LOCK_ID}, with the search_path set for
   * this transaction only (`SET LOCAL`: pg_catalog for the checks, the store's schema first for
   * each released step, whose SQL names tables unqualified). BEGIN, SET LOCAL and the lock go out
   * in one flight. READ COMMITTED whatever the role's default, so each statement after the lock
   * sees what a concurrent opener committed before releasing it.
   *
   * @throws {@link CheckpointError} UNSUPPORTED_SCHEMA, INVALID_CONFIG (see `checkSchema`,
   *   `assertTrustedOwners`), STORE_UNAVAILABLE for driver errors (rolled back).
   */
  private async migrate(): Promise<void> {
    const client = await this.connect();
    let broken: Error | undefined;
    const lockId = BigInt(`0x${MIGRATION_LOCK_ID}`).toString();
    try {
      const flight = [
        client.query('BEGIN ISOLATION LEVEL READ COMMITTED'),
        client.query('SET LOCAL search_path TO pg_catalog, pg_temp'),
        client.query('SELECT pg_catalog.pg_advisory_xact_lock($1::pg_catalog.int8)', [lockId]),
      ];
      for (const sent of flight) sent.catch(() => undefined);
      for (const sent of flight) await sent;
      await this.checkSchema(client);
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.sql.migrations} (
        version    pg_catalog.int4        NOT NULL PRIMARY KEY,
        name       pg_catalog.text        NOT NULL,
        applied_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
      )`);
      const applied = (await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${this.sql.migrations}`)).rows[0]?.version ?? 0;
      const latest = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;
      if (applied > latest) {
        throw new CheckpointError('UNSUPPORTED_SCHEMA', `PostgreSQL ${this.where}: database schema version ${applied} is newer than this code knows (${latest}); upgrade the code`, { field: 'ttc_schema_migrations', actual: applied, supported: String(latest) });
      }
      // The steps run with the store's schema first in the search_path: nothing in it may come from an untrusted role.
      if (applied < latest) await this.assertTrustedOwners(client, true);
      for (const step of POSTGRES_MIGRATIONS) {
        if (step.version <= applied) continue;
        // The released steps name tables unqualified: they are created in the store's schema.
        await client.query(`SET LOCAL search_path TO ${quoteIdent(this.schema)}, pg_catalog, pg_temp`);
        await client.query(step.sql);
        await client.query('SET LOCAL search_path TO pg_catalog, pg_temp');
        await client.query(`INSERT INTO ${this.sql.migrations} (version, name) VALUES ($1, $2)`, [step.version, step.name]);
      }
      await client.query('COMMIT');
    } catch (error) {
      if (classifyPgError(error).kind === 'lost' && !isCheckpointError(error)) broken = error as Error;
      else {
        await client.query('ROLLBACK').catch((rollback: unknown) => {
          broken = rollback as Error;
        });
      }
      if (isCheckpointError(error)) throw error;
      throw this.unavailable('migrate', error);
    } finally {
      client.release(broken);
    }
  }

  /**
   * Before the first migration in `this.schema`: the schema must exist, and a store table this
   * role owns in another schema (where an earlier version, following the role's search_path,
   * created it) is refused rather than silently starting an empty store beside it.
   */
  private async checkSchema(client: PoolClient): Promise<void> {
    const found = await client.query<{ here: boolean; migrated: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1) AS here, pg_catalog.to_regclass($2) IS NOT NULL AS migrated`,
      [this.schema, this.sql.migrations],
    );
    if (!found.rows[0]?.here) {
      throw new CheckpointError('INVALID_CONFIG', `PostgreSQL ${this.where}: schema ${JSON.stringify(this.schema)} does not exist; create it (CREATE SCHEMA ${this.schema} AUTHORIZATION <store role>) or set postgresSchema (TTC_POSTGRES_SCHEMA)`, { field: 'postgresSchema', where: this.where });
    }
    await this.assertTrustedOwners(client, false);
    if (found.rows[0].migrated) return;
    const elsewhere = await client.query<{ nspname: string }>(
      `SELECT n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relname = 'ttc_checkpoints' AND c.relkind = 'r' AND c.relowner = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) AND n.nspname <> $1
       ORDER BY n.nspname LIMIT 1`,
      [this.schema],
    );
    const other = elsewhere.rows[0]?.nspname;
    if (other !== undefined) {
      throw new CheckpointError('INVALID_CONFIG', `PostgreSQL ${this.where}: this role's ttc_checkpoints table is in schema ${JSON.stringify(other)}, not in the configured schema ${JSON.stringify(this.schema)}; set postgresSchema (TTC_POSTGRES_SCHEMA) to ${JSON.stringify(other)}`, { field: 'postgresSchema', where: this.where, found: other });
    }
  }

  /**
   * Refuses objects in the store's schema owned by a role the store does not trust, for a schema
   * other roles may create in (`public` on PostgreSQL 14 and older grants CREATE to PUBLIC):
   * - always: the store's tables (`ttc_checkpoints`, `ttc_schema_migrations`,
   *   `ttc_conversation_entries`) and any relation
   *   of those names, which a co-tenant could create first and then read or alter;
   * - with `definitions` (before a migration step, which runs with the store's schema first in
   *   the search_path): every type, function and operator, which could stand in for
   *   `pg_catalog.text` or a built-in function the step uses.
   * Trusted owners: the current role and the roles it is a member of, the schema's owner (who
   * can drop anything in it anyway) and superusers.
   *
   * @throws {@link CheckpointError} INVALID_CONFIG (`details.field` postgresSchema, `owner`, `object`).
   */
  private async assertTrustedOwners(client: PoolClient, definitions: boolean): Promise<void> {
    const found = await client.query<{ kind: string; name: string; owner: string }>(
      `WITH s AS (SELECT oid, nspowner FROM pg_catalog.pg_namespace WHERE nspname = $1),
       objects AS (
         SELECT 'relation' AS kind, c.relname::text AS name, c.relowner AS owner FROM pg_catalog.pg_class c, s WHERE c.relnamespace = s.oid AND c.relname IN ('ttc_checkpoints', 'ttc_schema_migrations', 'ttc_conversation_entries')
         UNION ALL SELECT 'type', t.typname::text, t.typowner FROM pg_catalog.pg_type t, s WHERE $2 AND t.typnamespace = s.oid
         UNION ALL SELECT 'function', p.proname::text, p.proowner FROM pg_catalog.pg_proc p, s WHERE $2 AND p.pronamespace = s.oid
         UNION ALL SELECT 'operator', o.oprname::text, o.oprowner FROM pg_catalog.pg_operator o, s WHERE $2 AND o.oprnamespace = s.oid
       )
       SELECT o.kind, o.name, r.rolname::text AS owner FROM objects o JOIN pg_catalog.pg_roles r ON r.oid = o.owner, s
       WHERE o.owner <> s.nspowner AND NOT r.rolsuper AND NOT pg_catalog.pg_has_role(current_user, o.owner, 'MEMBER')
       ORDER BY o.kind DESC, o.name LIMIT 1`,
      [this.schema, definitions],
    );
    const bad = found.rows[0];
    if (bad === undefined) return;
    throw new CheckpointError(
      'INVALID_CONFIG',
      `PostgreSQL ${this.where}: ${bad.kind} ${JSON.stringify(bad.name)} in schema ${JSON.stringify(this.schema)} is owned by role ${JSON.stringify(bad.owner)}, which this store does not trust (not this role, a role it belongs to, the schema's owner or a superuser); another role can create in this schema. Use a schema only the store's role can create in (CREATE SCHEMA ttc AUTHORIZATION <store role>, TTC_POSTGRES_SCHEMA=ttc) or REVOKE CREATE ON SCHEMA ${this.schema} FROM PUBLIC`,
      { field: 'postgresSchema', where: this.where, owner: bad.owner, object: `${bad.kind} ${bad.name}` },
    );
  }

  /**
   * STORE_UNAVAILABLE for a statement that was never sent or was refused (nothing written).
   * `details.driverCode`: the SQLSTATE or errno; `details.pooler`: set when a connection pooler
   * refused it or caused the refusal, with a sentence naming the problem.
   */
  private unavailable(what: string, error: unknown): CheckpointError {
    const failure = classifyPgError(error);
    const code = failure.code;
    const message = error instanceof Error ? error.message : String(error);
    const hint = failure.pooler === null ? '' : ` (${failure.pooler}; the store needs no session state and works through transaction-mode poolers: check the pooler's settings and log)`;
    return new CheckpointError(
      'STORE_UNAVAILABLE',
      `PostgreSQL ${this.where} failed to ${what}: ${code === null ? '' : `${code} `}${message}${hint}; nothing was written, nothing may be claimed or executed`,
      { where: this.where, driverCode: code, ...(failure.pooler === null ? {} : { pooler: failure.pooler }) },
      { cause: error },
    );
  }

  /**
   * STORE_OUTCOME_UNKNOWN for a write whose connection was lost after it was sent and whose
   * settling failed (`details.key`, `details.where`; the lost write's driver error as `cause`).
   */
  private outcomeUnknown(key: string, what: string, cause: unknown, reread?: unknown): CheckpointError {
    const extra = reread === undefined ? '' : ` and settling it by re-reading failed (${(reread as Error).message})`;
    return new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: the connection was lost after sending the ${what} of ${key}${extra}; its outcome is unknown (re-read the record before acting)`, { key, where: this.where }, { cause });
  }
}

/** Schema names accepted for `postgresSchema`: lower-case unquoted SQL identifiers. */
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The connection string as given, once checked to parse as a URL. Its own `options` parameter
 * (if any) reaches the server unchanged; the store adds none (PgBouncer refuses an
 * unknown startup parameter, 08P01 "unsupported startup parameter: options", unless
 * `ignore_startup_parameters` lists it, and then drops it; no statement relies on it).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (without the parser's message, which holds the password).
 */
function checkedUrl(url: string): string {
  try {
    new URL(url);
  } catch {
    // No cause: the parser's error carries the input, password included.
    throw new CheckpointError('INVALID_ARGUMENT', 'PostgreSQL connection string is not a valid URL (see openCheckpointStore)', { field: 'url' });
  }
  return url;
}

function insertParams(row: EncodedRow): unknown[] {
  return [row.key, row.namespace, row.callId, row.toolName, row.status, row.revision, row.updatedAt, row.body];
}

function casParams(row: EncodedRow, expectedRevision: number): unknown[] {
  return [row.key, expectedRevision, row.status, row.revision, row.updatedAt, row.body];
}

function stored(row: Row): StoredRow {
  return { key: row.key, status: row.status, revision: row.revision, updatedAt: row.updated_at instanceof Date ? row.updated_at.toISOString() : String(row.updated_at), body: row.body };
}

/**
 * A named statement refused because of where it ran: already prepared (42P05) or missing
 * (26000) on that server connection, or PgBouncer 1.21+'s own prepared-statement refusals.
 */
function isPreparedStatementRefusal(error: unknown): boolean {
  const failure = classifyPgError(error);
  if (failure.kind !== 'refused') return false;
  if (failure.code === '42P05' || failure.code === '26000') return true;
  return failure.code === '08P01' && /prepared statement/i.test(error instanceof Error ? error.message : '');
}

/** A FATAL (or PANIC) error: the server or the pooler closes the connection after it. */
function isFatal(error: unknown): boolean {
  const severity = (error as { severity?: unknown } | null)?.severity;
  return severity === 'FATAL' || severity === 'PANIC';
}
