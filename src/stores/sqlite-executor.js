// @ts-check
/**
 * The SQL work of the SQLite store (docs/protocol.md#side-stores, #cost) on one open better-sqlite3
 * connection (opened by `./sqlite-open.js`): answers reads and commits writes in groups. It runs on
 * the store's worker thread (`./sqlite-worker.js`), or on the calling thread for a private
 * `:memory:` database (see `./sqlite-thread.ts`).
 *
 * Plain JavaScript on purpose: a worker thread loads it with no TypeScript loader, the same way
 * under jest (ts-jest), tsx and the compiled package (`tsc` with `allowJs` emits it beside
 * `sqlite-store.js`); `tsc` checks it (`@ts-check`) against the message types of
 * `./sqlite-protocol.ts`.
 *
 * Group commit: one call of {@link SqliteExecutor.run} takes every request queued since the
 * last one. Reads run first, outside any transaction (a WAL read takes no lock), and are
 * answered at once. Then every write runs in ONE `BEGIN IMMEDIATE` transaction, each under its
 * own savepoint: a write whose statement fails is rolled back to its savepoint and fails alone
 * (STORE_UNAVAILABLE, nothing of it written); the others commit. Each write is answered only
 * after the COMMIT returned (durable: `synchronous = FULL` fsyncs the WAL).
 *
 * A failed COMMIT: when the transaction is still open, it is rolled back and nothing was
 * written. Otherwise the outcome is unknown for the whole group, and a re-read settles it: a
 * write whose exact body is stored proves the group committed (every write answers normally);
 * a row provably not holding a write proves it did not (STORE_UNAVAILABLE); else every write
 * that changed something is STORE_OUTCOME_UNKNOWN. A write that changed nothing (a lost
 * compare-and-swap, an insert that found a row) answers normally in every case.
 */
'use strict';

const { ENTRY_KEY_CHUNK, KEY_CHUNK, entriesSql, listSql, prepare, rowsSql } = require('./sqlite-statements');
const { JobFailure, runWrite, verifyWrite } = require('./sqlite-writes');

/**
 * @typedef {import('./sqlite-protocol').SqliteRequest} SqliteRequest
 * @typedef {import('./sqlite-protocol').SqliteReadRequest} SqliteReadRequest
 * @typedef {import('./sqlite-protocol').SqliteWriteRequest} SqliteWriteRequest
 * @typedef {import('./sqlite-protocol').SqliteControlRequest} SqliteControlRequest
 * @typedef {import('./sqlite-protocol').SqliteResponse} SqliteResponse
 * @typedef {import('./sqlite-protocol').SqliteBatchAnswer} SqliteBatchAnswer
 * @typedef {import('./sqlite-protocol').SqliteCommitFault} SqliteCommitFault
 * @typedef {import('./sqlite-protocol').SqliteRow} SqliteRow
 * @typedef {import('./sqlite-protocol').SqliteEntryRow} SqliteEntryRow
 * @typedef {import('./sqlite-protocol').WireError} WireError
 * @typedef {import('./sqlite-protocol').WireDriverError} WireDriverError
 * @typedef {import('better-sqlite3').Database} Database
 * @typedef {import('better-sqlite3').Statement<unknown[], unknown>} Statement
 * @typedef {import('./sqlite-statements').Statements} Statements
 * @typedef {{ ok: true, value: unknown, changed: boolean } | { ok: false, error: WireError }} JobResult
 * @typedef {import('./sqlite-writes').Verdict} Verdict
 */

/** Retries of a whole group that SQLite refused with SQLITE_BUSY_SNAPSHOT (a stale read snapshot). */
const MAX_SNAPSHOT_RETRIES = 20;

/** The ops that write (a group commit); every other op is a read or a control request. */
const WRITE_OPS = new Set(['insert', 'releaseDedupeKey', 'cas', 'group', 'pruneLogs', 'deleteRows', 'putEntries']);

/**
 * Whether `request` is a write (joins a group commit).
 * @param {{ op: string }} request
 * @returns {boolean}
 */
function isWriteRequest(request) {
  return WRITE_OPS.has(request.op);
}

