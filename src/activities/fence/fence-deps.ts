/**
 * What the fenced tool activity depends on (`FencedToolDeps`: the store, the tools, the clock and
 * the margins), what an attempt learns as it goes (`AttemptEvidence`), and the times the fence
 * reads from its clock: now, a transition's time, a claim's deadline and its settle time
 * (docs/protocol.md#overlapping-attempts).
 */
import type { CheckpointRecord } from '../../checkpoint/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import type { FencePoint } from './crash-points';
import type { PreparedCall } from './prepare-call';
import { DEFAULT_CALL_DEADLINE_MS, type ToolDefinition } from '../tools/define-tool';

/** Default `reconcileMarginMs`: 5,000 ms. */
export const DEFAULT_RECONCILE_MARGIN_MS = 5_000;

/** Dependencies of the fenced tool activity. */
export interface FencedToolDeps {
  readonly store: CheckpointStore;
  readonly tools: ReadonlyMap<string, ToolDefinition<any>>;
  /** UTF-8 JSON bytes of a stored result. @default 65,536 */
  readonly maxPayloadBytes?: number;
  /** Every time decision of the fence (settle time, key retention, approval expiry, call deadline). @default () => new Date() */
  readonly clock?: () => Date;
  /**
   * Added to a holder's call deadline before its claim may be taken over, ms: covers clock
   * skew between workers and a request still in the network. @default 5,000
   */
  readonly reconcileMarginMs?: number;
  /** In-attempt backoff for transient tool errors (full jitter). */
  readonly transientRetry?: { readonly initialIntervalMs: number; readonly maximumIntervalMs: number; readonly maximumAttempts: number };
  /**
   * The tool's execute step is a user's activity (the plugin's fence interceptor calls `next`),
   * which may ignore the abort signal: instead of racing it against the call deadline, the holder
   * renews its claim's deadline while it runs (docs/protocol.md#overlapping-attempts: a claim is
   * taken over only once its holder's request can no longer be outstanding), and the fence leaves
   * the activity's heartbeat details to the activity. @default false
   */
  readonly executeIsUserActivity?: boolean;
  /** Test-only hooks (the interleaving explorer): `step` is awaited at every {@link FencePoint}. */
  readonly hooks?: { step?(point: FencePoint, attemptId: string): Promise<void> | void };
}

/** What one attempt has learned about its call, for deciding whether a failure may say "nothing applied" (docs/protocol.md#nothing-applied). */
export interface AttemptEvidence {
  /** This attempt sent a claim or takeover compare-and-swap (it may hold the call). */
  claimSent: boolean;
  /** The last record of the call this attempt read, or null. */
  seen: CheckpointRecord | null;
  /** Set when the call took the identity of the call holding its dedupe key (`./intent-dedupe`): the call as it went on. */
  adopted?: PreparedCall;
}

/**
 * When a claim can no longer have a request outstanding, in ms since the epoch
 * (docs/protocol.md#overlapping-attempts): the deadline its holder declared in the claim (which it
 * enforces by aborting) plus the margin. A claim that declared none (migrated from schema version
 * 1) uses the claim time plus `tool`'s call deadline (the default when the tool is unknown here).
 */
export function settleTime(record: CheckpointRecord, tool: ToolDefinition<any> | undefined, marginMs: number): number {
  const execution = record.execution!;
  const deadline = execution.deadlineAt !== null ? Date.parse(execution.deadlineAt) : Date.parse(execution.claimedAt) + (tool?.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS);
  return deadline + marginMs;
}

/**
 * Whether the provider still remembers the key of the call of `record` whenever a same-key repeat's
 * request or the holder's lands. `repeatSettlesAt` and `holderSettlesAt` (ms since the epoch) are
 * the latest each can land: the repeat's call deadline plus the reconcile margin, and the holder's
 * ({@link settleTime}; docs/protocol.md#overlapping-attempts). Whichever lands first, the key's
 * first use is at or after the record's `createdAt`, and a key expires at the end of its
 * retention, so both must settle strictly before `createdAt + keyRetentionMs`
 * (docs/protocol.md#key-lifetime). The holder may send late: an item claimed in a group is sent
 * only after the items before it, under a deadline that far out.
 */
export function keyOutlivesRepeat(
  record: CheckpointRecord,
  tool: Pick<ToolDefinition<any>, 'dedupesByKey' | 'keyRetentionMs'>,
  repeatSettlesAt: number,
  holderSettlesAt: number,
): boolean {
  return tool.dedupesByKey === true && Math.max(repeatSettlesAt, holderSettlesAt) < Date.parse(record.createdAt) + (tool.keyRetentionMs ?? 0);
}

/**
 * The latest deadline a claim on the key first usable at `firstUseAt` (ms since the epoch: the
 * record's `createdAt`) may declare so that its request, landing up to `marginMs` after it, lands
 * strictly before the key's retention ends (docs/protocol.md#key-lifetime).
 */
export function keyLiveDeadline(firstUseAt: number, tool: Pick<ToolDefinition<any>, 'keyRetentionMs'>, marginMs: number): number {
  return firstUseAt + (tool.keyRetentionMs ?? 0) - marginMs - 1;
}

/** The fence's current time in ms since the epoch (`deps.clock`, or the system clock). */
export function fenceNow(deps: Pick<FencedToolDeps, 'clock'>): number {
  return (deps.clock ?? (() => new Date()))().getTime();
}

/**
 * The time to stamp a transition of `record` with, ISO-8601 UTC: now, never earlier than the
 * record's `updatedAt` (clocks of workers may disagree; a transition refuses an earlier `at`).
 */
export function transitionTime(deps: Pick<FencedToolDeps, 'clock'>, record?: CheckpointRecord): string {
  const floor = record === undefined ? 0 : Date.parse(record.updatedAt);
  return new Date(Math.max(fenceNow(deps), floor)).toISOString();
}

/** The deadline a claim of a call of `tool` made at `at` declares: `at` + the tool's `callDeadlineMs`, ISO-8601 UTC. */
export function claimDeadline(tool: Pick<ToolDefinition<any>, 'callDeadlineMs'>, at: string): string {
  return deadlineAfter(at, tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS);
}

/** `at` (ISO-8601 UTC) plus `ms`, ISO-8601 UTC: the deadline a claim or renewal made at `at` declares. */
export function deadlineAfter(at: string, ms: number): string {
  return new Date(Date.parse(at) + ms).toISOString();
}
