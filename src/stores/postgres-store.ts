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
 * planned on every call); see `PgConnection.query` (`./pg-connection`). The statements on the pool,
 * the settling of lost writes, group writes and the migration are in `./pg-connection`,
 * `./pg-lost-writes`, `./pg-group-writes` and `./pg-migration`.
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
import { keysOf, recordsOf } from './group-writes';
import { assertGetArguments, conversationConflict, encodeEntries, entryMissing, EntryCodec, type EncodedEntry } from './entry-codec';
import { pgStatements, type PgStatements } from './pg-statements';
import {
  assertCallArguments,
  assertCasArguments,
  bodyDigest,
  dedupeColumns,
  releaseArguments,
  type EncodedRow,
  assertStatuses,
  normalizeTimestamp,
  resolveLimit,
  RowCodec,
  scanQuarantined,
} from './row-codec';
import { MAX_RESOLVE_ROUNDS, OutcomeUnknown, PgConnection } from './pg-connection';
import { PgGroupWriter } from './pg-group-writes';
import { LostWriteSettler } from './pg-lost-writes';
import { SchemaMigration } from './pg-migration';
import { insertParams, stored, type Row } from './pg-rows';

export { MIGRATION_LOCK_ID } from './pg-migration';

/** Default pool size. */
export const DEFAULT_POSTGRES_POOL_SIZE = 10;
/** Default schema of the store's tables. */
export const DEFAULT_POSTGRES_SCHEMA = 'public';
/** Default time to wait for a connection, in ms. */
export const DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS = 5_000;
const PAGE = 500;
/** Keys per conversation read (one `= ANY($2)` array each). */
const KEY_CHUNK = 1_000;
/** Insert rounds of one dedupe-keyed `createIfAbsent` while the key changes hands under it (each round is another insert ahead of it). */
const MAX_DEDUPE_ROUNDS = 8;

interface EntryRow extends QueryResultRow {
  entry_key: string;
  body: unknown;
  bytes: string;
}

interface PutEntryRow extends EntryRow {
  inserted: boolean;
}

/**
 * A {@link CheckpointStore} on PostgreSQL. Open it with
 * `openCheckpointStore('postgres://…')` or {@link PostgresCheckpointStore.open}.
 */
export class PostgresCheckpointStore implements CheckpointStore {
  private readonly sql: PgStatements;
  private readonly entries: EntryCodec;
  private readonly conn: PgConnection;
  private readonly lostWrites: LostWriteSettler;
  private readonly groups: PgGroupWriter;

