/**
 * The fleet side store (SPEC §3): PostgreSQL through the `pg` driver and a connection pool.
 * A compare-and-swap is one `UPDATE … WHERE key = $1 AND revision = $2` (and, when the caller
 * passes the record it read, `AND` the SHA-256 of the stored body is that record's; success only
 * when exactly one row changed); create-if-absent is `INSERT … ON CONFLICT DO NOTHING` plus a read.
 * The store creates and upgrades its own table with the versioned steps in `./migrations`,
 * under an advisory lock so concurrent openers do not race.
 *
 * Fail closed: while the database cannot be reached every call throws STORE_UNAVAILABLE and
 * nothing is claimed. A write whose connection was lost after sending has an unknown outcome;
 * it is settled by re-reading the row (and re-sending the same conditional statement, which can
 * apply at most once), never assumed either way; if that is impossible the call throws
 * STORE_OUTCOME_UNKNOWN.
 */
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import type { Binding, CheckpointRecord, JsonValue, Status } from '../checkpoint/types';
import { checkpointKey } from './checkpoint-key';
import type { CheckpointStore, CheckpointStoreOptions, ConversationEntry, CreateResult, ListOptions, ListQuarantinedOptions, PruneOptions, QuarantinedRow } from './checkpoint-store';
import { assertGetArguments, conversationConflict, encodeEntries, entryMissing, EntryCodec, type EncodedEntry } from './entry-codec';
import { POSTGRES_MIGRATIONS } from './migrations/postgres';
import { assertCallArguments, assertCasArguments, bodyDigest, assertStatuses, normalizeTimestamp, resolveLimit, RowCodec, scanQuarantined, type EncodedRow, type StoredRow } from './row-codec';

/** Default pool size. */
export const DEFAULT_POSTGRES_POOL_SIZE = 10;
/** Default schema of the store's tables. */
export const DEFAULT_POSTGRES_SCHEMA = 'public';
/** Default time to wait for a connection, in ms. */
export const DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS = 5_000;
/** Key of the session advisory lock held while migrating (an arbitrary, fixed bigint). */
export const MIGRATION_LOCK_ID = '7467636b70740001';

const COLUMNS = 'key, status, revision, updated_at, body';
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

/** Thrown inside the store when a statement's outcome is unknown; never leaves the store. */
class OutcomeUnknown extends Error {
  constructor(readonly driverError: unknown) {
    super('outcome unknown');
  }
}

/**
 * A {@link CheckpointStore} on PostgreSQL. Open it with
 * `openCheckpointStore('postgres://…')` or {@link PostgresCheckpointStore.open}.
 */
export class PostgresCheckpointStore implements CheckpointStore {
  private closed = false;

  private readonly sql: ReturnType<typeof statements>;
  private readonly entries: EntryCodec;

