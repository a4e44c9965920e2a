/**
 * Batch tools: `ctx.forEachItem(items, itemKey, apply)` applies one effect per item,
 * each under its own checkpoint. The reports a batch leaves (a cancelled batch's report, the
 * progress in heartbeat details), importable from workflow code; `forEachItem`, its options and
 * its results are tool author types (`./tool-types`), re-exported here. The fence of the items is
 * `../fence/batch-fence`.
 */
import type { BatchItemRef } from './contract';

export type { BatchItemResult, BatchReport, ForEachItem, ForEachItemOptions } from './tool-types';

/** Progress of the batch, for heartbeat details and `show`. */
export interface BatchProgress {
  readonly total: number;
  /** Items settled (applied or refused for good) so far, counting items this attempt applied whose results wait for their group's write. */
  readonly settled: number;
  readonly applied: number;
  /** Key of the item being settled, null between items. */
  readonly current: string | null;
}

/**
 * The report a cancelled batch leaves in its `CancelledFailure` details (`details[0].batch`):
 * exact counts, and the keys (at most {@link MAX_REPORTED_KEYS} of each kind, `truncated` when more).
 */
export interface BatchCancellationReport {
  readonly total: number;
  readonly applied: { readonly count: number; readonly keys: readonly string[] };
  readonly notApplied: { readonly count: number; readonly keys: readonly string[] };
  readonly unknown: { readonly count: number; readonly keys: readonly string[] };
  readonly truncated: boolean;
}

/** Most keys of each kind listed in a {@link BatchCancellationReport}. */
export const MAX_REPORTED_KEYS = 1_000;

/**
 * A paused batch item, from the OUTCOME_UNKNOWN failure's `details.item`: key, generation, 0-based
 * index, the batch's size (absent from older workers) and the item's idempotency key. People are
 * shown the position counted from 1 (`item 3 of 100`, see `checkpoint/item-position.ts`).
 */
export interface PausedItem extends BatchItemRef {
  readonly index: number;
  readonly total?: number;
  readonly idempotencyKey: string | null;
}