/** One connection and its prepared statements; see the module comment. */
class SqliteExecutor {
  /** @type {Database} */
  #db;
  /** @type {Statements} */
  #s;
  /** @type {Map<number, Statement>} `listByStatus` pages by number of statuses. */
  #lists = new Map();
  /** @type {Statement | null} */
  #fullChunk = null;
  /** @type {Statement | null} */
  #fullRowChunk = null;
  /** @type {SqliteCommitFault | null} */
  #fault = null;

  /** @param {Database} db */
  constructor(db) {
    this.#db = db;
    this.#s = prepare(db);
  }

  /**
   * Runs one batch: reads and control requests in order, answered at once through `emit`; then
   * every write in one group commit, answered through `emit` with the group's report.
   * @param {readonly SqliteRequest[]} requests
   * @param {(answer: SqliteBatchAnswer) => void} emit
   */
  run(requests, emit) {
    /** @type {(SqliteWriteRequest & { id: number })[]} */
    const writes = [];
    /** @type {SqliteResponse[]} */
    const answers = [];
    for (const request of requests) {
      if (isWriteRequest(request)) writes.push(/** @type {SqliteWriteRequest & { id: number }} */ (request));
      else answers.push(this.#read(/** @type {(SqliteReadRequest | SqliteControlRequest) & { id: number }} */ (request)));
    }
    if (answers.length > 0) emit({ responses: answers });
    if (writes.length > 0) emit(this.#commitGroup(writes));
  }

  /** Closes the connection (idempotent). */
  close() {
    if (this.#db.open) this.#db.close();
  }

  /**
   * @param {(SqliteReadRequest | SqliteControlRequest) & { id: number }} request
   * @returns {SqliteResponse}
   */
  #read(request) {
    try {
      return { id: request.id, ok: true, value: this.#readValue(request) };
    } catch (error) {
      return { id: request.id, ok: false, error: { kind: 'unavailable', what: 'read', driver: wireDriverError(error) } };
    }
  }

  /**
   * @param {SqliteReadRequest | SqliteControlRequest} request
   * @returns {unknown}
   */
  #readValue(request) {
    const s = this.#s;
    switch (request.op) {
      case 'get':
        return s.get.get(request.key) ?? null;
      case 'getByCall':
        return s.getByCall.get(request.namespace, request.callId) ?? null;
      case 'getMany':
        return this.#rows(request.keys);
      case 'list':
        return this.#listStatement(request.statuses.length).all(...request.statuses, request.olderThan, ...request.after, request.limit);
      case 'scan':
        return s.scan.all(request.after, request.limit);
      case 'pruneCandidates':
        return s.pruneCandidates.all(request.olderThan, request.now, ...request.after, request.limit);
      case 'entries':
        return this.#entries(request.logId, request.keys);
      case 'settings':
        return {
          journalMode: this.#db.pragma('journal_mode', { simple: true }),
          synchronous: this.#db.pragma('synchronous', { simple: true }),
          busyTimeoutMs: this.#db.pragma('busy_timeout', { simple: true }),
          userVersion: this.#db.pragma('user_version', { simple: true }),
        };
      case 'fault':
        this.#fault = request.commit;
        return null;
      default:
        throw new TypeError(`unknown SQLite request ${JSON.stringify(/** @type {{ op: unknown }} */ (request).op)}`);
    }
  }

  /**
   * @param {number} count
   * @returns {Statement}
   */
  #listStatement(count) {
    let statement = this.#lists.get(count);
    if (statement === undefined) {
      statement = this.#db.prepare(listSql(count));
      this.#lists.set(count, statement);
    }
    return statement;
  }

  /**
   * The rows of `keys`, in chunks of {@link KEY_CHUNK} (one statement each).
   * @param {readonly string[]} keys distinct keys
   * @returns {SqliteRow[]}
   */
  #rows(keys) {
    /** @type {SqliteRow[]} */
    const rows = [];
    for (let i = 0; i < keys.length; i += KEY_CHUNK) {
      const chunk = keys.slice(i, i + KEY_CHUNK);
      const statement = chunk.length === KEY_CHUNK ? (this.#fullRowChunk ??= this.#db.prepare(rowsSql(KEY_CHUNK))) : this.#db.prepare(rowsSql(chunk.length));
      rows.push(.../** @type {SqliteRow[]} */ (statement.all(...chunk)));
    }
    return rows;
  }

  /**
   * @param {string} logId
   * @param {readonly string[]} keys distinct keys
   * @returns {SqliteEntryRow[]}
   */
  #entries(logId, keys) {
    /** @type {SqliteEntryRow[]} */
    const rows = [];
    for (let i = 0; i < keys.length; i += ENTRY_KEY_CHUNK) {
      const chunk = keys.slice(i, i + ENTRY_KEY_CHUNK);
      const statement = chunk.length === ENTRY_KEY_CHUNK ? (this.#fullChunk ??= this.#db.prepare(entriesSql(ENTRY_KEY_CHUNK))) : this.#db.prepare(entriesSql(chunk.length));
      rows.push(.../** @type {SqliteEntryRow[]} */ (statement.all(logId, ...chunk)));
    }
    return rows;
  }

  /**
   * One group commit, retried whole when SQLite answers SQLITE_BUSY_SNAPSHOT.
   * @param {readonly (SqliteWriteRequest & { id: number })[]} writes
   * @returns {SqliteBatchAnswer}
   */
  #commitGroup(writes) {
    for (let attempt = 0; ; attempt += 1) {
      const answer = this.#tryGroup(writes, attempt < MAX_SNAPSHOT_RETRIES);
      if (answer !== null) return answer;
    }
  }

