/**
 * The store-independent half of `getMany` and `writeGroup` (docs/protocol.md#side-stores): checking the
 * arguments, encoding each write exactly as its single method does (`RowCodec.encode`, the
 * `expected` body of a compare-and-swap) before anything is sent, and turning what the
 * database answered into {@link GroupWriteResult}s (remembering written bodies, decoding the rows
 * a create found). Both stores (`./sqlite-store`, `./postgres-store`) share it, so a group write
 * follows the single methods' sealing, encryption and quarantine rules by construction.
 */
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import type { Binding, CheckpointRecord } from '../checkpoint/types';
import { checkpointKey } from './checkpoint-key';
import { MAX_GROUP_SIZE, type GroupWrite, type GroupWriteResult } from './checkpoint-store';
import { assertCasArguments, type EncodedRow, type RowCodec, type StoredRow } from './row-codec';

/** One write of a group, encoded and checked, ready to send. */
export type EncodedGroupWrite =
  | { readonly kind: 'create'; readonly record: CheckpointRecord; readonly row: EncodedRow }
  | { readonly kind: 'cas'; readonly next: CheckpointRecord; readonly row: EncodedRow; readonly expectedRevision: number; readonly expectedBody: string };

/**
 * What the database answered for one write: `inserted` for a create that inserted, `existing` for
 * one that found a row (the raw row it found), `swapped` for a compare-and-swap.
 */
export type GroupAnswer = { readonly kind: 'inserted' } | { readonly kind: 'existing'; readonly row: StoredRow } | { readonly kind: 'swapped'; readonly swapped: boolean };

/**
 * Checks `writes` and encodes each one (in order) as its single method would.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.index`, `details.field`) for a
 *   non-array, more than {@link MAX_GROUP_SIZE} writes, an unknown kind, a missing `expected`,
 *   two writes on one key or one `(namespace, callId)`, or what `compareAndSwap` refuses;
 *   INVALID_CHECKPOINT (and the encoder's other codes) for an invalid record.
 */
export function encodeGroup(codec: RowCodec, writes: readonly GroupWrite[]): EncodedGroupWrite[] {
  assertList(writes, 'writes');
  const keys = new Set<string>();
  const calls = new Set<string>();
  return writes.map((write, index) => {
    const encoded = at(index, () => encodeOne(codec, write));
    const call = JSON.stringify([encoded.row.namespace, encoded.row.callId]);
    if (keys.has(encoded.row.key) || calls.has(call)) {
      throw new CheckpointError(
        'INVALID_ARGUMENT',
        `writeGroup: writes[${index}] is on a row or call another write of the group is on (key ${encoded.row.key}); each write of a group needs its own record`,
        {
          field: 'writes',
          index,
          key: encoded.row.key,
        },
      );
    }
    keys.add(encoded.row.key);
    calls.add(call);
    return encoded;
  });
}

/**
 * The row keys of `bindings` (in order).
 * @throws {@link CheckpointError} INVALID_ARGUMENT (`details.index`) for a non-array, more than
 *   {@link MAX_GROUP_SIZE} bindings or a malformed binding.
 */
export function keysOf(bindings: readonly Binding[]): string[] {
  assertList(bindings, 'bindings');
  return bindings.map((binding, index) => at(index, () => checkpointKey(binding)));
}

/**
 * The records of `keys` from the rows read (any order, at most one per key): decoded once per
 * key, null when absent.
 * @throws {@link CheckpointError} the quarantine code of the first damaged row in `keys` order.
 */
export function recordsOf(codec: RowCodec, keys: readonly string[], rows: readonly StoredRow[]): (CheckpointRecord | null)[] {
  const byKey = new Map(rows.map((row) => [row.key, row]));
  const decoded = new Map<string, CheckpointRecord>();
  return keys.map((key) => {
    const row = byKey.get(key);
    if (row === undefined) return null;
    let record = decoded.get(key);
    if (record === undefined) {
      record = codec.decode(row);
      decoded.set(key, record);
    }
    return record;
  });
}

/**
 * The results of a committed group: every written body is remembered first (so a swapped
 * `next` or a created record can be a later `expected`), then the rows creates found are
 * decoded.
 * @throws {@link CheckpointError} the quarantine code of the first found row that does not
 *   decode (the group is committed all the same; see `CheckpointStore.writeGroup`).
 */
export function groupResults(codec: RowCodec, encoded: readonly EncodedGroupWrite[], answers: readonly GroupAnswer[]): GroupWriteResult[] {
  if (answers.length !== encoded.length)
    throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `writeGroup: the store answered ${answers.length} of ${encoded.length} writes`, { writes: encoded.length });
  encoded.forEach((write, i) => {
    const answer = answers[i]!;
    if (write.kind === 'create' && answer.kind === 'inserted') codec.remember(write.record, write.row.body);
    if (write.kind === 'cas' && answer.kind === 'swapped' && answer.swapped) codec.remember(write.next, write.row.body);
  });
  let quarantined: unknown = null;
  const results = encoded.map((write, i): GroupWriteResult => {
    const answer = answers[i]!;
    if (write.kind === 'cas') return { kind: 'cas', swapped: answer.kind === 'swapped' && answer.swapped };
    if (answer.kind !== 'existing') return { kind: 'create', created: true, record: write.record };
    try {
      return { kind: 'create', created: false, record: codec.decode(answer.row) };
    } catch (error) {
      quarantined ??= error;
      return { kind: 'create', created: false, record: write.record };
    }
  });
  if (quarantined !== null) throw quarantined;
  return results;
}

function encodeOne(codec: RowCodec, write: GroupWrite): EncodedGroupWrite {
  if (typeof write !== 'object' || write === null) throw new CheckpointError('INVALID_ARGUMENT', 'writeGroup: a write must be an object { kind, ... }', { field: 'kind' });
  if (write.kind === 'create') return { kind: 'create', record: write.record, row: codec.encode(write.record) };
  if (write.kind === 'cas') {
    assertCasArguments(write.expectedRevision, write.next);
    if (write.expected === undefined || write.expected === null) {
      throw new CheckpointError('INVALID_ARGUMENT', 'writeGroup: a cas write needs expected, the record its transition was computed from (as this store returned or wrote it)', {
        field: 'expected',
      });
    }
    const row = codec.encode(write.next);
    const expectedBody = codec.expectedBody(write.expectedRevision, row.key, write.expected)!;
    return { kind: 'cas', next: write.next, row, expectedRevision: write.expectedRevision, expectedBody };
  }
  throw new CheckpointError('INVALID_ARGUMENT', `writeGroup: kind must be 'create' or 'cas', got ${JSON.stringify((write as { kind?: unknown }).kind)}`, { field: 'kind' });
}

/** Runs `check`, adding `index` to the details of an INVALID_ARGUMENT it throws. */
function at<T>(index: number, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (isCheckpointError(error, 'INVALID_ARGUMENT') && error.details.index === undefined) {
      throw new CheckpointError('INVALID_ARGUMENT', `item [${index}]: ${error.message.replace(/^INVALID_ARGUMENT: /, '')}`, { ...error.details, index }, { cause: error });
    }
    throw error;
  }
}

function assertList(list: readonly unknown[], field: string): void {
  if (!Array.isArray(list)) throw new CheckpointError('INVALID_ARGUMENT', `${field} must be an array`, { field });
  if (list.length > MAX_GROUP_SIZE) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} holds ${list.length} items; at most ${MAX_GROUP_SIZE} go in one call (split it)`, {
      field,
      limit: MAX_GROUP_SIZE,
      actual: list.length,
    });
  }
}
