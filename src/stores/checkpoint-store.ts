/**
 * The side-store interface of docs/protocol.md#side-stores. Every store (SQLite, PostgreSQL)
 * implements exactly this, and one conformance suite (`test/conformance`) runs against each. A
 * compare-and-swap is one atomic statement or transaction, never a read followed by a write.
 *
 * Layer 2: imports the pure core (`../checkpoint`) and node:crypto; never Temporal.
 */
import type { CheckpointErrorCode } from '../checkpoint/errors';
import type { Binding, CheckpointRecord, JsonValue, Status } from '../checkpoint/types';
import type { PayloadEncryptionOptions } from './payload-cipher';

/** One entry to write: `key` within the log, `value` any bounded JSON value. */
export interface ConversationEntry {
  readonly key: string;
  readonly value: JsonValue;
}

/** What `createIfAbsent` returns: `created` is false when a record already existed (it is returned, never overwritten). */
/**
 * Options of {@link CheckpointStore.createIfAbsent} (docs/protocol.md#dedupe-keys).
 */
export interface CreateOptions {
  /**
   * At most one row holds it: an insert whose dedupe key another row holds inserts nothing and
   * returns that row (a different call's record). A bounded identifier (1–256 characters).
   */
  readonly dedupeKey?: string;
  /**
   * ISO-8601 UTC, only with `dedupeKey`: the row holds its key until then and, after it, until its
   * result is stored (`completed`, `delivering`, `delivered`: an unfinished claim may still apply
   * its effect). An insert whose record's `createdAt` is at or after the end takes the key over
   * from such a row (the row stays, without the key); `prune` keeps the row while the time is
   * ahead. Absent: held while the row exists.
   */
  readonly dedupeUntil?: string;
}

export interface CreateResult {
  readonly created: boolean;
  readonly record: CheckpointRecord;
}

/** Most writes in one `writeGroup` call and most bindings in one `getMany` call. */
export const MAX_GROUP_SIZE = 1_000;

/**
 * One write of {@link CheckpointStore.writeGroup}: a `create` is a `createIfAbsent(record)`, a
 * `cas` a `compareAndSwap(expectedRevision, next, expected)` (always with `expected`: the record
 * the transition was computed from, as this store instance returned or wrote it).
 */
export type GroupWrite =
  | { readonly kind: 'create'; readonly record: CheckpointRecord }
  | { readonly kind: 'cas'; readonly expectedRevision: number; readonly next: CheckpointRecord; readonly expected: CheckpointRecord };

/**
 * The outcome of one {@link GroupWrite}, as its single method would answer it: `create` →
 * {@link CreateResult}, `cas` → whether exactly that row was replaced.
 */
export type GroupWriteResult = { readonly kind: 'create'; readonly created: boolean; readonly record: CheckpointRecord } | { readonly kind: 'cas'; readonly swapped: boolean };

/** Filter of `listByStatus`. */
export interface ListOptions {
  /** Only records whose `updatedAt` is before this ISO-8601 UTC time. */
  readonly olderThan?: string;
  /** Integer from 1 to 10,000. @default 100 */
  readonly limit?: number;
}

/**
 * A stored row that failed to parse, verify or decrypt; it is reported and left untouched
 * (quarantined). `status`, `revision` and `updatedAt` are the row's index columns, which are
 * not trustworthy for a quarantined row (shown to help an operator find it).
 */
export interface QuarantinedRow {
  /** The row key (`checkpointKey(binding)` when the row is genuine). */
  readonly key: string;
  readonly status: string;
  readonly revision: number;
  /** ISO-8601 UTC. */
  readonly updatedAt: string;
  /** Why: INVALID_CHECKPOINT, INTEGRITY_FAILURE, UNSUPPORTED_SCHEMA or DECRYPTION_FAILED, with the message. */
  readonly error: { readonly code: CheckpointErrorCode; readonly message: string };
}

/**
 * Options of `openCheckpointStore` (every field optional).
 *
 * Sealing (docs/protocol.md#stored-form): with `hmacKey` + `keyId` every written record is sealed
 * with HMAC-SHA256 and every read record must carry a seal that verifies (no downgrade);
 * `hmacKeys` adds older keys by id for rotation. Encryption: see {@link PayloadEncryptionOptions}.
 */
