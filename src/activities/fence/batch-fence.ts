/**
 * The fence of a batch call's items (the batch example: "send 100 notifications in batches"):
 * `ctx.forEachItem(items, itemKey, apply)` in a tool declared `batch: true`.
 *
 * Rules:
 * - Every item is a fenced call of its own: a child binding of the call's binding and an
 *   idempotency key derived from the call's (`../../checkpoint/batch-identity`), settled by the same
 *   attempt logic as a call (claim by compare-and-swap before `apply`, result stored under the
 *   claim; an item claimed by an attempt that died is looked up, repeated with its key, or paused).
 * - Items are settled in order: item n + 1 is claimed only once item n is settled (its result
 *   stored, or reconciled from the store, a lookup or a person).
 * - A later attempt of the call delivers finished items from their checkpoints without calling
 *   `apply`; a person's proof that an item's effect is absent (`RESOLVED_ABSENT`) runs the item
 *   again under its next generation (a new checkpoint and key), never reopening the old one.
 * - Cancellation stops at an item boundary: the item being applied finishes (its request is not
 *   aborted, so its outcome stays known), and the attempt fails with a `CancelledFailure` whose
 *   `details[0].batch` reports items applied, not applied and unknown ({@link BatchCancellationReport}).
 * - Anything that stops the batch (an item paused for a person, a claim still held by another
 *   attempt, the store) fails the whole attempt, even when the tool's code catches it.
 *
 * Node side (runs in the activity).
 */
import { CancelledFailure } from '@temporalio/common';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { assertItemKey, itemBinding, itemIdempotencyKey, type ItemRef } from '../../checkpoint/batch-identity';
import { describeItem, itemPosition } from '../../checkpoint/item-position';
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import { intentDigest } from '../../checkpoint/digest';
import { deepFreeze } from '../../checkpoint/record';
import type { JsonValue } from '../../checkpoint/types';
import { MAX_REPORTED_KEYS, type BatchCancellationReport, type BatchProgress } from '../contract/batch-items';
import type { ApplyItem, ItemFence, ItemsBatch, PreparedItem } from './batch-types';
import type { FencedToolResult, ToolOutcome } from '../contract/contract';
import { DEFAULT_CALL_DEADLINE_MS, type ToolDefinition } from '../tools/define-tool';
import { keyLiveDeadline } from './fence-deps';
import type { BatchItemResult, ForEachItem, ForEachItemOptions, ToolContext } from '../contract/tool-types';
import { ItemsRun } from './batch-window';
import type { PreparedCall } from './prepare-call';

export type { BatchProgress } from '../contract/batch-items';
export type { ApplyItem, ItemFence, PreparedItem } from './batch-types';

/** Most items one `forEachItem` call takes. */
export const MAX_BATCH_ITEMS = 100_000;

/** The error type a person's "absent" resolution stores in an item's checkpoint: the item runs again as the next generation. */
export const RESOLVED_ABSENT = 'RESOLVED_ABSENT';

/**
 * One attempt's batch: gives the tool its `forEachItem` and remembers what stopped the batch, so
 * the attempt fails with it even when the tool's code catches it ({@link BatchRun.rethrowStop}).
 */
export class BatchRun implements ItemsBatch {
  private stop: unknown = undefined;
  /** `forEachItem` calls of this attempt so far (part of each item's attempt id) and those still running. */
  private runs = 0;
  private running = 0;
  private idleWaiters: Array<() => void> = [];
  private progressNow: BatchProgress = { total: 0, settled: 0, applied: 0, current: null };

  /**
   * @param call the batch call's prepared call (its binding and key are the items' parents).
   * @param fence the call's fence, for the items.
   * @param cancellation the activity's cancellation signal (checked between items).
   * @param heartbeat records progress between items.
   */
  constructor(
    private readonly call: PreparedCall,
    private readonly fence: ItemFence,
    private readonly cancellation: AbortSignal,
    private readonly heartbeat: (progress: BatchProgress) => void,
  ) {}

  /** The current progress. */
  progress(): BatchProgress {
    return this.progressNow;
  }

  /** Throws what stopped the batch, if anything did. */
  rethrowStop(): void {
    if (this.stop !== undefined) throw this.stop;
  }

  /** Whether something stopped the batch. */
  get stopped(): boolean {
    return this.stop !== undefined;
  }

  /** What stopped the batch, or undefined. */
  get stopError(): unknown {
    return this.stop;
  }

