// @ts-check
/**
 * The writes of the SQLite store (SPEC §3), each a function of the prepared statements: what it
 * does inside a group's transaction ({@link runWrite}), and how a re-read tells afterwards
 * whether it is stored ({@link verifyWrite}, used after a failed COMMIT). Plain JavaScript,
 * like the executor (`./sqlite-executor.js`).
 */
'use strict';

/**
 * @typedef {import('./sqlite-protocol').SqliteWriteRequest} SqliteWriteRequest
 * @typedef {import('./sqlite-protocol').SqliteRow} SqliteRow
 * @typedef {import('./sqlite-protocol').SqliteEntryRow} SqliteEntryRow
 * @typedef {import('./sqlite-protocol').WireError} WireError
 * @typedef {import('./sqlite-statements').Statements} Statements
 * @typedef {'present' | 'absent' | 'unknown'} Verdict
 */

/** A write that fails by itself without a driver error (its savepoint is rolled back all the same). */
class JobFailure extends Error {
  /** @param {WireError} wire */
  constructor(wire) {
    super(wire.kind);
    this.wire = wire;
  }
}

/**
 * One write inside the group's transaction (under its savepoint).
 * @param {Statements} s
 * @param {SqliteWriteRequest} job
 * @returns {{ value: unknown, changed: boolean }}
 */
function runWrite(s, job) {
  switch (job.op) {
    case 'insert': {
      const r = job.row;
      const params = { key: r.key, namespace: r.namespace, callId: r.callId, toolName: r.toolName, status: r.status, revision: r.revision, updatedAt: r.updatedAt, body: r.body };
      if (s.insert.run(params).changes === 1) return { value: { created: true }, changed: true };
      const existing = s.get.get(r.key) ?? s.getByCall.get(r.namespace, r.callId);
      if (existing === undefined) throw new JobFailure({ kind: 'unknown', message: `SQLite insert of ${r.key} changed nothing yet no row exists`, key: r.key });
      return { value: { created: false, row: existing }, changed: false };
    }
    case 'cas': {
      const r = job.row;
      const params = { key: r.key, status: r.status, revision: r.revision, updatedAt: r.updatedAt, body: r.body, expectedRevision: job.expectedRevision };
      const changes = job.expectedBody === null ? s.cas.run(params).changes : s.casBody.run({ ...params, expectedBody: job.expectedBody }).changes;
      return { value: changes === 1, changed: changes === 1 };
    }
    case 'pruneLogs': {
      const logs = /** @type {{ n: number }} */ (s.staleLogs.get(job.olderThan)).n;
      if (logs > 0) s.deleteStaleLogs.run(job.olderThan);
      return { value: logs, changed: logs > 0 };
    }
    case 'deleteRows': {
      let count = 0;
      for (const row of job.rows) count += s.delete.run({ key: row.key, revision: row.revision, body: row.body }).changes;
      return { value: count, changed: count > 0 };
    }
    case 'putEntries': {
      for (const entry of job.present) {
        const row = /** @type {SqliteEntryRow | undefined} */ (s.getEntry.get(job.logId, entry.key));
        if (row === undefined || row.body !== entry.body) return { value: 'stale', changed: false };
      }
      for (const entry of job.fresh) if (s.getEntry.get(job.logId, entry.key) !== undefined) return { value: 'stale', changed: false };
      for (const entry of job.fresh) s.insertEntry.run({ logId: job.logId, key: entry.key, body: entry.body, bytes: entry.bytes, createdAt: job.createdAt });
      return { value: 'ok', changed: job.fresh.length > 0 };
    }
    default:
      throw new TypeError(`unknown SQLite write ${JSON.stringify(/** @type {{ op: unknown }} */ (job).op)}`);
  }
}

/**
 * After a COMMIT that failed with the transaction gone: is this write's change stored?
 * `present`: its exact body is there. `absent`: the row shows it never committed (another
 * body at or below its revision: revisions only grow). `unknown` otherwise, or when the
 * re-read fails.
 * @param {Statements} s
 * @param {SqliteWriteRequest} job
 * @returns {Verdict}
 */
function verifyWrite(s, job) {
  try {
    switch (job.op) {
      case 'insert':
      case 'cas': {
        const row = /** @type {SqliteRow | undefined} */ (s.get.get(job.row.key));
        if (row === undefined) return 'unknown';
        if (row.body === job.row.body) return 'present';
        return Number(row.revision) <= job.row.revision ? 'absent' : 'unknown';
      }
      case 'putEntries': {
        const first = job.fresh[0];
        if (first === undefined) return 'unknown';
        const row = /** @type {SqliteEntryRow | undefined} */ (s.getEntry.get(job.logId, first.key));
        if (row === undefined) return 'unknown';
        return row.body === first.body ? 'present' : 'absent';
      }
      case 'deleteRows':
        // A row still holding a body this write deleted proves the delete did not commit.
        return job.rows.some((r) => s.stillThere.get(r) !== undefined) ? 'absent' : 'unknown';
      default:
        return 'unknown';
    }
  } catch {
    return 'unknown';
  }
}

module.exports = { JobFailure, runWrite, verifyWrite };
