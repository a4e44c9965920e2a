/**
 * The transitions of docs/protocol.md#transitions. Each one checks its arguments, guards the status
 * and the fence, builds `next` by spreading (revision + 1, updatedAt = at) and returns `{ action,
 * expectedRevision, next }`. The host may act only after a compare-and-swap from `expectedRevision`
 * to `next` succeeded. The only way back to `ready` is the holder's own {@link releaseExecution}
 * (its request proven not applied); there is no lease-expiry rerun. Pure: inputs are never mutated;
 * no clock is read.
 */
import { assertIdentifier, assertReason, parseTimestamp, resolveMaxPayloadBytes, utf8ByteLength } from './bounds';
import { canonicalJson } from './canonical-json';
import { CheckpointError } from './errors';
import { deepFreeze, isKnownValid, trustValid, validateCheckpoint } from './record';
import type { Action, CheckpointRecord, JsonValue, Status, TransitionResult } from './types';

/**
 * ready → executing: claim the right to run the tool under fence `attemptId`.
 *
 * @param args.attemptId the fence; unique per attempt (for example workflow id + activity attempt).
 * @param args.at ISO-8601 UTC, not before `record.updatedAt`.
 * @param args.deadlineAt when the holder stops waiting for its request (ISO-8601 UTC, not before
 *   `at`); recorded so another attempt knows when the claim can settle
 * (docs/protocol.md#overlapping-attempts). @default null
 * @returns action `execute`.
 * @throws {@link CheckpointError} INVALID_TRANSITION from any status but `ready`; INVALID_ARGUMENT for bad arguments.
 */
export function claimExecution(record: CheckpointRecord, args: { attemptId: string; at: string; deadlineAt?: string }): TransitionResult {
  const at = begin(record, args, 'claimExecution', ['ready']);
  assertIdentifier(args.attemptId, 'attemptId');
  return finish(record, at, 'execute', {
    status: 'executing',
    execution: {
      attemptId: args.attemptId,
      claimedAt: at,
      finishedAt: null,
      uncertainAt: null,
      uncertainReason: null,
      previousAttemptId: null,
      deadlineAt: deadlineOf(args.deadlineAt, at),
    },
  });
}

/** The claim's declared deadline: an ISO-8601 UTC time not before the claim, or null when none is given. */
function deadlineOf(deadlineAt: string | undefined, at: string): string | null {
  if (deadlineAt === undefined) return null;
  if (parseTimestamp(deadlineAt, 'deadlineAt') < Date.parse(at)) {
    throw new CheckpointError('INVALID_ARGUMENT', `deadlineAt ${deadlineAt} is before the claim at ${at}`, { field: 'deadlineAt', actual: deadlineAt });
  }
  return deadlineAt;
}

/**
 * executing → executing: the holder of the fence declares a later deadline while its request is
 * still running (a user's activity that may not honour the abort signal:
 * docs/protocol.md#overlapping-attempts, a claim is taken over only once its holder's request can
 * no longer be outstanding). The claim time and every other field stay; only `deadlineAt` moves,
 * and never earlier.
 *
 * @param args.attemptId must be the owning fence.
 * @param args.deadlineAt the new deadline, ISO-8601 UTC, not before `at` nor before the current deadline.
 * @returns action `execute` (the holder goes on running its request).
 * @throws {@link CheckpointError} FENCE_CONFLICT when another attempt holds the fence, whatever the
 *   status; INVALID_TRANSITION from any status but `executing`; INVALID_ARGUMENT for a deadline
 *   before `at` or before the current one.
 */
export function renewExecution(record: CheckpointRecord, args: { attemptId: string; at: string; deadlineAt: string }): TransitionResult {
  const at = begin(record, args, 'renewExecution', ['executing'], { field: 'attemptId', fence: args?.attemptId });
  assertFence(record, 'attemptId', args.attemptId, 'renewExecution');
  const deadlineAt = deadlineOf(args.deadlineAt, at);
  const current = record.execution!.deadlineAt;
  if (deadlineAt === null || (current !== null && Date.parse(deadlineAt) < Date.parse(current))) {
    throw new CheckpointError(
      'INVALID_ARGUMENT',
      `renewExecution: deadlineAt ${String(args.deadlineAt)} is before the current deadline ${String(current)}; a renewal never shortens a claim`,
      { field: 'deadlineAt', actual: args.deadlineAt ?? null },
    );
  }
  return finish(record, at, 'execute', { execution: { ...record.execution!, deadlineAt } });
}

