/**
 * The shapes the batch fence (`./batch-fence`, `./batch-window`) and the call's fence
 * (`./fenced-tool`) share: what the batch needs of the call's fence for one item, what one
 * `forEachItem` run needs of its batch, and an item as prepared. Types only.
 */
import type { ItemRef } from '../../checkpoint/batch-identity';
import type { CheckpointRecord, JsonValue, TransitionResult } from '../../checkpoint/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import type { FencedToolResult, ToolOutcome } from '../contract/contract';
import type { PreparedCall } from './prepare-call';
import type { BatchItemResult, ToolContext, ToolSuccess } from '../contract/tool-types';

/**
 * What the batch needs of the call's fence (`./fenced-tool`): the store, the attempt logic for
 * one item (settle an item that has a checkpoint; apply one this attempt claimed by a grouped
 * write) and the time to stamp transitions with.
 */
export interface ItemFence {
  readonly store: CheckpointStore;
  settle(item: PreparedCall): Promise<FencedToolResult>;
  claimed(item: PreparedCall): ClaimedItem;
  /** Now, ISO-8601 UTC, for claims. */
  now(): string;
  /** The reconcile margin, ms: how long after its deadline a claim's request may still land. */
  readonly marginMs: number;
  /** Whether the workflow asked to cancel the activity (not a worker shutdown): claimed items not started are then closed as not applied. */
  cancelRequested(): boolean;
}

/** An item's effect, as `forEachItem` gets it (the item is its canonical JSON). */
export type ApplyItem = (item: JsonValue, ctx: ToolContext) => Promise<ToolSuccess>;

/** An item of a batch as the fence prepares it. */
export interface PreparedItem {
  readonly key: string;
  readonly value: JsonValue;
}

/**
 * What one call of the tool came to: an outcome to store, or unknown. `notApplied` marks a
 * transient error result whose requests are proven not applied (the attempt may release its
 * claim instead of storing it, see `release`), with the provider's Retry-After in ms.
 */
export type Invoked = { kind: 'done'; value: ToolOutcome; notApplied?: { retryAfterMs: number | undefined } } | { kind: 'unknown'; reason: string };

/**
 * An item this attempt claimed itself, by a grouped write (`./batch-fence`): applied with the
 * call's attempt logic (crash points, heartbeats, transient retries, the claim's deadline), its
 * completion computed for the next grouped write, or its unknown outcome recorded as a call's is.
 */
export interface ClaimedItem {
  /** Applies the item under `claimed` (this item's claim, as the store returned it); nothing is written. */
  apply(claimed: CheckpointRecord): Promise<ItemOutcome>;
  /** The write that stores `outcome` under `claimed`'s fence together with its delivery (a result over the bounds becomes an error result, as for a call). */
  completion(claimed: CheckpointRecord, outcome: ToolOutcome): TransitionResult;
  /** Marks the item uncertain under its fence, then throws as a call's attempt does: RECONCILE_PENDING (lookup or key dedupe) or OUTCOME_UNKNOWN. */
  recordUnknown(claimed: CheckpointRecord, reason: string): Promise<never>;
}

/** What applying an item came to: an outcome to store, or unknown (with why). */
export type ItemOutcome = Invoked;

/**
 * What one `forEachItem` run (`ItemsRun`, `./batch-window`) needs of the attempt's batch
 * (`BatchRun`, `./batch-fence`).
 */
export interface ItemsBatch {
  /** The item's fence. */
  readonly itemFence: ItemFence;
  /** The deadline of one item, ms (the tool's `callDeadlineMs`). */
  readonly callDeadlineMs: number;
  /** Whether the activity was cancelled (the batch stops at the next item boundary). */
  readonly cancellationRequested: boolean;
  /** Marks `key` as the item being settled. */
  current(key: string): void;
  /** Settles one item that has a checkpoint (or lost its claim), running it again under the next generation while a person proved it absent. */
  settle(value: JsonValue, first: ItemRef, apply: ApplyItem, run: number): Promise<BatchItemResult>;
  /** What stopped the batch at item `ref`: stops the attempt. */
  failed(error: unknown, ref: ItemRef, idempotencyKey: string): never;
  /** The cancellation of the batch after `results`: stops the attempt. */
  cancelled(items: readonly PreparedItem[], results: readonly BatchItemResult[]): never;
  /** Records the progress (items settled, applied, in the batch) and heartbeats it. */
  settled(settled: number, applied: number, total: number): void;
  /** The prepared call of item `ref`: its binding, key and intent digest, and a tool whose `execute` applies the item. */
  prepareItem(value: JsonValue, ref: ItemRef, apply: ApplyItem, run: number): PreparedCall;
}