export interface CheckpointStoreOptions extends PayloadEncryptionOptions {
  /** HMAC key of at least 32 bytes; requires `keyId`. */
  readonly hmacKey?: Uint8Array;
  /** Id of `hmacKey`, written into each seal (at most 128 characters). */
  readonly keyId?: string;
  /** More verification keys by id, for rotation; requires `hmacKey` (a store must read what it writes). */
  readonly hmacKeys?: Readonly<Record<string, Uint8Array>>;
  /** SQLite: how long a writer waits for another process's lock, in ms. @default 5,000 */
  readonly busyTimeoutMs?: number;
  /** PostgreSQL: connections in the pool. @default 10 */
  readonly poolSize?: number;
  /**
   * PostgreSQL: the schema holding the store's tables (a lower-case SQL identifier; it must
   * exist). Every table, function, operator and type is schema-qualified (no statement depends
   * on the search_path, so the store also works through a transaction-mode pooler), so objects
   * other roles create in other schemas are never used. Only trusted roles may have CREATE on this
   * schema. @default 'public'
   */
  readonly postgresSchema?: string;
  /** PostgreSQL: how long to wait for a connection, in ms. @default 5,000 */
  readonly connectTimeoutMs?: number;
}

/** Options of `prune`. */
export interface PruneOptions {
  /** Delete delivered checkpoints whose `updatedAt` is before this ISO-8601 UTC time (the end of the replay window). */
  readonly olderThan: string;
  /**
   * Also delete every conversation log whose newest entry was written before this
   * ISO-8601 UTC time: the whole log, all its entries. Absent: conversation logs are kept.
   */
  readonly conversationsOlderThan?: string;
}

/** Options of `listQuarantined`. */
export interface ListQuarantinedOptions {
  /** Integer from 1 to 10,000. @default 100 */
  readonly limit?: number;
}

/**
 * A persistent home for checkpoints, one row per `checkpointKey(binding)`.
 *
 * Errors: every method throws {@link CheckpointError} STORE_UNAVAILABLE when the database cannot
 * be reached (nothing was written; fail closed), STORE_OUTCOME_UNKNOWN when a write was sent and
 * its outcome could not be settled by a re-read, INVALID_ARGUMENT for bad arguments, and
 * INVALID_CHECKPOINT / INTEGRITY_FAILURE / UNSUPPORTED_SCHEMA / DECRYPTION_FAILED when a stored
 * row is quarantined (the message and `details.key` name the row; the row is never changed).
 *
 * @see docs/protocol.md#side-stores
 */
