/**
 * Batch tools: `ctx.forEachItem(items, itemKey, apply)` applies one effect per item,
 * each under its own checkpoint. Types here; the fence of the items is `./batch-fence`.
 */
import type { ResultSource, ToolOutcome } from './contract';
import type { ToolContext, ToolSuccess } from './define-tool';

/** Options of `forEachItem`. */
export interface ForEachItemOptions {
  /**
   * Items claimed (and completed) together in one store write. Only a tool whose items can be
   * reconciled (`lookup` or `dedupesByKey`) groups: an item claimed in a group but not started
   * when the worker dies is then looked up or repeated with its key, never paused for a person.
   * Others claim one item at a time. Integer 1 to 1,000. @default 100 with lookup or key dedupe, else 1
   */
  readonly groupSize?: number;
}

/** How one item came out. */
export interface BatchItemResult {
  readonly key: string;
  readonly index: number;
  /** The item's stored outcome: applied (`ok: true`) or refused for good (`ok: false`). */
  readonly outcome: ToolOutcome;
  /** How this attempt obtained it (`store`: an earlier attempt applied it). */
  readonly source: ResultSource | 'resolution';
}

/** What `forEachItem` returns once every item is settled: one result per item, in item order. */
export interface BatchReport {
  readonly items: readonly BatchItemResult[];
  /** Items whose outcome is `ok: true`. */
  readonly applied: number;
  /** Items refused for good (`ok: false`). */
  readonly rejected: number;
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
 * `ctx.forEachItem`. `itemKey` names each item within the call (1 to 256 characters, unique in
 * the batch, stable across attempts: e.g. the recipient's id); `apply` performs the item's effect
 * with the item's own `ctx.idempotencyKey`.
 */
export type ForEachItem = <T>(
  items: readonly T[],
  itemKey: (item: T, index: number) => string,
  apply: (item: T, ctx: ToolContext) => Promise<ToolSuccess>,
  options?: ForEachItemOptions,
) => Promise<BatchReport>;
