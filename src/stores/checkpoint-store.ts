/**
 * The side-store interface of SPEC §3. Every store (SQLite, PostgreSQL) implements exactly
 * this, and one conformance suite (`test/conformance`) runs against each. A compare-and-swap
 * is one atomic statement or transaction, never a read followed by a write.
 */
import type { Binding, CheckpointRecord, Status } from '../checkpoint/types';

/** What `createIfAbsent` returns: `created` is false when a record already existed (it is returned, never overwritten). */
export interface CreateResult {
  readonly created: boolean;
  readonly record: CheckpointRecord;
}

/** Filter of `listByStatus`. */
export interface ListOptions {
  /** Only records whose `updatedAt` is before this ISO-8601 UTC time. */
  readonly olderThan?: string;
  /** @default 100 */
  readonly limit?: number;
}

/** A stored row that failed to parse or verify; it is reported and left untouched (quarantined). */
export interface QuarantinedRow {
  readonly key: string;
  readonly error: { readonly code: string; readonly message: string };
}

/**
 * A persistent home for checkpoints, keyed by `checkpointKey(binding)`.
 *
 * Errors: every method throws {@link CheckpointError} STORE_UNAVAILABLE when the database cannot
 * be reached (nothing was written), STORE_OUTCOME_UNKNOWN when a write was sent and its outcome
 * could not be settled by a re-read, and INVALID_CHECKPOINT / INTEGRITY_FAILURE /
 * UNSUPPORTED_SCHEMA / DECRYPTION_FAILED when a stored row is quarantined (the error names the key).
 */
export interface CheckpointStore {
  /** Inserts `record` (a fresh `ready` record) unless a record with its key exists; never overwrites. */
  createIfAbsent(record: CheckpointRecord): Promise<CreateResult>;
  /** The stored record for `binding`'s key, or null when there is none (a parse failure is never null). */
  get(binding: Binding): Promise<CheckpointRecord | null>;
  /**
   * Replaces the record with `next`'s key only if its stored revision is `expectedRevision`,
   * atomically. @returns true when exactly that revision was replaced; false otherwise
   * (nothing changed).
   */
  compareAndSwap(expectedRevision: number, next: CheckpointRecord): Promise<boolean>;
  /** Records in any of `statuses` (for operators), oldest `updatedAt` first. */
  listByStatus(statuses: readonly Status[], options?: ListOptions): Promise<CheckpointRecord[]>;
  /**
   * Deletes terminal (`delivered`) records whose `updatedAt` is before `olderThan` (the end
   * of the replay window). Never deletes ready, executing, uncertain, delivering or completed.
   * @returns the number of records deleted.
   */
  prune(options: { olderThan: string }): Promise<number>;
  /** Releases connections and file handles. */
  close(): Promise<void>;
}