/**
 * executing → ready: the holder of the fence gives the call back, because every request it sent
 * under this claim is proven not applied (the provider refused it before accepting it: a 503,
 * 429 or 408, a connection that never delivered it) and it sends no more. The record is a
 * claimable `ready` again (execution cleared; `revision` keeps counting, so a `ready` record with
 * a revision above 0 is one whose every claim was released), owned by the call, not by any
 * attempt: the next attempt claims it and sends the request again under the same idempotency
 * key. Never for a claim that took over an unfinished one by a same-key repeat, nor after an
 * answer that may mean "applied" (the fence keeps those `executing` or `uncertain`).
 *
 * @param args.attemptId must be the owning fence.
 * @param args.at ISO-8601 UTC, not before `record.updatedAt`.
 * @returns action `execute` (for the next claim).
 * @throws {@link CheckpointError} FENCE_CONFLICT when another attempt holds the fence, whatever the
 *   status; INVALID_TRANSITION from any status but `executing`; INVALID_ARGUMENT for bad arguments.
 */
export function releaseExecution(record: CheckpointRecord, args: { attemptId: string; at: string }): TransitionResult {
  const at = begin(record, args, 'releaseExecution', ['executing'], { field: 'attemptId', fence: args?.attemptId });
  assertFence(record, 'attemptId', args.attemptId, 'releaseExecution');
  return finish(record, at, 'execute', { status: 'ready', execution: null });
}

/**
 * executing | uncertain → executing under a new fence, after reconciliation proved the
 * earlier attempt's effect absent, or for a provider that deduplicates by idempotency key.
 * Any later write by `previousAttemptId` is a FENCE_CONFLICT. Never automatic: the caller
 * names the fence it takes over, so two reconcilers cannot both win.
 *
 * @param args.previousAttemptId the fence stored in `record.execution.attemptId`.
 * @param args.deadlineAt as in {@link claimExecution}.
 * @returns action `execute` (repeat with the same idempotency key).
 * @throws {@link CheckpointError} FENCE_CONFLICT when `previousAttemptId` is not the stored fence;
 *   INVALID_TRANSITION from other statuses; INVALID_ARGUMENT for bad arguments.
 */
export function reclaimExecution(record: CheckpointRecord, args: { attemptId: string; previousAttemptId: string; at: string; deadlineAt?: string }): TransitionResult {
  const at = begin(record, args, 'reclaimExecution', ['executing', 'uncertain']);
  assertIdentifier(args.attemptId, 'attemptId');
  assertFence(record, 'attemptId', args.previousAttemptId, 'reclaimExecution');
  if (args.attemptId === args.previousAttemptId) {
    throw new CheckpointError('INVALID_ARGUMENT', 'reclaimExecution needs a new attemptId, not the fence it takes over', { field: 'attemptId' });
  }
  return finish(record, at, 'execute', {
    status: 'executing',
    execution: {
      attemptId: args.attemptId,
      claimedAt: at,
      finishedAt: null,
      uncertainAt: null,
      uncertainReason: null,
      previousAttemptId: args.previousAttemptId,
      deadlineAt: deadlineOf(args.deadlineAt, at),
    },
  });
}

/**
 * executing → completed, or uncertain → completed once reconciliation proved the outcome:
 * stores the exact JSON payload to redeliver (a success or a handler error).
 *
 * @param args.attemptId must be the owning fence.
 * @param args.result any JSON value within the bounds; stored as a frozen copy.
 * @param args.maxPayloadBytes UTF-8 bytes of canonical JSON. @default 65,536; at most 10 MiB.
 * @returns action `deliver`.
 * @throws {@link CheckpointError} FENCE_CONFLICT when another attempt owns the fence (also once the
 *   record moved on to completed and beyond); INVALID_TRANSITION from ready or for the owner of
 *   an already completed record; PAYLOAD_TOO_LARGE, NOT_JSON for the result; INVALID_ARGUMENT.
 */
