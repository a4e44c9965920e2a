/**
 * How people are told where an item of a batch call sits: counted from 1, with the batch's size
 * when it is known (`item 3 of 100`). JSON keeps the 0-based `index` (as `ctx.forEachItem`'s
 * `itemKey(item, index)` gets it); every message, log line and page uses this. Pure and
 * sandbox-safe.
 */

/**
 * `3 of 100` for the item at 0-based `index` of a batch of `total` items; `3` when the size is not
 * known (null, undefined or not a positive integer).
 */
export function itemPosition(index: number, total?: number | null): string {
  const ordinal = `${index + 1}`;
  return typeof total === 'number' && Number.isSafeInteger(total) && total > 0 ? `${ordinal} of ${total}` : ordinal;
}

/** `item "user-20" (20 of 100, generation 1)`: an item as a person reads it (key as JSON text; `generation` left out when absent). */
export function describeItem(item: { readonly key: string; readonly index: number; readonly total?: number | null; readonly generation?: number }): string {
  const generation = item.generation === undefined ? '' : `, generation ${item.generation}`;
  return `item ${JSON.stringify(item.key)} (${itemPosition(item.index, item.total)}${generation})`;
}