  /**
   * `ctx.forEachItem` of the call (see the file's rules). One at a time per attempt: a call while
   * another runs (concurrently, or from inside an item's `apply`) is refused (`rejected`,
   * INVALID_ARGUMENT) before it touches any item. Whatever stops it after it started (an item, the
   * store, cancellation) is the batch's stop.
   */
  readonly forEachItem: ForEachItem = async (items, itemKey, apply, options) => {
    this.rethrowStop();
    if (this.running > 0) refuse('another forEachItem of this call is still running; call it once at a time (await it)');
    const prepared = prepareItems(items, itemKey, apply, options);
    const width = groupWidth(this.call.tool, options, this.fence.marginMs);
    this.running += 1;
    this.runs += 1;
    try {
      const run = new ItemsRun(this, prepared, apply as ApplyItem, this.runs);
      this.progressNow = { total: prepared.length, settled: 0, applied: 0, current: null };
      let next = 0;
      while (next < prepared.length) {
        if (this.cancellation.aborted) await run.cancel();
        if ((await run.known(next)) !== null) {
          await run.settleOne(next);
          next += 1;
          continue;
        }
        next = await run.claimAndApply(next, width);
      }
      await run.flush([]);
      return run.report();
    } catch (error) {
      // Also what the tool's code may catch: the attempt fails with it all the same (rethrowStop).
      if (this.stop === undefined) this.stop = error;
      throw error;
    } finally {
      this.running -= 1;
      if (this.running === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  };

  /**
   * Resolves once no `forEachItem` of this attempt is running: the attempt never ends (stores a
   * result, or fails) while items are still being applied, even if the tool returned without
   * awaiting its batch.
   */
  idle(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : new Promise((wake) => this.idleWaiters.push(wake));
  }

  /** Records the progress (items settled, applied, in the batch) and heartbeats it. */
  settled(settled: number, applied: number, total: number): void {
    this.progressNow = { total, settled, applied, current: null };
    this.heartbeat(this.progressNow);
  }

  /** Marks `key` as the item being settled. */
  current(key: string): void {
    this.progressNow = { ...this.progressNow, current: key };
  }

  /** The cancellation of the batch after `results`: stops the attempt. */
  cancelled(items: readonly PreparedItem[], results: readonly BatchItemResult[]): never {
    return this.halt(cancelled(this.call, items, results));
  }

  /** What stopped the batch at item `ref`: stops the attempt. */
  failed(error: unknown, ref: ItemRef, idempotencyKey: string): never {
    return this.halt(itemError(error, this.call, ref, idempotencyKey, this.progressNow.total));
  }

  /** The item's fence. */
  get itemFence(): ItemFence {
    return this.fence;
  }

  /** The deadline of one item, ms (the tool's `callDeadlineMs`). */
  get callDeadlineMs(): number {
    return this.call.tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS;
  }

  /** Whether the activity was cancelled (the batch stops at the next item boundary). */
  get cancellationRequested(): boolean {
    return this.cancellation.aborted;
  }

  /** Settles one item that has a checkpoint (or lost its claim), running it again under the next generation while a person proved it absent. */
  async settle(value: JsonValue, first: ItemRef, apply: ApplyItem, run: number): Promise<BatchItemResult> {
    for (let ref = first; ; ref = { ...ref, generation: ref.generation + 1 }) {
      const item = this.prepareItem(value, ref, apply, run);
      let result: FencedToolResult;
      try {
        result = await this.fence.settle(item);
      } catch (error) {
        this.failed(error, ref, item.idempotencyKey);
      }
      const outcome = result.outcome;
      if (isResolvedAbsent(outcome)) continue;
      return { key: ref.key, index: ref.index, outcome, source: result.source };
    }
  }

  /** The prepared call of item `ref`: its binding, key and intent digest, and a tool whose `execute` applies the item. */
  prepareItem(value: JsonValue, ref: ItemRef, apply: ApplyItem, run: number): PreparedCall {
    const { call } = this;
    const tool: ToolDefinition<any> = {
      ...call.tool,
      batch: false,
      execute: (item: JsonValue, ctx: ToolContext) => apply(item, ctx),
    };
    // An item is part of a call that was started under its approval: the approval's expiry does not stop the batch midway.
    const { approvalExpiresAt: _expiry, ...input } = call.input;
    // Unique per forEachItem call of the attempt, item and generation: a claim is this attempt's own only if it was made for exactly this item here.
    const suffix = `/r${run}/i${ref.generation}-${ref.index}`;
    return {
      ...call,
      tool,
      input,
      args: value,
      binding: itemBinding(call.binding, ref.key, ref.generation, value),
      idempotencyKey: itemIdempotencyKey(call.idempotencyKey, ref.key, ref.generation),
      intentDigest: intentDigest({ toolName: call.tool.name, toolRevision: call.tool.revision, args: value, target: ['ttc/item/1', call.intentDigest, ref.key] }),
      attemptId: `${call.attemptId}${suffix}`,
      deliveryId: `${call.deliveryId}${suffix}`,
      item: ref,
      batchProgress: () => this.progressNow,
    };
  }

  private halt(error: unknown): never {
    this.stop = error;
    throw error;
  }
}

/** Default `groupSize` of a tool whose items a provider deduplicates by key: a crash costs same-key repeats, no waiting. */
export const DEFAULT_DEDUPE_GROUP_SIZE = 100;

/**
 * The most items one group may claim so that every item's request settles while the provider
 * still remembers its key: item k of a group (from 0) is claimed until `(k + 1) × callDeadlineMs`
 * after the group's claim and may land `marginMs` after that, which must be strictly before the
 * key's retention ends (docs/protocol.md#key-lifetime). At least 1.
 */
export function keyLiveGroupSize(tool: Pick<ToolDefinition<any>, 'keyRetentionMs' | 'callDeadlineMs'>, marginMs: number): number {
  const deadlineMs = tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS;
  return Math.max(1, Math.floor(keyLiveDeadline(0, tool, marginMs) / deadlineMs));
}

/**
 * How many items one grouped write claims: `options.groupSize`, else 1 (one write per item: the
 * previous item's result with the next item's claim), or {@link DEFAULT_DEDUPE_GROUP_SIZE} for a
 * tool whose provider deduplicates by key. For such a tool without lookup, at most
 * {@link keyLiveGroupSize}: an item claimed but not started when the worker dies is then always
 * settled by a same-key repeat, never left to a person. Refused (`rejected`, INVALID_ARGUMENT),
 * before any item runs, for a group of more than one of a tool with neither lookup nor key
 * dedupe. With lookup, an item claimed in a group settles at most `groupSize × callDeadlineMs`
 * (+ margin) after the group's claim, so recovery after a crash may wait that long.
 */
function groupWidth(tool: ToolDefinition<any>, options: ForEachItemOptions | undefined, marginMs: number): number {
  const dedupes = tool.dedupesByKey === true;
  const size = options?.groupSize ?? (dedupes ? DEFAULT_DEDUPE_GROUP_SIZE : 1);
  if (tool.lookup !== undefined) return size;
  if (dedupes) return Math.min(size, keyLiveGroupSize(tool, marginMs));
  if (size > 1) {
    throw Object.assign(
      new Error(
        `forEachItem: groupSize ${size} needs a tool whose items can be reconciled (lookup or dedupesByKey): an item claimed in a group but not started when a worker dies would otherwise pause for a person; no item ran`,
      ),
      { kind: 'rejected', type: 'INVALID_ARGUMENT' },
    );
  }
  return size;
}

/**
 * Checks the batch before any item runs: items an array of at most {@link MAX_BATCH_ITEMS} JSON
 * values, keys valid and unique. A bad batch is the call's refusal (an error result with `kind`
 * `rejected`, type INVALID_ARGUMENT): nothing of it ran.
 */
/** Refuses a `forEachItem` call before it touches any item: an error result of the call (`rejected`, INVALID_ARGUMENT). */
function refuse(message: string): never {
  throw Object.assign(new Error(`forEachItem: ${message}; no item of this call ran`), { kind: 'rejected', type: 'INVALID_ARGUMENT' });
}

function prepareItems<T>(items: readonly T[], itemKey: (item: T, index: number) => string, apply: unknown, options: ForEachItemOptions | undefined): PreparedItem[] {
  if (!Array.isArray(items)) refuse('items must be an array');
  if (items.length > MAX_BATCH_ITEMS) refuse(`at most ${MAX_BATCH_ITEMS} items, got ${items.length}`);
  if (typeof itemKey !== 'function' || typeof apply !== 'function') refuse('itemKey and apply must be functions');
  if (options?.groupSize !== undefined && !(Number.isSafeInteger(options.groupSize) && options.groupSize >= 1 && options.groupSize <= 1_000))
    refuse('groupSize must be an integer from 1 to 1,000');
  const seen = new Set<string>();
  return items.map((item, index) => {
    let key: string;
    let value: JsonValue;
    try {
      key = itemKey(item, index);
      assertItemKey(key);
      value = deepFreeze(JSON.parse(canonicalJson(item, `items[${index}]`)) as JsonValue);
    } catch (error) {
      return refuse(`item ${itemPosition(index, items.length)}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (seen.has(key)) refuse(`item key ${JSON.stringify(key)} is used twice (item ${itemPosition(index, items.length)}); keys name items, so each must be unique`);
    seen.add(key);
    return { key, value };
  });
}

/**
 * What stopped the batch at item `ref`, with the item named in the message (`item "k" (3 of 100,
 * generation 1)`, counted from 1) and `details.item` (`{ key, generation, index, total,
 * idempotencyKey }`, `index` 0-based, `idempotencyKey` the item's), so a person resolves that item.
 * `details.idempotencyKey` and `details.toolRevision` are the call's (what the call was claimed
 * and keyed under; the item's key derives from it).
 *
 * An item's FENCE_CONFLICT (another attempt of the call took this attempt's claim of the item
 * over: a later attempt, or an earlier one still running, by a same-key repeat or after the
 * item's settle time) stops the batch as RECONCILE_PENDING, which is retryable: the item belongs
 * to the attempt that took it, and the next attempt of the call settles it from the store or
 * reconciles it. A non-retryable FENCE_CONFLICT would end the current attempt of the call for
 * good although nothing is unknown (found by the batch interleaving explorer,
 * test/property/batch-interleavings.property.test.ts).
 */
function itemError(error: unknown, call: PreparedCall, ref: ItemRef, idempotencyKey: string, total: number): unknown {
  if (!isCheckpointError(error)) return error;
  const bare = error.message.startsWith(`${error.code}: `) ? error.message.slice(error.code.length + 2) : error.message;
  const takenOver = error.code === 'FENCE_CONFLICT';
  // The item key holds another item's checkpoint (the items changed between attempts): never a cache hit, and no retry can
  // change it (every attempt of a batch call holds a claim, so a BINDING_CONFLICT would read as retryable): a person decides.
  const conflict = error.code === 'BINDING_CONFLICT';
  const code = takenOver ? 'RECONCILE_PENDING' : conflict ? 'OUTCOME_UNKNOWN' : error.code;
  const why = takenOver
    ? '; another attempt holds the item now, the next attempt of the call settles it'
    : conflict
      ? '; the key names another item than an earlier attempt applied under it, so the run waits for a person (resolve the item)'
      : '';
  return new CheckpointError(
    code,
    `${describeItem({ ...ref, total })} of ${call.tool.name} call ${JSON.stringify(call.input.callId)}: ${bare}${why}`,
    {
      ...error.details,
      callId: call.input.callId,
      toolName: call.tool.name,
      toolRevision: call.tool.revision,
      idempotencyKey: call.idempotencyKey,
      item: { key: ref.key, generation: ref.generation, index: ref.index, total, idempotencyKey },
    },
    { cause: error },
  );
}

/** The cancellation of a batch before item `results.length`: every item before it settled, none after it started. */
function cancelled(call: PreparedCall, items: readonly PreparedItem[], results: readonly BatchItemResult[]): CancelledFailure {
  const applied = results.filter((r) => r.outcome.ok).map((r) => r.key);
  const notApplied = [...results.filter((r) => !r.outcome.ok).map((r) => r.key), ...items.slice(results.length).map((i) => i.key)];
  const report: BatchCancellationReport = {
    total: items.length,
    applied: { count: applied.length, keys: applied.slice(0, MAX_REPORTED_KEYS) },
    notApplied: { count: notApplied.length, keys: notApplied.slice(0, MAX_REPORTED_KEYS) },
    unknown: { count: 0, keys: [] },
    truncated: applied.length > MAX_REPORTED_KEYS || notApplied.length > MAX_REPORTED_KEYS,
  };
  return new CancelledFailure(
    `${call.tool.name} call ${JSON.stringify(call.input.callId)} was cancelled after ${results.length} of ${items.length} items: ${applied.length} applied, ${notApplied.length} not applied, 0 unknown`,
    [{ batch: report }],
  );
}

/** Whether `outcome` is a person's proof that the item's effect is absent. */
export function isResolvedAbsent(outcome: ToolOutcome): boolean {
  return !outcome.ok && outcome.error.type === RESOLVED_ABSENT;
}