export function completeExecution(record: CheckpointRecord, args: { attemptId: string; at: string; result: unknown; maxPayloadBytes?: number }): TransitionResult {
  const at = begin(record, args, 'completeExecution', ['executing', 'uncertain'], { field: 'attemptId', fence: args?.attemptId });
  const limit = resolveMaxPayloadBytes(args.maxPayloadBytes);
  const text = canonicalJson(args.result, 'result');
  const bytes = utf8ByteLength(text);
  if (bytes > limit) {
    throw new CheckpointError('PAYLOAD_TOO_LARGE', `result is ${bytes.toLocaleString('en-US')} UTF-8 JSON bytes, maxPayloadBytes is ${limit.toLocaleString('en-US')}`, {
      field: 'result',
      limit,
      actual: bytes,
      bound: 'bytes',
    });
  }
  return finish(record, at, 'deliver', {
    status: 'completed',
    execution: { ...record.execution!, finishedAt: at },
    result: { payload: deepFreeze(JSON.parse(text) as JsonValue) },
  });
}

/**
 * executing → uncertain: the host recorded that the external outcome is unknown. The record
 * then waits for reconciliation (lookup, same-key repeat or a person); it is never rerun.
 *
 * @param args.attemptId must be the owning fence.
 * @param args.reason why the outcome is unknown; at most 2,048 characters.
 * @returns action `reconcile-execution`.
 * @throws {@link CheckpointError} FENCE_CONFLICT when another attempt holds the fence, whatever the
 *   status; INVALID_TRANSITION from any status but `executing`; INVALID_ARGUMENT.
 */
export function markExecutionUncertain(record: CheckpointRecord, args: { attemptId: string; at: string; reason: string }): TransitionResult {
  const at = begin(record, args, 'markExecutionUncertain', ['executing'], { field: 'attemptId', fence: args?.attemptId });
  assertFence(record, 'attemptId', args.attemptId, 'markExecutionUncertain');
  assertReason(args.reason, 'reason');
  return finish(record, at, 'reconcile-execution', {
    status: 'uncertain',
    execution: { ...record.execution!, uncertainAt: at, uncertainReason: args.reason },
  });
}

/**
 * completed → delivering: claim the right to deliver the stored result under fence `deliveryId`.
 *
 * @returns action `deliver`.
 * @throws {@link CheckpointError} INVALID_TRANSITION from any status but `completed`; INVALID_ARGUMENT.
 */
export function claimDelivery(record: CheckpointRecord, args: { deliveryId: string; at: string }): TransitionResult {
  const at = begin(record, args, 'claimDelivery', ['completed']);
  assertIdentifier(args.deliveryId, 'deliveryId');
  return finish(record, at, 'deliver', {
    status: 'delivering',
    delivery: { deliveryId: args.deliveryId, claimedAt: at, releasedAt: null, deliveredAt: null },
  });
}

/**
 * delivering → completed: the delivery under `deliveryId` is known to have failed, so a later
 * delivery may be claimed. The stored result is unchanged.
 *
 * @returns action `deliver`.
 * @throws {@link CheckpointError} FENCE_CONFLICT when another delivery holds the fence, whatever the
 *   status; INVALID_TRANSITION from any status but `delivering`; INVALID_ARGUMENT.
 */
export function releaseDelivery(record: CheckpointRecord, args: { deliveryId: string; at: string }): TransitionResult {
  const at = begin(record, args, 'releaseDelivery', ['delivering'], { field: 'deliveryId', fence: args?.deliveryId });
  assertFence(record, 'deliveryId', args.deliveryId, 'releaseDelivery');
  return finish(record, at, 'deliver', { status: 'completed', delivery: { ...record.delivery!, releasedAt: at } });
}

/**
 * delivering → delivered: the delivery under `deliveryId` was recorded.
 *
 * @returns action `none`.
 * @throws {@link CheckpointError} FENCE_CONFLICT when another delivery holds the fence, whatever the
 *   status; INVALID_TRANSITION from any status but `delivering`; INVALID_ARGUMENT.
 */
export function completeDelivery(record: CheckpointRecord, args: { deliveryId: string; at: string }): TransitionResult {
  const at = begin(record, args, 'completeDelivery', ['delivering'], { field: 'deliveryId', fence: args?.deliveryId });
  assertFence(record, 'deliveryId', args.deliveryId, 'completeDelivery');
  return finish(record, at, 'none', { status: 'delivered', delivery: { ...record.delivery!, deliveredAt: at } });
}

/**
 * Validates the record, checks the presented fence (if any), guards the status and checks
 * `at`; returns `at`. Fence before status: once a fence of that kind is held, any other fence
 * is told FENCE_CONFLICT whatever the status, so a stale attempt or delivery learns that it
 * lost the claim also after the record moved on (docs/protocol.md#crash-windows).
 */
