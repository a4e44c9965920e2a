/**
 * The PostgreSQL store's checkpoint rows as the driver returns them, and the parameters of its
 * insert and compare-and-swap statements (`./pg-statements`).
 */
import type { QueryResultRow } from 'pg';
import type { EncodedRow, StoredRow } from './row-codec';

/** A checkpoint row as the driver returns it. */
export interface Row extends QueryResultRow {
  key: string;
  status: string;
  revision: string;
  updated_at: Date;
  body: unknown;
}

/** The parameters of the insert statements (`INSERT`) for `row`. */
export function insertParams(row: EncodedRow): unknown[] {
  return [row.key, row.namespace, row.callId, row.toolName, row.status, row.revision, row.updatedAt, row.body, row.dedupeKey ?? null, row.dedupeUntil ?? null];
}

/** The parameters of the conditional UPDATE (`CAS`, and `CAS_BODY` before its body digest) for `row`. */
export function casParams(row: EncodedRow, expectedRevision: number): unknown[] {
  return [row.key, expectedRevision, row.status, row.revision, row.updatedAt, row.body];
}

/** A checkpoint row as the row codec reads it (`updated_at` as ISO-8601 UTC). */
export function stored(row: Row): StoredRow {
  return {
    key: row.key,
    status: row.status,
    revision: row.revision,
    updatedAt: row.updated_at instanceof Date ? row.updated_at.toISOString() : String(row.updated_at),
    body: row.body,
  };
}
