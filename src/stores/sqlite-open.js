// @ts-check
/**
 * Opens the SQLite store's connection for its executor (SPEC §3): creates the file when
 * absent, sets WAL, `synchronous = FULL` (every commit fsynced) and the busy timeout, registers
 * `ttc_sha256(body)`, and applies the schema migrations under `BEGIN IMMEDIATE`. Plain
 * JavaScript, like the executor (`./sqlite-executor.js`); the migrations are passed in.
 */
'use strict';

const { createHash } = require('node:crypto');
const { SqliteExecutor, wireDriverError } = require('./sqlite-executor');

/**
 * @typedef {import('./sqlite-protocol').WireError} WireError
 * @typedef {import('./sqlite-protocol').SqliteExecutorOptions} SqliteExecutorOptions
 * @typedef {import('better-sqlite3').Database} Database
 */

/**
 * Lowercase hex SHA-256 of a body's UTF-8 bytes: SQLite's `ttc_sha256(body)`. Must equal
 * `bodyDigest` of `./row-codec.ts` (the digest a compare-and-swap with `expected` matches).
 * @param {string} body
 * @returns {string}
 */
function bodyDigest(body) {
  return createHash('sha256').update(body, 'utf8').digest('hex');
}

/**
 * Opens (creating when absent) the database, sets WAL, `synchronous = FULL` and the busy
 * timeout, and runs the migrations. Never throws: a failure is returned as a {@link WireError}
 * (`unavailable` with the driver error, or `schema` for a file migrated by newer code, left
 * untouched).
 *
 * @param {SqliteExecutorOptions} options
 * @returns {{ ok: true, executor: SqliteExecutor } | { ok: false, error: WireError }}
 */
function openExecutor(options) {
  /** @type {Database | undefined} */
  let db;
  try {
    /** @type {typeof import('better-sqlite3')} */
    const Database = require('better-sqlite3');
    db = new Database(options.path, { timeout: options.busyTimeoutMs });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.function('ttc_sha256', { deterministic: true }, (body) => (typeof body === 'string' ? bodyDigest(body) : null));
    const refused = migrate(db, options.migrations);
    if (refused !== null) {
      db.close();
      return { ok: false, error: refused };
    }
    return { ok: true, executor: new SqliteExecutor(db) };
  } catch (error) {
    try {
      db?.close();
    } catch {
      // already failing; the first error is the one to report
    }
    return { ok: false, error: { kind: 'unavailable', what: 'open', driver: wireDriverError(error) } };
  }
}

/**
 * Applies the missing migrations under `BEGIN IMMEDIATE`.
 * @param {Database} db
 * @param {SqliteExecutorOptions['migrations']} migrations
 * @returns {WireError | null} a `schema` error when the file is newer than this code.
 */
function migrate(db, migrations) {
  const latest = migrations[migrations.length - 1]?.version ?? 0;
  const current = () => Number(db.pragma('user_version', { simple: true }));
  if (current() === latest) return null;
  db.exec('BEGIN IMMEDIATE');
  try {
    const version = current();
    if (version > latest) {
      db.exec('ROLLBACK');
      return { kind: 'schema', actual: version, supported: latest };
    }
    for (const step of migrations) {
      if (step.version <= version) continue;
      db.exec(step.sql);
      db.pragma(`user_version = ${step.version}`);
    }
    db.exec('COMMIT');
    return null;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

module.exports = { openExecutor, bodyDigest };