function begin(
  record: CheckpointRecord,
  args: { at: string } | undefined,
  transition: string,
  from: readonly Status[],
  presented?: { field: 'attemptId' | 'deliveryId'; fence: unknown },
): string {
  validateCheckpoint(record);
  if (presented !== undefined) {
    assertIdentifier(presented.fence, presented.field);
    const held = presented.field === 'attemptId' ? record.execution?.attemptId : record.delivery?.deliveryId;
    if (held !== undefined && held !== presented.fence) throw fenceConflict(record, presented.field, presented.fence, transition);
  }
  if (!from.includes(record.status)) {
    throw new CheckpointError('INVALID_TRANSITION', `${transition} is not allowed from status ${record.status} (only from ${from.join(' or ')})`, {
      transition,
      fromStatus: record.status,
      allowedFrom: [...from],
    });
  }
  const at = args?.at;
  if (parseTimestamp(at, 'at') < Date.parse(record.updatedAt)) {
    throw new CheckpointError('INVALID_ARGUMENT', `at ${at} is before the record's updatedAt ${record.updatedAt}; pass a time not earlier than updatedAt`, {
      field: 'at',
      actual: at ?? null,
      updatedAt: record.updatedAt,
    });
  }
  return at as string;
}

function assertFence(record: CheckpointRecord, field: 'attemptId' | 'deliveryId', fence: unknown, transition: string): void {
  assertIdentifier(fence, field);
  const held = field === 'attemptId' ? record.execution?.attemptId : record.delivery?.deliveryId;
  if (held !== fence) throw fenceConflict(record, field, fence, transition);
}

function fenceConflict(record: CheckpointRecord, field: 'attemptId' | 'deliveryId', fence: string, transition: string): CheckpointError {
  const held = (field === 'attemptId' ? record.execution?.attemptId : record.delivery?.deliveryId) ?? null;
  return new CheckpointError(
    'FENCE_CONFLICT',
    `${transition} by ${field} ${JSON.stringify(fence)} refused: the fence is held by ${JSON.stringify(held)} (status ${record.status})`,
    {
      transition,
      field,
      actual: fence,
      heldBy: held,
      fromStatus: record.status,
    },
  );
}

/**
 * Builds the frozen next record. Nested objects are copied, never shared with (or frozen in)
 * the caller's record; the payload is shared only when it is already deeply frozen (as every
 * record this module or `parseCheckpoint` made), otherwise a frozen copy is stored.
 */
function finish(record: CheckpointRecord, at: string, action: Action, changes: Partial<CheckpointRecord>): TransitionResult {
  const merged = { ...record, ...changes };
  // A record this layer built already holds a deeply frozen payload; anything else gets a frozen copy.
  const kept = merged.result !== null && isKnownValid(record) && merged.result.payload === record.result?.payload;
  const result = merged.result === null ? null : Object.freeze({ payload: kept ? merged.result.payload : frozenPayload(merged.result.payload) });
  const next: CheckpointRecord = Object.freeze({
    ...merged,
    // A record this layer built holds a frozen five-field binding: shared, so its row key is computed once per call.
    binding: isKnownValid(record) && merged.binding === record.binding ? record.binding : frozenCopy(merged.binding)!,
    execution: frozenCopy(merged.execution),
    result,
    delivery: frozenCopy(merged.delivery),
    revision: record.revision + 1,
    updatedAt: at,
  });
  // Valid by construction from a validated record (the property tests validate every step).
  return { action, expectedRevision: record.revision, next: trustValid(next) };
}

function frozenCopy<T extends object>(value: T | null): T | null {
  return value === null ? null : Object.freeze({ ...value });
}

/**
 * `payload` itself when every object in it is frozen, else a deeply frozen copy, so a record
 * read with plain `JSON.parse` never shares a mutable payload with the frozen `next`. The
 * payload was validated as bounded JSON by `validateCheckpoint`, so the JSON round trip is exact.
 */
function frozenPayload(payload: JsonValue): JsonValue {
  const stack: unknown[] = [payload];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (!Object.isFrozen(v)) return deepFreeze(JSON.parse(JSON.stringify(payload)) as JsonValue);
    for (const child of Object.values(v)) stack.push(child);
  }
  return payload;
}
