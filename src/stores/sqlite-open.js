// @ts-check
/**
 * Opens the SQLite store's connection for its executor (docs/protocol.md#side-stores): creates the file and its
 * missing directories when absent (mode 0600 and 0700, see {@link restrictFileModes} and
 * {@link createDirectory}), sets WAL, `synchronous = FULL` (every commit fsynced) and the busy timeout,
 * and applies the schema migrations under `BEGIN IMMEDIATE`. Plain
 * JavaScript, like the executor (`./sqlite-executor.js`); the migrations are passed in.
 */
'use strict';

const fs = require('node:fs');
const { dirname, resolve } = require('node:path');
const { SqliteExecutor, wireDriverError } = require('./sqlite-executor');

/**
 * @typedef {import('./sqlite-protocol').WireError} WireError
 * @typedef {import('./sqlite-protocol').SqliteExecutorOptions} SqliteExecutorOptions
 * @typedef {import('better-sqlite3').Database} Database
 */

/**
 * Opens (creating it and its missing directories when absent) the database, sets WAL, `synchronous = FULL` and the busy
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
    if (options.path !== ':memory:' && options.path !== '') {
      const refused = createDirectory(options.path);
      if (refused !== null) return { ok: false, error: refused };
      restrictFileModes(options.path);
    }
    db = new Database(options.path, { timeout: options.busyTimeoutMs });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
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

/** Mode of a directory the store creates for its file: the owner's only, as the file is. */
const STORE_DIRECTORY_MODE = 0o700;

/**
 * Creates the missing directories above the database file (`mkdir -p`, mode 0700 before the
 * umask); existing ones are left as they are. A directory that cannot be created (a parent is a
 * file, no permission) is the open's `unavailable` error, with the file system's error as the
 * driver error and a note naming the directory.
 *
 * @param {string} path the database file
 * @returns {WireError | null}
 */
function createDirectory(path) {
  const directory = dirname(resolve(path));
  try {
    fs.mkdirSync(directory, { recursive: true, mode: STORE_DIRECTORY_MODE });
    return null;
  } catch (error) {
    return { kind: 'unavailable', what: 'open', driver: wireDriverError(error), note: `its directory ${directory} could not be created` };
  }
}

/** Mode of the store's files: read and write for the owner only (they hold tool results, receipts and keys). */
const STORE_FILE_MODE = 0o600;

/**
 * Makes the database file and its `-wal` and `-shm` companions readable by their owner only,
 * before SQLite opens the file. An absent database file is created empty with mode 0600 whatever
 * the umask; SQLite then creates `-wal` and `-shm` with the database file's mode. An existing
 * file (of the three) that this process's user owns and that group or others may access is
 * tightened to 0600; a file another user owns is left as it is (its owner decides, e.g. a
 * store shared by a group on purpose). Throws the file system's error (reported as the open's
 * `unavailable` error, nothing else written).
 *
 * @param {string} path the database file
 */
function restrictFileModes(path) {
  try {
    const fd = fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL, STORE_FILE_MODE);
    try {
      fs.fchmodSync(fd, STORE_FILE_MODE); // the umask may have taken bits off the owner's too
    } finally {
      fs.closeSync(fd);
    }
  } catch (error) {
    const code = /** @type {NodeJS.ErrnoException} */ (error).code;
    // No directory (removed since createDirectory): SQLite's own open reports it ("the directory does not exist").
    if (code === 'ENOENT') return;
    if (code !== 'EEXIST') throw error;
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : null;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    let stat;
    try {
      stat = fs.statSync(file);
    } catch (error) {
      if (/** @type {NodeJS.ErrnoException} */ (error).code === 'ENOENT') continue;
      throw error;
    }
    if (stat.isFile() && uid !== null && stat.uid === uid && (stat.mode & 0o077) !== 0) fs.chmodSync(file, STORE_FILE_MODE);
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

module.exports = { openExecutor, STORE_FILE_MODE };
