/**
 * The fence of a batch call's items (issue 14, the seed's "send 100 notifications in batches"):
 * `ctx.forEachItem(items, itemKey, apply)` in a tool declared `batch: true`.
 *
 * Rules:
 * - Every item is a fenced call of its own: a child binding of the call's binding and an
 *   idempotency key derived from the call's (`../checkpoint/batch-identity`), settled by the same
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
import { canonicalJson } from '../checkpoint/canonical-json';
import { assertItemKey, itemBinding, itemIdempotencyKey, type ItemRef } from '../checkpoint/batch-identity';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { intentDigest } from '../checkpoint/digest';
import { deepFreeze } from '../checkpoint/record';
import type { JsonValue } from '../checkpoint/types';
import { MAX_REPORTED_KEYS, type BatchCancellationReport, type BatchItemResult, type BatchReport, type ForEachItem, type ForEachItemOptions } from './batch-items';
import type { FencedToolResult, ToolOutcome } from './contract';
import type { ToolContext, ToolDefinition, ToolSuccess } from './define-tool';
import type { PreparedCall } from './prepare-call';

/** Most items one `forEachItem` call takes. */
export const MAX_BATCH_ITEMS = 100_000;

/** The error type a person's "absent" resolution stores in an item's checkpoint: the item runs again as the next generation. */
export const RESOLVED_ABSENT = 'RESOLVED_ABSENT';

/** Progress of the batch, for heartbeat details and `show`. */
export interface BatchProgress {
  readonly total: number;
  /** Items settled (applied or refused for good) so far. */
  readonly settled: number;
  readonly applied: number;
  /** Key of the item being settled, null between items. */
  readonly current: string | null;
}

/** Settles one item's fenced call (the attempt logic of `./fenced-tool`). */
export type SettleItem = (item: PreparedCall) => Promise<FencedToolResult>;

/** An item of a batch as the fence prepares it. */
interface PreparedItem {
  readonly key: string;
  readonly value: JsonValue;
}

/**
 * One attempt's batch: gives the tool its `forEachItem` and remembers what stopped the batch, so
 * the attempt fails with it even when the tool's code catches it ({@link BatchRun.rethrowStop}).
 */
export class BatchRun {
  private stop: unknown = undefined;
  private progressNow: BatchProgress = { total: 0, settled: 0, applied: 0, current: null };

