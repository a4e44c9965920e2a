/**
 * The PostgreSQL store's `writeGroup`: a group of creates and compare-and-swaps in one
 * transaction, run again when the server rolls it back as a deadlock or serialization victim,
 * and settled by sending it again when the connection is lost after its COMMIT was sent.
 */
import type { PoolClient } from 'pg';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import type { GroupWrite, GroupWriteResult } from './checkpoint-store';
import { encodeGroup, groupResults, type EncodedGroupWrite, type GroupAnswer } from './group-writes';
import { MAX_RESOLVE_ROUNDS, type PgConnection } from './pg-connection';
import { classifyPgError } from './pg-errors';
import { stored, type Row } from './pg-rows';
import type { PgStatements } from './pg-statements';
import { bodyDigest, type RowCodec } from './row-codec';

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

/** Writes groups of creates and compare-and-swaps (`CheckpointStore.writeGroup`) on the store's connection. */
export class PgGroupWriter {
  constructor(
    private readonly conn: PgConnection,
    private readonly sql: PgStatements,
    private readonly codec: RowCodec,
  ) {}

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
          if (lost === undefined) throw this.conn.unavailable('write a group (the connection was lost before COMMIT; the server rolls the transaction back)', error.driverError);
          continue;
        }
        if (lost !== undefined && isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.groupUnknown(encoded, lost, error);
        throw error;
      }
      await this.conn.answerTurn();
      return groupResults(this.codec, encoded, answers);
    }
    if (lost !== undefined) throw this.groupUnknown(encoded, lost);
    throw this.conn.unavailable('write a group', retried);
  }

  /**
   * One try of `writeGroup` (see there) on one connection.
   * @param settling the group was sent before and its COMMIT lost: a compare-and-swap that does
   *   not match is swapped when its row holds exactly the body it writes.
   * @throws GroupLost (`committing` when COMMIT was sent), GroupRetry, STORE_UNAVAILABLE (refused, rolled back).
   */
  private async groupTransaction(encoded: readonly EncodedGroupWrite[], settling: boolean): Promise<GroupAnswer[]> {
    const client = await this.conn.connect();
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
      throw this.conn.unavailable('write a group', error);
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
      sent.push(
        client.query(this.sql.INSERT_MANY, [
          rows.map((r) => r.key),
          rows.map((r) => r.namespace),
          rows.map((r) => r.callId),
          rows.map((r) => r.toolName),
          rows.map((r) => r.status),
          rows.map((r) => r.revision),
          rows.map((r) => r.updatedAt),
          rows.map((r) => r.body),
        ]),
      );
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
          cas.map((w) => bodyDigest(w.expectedBody)),
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
        const existing = await client.query<Row & { i: string }>(this.sql.EXISTING_MANY, [
          found.map((c) => c.w.row.key),
          found.map((c) => c.w.row.namespace),
          found.map((c) => c.w.row.callId),
        ]);
        for (const row of existing.rows) answers[found[Number(row.i) - 1]!.i] = { kind: 'existing', row: stored(row) };
        const gone = found.find((c) => answers[c.i] === undefined);
        if (gone !== undefined) {
          throw new CheckpointError(
            'STORE_UNAVAILABLE',
            `PostgreSQL ${this.conn.where}: the insert of ${gone.w.row.key} conflicted but the row is gone (pruned meanwhile); nothing of this group was committed, send it again`,
            { key: gone.w.row.key, where: this.conn.where },
          );
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
      `PostgreSQL ${this.conn.where}: the connection was lost after sending the COMMIT of a group of ${encoded.length} writes (first key ${encoded[0]!.row.key})${extra}; it may or may not be stored (read the records again before acting)`,
      { where: this.conn.where, writes: encoded.length, keys: encoded.slice(0, 10).map((w) => w.row.key) },
      { cause },
    );
  }
}
