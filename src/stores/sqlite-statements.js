// @ts-check
/**
 * The SQL of the SQLite store (docs/protocol.md#side-stores): every statement its executor
 * (`./sqlite-executor.js`) prepares, on the tables of `./migrations/sqlite.ts`. Plain JavaScript,
 * like the executor.
 */
'use strict';

/**
 * @typedef {import('better-sqlite3').Database} Database
 * @typedef {import('better-sqlite3').Statement<unknown[], unknown>} Statement
 * @typedef {'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo' | 'insert' | 'get' | 'getByCall' | 'getByDedupeKey' | 'releaseExpired' | 'releaseDedupeKey' | 'cas' | 'casBody' | 'scan' | 'pruneCandidates' | 'delete' | 'stillThere' | 'getEntry' | 'insertEntry' | 'staleLogs' | 'deleteStaleLogs'} StatementName
 * @typedef {Readonly<Record<StatementName, Statement>>} Statements
 */

const COLUMNS = 'key, status, revision, updated_at, body';
/** Keys per conversation read: below SQLite's default limit of 32,766 bound parameters (999 before 3.32). */
const ENTRY_KEY_CHUNK = 500;
/** Keys per `getMany` statement (the same bound as {@link ENTRY_KEY_CHUNK}). */
const KEY_CHUNK = 500;
/** The conversation logs whose newest entry is older than the bound parameter. */
const STALE_LOGS = 'SELECT log_id FROM ttc_conversation_entries GROUP BY log_id HAVING max(created_at) < ?';

/**
 * One page of `listByStatus` for `count` statuses: parameters are the statuses, the
 * `updated_at` bound, the `(updated_at, key)` cursor and the page size.
 * @param {number} count
 * @returns {string}
 */
function listSql(count) {
  const placeholders = Array.from({ length: count }, () => '?').join(', ');
  return `SELECT ${COLUMNS} FROM ttc_checkpoints WHERE status IN (${placeholders}) AND updated_at < ? AND (updated_at, key) > (?, ?) ORDER BY updated_at, key LIMIT ?`;
}

/**
 * The rows of `count` keys: parameters are the keys.
 * @param {number} count
 * @returns {string}
 */
function rowsSql(count) {
  return `SELECT ${COLUMNS} FROM ttc_checkpoints WHERE key IN (${Array.from({ length: count }, () => '?').join(', ')})`;
}

/**
 * The entries of `count` keys of one log: parameters are the log id, then the keys.
 * @param {number} count
 * @returns {string}
 */
function entriesSql(count) {
  return `SELECT entry_key, body, bytes FROM ttc_conversation_entries WHERE log_id = ? AND entry_key IN (${Array.from({ length: count }, () => '?').join(', ')})`;
}

/**
 * The statements the executor runs, prepared once per connection.
 * @param {Database} db
 * @returns {Statements}
 */
function prepare(db) {
  return {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    savepoint: db.prepare('SAVEPOINT ttc_write'),
    release: db.prepare('RELEASE ttc_write'),
    rollbackTo: db.prepare('ROLLBACK TO ttc_write'),
    insert: db.prepare(
      `INSERT INTO ttc_checkpoints (key, namespace, call_id, tool_name, status, revision, updated_at, body, dedupe_key, dedupe_until)
       VALUES (@key, @namespace, @callId, @toolName, @status, @revision, @updatedAt, @body, @dedupeKey, @dedupeUntil)
       ON CONFLICT DO NOTHING`,
    ),
    get: db.prepare(`SELECT ${COLUMNS} FROM ttc_checkpoints WHERE key = ?`),
    getByCall: db.prepare(`SELECT ${COLUMNS} FROM ttc_checkpoints WHERE namespace = ? AND call_id = ?`),
    getByDedupeKey: db.prepare(`SELECT ${COLUMNS} FROM ttc_checkpoints WHERE dedupe_key = ?`),
    // ISO-8601 UTC text in toISOString() form sorts in time order.
    // Only a settled holder (its result stored) gives its key up: an unfinished claim may still apply its effect.
    releaseExpired: db.prepare(
      "UPDATE ttc_checkpoints SET dedupe_key = NULL WHERE dedupe_key = @dedupeKey AND dedupe_until <= @now AND status IN ('completed', 'delivering', 'delivered')",
    ),
    releaseDedupeKey: db.prepare('UPDATE ttc_checkpoints SET dedupe_key = NULL WHERE key = @key AND revision = @revision AND dedupe_key IS NOT NULL'),
    cas: db.prepare(
      `UPDATE ttc_checkpoints SET status = @status, revision = @revision, updated_at = @updatedAt, body = @body
       WHERE key = @key AND revision = @expectedRevision`,
    ),
    casBody: db.prepare(
      `UPDATE ttc_checkpoints SET status = @status, revision = @revision, updated_at = @updatedAt, body = @body
       WHERE key = @key AND revision = @expectedRevision AND body = @expectedBody`,
    ),
    scan: db.prepare(`SELECT ${COLUMNS} FROM ttc_checkpoints WHERE key > ? ORDER BY key LIMIT ?`),
    pruneCandidates: db.prepare(
      `SELECT ${COLUMNS} FROM ttc_checkpoints WHERE status = 'delivered' AND updated_at < ? AND (dedupe_until IS NULL OR dedupe_until <= ?) AND (updated_at, key) > (?, ?) ORDER BY updated_at, key LIMIT ?`,
    ),
    delete: db.prepare(`DELETE FROM ttc_checkpoints WHERE key = @key AND revision = @revision AND status = 'delivered' AND body = @body`),
    stillThere: db.prepare(`SELECT 1 FROM ttc_checkpoints WHERE key = @key AND revision = @revision AND body = @body`),
    getEntry: db.prepare('SELECT entry_key, body, bytes FROM ttc_conversation_entries WHERE log_id = ? AND entry_key = ?'),
    insertEntry: db.prepare('INSERT INTO ttc_conversation_entries (log_id, entry_key, body, bytes, created_at) VALUES (@logId, @key, @body, @bytes, @createdAt)'),
    staleLogs: db.prepare(`SELECT count(*) AS n FROM (${STALE_LOGS})`),
    deleteStaleLogs: db.prepare(`DELETE FROM ttc_conversation_entries WHERE log_id IN (${STALE_LOGS})`),
  };
}

module.exports = { ENTRY_KEY_CHUNK, KEY_CHUNK, entriesSql, listSql, prepare, rowsSql };
