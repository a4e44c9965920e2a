/**
 * The types a tool author sees: what `execute`, `lookup` and an item's `apply` receive
 * (`ToolContext`, with `forEachItem` for a batch tool), what they return (`ToolSuccess`,
 * `LookupResult`) and what `forEachItem` reports. Types only; the declaration is
 * `../tools/define-tool`, the batch rules `./batch-items` and `../fence/batch-fence`.
 */
import type { JsonValue } from '../../checkpoint/types';
import type { ResultEncoding, ResultSource, ToolOutcome } from './contract';

/** What a tool's `execute` and `lookup` receive besides the input. */
export interface ToolContext {
  /** Stable across retries of this logical call; send it as the provider's `Idempotency-Key`. */
  readonly idempotencyKey: string;
  /** `sha256:` digest of tool, revision, canonical arguments and target. */
  readonly intentDigest: string;
  /** The execution fence of this attempt. */
  readonly attemptId: string;
  /** The model's tool-call id. */
  readonly callId: string;
  readonly workflowId: string;
  /**
   * Aborted when Temporal cancels the activity or when the call's deadline
   * (`claimedAt + callDeadlineMs`) passes. Pass it to your HTTP client: the fence stops waiting at
   * the deadline, and another attempt may take the call over once the deadline plus a margin has
   * passed (docs/protocol.md#overlapping-attempts), so a request must not outlive it.
   */
  readonly signal: AbortSignal;
  /** Records a heartbeat (heartbeats are also sent automatically while the tool runs). */
  heartbeat(details?: unknown): void;
  /**
   * Applies one effect per item, each under its own checkpoint (the batch example: "send 100
   * notifications"): only in a tool declared with `batch: true`. See `./batch-items` for the
   * rules (child bindings, per-item idempotency keys, order, grouped writes, cancellation).
   * Absent in the context an item's `apply` or the tool's `lookup` receives.
   */
  readonly forEachItem?: ForEachItem;
  /** Set in the context of one item of a batch (`forEachItem`): the item's key and position. */
  readonly item?: { readonly key: string; readonly index: number; readonly generation: number };
}

/** A tool's successful result: the output the model sees and the provider's receipt (ticket id, message id, …). */
export interface ToolSuccess {
  readonly output: JsonValue;
  readonly receipt?: JsonValue;
  /**
   * How `output` encodes a result JSON cannot hold, named by Temporal's payload encodings: set by
   * the plugin's fence for an activity that returned a `Uint8Array` (`binary/plain`: `output` is
   * its base64) or `undefined` (`binary/null`: `output` is null), so the workflow receives what it
   * would unfenced. @default absent (output is the result)
   */
  readonly encoding?: ResultEncoding;
}

/** What `lookup` found for the idempotency key: the earlier effect's result, or proof of its absence. */
export type LookupResult = ({ readonly found: true } & ToolSuccess) | { readonly found: false };

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
