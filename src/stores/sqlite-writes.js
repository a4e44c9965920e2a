// @ts-check
/**
 * The writes of the SQLite store (docs/protocol.md#side-stores), each a function of the prepared
 * statements: what it does inside a group's transaction ({@link runWrite}), and how a re-read tells
 * afterwards whether it is stored ({@link verifyWrite}, used after a failed COMMIT). Plain
 * JavaScript, like the executor (`./sqlite-executor.js`).
 */
'use strict';

/**
 * @typedef {import('./sqlite-protocol').SqliteWriteRequest} SqliteWriteRequest
 * @typedef {import('./sqlite-protocol').SqliteRow} SqliteRow
 * @typedef {import('./sqlite-protocol').SqliteEntryRow} SqliteEntryRow
 * @typedef {import('./sqlite-protocol').WireError} WireError
 * @typedef {import('./sqlite-protocol').SqliteRowColumns} SqliteRowColumns
 * @typedef {import('./sqlite-protocol').SqliteGroupWriteAnswer} SqliteGroupWriteAnswer
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
    case 'insert':
      return insertRow(s, job.row);
    case 'releaseDedupeKey': {
      const released = s.releaseDedupeKey.run({ key: job.key, revision: job.revision }).changes === 1;
      return { value: released, changed: released };
    }
    case 'cas':
      return casRow(s, job.row, job.expectedRevision, job.expectedBody);
    case 'group': {
      /** @type {SqliteGroupWriteAnswer[]} */
      const answers = [];
      let changed = false;
      for (const write of job.writes) {
        const done = write.kind === 'create' ? insertRow(s, write.row) : casRow(s, write.row, write.expectedRevision, write.expectedBody);
        answers.push(/** @type {SqliteGroupWriteAnswer} */ (done.value));
        changed ||= done.changed;
      }
      return { value: answers, changed };
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
 * `INSERT … ON CONFLICT DO NOTHING`, after releasing a settled holder's expired dedupe key (its
 * `dedupe_until` at or before this row's `updatedAt`); when nothing was inserted, the row holding
 * the key, the call or the dedupe key.
 * @param {Statements} s
 * @param {SqliteRowColumns} r
 * @returns {{ value: unknown, changed: boolean }}
 */
function insertRow(s, r) {
  const dedupeKey = r.dedupeKey ?? null;
  const params = {
    key: r.key,
    namespace: r.namespace,
    callId: r.callId,
    toolName: r.toolName,
    status: r.status,
    revision: r.revision,
    updatedAt: r.updatedAt,
    body: r.body,
    dedupeKey,
    dedupeUntil: r.dedupeUntil ?? null,
  };
  const released = dedupeKey !== null && s.releaseExpired.run({ dedupeKey, now: r.updatedAt }).changes === 1;
  if (s.insert.run(params).changes === 1) return { value: { created: true }, changed: true };
  const existing = s.get.get(r.key) ?? s.getByCall.get(r.namespace, r.callId) ?? (dedupeKey === null ? undefined : s.getByDedupeKey.get(dedupeKey));
  if (existing === undefined) throw new JobFailure({ kind: 'unknown', message: `SQLite insert of ${r.key} changed nothing yet no row exists`, key: r.key });
  return { value: { created: false, row: existing }, changed: released };
}

/**
 * One conditional UPDATE on key and revision (and, when `expectedBody` is given, the exact stored body).
 * @param {Statements} s
 * @param {SqliteRowColumns} r
 * @param {number} expectedRevision
 * @param {string | null} expectedBody
 * @returns {{ value: boolean, changed: boolean }}
 */
function casRow(s, r, expectedRevision, expectedBody) {
  const params = { key: r.key, status: r.status, revision: r.revision, updatedAt: r.updatedAt, body: r.body, expectedRevision };
  const changes = expectedBody === null ? s.cas.run(params).changes : s.casBody.run({ ...params, expectedBody }).changes;
  return { value: changes === 1, changed: changes === 1 };
}

/**
 * After a failed COMMIT: is this insert's or CAS's body stored (see {@link verifyWrite})?
 * @param {Statements} s
 * @param {SqliteRowColumns} written
 * @returns {Verdict}
 */
function verifyRow(s, written) {
  const row = /** @type {SqliteRow | undefined} */ (s.get.get(written.key));
  if (row === undefined) return 'unknown';
  if (row.body === written.body) return 'present';
  return Number(row.revision) <= written.revision ? 'absent' : 'unknown';
}

/**
 * After a COMMIT that failed with the transaction gone: is this write's change stored?
 * `present`: its exact body is there. `absent`: the row shows it never committed (another
 * body at or below its revision: revisions only grow). `unknown` otherwise, or when the
 * re-read fails.
 * A `group` is judged by the writes that changed something (`value`, its answers): present
 * when one of them is there and none provably is not, absent in the opposite case.
 * @param {Statements} s
 * @param {SqliteWriteRequest} job
 * @param {unknown} [value] what the write answered inside the transaction
 * @returns {Verdict}
 */
function verifyWrite(s, job, value) {
  try {
    switch (job.op) {
      case 'insert':
      case 'cas':
        return verifyRow(s, job.row);
      case 'group': {
        const answers = /** @type {SqliteGroupWriteAnswer[]} */ (Array.isArray(value) ? value : []);
        const verdicts = job.writes.filter((_, i) => answers[i] === true || (typeof answers[i] === 'object' && answers[i].created)).map((w) => verifyRow(s, w.row));
        const present = verdicts.includes('present');
        const absent = verdicts.includes('absent');
        return present && !absent ? 'present' : absent && !present ? 'absent' : 'unknown';
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