export interface CheckpointStore {
  /**
   * Inserts `record` (normally a fresh `ready` record from `createCheckpoint`) unless a row
   * with its key exists, another binding already holds the same `(namespace, callId)`, or
   * another row holds `options.dedupeKey`; never overwrites. @returns `{ created: true, record }`
   * when inserted, else `{ created: false, record: <the stored record> }` — for a different
   * binding of the same call that is the other binding's record, so `decideCheckpoint` reports
   * BINDING_CONFLICT; for a dedupe key, the record of the call that holds it. After a lost
   * connection the insert is retried, so `created` may be false for a record this very call inserted.
   * @throws {@link CheckpointError} a quarantine code when the existing row does not parse (it is
   *   left as is); INVALID_ARGUMENT for a malformed `options.dedupeKey` or `options.dedupeUntil`.
   */
  createIfAbsent(record: CheckpointRecord, options?: CreateOptions): Promise<CreateResult>;
  /**
   * Clears the dedupe key of `holder`'s row, if the row is still `holder` (same key and
   * revision) and holds one; the row itself stays. Used when a person proved the holder's effect
   * absent, so the next call with its key runs (docs/protocol.md#business-keys).
   * @returns whether a key was cleared.
   * @throws {@link CheckpointError} INVALID_ARGUMENT for a malformed record; STORE_OUTCOME_UNKNOWN
   *   when the write was sent and its answer lost (it is idempotent: call it again).
   */
  releaseDedupeKey(holder: CheckpointRecord): Promise<boolean>;
  /** The stored record for `binding`'s key, or null when there is none (a quarantined row throws, never null). */
  get(binding: Binding): Promise<CheckpointRecord | null>;
  /**
   * The record that holds `(namespace, callId)`, whatever its tool, revision or input
   * fingerprint (a store keeps at most one per call), or null when the call has none. Used to
   * decide whether a call was ever claimed when its binding can no longer be rebuilt (a deploy
   * changed the tool's revision or schema, or removed the tool): docs/protocol.md#nothing-applied.
   * A quarantined row throws, never null.
   */
  getByCall(namespace: string, callId: string): Promise<CheckpointRecord | null>;
  /**
   * Replaces the record with `next`'s key only if its stored revision is `expectedRevision`
   * and, when `expected` is given, its stored body is still exactly the body `expected` was
   * read from (or written as), atomically: one conditional UPDATE on the key, the revision
   * column and a SHA-256 of the body. `next.revision` must be above `expectedRevision`:
   * `expectedRevision + 1` for one transition, + n for n transitions composed into one write
   * (`../checkpoint/compose`, docs/protocol.md#cost).
   *
   * `expected` is the record the transition was computed from, as this store instance returned
   * it (`get`, `getByCall`, `createIfAbsent`, `listByStatus`) or wrote it (a `next` whose CAS
   * returned true). With it, a row whose body was damaged or replaced after the read (while
   * its revision column stayed) is never overwritten: the CAS returns false and the row is
   * left as it is, so a quarantined row is never changed. Pass it on every CAS the product
   * makes. Without it the CAS is revision-only: it matches the key and revision columns and
   * replaces whatever body the row holds (kept for callers that hold no read record).
   *
   * @returns true when exactly that row was replaced; false otherwise (nothing changed).
   * @throws {@link CheckpointError} INVALID_ARGUMENT when the revisions do not follow, or when
   *   `expected` is not a record this store instance returned or wrote, is not at
   *   `expectedRevision`, or belongs to another row (never a silent revision-only fall-back).
   */
  compareAndSwap(expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord): Promise<boolean>;
  /**
   * The stored records of `bindings`, in the same order (null where there is none; a repeated
   * binding gets the same record each time): what `get` returns for each, read with one
   * statement (SQLite: a few, in chunks) instead of one per binding.
   *
   * @param bindings at most {@link MAX_GROUP_SIZE} (1,000).
   * @throws {@link CheckpointError} INVALID_ARGUMENT for more than 1,000 bindings or a malformed
   *   one (`details.index`); the quarantine code of the first damaged row in `bindings` order
   *   (`details.key`; never null for it, the row is left as is); STORE_UNAVAILABLE.
   */
  getMany(bindings: readonly Binding[]): Promise<(CheckpointRecord | null)[]>;
  /**
   * Applies `writes` in ONE transaction (one commit, one fsync: a batch's item
   * checkpoints are written in groups, not 2 synchronous writes per item). Each write has
   * exactly the semantics of its single method on its own ({@link createIfAbsent},
   * {@link compareAndSwap} with `expected`): one may create or swap while another finds a row
   * or loses its compare-and-swap; sealing, encryption and the `expected` body check are the
   * same, so a damaged row is never overwritten. Records written (created, swapped `next`) are
   * remembered as this instance's, so they can be the `expected` of a later write.
   *
   * @param writes at most {@link MAX_GROUP_SIZE} (1,000), each on its own row and call: no two
   *   writes may share a key or a `(namespace, callId)`. Empty: resolves `[]` and writes nothing.
   * @returns one {@link GroupWriteResult} per write, in order. As for `createIfAbsent`, after a
   *   lost connection the group is sent again, so `created` may be false for a record this very
   *   call inserted (a `cas` is then settled by the row's body: true when it holds `next`).
   * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.index`) for more than 1,000 writes,
   *   an unknown kind, two writes on one key or call, or a `cas` whose revisions or `expected`
   *   are wrong (as `compareAndSwap`); INVALID_CHECKPOINT for an invalid record; all before
   *   anything is sent. STORE_UNAVAILABLE when nothing of the group was committed;
   *   STORE_OUTCOME_UNKNOWN when it may have been (read the records again). A `create` that
   *   finds a quarantined row: its quarantine code (`details.key`), thrown after the transaction
   *   committed: the other writes of the group ARE stored (the damaged row is left as it is).
   */
  writeGroup(writes: readonly GroupWrite[]): Promise<GroupWriteResult[]>;
  /**
   * Records in any of `statuses` (for operators), oldest `updatedAt` first. Quarantined rows
   * are skipped here; list them with {@link listQuarantined}.
   */
  listByStatus(statuses: readonly Status[], options?: ListOptions): Promise<CheckpointRecord[]>;
  /** Rows that fail to parse, verify or decrypt (every status), by key. Scans the whole table. */
  listQuarantined(options?: ListQuarantinedOptions): Promise<QuarantinedRow[]>;
  /**
   * Deletes terminal (`delivered`) records whose `updatedAt` is before `olderThan` (the end
   * of the replay window, which should be at least 24 h: an approval grant lives that long, and a
   * pruned call could run again under one still valid; `ttc prune` refuses a shorter one). Never deletes ready, executing, uncertain, completed or delivering,
   * and never a quarantined row (each candidate is parsed and verified first, outside any write
   * lock, and then deleted only if its key, revision, status and body are still the verified ones).
   * With `conversationsOlderThan`, also deletes each conversation log whose newest entry was
   * written before it, in one statement (damaged entries of such a log go with it: the log is
   * past retention).
   * @returns the number of checkpoint records deleted plus, with `conversationsOlderThan`, the
   *   number of conversation logs deleted (each log counts once, whatever its entries).
   * @throws {@link CheckpointError} INVALID_ARGUMENT for a time that is not ISO-8601 UTC (`details.field`).
   */
  prune(options: PruneOptions): Promise<number>;
  /**
   * Writes conversation-log entries (claim check: the agent's conversation and large
   * tool outputs live here instead of in workflow history), insert-if-absent, all in one
   * transaction. An entry that already holds the identical value (RFC 8785 canonical JSON
   * equality, after decryption) is left as it is, so a retried write succeeds; an entry holding
   * a different value fails the whole call and nothing of it is written. Bodies are encoded like
   * records (sealed and encrypted when configured) and bound to `(logId, key)` (see `./entry-codec`).
   *
   * @param logId the log (e.g. `conversationLogId(...)`): 1 to 256 characters, no control characters.
   * @param entries at most 10,000; each key 1 to 2,100 characters, each value bounded JSON of at
   *   most 10 MiB + 64 KiB (UTF-8 bytes of its canonical JSON).
   * @throws {@link CheckpointError} CONVERSATION_CONFLICT (non-retryable) when a key holds, or the
   *   call gives it, another value; INVALID_ARGUMENT, NOT_JSON, PAYLOAD_TOO_LARGE for bad
   *   arguments; a quarantine code when an existing entry it must compare with is damaged;
   *   STORE_UNAVAILABLE / STORE_OUTCOME_UNKNOWN as every method.
   */
  putConversationEntries(logId: string, entries: readonly ConversationEntry[]): Promise<void>;
  /**
   * The values of `keys` in `logId`, in the order of `keys` (a repeated key is returned each
   * time). Large key lists are read in chunks (no single statement takes them all).
   *
   * @param keys at most 100,000.
   * @throws {@link CheckpointError} CONVERSATION_ENTRY_MISSING (non-retryable, `details.key`) when
   *   a key has no entry; INVALID_CHECKPOINT / INTEGRITY_FAILURE / UNSUPPORTED_SCHEMA /
   *   DECRYPTION_FAILED (`details.quarantined`) for a damaged entry, which is left as it is;
   *   INVALID_ARGUMENT for bad arguments; STORE_UNAVAILABLE.
   */
  getConversationEntries(logId: string, keys: readonly string[]): Promise<JsonValue[]>;
  /** Releases connections and file handles. Idempotent. */
  close(): Promise<void>;
}