  private constructor(
    private readonly pool: Pool,
    private readonly where: string,
    private readonly codec: RowCodec,
    private readonly schema: string,
    options: CheckpointStoreOptions,
  ) {
    this.sql = statements(schema);
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
   *   migrated by newer code; INVALID_ARGUMENT for bad options.
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
    // Lazily required: a SQLite-only deployment never loads pg.
     
    const pg = require('pg') as typeof import('pg');
    const pool = new pg.Pool({
      ...pinnedConnection(url),
      max: poolSize,
      connectionTimeoutMillis: connectTimeoutMs,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'temporal-tool-checkpoint',
    });
    // An idle client whose server went away emits 'error' on the pool; without a listener
    // Node would crash. The pool drops that client; the next call reconnects or fails closed.
    pool.on('error', () => undefined);
    const store = new PostgresCheckpointStore(pool, where, codec, schema, options);
    try {
      await store.migrate();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
    return store;
  }

  async createIfAbsent(record: CheckpointRecord): Promise<CreateResult> {
    const row = this.codec.encode(record);
    try {
      const inserted = await this.write(this.sql.INSERT, insertParams(row), 'ttc_insert');
      if (inserted.rowCount === 1) return { created: true, record: this.codec.remember(record, row.body) };
    } catch (error) {
      if (!(error instanceof OutcomeUnknown)) throw error;
      return this.settleInsert(row, record, error.driverError);
    }
    return { created: false, record: await this.readExisting(row) };
  }

  async get(binding: Binding): Promise<CheckpointRecord | null> {
    const key = checkpointKey(binding);
    const rows = await this.read<Row>(this.sql.GET, [key], 'ttc_get');
    return rows[0] === undefined ? null : this.codec.decode(stored(rows[0]));
  }

  async getByCall(namespace: string, callId: string): Promise<CheckpointRecord | null> {
    assertCallArguments(namespace, callId);
    const rows = await this.read<Row>(this.sql.GET_BY_CALL, [namespace, callId], 'ttc_get_by_call');
    return rows[0] === undefined ? null : this.codec.decode(stored(rows[0]));
  }

  async compareAndSwap(expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord): Promise<boolean> {
    assertCasArguments(expectedRevision, next);
    const row = this.codec.encode(next);
    const expectedBody = this.codec.expectedBodyDigest(expectedRevision, row.key, expected);
    try {
      const swapped = (await this.sendCas(row, expectedRevision, expectedBody, true)).rowCount === 1;
      if (swapped) this.codec.remember(next, row.body);
      return swapped;
    } catch (error) {
      if (!(error instanceof OutcomeUnknown)) throw error;
      return this.settleCas(row, expectedRevision, expectedBody, next, error.driverError);
    }
  }

  async listByStatus(statuses: readonly Status[], options: ListOptions = {}): Promise<CheckpointRecord[]> {
    const wanted = assertStatuses(statuses);
    const limit = resolveLimit(options.limit);
    const olderThan = options.olderThan === undefined ? null : normalizeTimestamp(options.olderThan, 'olderThan');
    const records: CheckpointRecord[] = [];
    let cursor: [string, string] | null = null;
    while (records.length < limit) {
      const rows: Row[] = await this.read<Row>(
        `SELECT ${COLUMNS} FROM ${this.sql.table}
         WHERE status = ANY($1::text[]) AND ($2::timestamptz IS NULL OR updated_at < $2)
           AND ($3::timestamptz IS NULL OR (updated_at, key) > ($3, $4::text))
         ORDER BY updated_at, key LIMIT $5`,
        [wanted, olderThan, cursor?.[0] ?? null, cursor?.[1] ?? null, PAGE],
      );
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
    return scanQuarantined(this.codec, async (after) => (await this.read<Row>(`SELECT ${COLUMNS} FROM ${this.sql.table} WHERE key > $1 ORDER BY key LIMIT $2`, [after, PAGE])).map(stored), PAGE, resolveLimit(options.limit));
  }

  async prune(options: PruneOptions): Promise<number> {
    const olderThan = normalizeTimestamp(options?.olderThan, 'olderThan');
    const conversationsOlderThan = options.conversationsOlderThan === undefined ? undefined : normalizeTimestamp(options.conversationsOlderThan, 'conversationsOlderThan');
    let deleted = 0;
    if (conversationsOlderThan !== undefined) {
      try {
        deleted += await this.transaction(async (client) => Number((await client.query<{ n: number }>(this.sql.PRUNE_LOGS, [conversationsOlderThan])).rows[0]?.n ?? 0));
      } catch (error) {
        if (!(error instanceof OutcomeUnknown)) throw error;
        throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: the connection was lost while pruning conversation logs; they may be deleted (prune again: it is idempotent)`, { where: this.where }, { cause: error.driverError });
      }
    }
    let cursor: [string, string] | null = null;
    for (;;) {
      const rows: Row[] = await this.read<Row>(
        `SELECT ${COLUMNS} FROM ${this.sql.table}
         WHERE status = 'delivered' AND updated_at < $1 AND ($2::timestamptz IS NULL OR (updated_at, key) > ($2, $3::text))
         ORDER BY updated_at, key LIMIT $4`,
        [olderThan, cursor?.[0] ?? null, cursor?.[1] ?? null, PAGE],
      );
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
   * One transaction: insert the entries that are absent (`ON CONFLICT DO NOTHING`, in key
   * order), then read and compare the ones that existed; any difference rolls everything back.
   * A concurrent writer of the same key is waited for by the insert, so the comparison sees its
   * committed value. A lost connection re-sends the whole (idempotent) call; when that cannot
   * settle it the call throws STORE_OUTCOME_UNKNOWN.
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
      const rows = await this.read<EntryRow>(this.sql.GET_ENTRIES, [logId, unique.slice(i, i + KEY_CHUNK)], 'ttc_get_entries');
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
    const inserted = await client.query<{ entry_key: string }>(this.sql.INSERT_ENTRIES, [logId, encoded.map((e) => e.key), encoded.map((e) => e.body), encoded.map((e) => e.bytes), new Date().toISOString()]);
    const fresh = new Set(inserted.rows.map((r) => r.entry_key));
    const existing = encoded.filter((e) => !fresh.has(e.key));
    if (existing.length === 0) return;
    const rows = (await client.query<EntryRow>(this.sql.GET_ENTRIES, [logId, existing.map((e) => e.key)])).rows;
    const stored = new Map(rows.map((r) => [r.entry_key, r]));
    for (const entry of existing) {
      const row = stored.get(entry.key);
      // Not inserted yet not there: deleted by a concurrent prune; the retry of the call settles it.
      if (row === undefined) throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: conversation log ${logId} entry ${entry.key} conflicted on insert but is gone (pruned meanwhile); nothing of this write was stored, send it again`, { logId, key: entry.key, where: this.where });
      if (this.entries.decode({ logId, key: entry.key, body: row.body, bytes: row.bytes }).text !== entry.text) throw conversationConflict(logId, entry.key);
    }
  }

  /**
   * Runs `work` in one transaction on one connection: COMMIT when it returns, ROLLBACK when it
   * throws (its CheckpointError is rethrown as is).
   * @throws OutcomeUnknown when the connection failed after BEGIN was sent; STORE_UNAVAILABLE for other driver errors (rolled back).
   */
  private async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (isConnectionError(error)) {
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

  /** Runs a read-only statement (`name`: prepared per connection). @throws STORE_UNAVAILABLE for any driver error. */
  private async read<R extends QueryResultRow>(text: string, values: unknown[], name?: string): Promise<R[]> {
    const client = await this.connect();
    try {
      const result = await client.query<R>({ text, values, ...(name === undefined ? {} : { name }) });
      client.release();
      return result.rows;
    } catch (error) {
      client.release(isConnectionError(error) ? (error as Error) : undefined);
      throw this.unavailable('read', error);
    }
  }

  /**
   * Runs one autocommitted write statement (`name` makes it a per-connection prepared statement).
   * @throws OutcomeUnknown when the connection failed after the statement was handed to it;
   *   STORE_UNAVAILABLE when it was never sent or the server refused it (nothing written).
   */
  private async write(text: string, values: unknown[], name?: string): Promise<{ rowCount: number | null }> {
    const client = await this.connect();
    try {
      const result = await client.query({ text, values, ...(name === undefined ? {} : { name }) });
      client.release();
      return result;
    } catch (error) {
      const lost = isConnectionError(error);
      client.release(lost ? (error as Error) : undefined);
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
    const rows = await this.read<Row>(`SELECT ${COLUMNS} FROM ${this.sql.table} WHERE key = $1 OR (namespace = $2 AND call_id = $3) ORDER BY key = $1 DESC LIMIT 1`, [row.key, row.namespace, row.callId]);
    if (rows[0] === undefined) throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: insert of ${row.key} conflicted but the row is gone`, { key: row.key, where: this.where });
    return this.codec.decode(stored(rows[0]));
  }

  /** The insert's connection was lost: re-read, re-sending the (idempotent) insert while the row is absent. */
  private async settleInsert(row: EncodedRow, record: CheckpointRecord, cause: unknown): Promise<CreateResult> {
    for (let round = 0; round < MAX_RESOLVE_ROUNDS; round += 1) {
      const current = await this.reread(row.key, cause);
      if (current !== null) return { created: false, record: current };
      try {
        if ((await this.write(this.sql.INSERT, insertParams(row))).rowCount === 1) return { created: true, record: this.codec.remember(record, row.body) };
        return { created: false, record: await this.readExisting(row) };
      } catch (error) {
        if (!(error instanceof OutcomeUnknown)) throw error;
      }
    }
    throw this.outcomeUnknown(row.key, 'insert', cause);
  }

  /** Sends the conditional UPDATE: revision-only, or also on the stored body's digest. */
  private sendCas(row: EncodedRow, expectedRevision: number, expectedBody: string | null, named = false): Promise<{ rowCount: number | null }> {
    if (expectedBody === null) return this.write(this.sql.CAS, casParams(row, expectedRevision), named ? 'ttc_cas' : undefined);
    return this.write(this.sql.CAS_BODY, [...casParams(row, expectedRevision), expectedBody], named ? 'ttc_cas_body' : undefined);
  }

  /**
   * The CAS's connection was lost. Re-read: the row holds exactly the body we sent → true;
   * still at `expectedRevision` but not with the expected body (when one is required) → false
   * (the UPDATE cannot have applied: revisions only grow, and the row is never touched);
   * `next`'s revision → whether the stored record is `next`; still at `expectedRevision` →
   * re-send the same conditional UPDATE (it and the lost one can apply at most once between
   * them); anything else → STORE_OUTCOME_UNKNOWN.
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
        if (!(error instanceof OutcomeUnknown)) throw error;
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
      return (await this.read<Row>(`SELECT ${COLUMNS} FROM ${this.sql.table} WHERE key = $1`, [key]))[0] ?? null;
    } catch (error) {
      if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(key, 'write', cause, error);
      throw error;
    }
  }

  private async migrate(): Promise<void> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      await client.query('SELECT pg_advisory_lock($1::bigint)', [BigInt(`0x${MIGRATION_LOCK_ID}`).toString()]);
      try {
        await this.checkSchema(client);
        await client.query(`CREATE TABLE IF NOT EXISTS ${this.sql.migrations} (
          version    integer     NOT NULL PRIMARY KEY,
          name       text        NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
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
          await client.query('BEGIN');
          try {
            // The released steps name tables unqualified: they are created in the store's schema.
            await client.query(`SET LOCAL search_path TO ${quoteIdent(this.schema)}, pg_catalog, pg_temp`);
            await client.query(step.sql);
            await client.query(`INSERT INTO ${this.sql.migrations} (version, name) VALUES ($1, $2)`, [step.version, step.name]);
            await client.query('COMMIT');
          } catch (error) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw error;
          }
        }
      } finally {
        await client.query('SELECT pg_advisory_unlock($1::bigint)', [BigInt(`0x${MIGRATION_LOCK_ID}`).toString()]);
      }
    } catch (error) {
      if (isConnectionError(error)) broken = error as Error;
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

  private unavailable(what: string, error: unknown): CheckpointError {
    const code = driverCode(error);
    const message = error instanceof Error ? error.message : String(error);
    return new CheckpointError('STORE_UNAVAILABLE', `PostgreSQL ${this.where} failed to ${what}: ${code === undefined ? '' : `${code} `}${message}; nothing was written, nothing may be claimed or executed`, { where: this.where, driverCode: code ?? null }, { cause: error });
  }

  private outcomeUnknown(key: string, what: string, cause: unknown, reread?: unknown): CheckpointError {
    const extra = reread === undefined ? '' : ` and the re-read failed (${(reread as Error).message})`;
    return new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.where}: the connection was lost after sending the ${what} of ${key}${extra}; its outcome is unknown (re-read the record before acting)`, { key, where: this.where }, { cause });
  }
}

/**
 * The statements of a store whose tables live in `schema`, every table schema-qualified (issue 15
 * item 12: with the connection's search_path pinned to pg_catalog, nothing a co-tenant creates in
 * another schema can stand in for our tables or the functions we call).
 */
function statements(schema: string) {
  const t = `${quoteIdent(schema)}.ttc_checkpoints`;
  const c = `${quoteIdent(schema)}.ttc_conversation_entries`;
  return {
    table: t,
    migrations: `${quoteIdent(schema)}.ttc_schema_migrations`,
    /** Named (server-side prepared once per connection) hot statements. */
    GET: `SELECT ${COLUMNS} FROM ${t} WHERE key = $1`,
    GET_BY_CALL: `SELECT ${COLUMNS} FROM ${t} WHERE namespace = $1 AND call_id = $2`,
    INSERT: `INSERT INTO ${t} (key, namespace, call_id, tool_name, status, revision, updated_at, body)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
    CAS: `UPDATE ${t} SET status = $3, revision = $4, updated_at = $5, body = $6 WHERE key = $1 AND revision = $2`,
    /** The CAS that also requires the stored body to be the one the caller read (its SHA-256, hex, as `bodyDigest` computes it). */
    CAS_BODY: `UPDATE ${t} SET status = $3, revision = $4, updated_at = $5, body = $6
  WHERE key = $1 AND revision = $2 AND encode(sha256(convert_to(body, 'UTF8')), 'hex') = $7`,
    /** Deletes verified rows by key, revision, status and exact body (a row changed or damaged since it was decoded stays). */
    PRUNE: `DELETE FROM ${t} t USING unnest($1::text[], $2::bigint[], $3::text[]) AS d(key, revision, digest)
  WHERE t.key = d.key AND t.revision = d.revision AND t.status = 'delivered' AND encode(sha256(convert_to(t.body, 'UTF8')), 'hex') = d.digest`,
    /** Inserts the absent entries of one log in key order; returns the keys inserted. */
    INSERT_ENTRIES: `INSERT INTO ${c} (log_id, entry_key, body, bytes, created_at)
  SELECT $1, u.k, u.b, u.n, $5::timestamptz FROM unnest($2::text[], $3::text[], $4::bigint[]) AS u(k, b, n) ORDER BY u.k
  ON CONFLICT DO NOTHING RETURNING entry_key`,
    GET_ENTRIES: `SELECT entry_key, body, bytes FROM ${c} WHERE log_id = $1 AND entry_key = ANY($2::text[])`,
    /** Deletes every log whose newest entry is older than $1; returns how many logs. */
    PRUNE_LOGS: `WITH stale AS (SELECT log_id FROM ${c} GROUP BY log_id HAVING max(created_at) < $1::timestamptz),
  gone AS (DELETE FROM ${c} e USING stale WHERE e.log_id = stale.log_id RETURNING e.log_id)
  SELECT count(DISTINCT log_id)::int AS n FROM gone`,
  } as const;
}

/** A schema name as a quoted SQL identifier (the name is validated to `[a-z_][a-z0-9_]*` first). */
function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The search_path every connection is pinned to: the system catalog only (temporary objects last, never first). */
export const PINNED_SEARCH_PATH = 'pg_catalog, pg_temp';

/** Schema names accepted for `postgresSchema`: lower-case unquoted SQL identifiers. */
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The connection string without its `options` parameter, and the startup `options` to send:
 * the URL's own `options` followed by the pinned search_path (a later `-c` wins), so a
 * search_path in the URL cannot unpin it.
 */
function pinnedConnection(url: string): { connectionString: string; options: string } {
  const pin = `-c search_path=${PINNED_SEARCH_PATH.replace(/ /g, '')}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // No cause: the parser's error carries the input, password included.
    throw new CheckpointError('INVALID_ARGUMENT', 'PostgreSQL connection string is not a valid URL (see openCheckpointStore)', { field: 'url' });
  }
  const own = parsed.searchParams.get('options');
  if (own === null) return { connectionString: url, options: pin };
  parsed.searchParams.delete('options');
  return { connectionString: parsed.toString(), options: `${own} ${pin}` };
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

function driverCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Network-level failures and server shutdowns: after sending, the outcome of a write is unknown. */
const CONNECTION_ERRNOS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

function isConnectionError(error: unknown): boolean {
  const code = driverCode(error);
  if (code !== undefined && (CONNECTION_ERRNOS.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03')) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|not queryable|connection timeout|Query read timeout/i.test(message);
}
