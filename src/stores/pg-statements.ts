/**
 * The SQL of the PostgreSQL store (every object schema-qualified, hot statements prepared). Each
 * statement is one Parse/Bind/Describe/Execute/Sync flight (one round trip). The hot single
 * statements ({@link PgStatements.prepared}) may be sent as named, server-side prepared statements
 * under a name derived from their text ({@link statementName}), so that whichever server connection
 * a pooler runs them on, a statement of that name is this very SQL; the store falls back to unnamed
 * statements when a pooler shows it moves statements between server connections (see
 * `./postgres-store`).
 *
 * Every name is qualified, so no statement depends on the session's `search_path` (which a
 * transaction-mode pooler does not carry from one statement to the next, and which a role's or
 * database's default may point at a schema other roles create in): tables by the store's schema,
 * functions, operators and types by `pg_catalog` (`OPERATOR(pg_catalog.=)`,
 * `pg_catalog.encode(...)`, `$1::pg_catalog.text[]`). A co-tenant's `public.convert_to(text,
 * text)` or `=` operator is never chosen (CVE-2018-1058's pattern). `ORDER BY` and `ON CONFLICT`
 * take their operators from the column types' default operator classes, not from the path.
 */

import { createHash } from 'node:crypto';

/** The columns of `ttc_checkpoints` every read returns. */
export const ROW_COLUMNS = 'key, status, revision, updated_at, body';

/** `pg_catalog`'s comparison operators, qualified. */
const EQ = 'OPERATOR(pg_catalog.=)';
const LT = 'OPERATOR(pg_catalog.<)';
const GT = 'OPERATOR(pg_catalog.>)';
const LE = 'OPERATOR(pg_catalog.<=)';

/** The SHA-256 (lower-case hex) of a text column's UTF-8 bytes, as `bodyDigest` computes it in JS. */
const digest = (column: string): string => `pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(${column}, 'UTF8')), 'hex')`;

