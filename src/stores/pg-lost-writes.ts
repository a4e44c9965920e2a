/**
 * Settling a PostgreSQL write whose connection was lost after it was sent: it may or may not have
 * committed, so the row is read again (and the same conditional statement, which can apply at
 * most once, sent again) until what happened is known; otherwise STORE_OUTCOME_UNKNOWN, never
 * STORE_UNAVAILABLE (which says nothing was written).
 */
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import type { CheckpointRecord } from '../checkpoint/types';
import type { CreateResult } from './checkpoint-store';
import { MAX_RESOLVE_ROUNDS, OutcomeUnknown, type PgConnection } from './pg-connection';
import { casParams, insertParams, stored, type Row } from './pg-rows';
import type { PgStatements } from './pg-statements';
import { bodyDigest, type EncodedRow, type RowCodec } from './row-codec';

/** The insert and compare-and-swap of the store, and the settling of their lost outcomes. */
export class LostWriteSettler {
  constructor(
    private readonly conn: PgConnection,
    private readonly sql: PgStatements,
    private readonly codec: RowCodec,
  ) {}

  /**
   * The row an insert conflicted with: the same key, another binding holding the same (namespace,
   * call id), or the holder of the dedupe key; null when none is there (any more).
   */
  async findExisting(row: EncodedRow): Promise<CheckpointRecord | null> {
    const rows = await this.conn.read<Row>(this.sql.EXISTING, [row.key, row.namespace, row.callId, row.dedupeKey ?? null]);
    return rows[0] === undefined ? null : this.codec.decode(stored(rows[0]));
  }