  /**
   * @param {readonly (SqliteWriteRequest & { id: number })[]} writes
   * @param {boolean} mayRetry
   * @returns {SqliteBatchAnswer | null} null to retry the group (nothing was written).
   */
  #tryGroup(writes, mayRetry) {
    const s = this.#s;
    try {
      s.begin.run();
    } catch (error) {
      if (mayRetry && driverCode(error) === 'SQLITE_BUSY_SNAPSHOT') return null;
      return failAll(writes, { kind: 'unavailable', what: 'write', driver: wireDriverError(error) });
    }
    /** @type {JobResult[]} */
    const results = [];
    for (const job of writes) {
      try {
        s.savepoint.run();
      } catch (error) {
        return this.#abandon(writes, error, mayRetry);
      }
      try {
        const done = runWrite(this.#s, job);
        s.release.run();
        results.push({ ok: true, value: done.value, changed: done.changed });
      } catch (error) {
        // A statement error may have ended the whole transaction (SQLITE_FULL, SQLITE_IOERR, …).
        if (!this.#db.inTransaction) return this.#abandon(writes, error, mayRetry);
        try {
          s.rollbackTo.run();
          s.release.run();
        } catch (rollback) {
          return this.#abandon(writes, rollback, mayRetry);
        }
        results.push({ ok: false, error: error instanceof JobFailure ? error.wire : { kind: 'unavailable', what: 'write', driver: wireDriverError(error) } });
      }
    }
    try {
      this.#commit();
    } catch (error) {
      return this.#afterFailedCommit(writes, results, error, mayRetry);
    }
    return { responses: respond(writes, results), group: { committed: true, writes: writes.length, changed: changedCount(results) } };
  }

  /**
   * The transaction is lost before COMMIT: roll back what is left; nothing of the group was written.
   * @param {readonly (SqliteWriteRequest & { id: number })[]} writes
   * @param {unknown} error
   * @param {boolean} mayRetry
   * @returns {SqliteBatchAnswer | null}
   */
  #abandon(writes, error, mayRetry) {
    this.#rollbackQuietly();
    if (mayRetry && driverCode(error) === 'SQLITE_BUSY_SNAPSHOT') return null;
    return failAll(writes, { kind: 'unavailable', what: 'write', driver: wireDriverError(error) });
  }