/** A schema name as a quoted SQL identifier (the name is validated to `[a-z_][a-z0-9_]*` first). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The statements of a store whose tables live in `schema` (validated by the caller). */
export function pgStatements(schema: string) {
  const t = `${quoteIdent(schema)}.ttc_checkpoints`;
  const c = `${quoteIdent(schema)}.ttc_conversation_entries`;
  const sql = {
    table: t,
    entries: c,
    migrations: `${quoteIdent(schema)}.ttc_schema_migrations`,
    /** One record by key: `$1` key. */
    GET: `SELECT ${ROW_COLUMNS} FROM ${t} WHERE key ${EQ} $1::pg_catalog.text`,
    /** One record by (namespace, call id): `$1`, `$2`. */
    GET_BY_CALL: `SELECT ${ROW_COLUMNS} FROM ${t} WHERE namespace ${EQ} $1::pg_catalog.text AND call_id ${EQ} $2::pg_catalog.text`,
    /**
     * Create-if-absent: inserts the row unless its key, (namespace, call id) or dedupe key exists; one row
     * `inserted = true` when it did. (The row it conflicted with is read with {@link EXISTING}: one
     * statement returning both costs twice the server CPU of this one on the fresh-call path,
     * measured, for one round trip saved on the rarer existing-record path.) `$1`..`$10`: key,
     * namespace, call id, tool name, status, revision, updated_at, body, dedupe key and dedupe until (or nulls).
     */
    INSERT: `INSERT INTO ${t} (key, namespace, call_id, tool_name, status, revision, updated_at, body, dedupe_key, dedupe_until)
  VALUES ($1::pg_catalog.text, $2::pg_catalog.text, $3::pg_catalog.text, $4::pg_catalog.text, $5::pg_catalog.text, $6::pg_catalog.int8, $7::pg_catalog.timestamptz, $8::pg_catalog.text, $9::pg_catalog.text, $10::pg_catalog.timestamptz)
  ON CONFLICT DO NOTHING RETURNING true AS inserted`,
    /**
     * Releases dedupe key `$1` from a settled holder (its result stored) whose window ended at or
     * before `$2` (an insert then takes it over). An unfinished claim keeps it: its effect may still land.
     */
    RELEASE_EXPIRED: `UPDATE ${t} SET dedupe_key = NULL WHERE dedupe_key ${EQ} $1::pg_catalog.text AND dedupe_until ${LE} $2::pg_catalog.timestamptz
  AND status ${EQ} ANY ('{completed,delivering,delivered}'::pg_catalog.text[])`,
    /** Clears the dedupe key of row `$1` if it is still at revision `$2` (`releaseDedupeKey`). */
    RELEASE_DEDUPE_KEY: `UPDATE ${t} SET dedupe_key = NULL WHERE key ${EQ} $1::pg_catalog.text AND revision ${EQ} $2::pg_catalog.int8 AND dedupe_key IS NOT NULL`,
    /**
     * The row an insert conflicted with: the same key first, else the (namespace, call id) holder,
     * else the holder of the dedupe key. `$1`..`$4` (`$4` null: no dedupe key).
     */
    EXISTING: `SELECT ${ROW_COLUMNS} FROM ${t} WHERE key ${EQ} $1::pg_catalog.text OR (namespace ${EQ} $2::pg_catalog.text AND call_id ${EQ} $3::pg_catalog.text) OR dedupe_key ${EQ} $4::pg_catalog.text
  ORDER BY (key ${EQ} $1::pg_catalog.text) DESC, (namespace ${EQ} $2::pg_catalog.text AND call_id ${EQ} $3::pg_catalog.text) DESC LIMIT 1`,
    /** The compare-and-swap: `$1` key, `$2` expected revision, `$3`..`$6` status, revision, updated_at, body. */
    CAS: `UPDATE ${t} SET status = $3::pg_catalog.text, revision = $4::pg_catalog.int8, updated_at = $5::pg_catalog.timestamptz, body = $6::pg_catalog.text
  WHERE key ${EQ} $1::pg_catalog.text AND revision ${EQ} $2::pg_catalog.int8`,
    /** The CAS that also requires the stored body to be the one the caller read: `$7` its SHA-256 (hex). */
    CAS_BODY: `UPDATE ${t} SET status = $3::pg_catalog.text, revision = $4::pg_catalog.int8, updated_at = $5::pg_catalog.timestamptz, body = $6::pg_catalog.text
  WHERE key ${EQ} $1::pg_catalog.text AND revision ${EQ} $2::pg_catalog.int8 AND ${digest('body')} ${EQ} $7::pg_catalog.text`,
    /** The records of keys `$1` (`getMany`; absent keys are missing). */
    GET_MANY: `SELECT ${ROW_COLUMNS} FROM ${t} WHERE key ${EQ} ANY ($1::pg_catalog.text[])`,
    /**
     * Create-if-absent of many rows in one statement (`writeGroup`), in key order (so two
     * overlapping groups wait for each other's keys in one order): `$1`..`$8` arrays of the
     * {@link INSERT} columns. Returns the key of each row it inserted.
     */
    INSERT_MANY: `INSERT INTO ${t} (key, namespace, call_id, tool_name, status, revision, updated_at, body)
  SELECT v.key, v.namespace, v.call_id, v.tool_name, v.status, v.revision, v.updated_at, v.body
  FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[]), pg_catalog.unnest($3::pg_catalog.text[]), pg_catalog.unnest($4::pg_catalog.text[]),
    pg_catalog.unnest($5::pg_catalog.text[]), pg_catalog.unnest($6::pg_catalog.int8[]), pg_catalog.unnest($7::pg_catalog.timestamptz[]), pg_catalog.unnest($8::pg_catalog.text[]))
    AS v(key, namespace, call_id, tool_name, status, revision, updated_at, body)
  ORDER BY v.key
  ON CONFLICT DO NOTHING RETURNING key`,
    /**
     * For each insert that found a row (`$1` keys, `$2` namespaces, `$3` call ids): the row
     * holding that key, else the row holding that (namespace, call id), as {@link EXISTING}; `i`
     * is the 1-based position in `$1`.
     */
    EXISTING_MANY: `SELECT v.i, e.key, e.status, e.revision, e.updated_at, e.body
  FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[]), pg_catalog.unnest($3::pg_catalog.text[])) WITH ORDINALITY AS v(key, namespace, call_id, i)
  CROSS JOIN LATERAL (SELECT ${ROW_COLUMNS} FROM ${t}
    WHERE key ${EQ} v.key OR (namespace ${EQ} v.namespace AND call_id ${EQ} v.call_id) ORDER BY (key ${EQ} v.key) DESC LIMIT 1) AS e`,
    /** Locks the rows of keys `$1` in key order (`writeGroup`'s compare-and-swaps then never deadlock with another group's). */
    LOCK_MANY: `SELECT key FROM ${t} WHERE key ${EQ} ANY ($1::pg_catalog.text[]) ORDER BY key FOR UPDATE`,
    /**
     * Many compare-and-swaps in one statement, each as {@link CAS_BODY}: `$1` keys, `$2`
     * expected revisions, `$3`..`$6` status, revision, updated_at, body arrays, `$7` the expected
     * bodies' SHA-256 (hex). Returns the key of each row it replaced.
     */
    CAS_MANY: `UPDATE ${t} AS t SET status = v.status, revision = v.revision, updated_at = v.updated_at, body = v.body
  FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.int8[]), pg_catalog.unnest($3::pg_catalog.text[]), pg_catalog.unnest($4::pg_catalog.int8[]),
    pg_catalog.unnest($5::pg_catalog.timestamptz[]), pg_catalog.unnest($6::pg_catalog.text[]), pg_catalog.unnest($7::pg_catalog.text[]))
    AS v(key, expected_revision, status, revision, updated_at, body, expected_body)
  WHERE t.key ${EQ} v.key AND t.revision ${EQ} v.expected_revision AND ${digest('t.body')} ${EQ} v.expected_body
  RETURNING t.key`,
    /** A page of records by status: `$1` statuses, `$2` older-than or null, `$3`/`$4` the cursor (updated_at, key) or null, `$5` page size. */
    LIST: `SELECT ${ROW_COLUMNS} FROM ${t}
  WHERE status ${EQ} ANY ($1::pg_catalog.text[]) AND ($2::pg_catalog.timestamptz IS NULL OR updated_at ${LT} $2::pg_catalog.timestamptz)
    AND ($3::pg_catalog.timestamptz IS NULL OR (updated_at, key) ${GT} ($3::pg_catalog.timestamptz, $4::pg_catalog.text))
  ORDER BY updated_at, key LIMIT $5::pg_catalog.int8`,
    /** A page of rows in key order after `$1`, `$2` rows. */
    SCAN: `SELECT ${ROW_COLUMNS} FROM ${t} WHERE key ${GT} $1::pg_catalog.text ORDER BY key LIMIT $2::pg_catalog.int8`,
    /** A page of delivered rows older than `$1` whose dedupe window (if any) ended by `$5`, after the cursor `$2`/`$3`, `$4` rows. */
    PRUNABLE: `SELECT ${ROW_COLUMNS} FROM ${t}
  WHERE status ${EQ} 'delivered'::pg_catalog.text AND updated_at ${LT} $1::pg_catalog.timestamptz
    AND (dedupe_until IS NULL OR dedupe_until ${LE} $5::pg_catalog.timestamptz)
    AND ($2::pg_catalog.timestamptz IS NULL OR (updated_at, key) ${GT} ($2::pg_catalog.timestamptz, $3::pg_catalog.text))
  ORDER BY updated_at, key LIMIT $4::pg_catalog.int8`,
    /** Deletes verified rows by key, revision, status and exact body (a row changed or damaged since it was decoded stays). */
    PRUNE: `DELETE FROM ${t} AS t USING ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.int8[]), pg_catalog.unnest($3::pg_catalog.text[])) AS d(key, revision, digest)
  WHERE t.key ${EQ} d.key AND t.revision ${EQ} d.revision AND t.status ${EQ} 'delivered'::pg_catalog.text AND ${digest('t.body')} ${EQ} d.digest`,
    /**
     * Inserts the absent entries of log `$1` in key order (`$2` keys, `$3` bodies, `$4` byte
     * counts, `$5` created_at) and, in the same statement, returns each key it inserted
     * (`inserted = true`) and each entry of `$2` that already existed and is visible to the
     * statement's snapshot (`inserted = false`, with body and bytes). A key in neither list was
     * committed concurrently after the snapshot: read it with {@link GET_ENTRIES}.
     */
    PUT_ENTRIES: `WITH ins AS (
  INSERT INTO ${c} (log_id, entry_key, body, bytes, created_at)
  SELECT $1::pg_catalog.text, u.k, u.b, u.n, $5::pg_catalog.timestamptz
  FROM ROWS FROM (pg_catalog.unnest($2::pg_catalog.text[]), pg_catalog.unnest($3::pg_catalog.text[]), pg_catalog.unnest($4::pg_catalog.int8[])) AS u(k, b, n) ORDER BY u.k
  ON CONFLICT DO NOTHING RETURNING entry_key
)
SELECT entry_key, true AS inserted, NULL::pg_catalog.text AS body, NULL::pg_catalog.int8 AS bytes FROM ins
UNION ALL
SELECT e.entry_key, false, e.body, e.bytes FROM ${c} AS e WHERE e.log_id ${EQ} $1::pg_catalog.text AND e.entry_key ${EQ} ANY ($2::pg_catalog.text[])`,
    /** Entries of log `$1` with keys in `$2`. */
    GET_ENTRIES: `SELECT entry_key, body, bytes FROM ${c} WHERE log_id ${EQ} $1::pg_catalog.text AND entry_key ${EQ} ANY ($2::pg_catalog.text[])`,
    /** Deletes every log whose newest entry is older than `$1`, in one statement; returns how many logs. */
    PRUNE_LOGS: `WITH stale AS (SELECT log_id FROM ${c} GROUP BY log_id HAVING pg_catalog.max(created_at) ${LT} $1::pg_catalog.timestamptz),
  gone AS (DELETE FROM ${c} AS e USING stale WHERE e.log_id ${EQ} stale.log_id RETURNING e.log_id)
SELECT pg_catalog.count(DISTINCT log_id)::pg_catalog.int4 AS n FROM gone`,
  } as const;
  return {
    ...sql,
    /**
     * The hot single statements worth preparing (planned once per server connection instead of
     * on every call): the ones of a tool call's lifecycle. Paging, pruning and transactions stay
     * unnamed.
     */
    prepared: new Set<string>([sql.GET, sql.GET_BY_CALL, sql.INSERT, sql.EXISTING, sql.CAS, sql.CAS_BODY, sql.GET_ENTRIES, sql.GET_MANY]),
  };
}

/**
 * The prepared-statement name of `text`: `ttc_` and the first 24 hex digits (96 bits) of its
 * SHA-256. Content-addressed, so two statements of one name are the same SQL (same tables, same
 * explicit parameter types): a pooler that lets a Bind reach a server connection where another
 * client prepared that name runs exactly this statement, never another schema's or another
 * version's (the fixed names `ttc_insert`, `ttc_cas` of earlier development builds could).
 */
export function statementName(text: string): string {
  return `ttc_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
}

/** The statements of one store. */
export type PgStatements = ReturnType<typeof pgStatements>;