  private constructor(
    pool: Pool,
    private readonly where: string,
    private readonly codec: RowCodec,
    private readonly schema: string,
    options: CheckpointStoreOptions,
  ) {
    this.sql = pgStatements(schema);
    this.entries = new EntryCodec(options);
    this.conn = new PgConnection(pool, where, this.sql);
    this.lostWrites = new LostWriteSettler(this.conn, this.sql, codec);
    this.groups = new PgGroupWriter(this.conn, this.sql, codec);
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
      throw new CheckpointError('INVALID_ARGUMENT', `connectTimeoutMs must be an integer from 1 to 600,000 ms, got ${String(connectTimeoutMs)}`, {
        field: 'connectTimeoutMs',
        limit: 600_000,
      });
    }
    const schema = options.postgresSchema ?? DEFAULT_POSTGRES_SCHEMA;
    if (typeof schema !== 'string' || !SCHEMA_PATTERN.test(schema)) {
      throw new CheckpointError('INVALID_ARGUMENT', `postgresSchema must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 characters), got ${JSON.stringify(schema)}`, {
        field: 'postgresSchema',
      });
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

  /**
   * A fresh record: one statement, one round trip. An existing one: a second, reading it. With a
   * dedupe key, a conflict first releases the key from a holder whose window ended (one more
   * statement) and then inserts again; so does a conflict whose holder is gone when read (another
   * insert released it and has not committed its own row yet).
   */
  async createIfAbsent(record: CheckpointRecord, options?: CreateOptions): Promise<CreateResult> {
    const row = { ...this.codec.encode(record), ...dedupeColumns(options) };
    for (let round = 1; ; round += 1) {
      const inserted = await this.insert(row, record);
      if (inserted === true) return { created: true, record: this.codec.remember(record, row.body) };
      // A lost insert settled by a re-send: created, the call's own row, or a conflict like any other.
      if (inserted !== false && (inserted.created || inserted.record.binding.callId === record.binding.callId || row.dedupeKey === undefined)) return inserted;
      const found = inserted === false ? null : inserted.record;
      if (row.dedupeKey === undefined || round === MAX_DEDUPE_ROUNDS) return { created: false, record: found ?? (await this.lostWrites.readExisting(row)) };
      if (await this.releaseExpired(row.dedupeKey, row.updatedAt)) continue;
      const existing = found ?? (await this.lostWrites.findExisting(row));
      if (existing !== null) return { created: false, record: existing };
    }
  }

  /** One INSERT: whether it inserted, or (its connection lost) the settled outcome. */
  private async insert(row: EncodedRow, record: CheckpointRecord): Promise<boolean | CreateResult> {
    try {
      return (await this.conn.write(this.sql.INSERT, insertParams(row))).rowCount === 1;
    } catch (error) {
      if (!(error instanceof OutcomeUnknown)) throw error;
      const cause = error.driverError;
      return this.lostWrites.settling(row.key, 'insert', cause, () => this.lostWrites.settleInsert(row, record, cause));
    }
  }

  /**
   * Releases `dedupeKey` from a holder whose window ended by `now`. Nothing of the caller's
   * record is written by it, so a lost answer is STORE_UNAVAILABLE (an expired key holds nothing).
   */
  private async releaseExpired(dedupeKey: string, now: string): Promise<boolean> {
    try {
      return (await this.conn.write(this.sql.RELEASE_EXPIRED, [dedupeKey, now])).rowCount === 1;
    } catch (error) {
      if (!(error instanceof OutcomeUnknown)) throw error;
      throw new CheckpointError('STORE_UNAVAILABLE', `PostgreSQL ${this.where}: the connection was lost while releasing an expired dedupe key; nothing of the call was written`, {
        where: this.where,
      });
    }
  }

  async releaseDedupeKey(holder: CheckpointRecord): Promise<boolean> {
    const { key, revision } = releaseArguments(holder);
    try {
      return (await this.conn.write(this.sql.RELEASE_DEDUPE_KEY, [key, revision])).rowCount === 1;
    } catch (error) {
      if (!(error instanceof OutcomeUnknown)) throw error;
      throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: the connection was lost while releasing the dedupe key of ${key}; release it again`, {
        key,
        where: this.where,
      });
    }
  }

  async get(binding: Binding): Promise<CheckpointRecord | null> {
    const lookedUp = bindingSnapshot(binding);
    const key = checkpointKey(lookedUp);
    const rows = await this.conn.read<Row>(this.sql.GET, [key]);
    return rows[0] === undefined ? null : this.codec.decode(stored(rows[0]), { binding: lookedUp, key });
  }

  async getByCall(namespace: string, callId: string): Promise<CheckpointRecord | null> {
    assertCallArguments(namespace, callId);
    const rows = await this.conn.read<Row>(this.sql.GET_BY_CALL, [namespace, callId]);
    return rows[0] === undefined ? null : this.codec.decode(stored(rows[0]));
  }

  async compareAndSwap(expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord): Promise<boolean> {
    assertCasArguments(expectedRevision, next);
    const row = this.codec.encode(next);
    const expectedBody = this.codec.expectedBody(expectedRevision, row.key, expected);
    const expectedDigest = expectedBody === null ? null : bodyDigest(expectedBody);
    try {
      const swapped = (await this.lostWrites.sendCas(row, expectedRevision, expectedDigest)).rowCount === 1;
      if (swapped) this.codec.remember(next, row.body);
      return swapped;
    } catch (error) {
      if (!(error instanceof OutcomeUnknown)) throw error;
      const cause = error.driverError;
      return this.lostWrites.settling(row.key, 'compare-and-swap', cause, () => this.lostWrites.settleCas(row, expectedRevision, expectedDigest, next, cause));
    }
  }

  /** One statement (`key = ANY($1)`), one round trip. */
  async getMany(bindings: readonly Binding[]): Promise<(CheckpointRecord | null)[]> {
    const keys = keysOf(bindings);
    if (keys.length === 0) return [];
    const rows = await this.conn.read<Row>(this.sql.GET_MANY, [[...new Set(keys)]]);
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
  writeGroup(writes: readonly GroupWrite[]): Promise<GroupWriteResult[]> {
    return this.groups.writeGroup(writes);
  }

  async listByStatus(statuses: readonly Status[], options: ListOptions = {}): Promise<CheckpointRecord[]> {
    const wanted = assertStatuses(statuses);
    const limit = resolveLimit(options.limit);
    const olderThan = options.olderThan === undefined ? null : normalizeTimestamp(options.olderThan, 'olderThan');
    const records: CheckpointRecord[] = [];
    let cursor: [string, string] | null = null;
    while (records.length < limit) {
      const rows: Row[] = await this.conn.read<Row>(this.sql.LIST, [wanted, olderThan, cursor?.[0] ?? null, cursor?.[1] ?? null, PAGE]);
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
    return scanQuarantined(this.codec, async (after) => (await this.conn.read<Row>(this.sql.SCAN, [after, PAGE])).map(stored), PAGE, resolveLimit(options.limit));
  }

  async prune(options: PruneOptions): Promise<number> {
    const olderThan = normalizeTimestamp(options?.olderThan, 'olderThan');
    const conversationsOlderThan = options.conversationsOlderThan === undefined ? undefined : normalizeTimestamp(options.conversationsOlderThan, 'conversationsOlderThan');
    let deleted = 0;
    if (conversationsOlderThan !== undefined) {
      try {
        // One statement (atomic on its own): no BEGIN/COMMIT around it.
        deleted += Number((await this.conn.write<{ n: number }>(this.sql.PRUNE_LOGS, [conversationsOlderThan])).rows[0]?.n ?? 0);
      } catch (error) {
        if (!(error instanceof OutcomeUnknown)) throw error;
        throw new CheckpointError(
          'STORE_OUTCOME_UNKNOWN',
          `PostgreSQL ${this.where}: the connection was lost while pruning conversation logs; they may be deleted (prune again: it is idempotent)`,
          { where: this.where },
          { cause: error.driverError },
        );
      }
    }
    let cursor: [string, string] | null = null;
    for (;;) {
      const rows: Row[] = await this.conn.read<Row>(this.sql.PRUNABLE, [olderThan, cursor?.[0] ?? null, cursor?.[1] ?? null, PAGE, new Date().toISOString()]);
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
          deleted += (await this.conn.write(this.sql.PRUNE, [keys, revisions, digests])).rowCount ?? 0;
        } catch (error) {
          if (!(error instanceof OutcomeUnknown)) throw error;
          throw new CheckpointError(
            'STORE_OUTCOME_UNKNOWN',
            `PostgreSQL ${this.where}: the connection was lost while pruning; some of ${keys.length} delivered records may be deleted (prune again: it is idempotent)`,
            { where: this.where },
            { cause: error.driverError },
          );
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
        await this.conn.transaction((client) => this.insertEntries(client, logId, encoded));
        return;
      } catch (error) {
        if (error instanceof OutcomeUnknown) lost = error.driverError;
        else if (lost !== undefined && isCheckpointError(error, 'STORE_UNAVAILABLE')) break;
        else throw error;
      }
    }
    throw new CheckpointError(
      'STORE_OUTCOME_UNKNOWN',
      `PostgreSQL ${this.where}: the connection was lost while writing ${encoded.length} entries of conversation log ${logId}; they may be written (the write is idempotent: send it again)`,
      { logId, where: this.where },
      { cause: lost },
    );
  }

  async getConversationEntries(logId: string, keys: readonly string[]): Promise<JsonValue[]> {
    assertGetArguments(logId, keys);
    const unique = [...new Set(keys)];
    const found = new Map<string, JsonValue>();
    for (let i = 0; i < unique.length; i += KEY_CHUNK) {
      const rows = await this.conn.read<EntryRow>(this.sql.GET_ENTRIES, [logId, unique.slice(i, i + KEY_CHUNK)]);
      for (const row of rows) found.set(row.entry_key, this.entries.decode({ logId, key: row.entry_key, body: row.body, bytes: row.bytes }).value);
    }
    return keys.map((key) => {
      if (!found.has(key)) throw entryMissing(logId, key);
      return found.get(key)!;
    });
  }

  async close(): Promise<void> {
    await this.conn.close();
  }

  /** Creates or upgrades the tables (see {@link SchemaMigration}). */
  private migrate(): Promise<void> {
    return new SchemaMigration(this.conn, this.sql, this.schema).run();
  }

  private async insertEntries(client: PoolClient, logId: string, encoded: readonly EncodedEntry[]): Promise<void> {
    const put = await client.query<PutEntryRow>(this.sql.PUT_ENTRIES, [
      logId,
      encoded.map((e) => e.key),
      encoded.map((e) => e.body),
      encoded.map((e) => e.bytes),
      new Date().toISOString(),
    ]);
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
      if (row === undefined)
        throw new CheckpointError(
          'STORE_OUTCOME_UNKNOWN',
          `PostgreSQL ${this.where}: conversation log ${logId} entry ${entry.key} conflicted on insert but is gone (pruned meanwhile); nothing of this write was stored, send it again`,
          { logId, key: entry.key, where: this.where },
        );
      if (this.entries.decode({ logId, key: entry.key, body: row.body, bytes: row.bytes }).text !== entry.text) throw conversationConflict(logId, entry.key);
    }
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