  /** {@link findExisting}, for a row that must be there. @throws STORE_OUTCOME_UNKNOWN when it is not. */
  async readExisting(row: EncodedRow): Promise<CheckpointRecord> {
    const existing = await this.findExisting(row);
    if (existing === null)
      throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `PostgreSQL ${this.conn.where}: insert of ${row.key} conflicted but the row is gone`, {
        key: row.key,
        where: this.conn.where,
      });
    return existing;
  }

  /**
   * Runs the settling of a write that may have been sent (`settleInsert`, `settleCas`): the
   * write may have committed, so no failure while settling it (a re-read, a re-send, the read of
   * the row a re-sent insert conflicted with, a connection the pool cannot give) may be reported
   * as STORE_UNAVAILABLE, which says nothing was written (the store's contract; the fence takes a
   * claiming insert that failed STORE_UNAVAILABLE for no claim). Every STORE_UNAVAILABLE becomes
   * STORE_OUTCOME_UNKNOWN (`details.key`, the driver error of the lost write as `cause`); other
   * errors (quarantine codes of a row that is there, STORE_OUTCOME_UNKNOWN) pass unchanged.
   */
  async settling<T>(key: string, what: string, cause: unknown, settle: () => Promise<T>): Promise<T> {
    try {
      return await settle();
    } catch (error) {
      if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(key, what, cause, error);
      throw error;
    }
  }

  /**
   * The insert's connection was lost: re-read, re-sending the (idempotent) insert while the row
   * is absent. A re-send the server or a pooler refuses leaves the lost insert's outcome unknown
   * (it may still commit on the server): STORE_OUTCOME_UNKNOWN, never STORE_UNAVAILABLE. A
   * re-send that conflicts may have conflicted with the lost insert itself, which committed
   * meanwhile: the conflicting row is returned (`created: false`), and a failure to read it is
   * STORE_OUTCOME_UNKNOWN too. Run it inside {@link settling}, which turns any STORE_UNAVAILABLE
   * of a step into STORE_OUTCOME_UNKNOWN.
   */
  async settleInsert(row: EncodedRow, record: CheckpointRecord, cause: unknown): Promise<CreateResult> {
    for (let round = 0; round < MAX_RESOLVE_ROUNDS; round += 1) {
      const current = await this.reread(row.key, cause);
      if (current !== null) return { created: false, record: current };
      let inserted: boolean;
      try {
        inserted = (await this.conn.write(this.sql.INSERT, insertParams(row))).rowCount === 1;
      } catch (error) {
        if (error instanceof OutcomeUnknown) continue;
        if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(row.key, 'insert', cause, error);
        throw error;
      }
      if (inserted) return { created: true, record: this.codec.remember(record, row.body) };
      // The row it conflicted with may be the lost insert's own: reading it settles the write.
      return { created: false, record: await this.settling(row.key, 'insert', cause, () => this.readExisting(row)) };
    }
    throw this.outcomeUnknown(row.key, 'insert', cause);
  }

  /** Sends the conditional UPDATE: revision-only, or also on the stored body's digest. */
  sendCas(row: EncodedRow, expectedRevision: number, expectedDigest: string | null): Promise<{ rowCount: number | null }> {
    if (expectedDigest === null) return this.conn.write(this.sql.CAS, casParams(row, expectedRevision));
    return this.conn.write(this.sql.CAS_BODY, [...casParams(row, expectedRevision), expectedDigest]);
  }

  /**
   * The CAS's connection was lost. Re-read: the row holds exactly the body we sent → true;
   * still at `expectedRevision` but not with the expected body (when one is required) → false
   * (the UPDATE cannot have applied: revisions only grow, and the row is never touched);
   * `next`'s revision → whether the stored record is `next`; still at `expectedRevision` →
   * re-send the same conditional UPDATE (it and the lost one can apply at most once between
   * them); anything else → STORE_OUTCOME_UNKNOWN. Run it inside {@link settling}: no failure of
   * a step is STORE_UNAVAILABLE.
   */
  async settleCas(row: EncodedRow, expectedRevision: number, expectedDigest: string | null, next: CheckpointRecord, cause: unknown): Promise<boolean> {
    const won = (body: string): true => {
      this.codec.remember(next, body);
      return true;
    };
    for (let round = 0; round < MAX_RESOLVE_ROUNDS; round += 1) {
      const raw = await this.rereadRow(row.key, cause);
      if (raw === null) break;
      if (raw.body === row.body) return won(row.body);
      if (expectedDigest !== null && Number(raw.revision) === expectedRevision && (typeof raw.body !== 'string' || bodyDigest(raw.body) !== expectedDigest)) return false;
      const current = this.codec.decode(stored(raw));
      if (current.revision === next.revision) return this.codec.sameRecord(current, next) && won(raw.body as string);
      if (current.revision !== expectedRevision) break;
      try {
        if ((await this.sendCas(row, expectedRevision, expectedDigest)).rowCount === 1) return won(row.body);
      } catch (error) {
        if (error instanceof OutcomeUnknown) continue;
        // The re-send was refused, so it wrote nothing; the lost one may still commit: unknown.
        if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(row.key, 'compare-and-swap', cause, error);
        throw error;
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
      return (await this.conn.read<Row>(this.sql.GET, [key]))[0] ?? null;
    } catch (error) {
      if (isCheckpointError(error, 'STORE_UNAVAILABLE')) throw this.outcomeUnknown(key, 'write', cause, error);
      throw error;
    }
  }

  /**
   * STORE_OUTCOME_UNKNOWN for a write whose connection was lost after it was sent and whose
   * settling failed (`details.key`, `details.where`; the lost write's driver error as `cause`).
   */
  private outcomeUnknown(key: string, what: string, cause: unknown, reread?: unknown): CheckpointError {
    const extra = reread === undefined ? '' : ` and settling it by re-reading failed (${(reread as Error).message})`;
    return new CheckpointError(
      'STORE_OUTCOME_UNKNOWN',
      `PostgreSQL ${this.conn.where}: the connection was lost after sending the ${what} of ${key}${extra}; its outcome is unknown (re-read the record before acting)`,
      { key, where: this.conn.where },
      { cause },
    );
  }
}