  /** COMMIT, or the injected fault of a test (see `SqliteCommitFault`). */
  #commit() {
    const fault = this.#fault;
    this.#fault = null;
    if (fault === 'open') throw injectedIoError('before COMMIT ran');
    if (fault === 'rolled-back') {
      this.#s.rollback.run();
      throw injectedIoError('after the transaction was rolled back');
    }
    this.#s.commit.run();
    if (fault === 'committed') throw injectedIoError('after the transaction committed');
  }

  /**
   * @param {readonly (SqliteWriteRequest & { id: number })[]} writes
   * @param {readonly JobResult[]} results
   * @param {unknown} error
   * @param {boolean} mayRetry
   * @returns {SqliteBatchAnswer | null}
   */
  #afterFailedCommit(writes, results, error, mayRetry) {
    const driver = wireDriverError(error);
    if (this.#db.inTransaction) {
      this.#rollbackQuietly();
      if (!this.#db.inTransaction) {
        if (mayRetry && driver.code === 'SQLITE_BUSY_SNAPSHOT') return null;
        return settled(writes, results, false, { kind: 'unavailable', what: 'write', driver, note: 'the COMMIT failed and was rolled back' });
      }
    }
    /** @type {Verdict[]} */
    const verdicts = writes.map((job, i) => {
      const result = results[i];
      return result?.ok && result.changed ? verifyWrite(this.#s, job, result.value) : 'unknown';
    });
    const present = verdicts.includes('present');
    const absent = verdicts.includes('absent');
    if (present && !absent) return settled(writes, results, true, null);
    if (absent && !present)
      return settled(writes, results, false, { kind: 'unavailable', what: 'write', driver, note: 'the COMMIT failed; a re-read shows the transaction did not commit' });
    return settled(writes, results, false, {
      kind: 'unknown',
      message: `the COMMIT failed (${driver.code ?? driver.name} ${driver.message}) and a re-read could not settle whether the write is stored`,
      driver,
    });
  }

  #rollbackQuietly() {
    if (!this.#db.inTransaction) return;
    try {
      this.#s.rollback.run();
    } catch {
      // the connection is failing; the transaction did not commit
    }
  }
}

/**
 * Every write of the group fails with `error`.
 * @param {readonly { id: number }[]} writes
 * @param {WireError} error
 * @returns {SqliteBatchAnswer}
 */
function failAll(writes, error) {
  return { responses: writes.map((job) => ({ id: job.id, ok: false, error })), group: { committed: false, writes: writes.length, changed: 0 } };
}

/**
 * The answers after a failed COMMIT: `committed` says whether the group is stored; when it is
 * not (or is unknown), every write that changed something fails with `failure`, the others
 * answer as they ran.
 * @param {readonly { id: number }[]} writes
 * @param {readonly JobResult[]} results
 * @param {boolean} committed
 * @param {WireError | null} failure
 * @returns {SqliteBatchAnswer}
 */
function settled(writes, results, committed, failure) {
  const adjusted = results.map((result) => (!committed && failure !== null && result.ok && result.changed ? /** @type {JobResult} */ ({ ok: false, error: failure }) : result));
  return { responses: respond(writes, adjusted), group: { committed, writes: writes.length, changed: committed ? changedCount(results) : 0 } };
}

/**
 * How many of `results` changed a row (an insert that created, a compare-and-swap that matched).
 * @param {readonly JobResult[]} results
 * @returns {number}
 */
function changedCount(results) {
  return results.filter((result) => result.ok && result.changed === true).length;
}

/**
 * @param {readonly { id: number }[]} writes
 * @param {readonly JobResult[]} results
 * @returns {SqliteResponse[]}
 */
function respond(writes, results) {
  return writes.map((job, i) => {
    const result = /** @type {JobResult} */ (results[i]);
    return result.ok ? { id: job.id, ok: true, value: result.value } : { id: job.id, ok: false, error: result.error };
  });
}

/**
 * The driver's error code (`SQLITE_BUSY`, …), or the error's name for the driver's own argument checks.
 * @param {unknown} error
 * @returns {string | undefined}
 */
function driverCode(error) {
  const code = /** @type {{ code?: unknown } | null} */ (error)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : undefined;
}

/**
 * @param {unknown} error
 * @returns {WireDriverError}
 */
function wireDriverError(error) {
  const code = /** @type {{ code?: unknown } | null} */ (error)?.code;
  return {
    name: error instanceof Error ? error.name : 'Error',
    message: error instanceof Error ? error.message : String(error),
    ...(typeof code === 'string' ? { code } : {}),
  };
}

/**
 * @param {string} when
 * @returns {Error}
 */
function injectedIoError(when) {
  return Object.assign(new Error(`disk I/O error (injected by a test: the COMMIT failed ${when})`), { name: 'SqliteError', code: 'SQLITE_IOERR' });
}

module.exports = { isWriteRequest, wireDriverError, SqliteExecutor };