  /**
   * @param call the batch call's prepared call (its binding and key are the items' parents).
   * @param settleItem settles one item's prepared call.
   * @param cancellation the activity's cancellation signal (checked between items).
   * @param heartbeat records progress between items.
   */
  constructor(
    private readonly call: PreparedCall,
    private readonly settleItem: SettleItem,
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

  /** `ctx.forEachItem` of the call (see the file's rules). */
  readonly forEachItem: ForEachItem = async (items, itemKey, apply, options) => {
    this.rethrowStop();
    const prepared = prepareItems(items, itemKey, apply, options);
    const results: BatchItemResult[] = [];
    let applied = 0;
    this.progressNow = { total: prepared.length, settled: 0, applied: 0, current: null };
    for (let index = 0; index < prepared.length; index += 1) {
      if (this.cancellation.aborted) this.halt(cancelled(this.call, prepared, results));
      const { key, value } = prepared[index]!;
      this.progressNow = { ...this.progressNow, current: key };
      const settled = await this.settle(value, { key, index, generation: 1 }, apply as (item: JsonValue, ctx: ToolContext) => Promise<ToolSuccess>);
      if (settled.outcome.ok) applied += 1;
      results.push(settled);
      this.progressNow = { total: prepared.length, settled: index + 1, applied, current: null };
      this.heartbeat(this.progressNow);
    }
    return { items: results, applied, rejected: results.length - applied } satisfies BatchReport;
  };

  /** Settles one item, running it again under the next generation while a person proved it absent. */
  private async settle(value: JsonValue, first: ItemRef, apply: (item: JsonValue, ctx: ToolContext) => Promise<ToolSuccess>): Promise<BatchItemResult> {
    for (let ref = first; ; ref = { ...ref, generation: ref.generation + 1 }) {
      const item = this.prepareItem(value, ref, apply);
      let result: FencedToolResult;
      try {
        result = await this.settleItem(item);
      } catch (error) {
        this.halt(itemError(error, this.call, ref, item.idempotencyKey));
      }
      const outcome = result.outcome;
      if (!outcome.ok && outcome.error.type === RESOLVED_ABSENT) continue;
      return { key: ref.key, index: ref.index, outcome, source: result.source };
    }
  }

  /** The prepared call of item `ref`: its binding, key and intent digest, and a tool whose `execute` applies the item. */
  private prepareItem(value: JsonValue, ref: ItemRef, apply: (item: JsonValue, ctx: ToolContext) => Promise<ToolSuccess>): PreparedCall {
    const { call } = this;
    const tool: ToolDefinition<any> = {
      ...call.tool,
      batch: false,
      execute: (item: JsonValue, ctx: ToolContext) => apply(item, ctx),
    };
    // An item is part of a call that was started under its approval: the approval's expiry does not stop the batch midway.
    const { approvalExpiresAt: _expiry, ...input } = call.input;
    const suffix = `/i${ref.generation}-${ref.index}`;
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

/**
 * Checks the batch before any item runs: items an array of at most {@link MAX_BATCH_ITEMS} JSON
 * values, keys valid and unique. A bad batch is the call's refusal (an error result with `kind`
 * `rejected`, type INVALID_ARGUMENT): nothing of it ran.
 */
function prepareItems<T>(items: readonly T[], itemKey: (item: T, index: number) => string, apply: unknown, options: ForEachItemOptions | undefined): PreparedItem[] {
  const refuse = (message: string): never => {
    throw Object.assign(new Error(`forEachItem: ${message}; no item ran`), { kind: 'rejected', type: 'INVALID_ARGUMENT' });
  };
  if (!Array.isArray(items)) refuse('items must be an array');
  if (items.length > MAX_BATCH_ITEMS) refuse(`at most ${MAX_BATCH_ITEMS} items, got ${items.length}`);
  if (typeof itemKey !== 'function' || typeof apply !== 'function') refuse('itemKey and apply must be functions');
  if (options?.groupSize !== undefined && !(Number.isSafeInteger(options.groupSize) && options.groupSize >= 1 && options.groupSize <= 1_000)) refuse('groupSize must be an integer from 1 to 1,000');
  const seen = new Set<string>();
  return items.map((item, index) => {
    let key: string;
    let value: JsonValue;
    try {
      key = itemKey(item, index);
      assertItemKey(key);
      value = deepFreeze(JSON.parse(canonicalJson(item, `items[${index}]`)) as JsonValue);
    } catch (error) {
      return refuse(`item ${index}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (seen.has(key)) refuse(`item key ${JSON.stringify(key)} is used twice (item ${index}); keys name items, so each must be unique`);
    seen.add(key);
    return { key, value };
  });
}

/**
 * What stopped the batch at item `ref`, with the item named in the message and `details.item`
 * (`{ key, generation, index, idempotencyKey }`), so a person resolves that item.
 */
function itemError(error: unknown, call: PreparedCall, ref: ItemRef, idempotencyKey: string): unknown {
  if (!isCheckpointError(error)) return error;
  const bare = error.message.startsWith(`${error.code}: `) ? error.message.slice(error.code.length + 2) : error.message;
  return new CheckpointError(
    error.code,
    `item ${JSON.stringify(ref.key)} (${ref.index + 1} of the batch, generation ${ref.generation}) of ${call.tool.name} call ${JSON.stringify(call.input.callId)}: ${bare}`,
    { ...error.details, callId: call.input.callId, item: { key: ref.key, generation: ref.generation, index: ref.index, idempotencyKey } },
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
  return new CancelledFailure(`${call.tool.name} call ${JSON.stringify(call.input.callId)} was cancelled after ${results.length} of ${items.length} items: ${applied.length} applied, ${notApplied.length} not applied, 0 unknown`, [{ batch: report }]);
}

/** Whether `outcome` is a person's proof that the item's effect is absent. */
export function isResolvedAbsent(outcome: ToolOutcome): boolean {
  return !outcome.ok && outcome.error.type === RESOLVED_ABSENT;
}
