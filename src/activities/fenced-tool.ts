/**
 * One fenced tool-call attempt (docs/protocol.md#the-fenced-attempt, #overlapping-attempts):
 * create-if-absent, decide, then execute, deliver or reconcile. Every change to the checkpoint is a
 * compare-and-swap; the tool never runs without a durable claim; a claim held by another attempt is
 * taken over only once its holder's request can no longer be outstanding (its settle time), except
 * by a same-key repeat to a provider that deduplicates by key within its key retention.
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import { msOptionalToNumber } from '@temporalio/common/lib/time';
import { sanitizeReason, utf8ByteLength } from '../checkpoint/bounds';
import { canonicalJson } from '../checkpoint/canonical-json';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { decideCheckpoint } from '../checkpoint/decide';
import { createCheckpoint } from '../checkpoint/record';
import { completeAndDeliver, createClaimed, redeliver } from '../checkpoint/compose';
import { claimExecution, markExecutionUncertain, reclaimExecution, releaseExecution } from '../checkpoint/transitions';
import type { CheckpointRecord, TransitionResult } from '../checkpoint/types';
import type { CheckpointStore, CreateResult } from '../stores/checkpoint-store';
import { observeAttempt, type AttemptObserver } from '../telemetry/attempt-telemetry';
import { fenceHeartbeatDetails, type FenceHeartbeatDetails, type FencePhase } from '../telemetry/heartbeat-details';
import type { FencedToolResult, ResultSource, ToolOutcome } from './contract';
import { ClaimRenewal } from './claim-renewal';
import { crashPoint, type FencePoint } from './crash-points';
import { DEFAULT_CALL_DEADLINE_MS, toolErrorKind, type LookupResult, type ToolContext, type ToolDefinition, type ToolSuccess } from './define-tool';
import type { PreparedCall } from './prepare-call';
import { BatchRun } from './batch-fence';
import type { ClaimedItem, Invoked } from './batch-types';
import { DEFAULT_TRANSIENT_RETRY, retryTransient } from './transient-retry';

export type { ClaimedItem, ItemOutcome } from './batch-types';

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
}

/** Returned by a step whose compare-and-swap lost: read the record again and decide again. */
const REREAD = Symbol('reread');
type Step = FencedToolResult | typeof REREAD;
const MAX_ROUNDS = 8;

/**
 * Runs one attempt of a prepared call to a result, reading and deciding again whenever a
 * delivery compare-and-swap loses (at most 8 rounds). The attempt is traced (an `execute_tool`
 * span with the store's operations as child spans) and counted on the activity's metric meter
 * (see `../telemetry/attempt-telemetry`).
 *
 * @param evidence filled in as the attempt goes (see {@link AttemptEvidence}).
 * @throws {@link CheckpointError} OUTCOME_UNKNOWN (pause for a person); RECONCILE_PENDING (retryable:
 *   the holder's settle time has not come, a competitor won the claim, or the outcome is unknown
 *   and the next attempt reconciles; `details.retryAfterMs` when the wait is known);
 *   APPROVAL_EXPIRED before a claim; BINDING_CONFLICT; FENCE_CONFLICT (this attempt's claim was
 *   taken over and Temporal has given up on it, see {@link fenceLost}; its result is discarded; the
 *   attempt Temporal still waits for gets RECONCILE_PENDING instead); INVALID_CHECKPOINT and the store codes.
 */
export async function settleCall(deps: FencedToolDeps, call: PreparedCall, evidence: AttemptEvidence): Promise<FencedToolResult> {
  const ctx = Context.current();
  const observed = { toolName: call.tool.name, toolRevision: call.tool.revision, callId: call.input.callId, idempotencyKey: call.idempotencyKey, attempt: ctx.info.attempt, approved: call.input.expectedIntentDigest !== undefined, ...(call.input.approvedBy === undefined ? {} : { approvedBy: call.input.approvedBy }) };
  return observeAttempt(observed, deps.store, ctx.metricMeter, async (store, observer) => {
    const attempt = new Attempt({ ...deps, store }, call, evidence, observer);
    try {
      for (let round = 0; round < MAX_ROUNDS; round += 1) {
        const step = await attempt.round();
        if (step !== REREAD) return step;
      }
    } catch (error) {
      throw fenceLost(error, call, { attempt: ctx.info.attempt, cancellation: ctx.cancellationDetails });
    }
    throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `call ${call.binding.callId}: the checkpoint kept changing under this attempt (${MAX_ROUNDS} lost compare-and-swaps)`, { callId: call.binding.callId });
  });
}

/** What an attempt knows about whether Temporal still waits for it. */
export interface AttemptStanding {
  /** The activity's attempt number (`Info.attempt`, from 1). */
  readonly attempt: number;
  /** The activity's cancellation details (`Context.cancellationDetails`), if it was cancelled. */
  readonly cancellation?: { readonly notFound?: boolean; readonly timedOut?: boolean; readonly reset?: boolean } | undefined;
}

/**
 * Whether Temporal has given up on this attempt: it said so (the activity was cancelled because
 * its heartbeat found it timed out, unknown to the server, or reset), or the fence that took the
 * call over is a later attempt of the activity (`attempt-N-…` with N greater than this
 * attempt's number: Temporal starts attempt N only after it stopped waiting for this one).
 */
export function supersededAttempt(standing: AttemptStanding, heldBy: unknown): boolean {
  const c = standing.cancellation;
  if (c?.notFound === true || c?.timedOut === true || c?.reset === true) return true;
  const holder = typeof heldBy === 'string' ? /^attempt-(\d+)-/.exec(heldBy) : null;
  return holder !== null && Number(holder[1]) > standing.attempt;
}

/**
 * A FENCE_CONFLICT of this attempt's own claim (another attempt took the call over, e.g. an
 * earlier attempt of a keyed tool, delayed past its heartbeat timeout, by a same-key repeat)
 * stays final (non-retryable, its result discarded) only for an attempt Temporal has given up
 * on ({@link supersededAttempt}). The attempt Temporal still waits for has learned only that a
 * live competitor holds the call: it fails with RECONCILE_PENDING (retryable; `details.cause`
 * FENCE_CONFLICT, `details.heldBy` the fence holding the call), and the next attempt delivers the
 * competitor's stored result or reconciles its claim. Any other error is returned unchanged.
 */
export function fenceLost(error: unknown, call: PreparedCall, standing: AttemptStanding): unknown {
  if (!isCheckpointError(error, 'FENCE_CONFLICT')) return error;
  const heldBy = error.details.heldBy;
  if (supersededAttempt(standing, heldBy)) return error;
  const bare = error.message.startsWith('FENCE_CONFLICT: ') ? error.message.slice('FENCE_CONFLICT: '.length) : error.message;
  return new CheckpointError(
    'RECONCILE_PENDING',
    `${call.tool.name} call ${call.input.callId}: another attempt took the call over while attempt ${standing.attempt} ran (FENCE_CONFLICT: ${bare}); this attempt's result is discarded and the next attempt delivers the stored result or reconciles`,
    { callId: call.input.callId, cause: 'FENCE_CONFLICT', heldBy: typeof heldBy === 'string' ? heldBy : null },
    { cause: error },
  );
}

/** The observer of an item's attempt: items are traced as the store operations of their call's span. */
const ITEM_OBSERVER: AttemptObserver = { decided: () => undefined };

/**
 * Settles one item of a batch call (`./batch-fence`) with the attempt logic of a call: claim,
 * apply under the claim, store; or deliver a stored result; or reconcile a claim another attempt
 * left (lookup, same-key repeat, pause). Runs inside the call's attempt (its span, its store).
 * @throws {@link CheckpointError} as {@link settleCall}.
 */
export async function settleItem(deps: FencedToolDeps, item: PreparedCall): Promise<FencedToolResult> {
  const attempt = new Attempt(deps, item, { claimSent: false, seen: null }, ITEM_OBSERVER);
  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    const step = await attempt.round();
    if (step !== REREAD) return step;
  }
  throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `item ${item.binding.callId}: the checkpoint kept changing under this attempt (${MAX_ROUNDS} lost compare-and-swaps)`, { callId: item.input.callId });
}

/** The {@link ClaimedItem} of `item` (its claim was made with `item.attemptId`). */
export function claimedItem(deps: FencedToolDeps, item: PreparedCall): ClaimedItem {
  const attempt = new Attempt(deps, item, { claimSent: true, seen: null }, ITEM_OBSERVER);
  return {
    apply: (claimed) => attempt.applyClaimed(claimed),
    completion: (claimed, outcome) => attempt.completion(claimed, outcome),
    recordUnknown: async (claimed, reason) => {
      await attempt.recordUnknown(claimed, reason);
      throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `item ${item.binding.callId}: its unknown outcome was recorded`, { callId: item.input.callId });
    },
  };
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

class Attempt {
  private readonly clock: () => Date;
  private readonly marginMs: number;

  constructor(
    private readonly deps: FencedToolDeps,
    private readonly call: PreparedCall,
    private readonly evidence: AttemptEvidence,
    private readonly observer: AttemptObserver,
  ) {
    this.clock = deps.clock ?? (() => new Date());
    this.marginMs = deps.reconcileMarginMs ?? DEFAULT_RECONCILE_MARGIN_MS;
  }

  /**
   * One read-decide-act round. The claim of a fresh call is its insert (docs/protocol.md#cost:
   * create and claimExecution composed into one write, `createClaimed`); when the call already has
   * a record, the store returns it unchanged and this attempt decides on it.
   */
  async round(): Promise<Step> {
    await this.step('before-claim');
    // A call whose approval expired is not claimed: its ready record lets the execute path refuse it (APPROVAL_EXPIRED).
    const at = this.now();
    const claim = this.approvalExpired() ? null : createClaimed(this.call.binding, { attemptId: this.call.attemptId, at, deadlineAt: this.deadlineFrom(at) });
    const claimSentBefore = this.evidence.claimSent;
    if (claim !== null) this.evidence.claimSent = true;
    let inserted: CreateResult;
    try {
      inserted = await this.deps.store.createIfAbsent(claim ?? createCheckpoint(this.call.binding, { createdAt: at }));
    } catch (error) {
      // STORE_UNAVAILABLE: nothing was written (the store's contract), so this attempt holds no claim; any other failure may have written it.
      if (isCheckpointError(error, 'STORE_UNAVAILABLE')) this.evidence.claimSent = claimSentBefore;
      throw error;
    }
    const { created, record } = inserted;
    this.evidence.seen = record;
    // Also after a lost connection the store may answer created: false for this very insert; the fence is this attempt's alone.
    if (claim !== null && record.status === 'executing' && record.execution?.attemptId === this.call.attemptId) {
      this.observer.decided(created ? null : record, 'execute');
      return this.runAndStore(record, 'executed');
    }
    if (!created) this.evidence.claimSent = claimSentBefore; // the insert was refused: this round put nothing of this attempt in the store
    const { action } = decideCheckpoint(record, this.call.binding);
    this.observer.decided(created ? null : record, action);
    switch (action) {
      case 'execute':
        return this.execute(record);
      case 'reconcile-execution':
        return this.reconcileExecution(record);
      case 'deliver':
        return this.deliver(record, 'store');
      case 'reconcile-delivery':
        return this.deliver(record, 'store');
      case 'none':
        // Delivery was recorded but may never have reached Temporal: the same crash window as right after completeDelivery.
        await this.step('after-delivery-completed');
        return this.result(record, 'store');
    }
  }

  /** ready (a record another path created unclaimed): claim, run the tool under the claim, store the result, deliver. A lost claim means a live competitor. */
  private async execute(record: CheckpointRecord): Promise<Step> {
    await this.step('before-claim');
    this.assertApprovalLive();
    const at = this.now(record);
    const claim = claimExecution(record, { attemptId: this.call.attemptId, at, deadlineAt: this.deadlineFrom(at) });
    this.evidence.claimSent = true;
    if (!(await this.cas(claim, record))) {
      throw this.pending(`another attempt claimed ${this.call.tool.name} call ${this.call.input.callId} first; the next attempt reads what it left`, undefined);
    }
    return this.runAndStore(claim.next, 'executed');
  }

  /**
   * executing | uncertain, held by another fence: never rerun blindly. A provider that dedupes by
   * key (within its key retention) may be taken over at once: a lookup that finds the effect
   * settles it, else it is repeated with the same key. Otherwise nothing is written before the
   * holder's settle time; after it, a lookup that finds the effect settles the call, one that
   * finds nothing proves absence (take over, run once more with the same key), and without
   * lookup the outcome is unknown: pause.
   */
  private async reconcileExecution(record: CheckpointRecord): Promise<Step> {
    const { tool } = this.call;
    // A batch call's effects are its items, each under its own claim: the call is taken
    // over at once and run again; finished items are delivered, the interrupted one is reconciled.
    if (tool.batch === true) return this.runAndStore(await this.takeOver(record), 'executed');
    // Read before the lookup: a lookup that finds nothing proves absence only if it *started* after the settle time.
    const now = this.clock().getTime();
    const found = tool.lookup === undefined ? undefined : await this.lookup(record);
    // A same-key repeat is safe only if the provider still remembers the key until the repeat is over:
    // from now (after the lookup) to the end of its call deadline, within createdAt + keyRetentionMs.
    const repeatEndsAt = this.clock().getTime() + (tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS);
    const keyLive = tool.dedupesByKey === true && repeatEndsAt <= Date.parse(record.createdAt) + (tool.keyRetentionMs ?? 0);
    const settleAt = settleTime(record, tool, this.marginMs);
    // A claim is taken over only once its holder's request can no longer be outstanding, or at once
    // for a same-key repeat (docs/protocol.md#overlapping-attempts); a lookup that finds the effect
    // then settles the call without a request.
    const mayTakeOver = keyLive || now >= settleAt;
    if (found?.found === true && mayTakeOver) return this.store(await this.takeOver(record), { ok: true, output: found.output, receipt: found.receipt ?? null }, 'lookup');
    if (keyLive) {
      // The repeat may be the first request the provider sees (the holder may have sent nothing): not after the approval expired.
      if (this.approvalExpired()) {
        throw this.outcomeUnknown(`an earlier attempt claimed this call and did not finish, and the call's approval expired at ${this.call.input.approvalExpiresAt}, so it is not repeated with the same key; resolve it as absent to run it again under a new approval, or abandon`);
      }
      return this.runAndStore(await this.takeOver(record), 'same-key-repeat');
    }
    if (now < settleAt && (found !== undefined || record.status === 'executing')) {
      const lookupSays = found === undefined ? 'it is not reconciled' : found.found ? 'it is not taken over (the holder may still store the effect the lookup found)' : 'a lookup that finds nothing proves no absence';
      throw this.pending(
        `${tool.name} call ${this.call.input.callId} is claimed by ${record.execution!.attemptId} since ${record.execution!.claimedAt}; its request may be outstanding until ${new Date(settleAt).toISOString()} (claim + callDeadlineMs + margin), so ${lookupSays} before then`,
        settleAt - now,
      );
    }
    if (found !== undefined) {
      if (this.approvalExpired()) {
        throw this.outcomeUnknown(`lookup proved the effect of the earlier claim absent, but the call's approval expired at ${this.call.input.approvalExpiresAt}; resolve it as absent to run it again under a new approval, or abandon`);
      }
      return this.runAndStore(await this.takeOver(record), 'executed');
    }
    const why =
      tool.dedupesByKey === true
        ? `an earlier attempt claimed this call and did not finish; the provider deduplicates by key, but the key is older than its retention (keyRetentionMs ${tool.keyRetentionMs}) and the tool has no lookup`
        : 'an earlier attempt claimed this call and did not finish; the tool has no lookup and its provider does not deduplicate by key';
    if (record.status === 'executing') {
      const mark = markExecutionUncertain(record, { attemptId: record.execution!.attemptId, at: this.now(record), reason: why });
      if (!(await this.cas(mark, record))) return REREAD;
    }
    throw this.outcomeUnknown(record.execution?.uncertainReason ?? why);
  }

  /** Calls the tool's lookup for the claim of `record`; a failed or malformed lookup proves nothing (RECONCILE_PENDING). */
  private async lookup(record: CheckpointRecord): Promise<LookupResult> {
    const { tool } = this.call;
    let found: LookupResult;
    try {
      found = await this.heartbeating(() => tool.lookup!(this.context(Context.current().cancellationSignal)), this.heartbeatDetails(record, 'lookup'));
    } catch (error) {
      throw this.pending(`the lookup of ${tool.name} call ${this.call.input.callId} failed (${sanitizeReason(error instanceof Error ? error.message : String(error), 'no message')}); absence is not proven`, undefined);
    }
    if (found?.found !== true && found?.found !== false) {
      throw this.pending(`the lookup of ${tool.name} call ${this.call.input.callId} answered neither { found: true, output } nor { found: false }; absence is not proven`, undefined);
    }
    return found;
  }

  /** Takes the fence over from the holder of `record` (reclaimExecution); a lost race means a live competitor. @returns the record under this attempt's fence. */
  private async takeOver(record: CheckpointRecord): Promise<CheckpointRecord> {
    const at = this.now(record);
    const takeover = reclaimExecution(record, { attemptId: this.call.attemptId, previousAttemptId: record.execution!.attemptId, at, deadlineAt: this.deadlineFrom(at) });
    this.evidence.claimSent = true;
    if (!(await this.cas(takeover, record))) {
      throw this.pending(`another attempt took ${this.call.tool.name} call ${this.call.input.callId} over first; the next attempt reads what it left`, undefined);
    }
    return takeover.next;
  }

  /**
   * completed, or delivering (Temporal records at most one completion per activity, so this
   * attempt releases the earlier delivery and redelivers): claim and record this attempt's
   * delivery in one write (`redeliver`), then return the stored payload; the tool is not called.
   */
  private async deliver(record: CheckpointRecord, source: ResultSource): Promise<Step> {
    const delivery = redeliver(record, { deliveryId: this.call.deliveryId, at: this.now(record) });
    if (!(await this.cas(delivery, record))) return REREAD;
    await this.step('after-delivery-claimed');
    await this.step('after-delivery-completed');
    return this.result(delivery.next, source);
  }

  /**
   * Runs the tool under this attempt's fence and stores what happened. Right after the claim it
   * heartbeats; right before `execute` it checks cancellation and re-reads the fence.
   */
  private async runAndStore(claimed: CheckpointRecord, source: ResultSource): Promise<Step> {
    const ctx = Context.current();
    // A user's activity owns its heartbeat details: keep the previous attempt's, which it may resume from.
    if (this.deps.executeIsUserActivity === true) ctx.heartbeat(ctx.info.heartbeatDetails);
    else ctx.heartbeat(this.heartbeatDetails(claimed, 'execute'));
    await this.step('after-claim');
    const current = await this.deps.store.get(this.call.binding);
    if (current?.status !== 'executing' || current.execution?.attemptId !== this.call.attemptId) {
      // Nothing was sent; the call belongs to the attempt that took it over: the next attempt reads what it left.
      throw this.pending(`${this.call.tool.name} call ${this.call.input.callId}: the claim of ${this.call.attemptId} was taken over before the tool was called (now ${current?.status ?? 'missing'} under ${current?.execution?.attemptId ?? 'nobody'}); not calling it`, undefined);
    }
    await this.step('before-execute');
    // An item of a batch is not stopped by cancellation once claimed: the batch stops between items (./batch-fence).
    if (this.call.item === undefined && ctx.cancellationSignal.aborted) throw new CancelledFailure(`cancelled after the claim, before ${this.call.tool.name} was called; the call was not sent`);
    const deadlineAt = Date.parse(current.execution.deadlineAt ?? this.deadlineFrom(current.execution.claimedAt));
    // A batch call has no deadline of its own (its items have), and is taken over at once anyway.
    if (this.call.tool.batch !== true && this.clock().getTime() >= deadlineAt) {
      // Another attempt may take the claim over from now on: a request sent now could land after it.
      throw this.pending(`${this.call.tool.name} call ${this.call.input.callId}: the claim's deadline ${new Date(deadlineAt).toISOString()} passed before the tool was called; nothing was sent, the next attempt reconciles`, undefined);
    }
    const { record, ...outcome } = this.deps.executeIsUserActivity === true ? await this.invokeUserActivity(current, source) : { ...(await this.invoke(current, source)), record: current };
    await this.step('after-effect');
    if (outcome.kind === 'unknown') return this.recordUnknown(record, outcome.reason);
    if (outcome.notApplied !== undefined && this.call.tool.batch !== true && !this.lastAttempt(outcome.notApplied.retryAfterMs)) return this.release(record, outcome.value, outcome.notApplied.retryAfterMs);
    return this.store(record, outcome.value, source);
  }

  /**
   * Whether Temporal starts no further attempt of this activity after this one fails retryably:
   * this is attempt `maximumAttempts` of its retry policy, the policy makes RECONCILE_PENDING
   * non-retryable, or the next attempt (after `retryAfterMs`, else the policy's backoff: initial
   * 1 s, coefficient 2, maximum 100 × initial by default) would start at or after the activity's
   * schedule-to-close deadline (agentWorkflow sets it to the time left before the run deadline).
   * Without a schedule-to-close timeout and `maximumAttempts`, Temporal retries without end: false.
   */
  private lastAttempt(retryAfterMs: number | undefined): boolean {
    const { info } = Context.current();
    const policy = info.retryPolicy;
    if (policy?.maximumAttempts !== undefined && policy.maximumAttempts > 0 && info.attempt >= policy.maximumAttempts) return true;
    if (policy?.nonRetryableErrorTypes?.includes('RECONCILE_PENDING') === true) return true;
    if (!(info.scheduleToCloseTimeoutMs > 0)) return false;
    const initialMs = msOptionalToNumber(policy?.initialInterval) ?? 1_000;
    const maximumMs = msOptionalToNumber(policy?.maximumInterval) ?? 100 * initialMs;
    const backoffMs = retryAfterMs ?? Math.min(maximumMs, initialMs * (policy?.backoffCoefficient ?? 2) ** Math.max(0, info.attempt - 1));
    return this.clock().getTime() + backoffMs >= info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs;
  }

  /**
   * Every request this attempt sent under its claim is proven not applied (a transient failure
   * before the provider accepted it) and it is not the last attempt: gives the claim back
   * (`releaseExecution`, executing → ready) so that the next attempt claims the call and sends it
   * again under the same idempotency key, then fails retryably. Only the last attempt stores
   * TRANSIENT_EXHAUSTED as the call's final result ({@link lastAttempt}).
   * @throws {@link CheckpointError} RECONCILE_PENDING (`details.cause` TRANSIENT_EXHAUSTED,
   *   `details.released` true, `details.retryAfterMs` when the provider sent Retry-After); when the
   *   release loses its compare-and-swap, RECONCILE_PENDING without `released` (the next attempt
   *   reads what the competitor left); FENCE_CONFLICT as {@link fenceLost} maps it.
   */
  private async release(claimed: CheckpointRecord, outcome: ToolOutcome, retryAfterMs: number | undefined): Promise<never> {
    const { tool, input } = this.call;
    const why = outcome.ok ? 'a transient failure' : outcome.error.message;
    const release = releaseExecution(claimed, { attemptId: this.call.attemptId, at: this.now(claimed) });
    if (!(await this.cas(release, claimed))) {
      throw this.pending(`${tool.name} call ${input.callId}: ${why}; proven not applied, but the claim changed before it could be released; the next attempt reads what it left`, undefined);
    }
    this.evidence.seen = release.next;
    throw new CheckpointError(
      'RECONCILE_PENDING',
      `${tool.name} call ${input.callId}: ${why}; proven not applied (the provider did not accept the request), so the claim was released and the next attempt sends the call again under the same idempotency key`,
      { callId: input.callId, cause: 'TRANSIENT_EXHAUSTED', released: true, ...(retryAfterMs !== undefined && retryAfterMs > 0 ? { retryAfterMs: Math.ceil(retryAfterMs) } : {}) },
    );
  }

  /** The tool's outcome is unknown: mark the checkpoint uncertain under this fence, then reconcile-pending or pause. */
  async recordUnknown(claimed: CheckpointRecord, reason: string): Promise<Step> {
    let current = claimed;
    for (let round = 0; ; round += 1) {
      if (current.status === 'uncertain' && current.execution?.attemptId === this.call.attemptId) break; // already marked under this fence
      // Throws FENCE_CONFLICT once another attempt holds the fence.
      const mark = markExecutionUncertain(current, { attemptId: this.call.attemptId, at: this.now(current), reason });
      if (await this.cas(mark, current)) break;
      if (round + 1 >= MAX_ROUNDS) throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `call ${this.call.binding.callId}: the outcome could not be recorded as unknown (${MAX_ROUNDS} lost compare-and-swaps)`, { callId: this.call.binding.callId });
      current = await this.reread();
    }
    const { tool } = this.call;
    if (tool.lookup === undefined && tool.dedupesByKey !== true) throw this.outcomeUnknown(reason);
    const wait = settleTime(claimed, tool, this.marginMs) - this.clock().getTime();
    throw this.pending(`${tool.name} call ${this.call.input.callId}: outcome unknown (${reason}); the next attempt reconciles under the same key`, tool.dedupesByKey === true ? undefined : wait);
  }

  /**
   * Stores `outcome` under this attempt's fence together with this attempt's delivery of it, in one
   * write (`completeAndDeliver`, docs/protocol.md#cost), and returns it. A result over the bounds
   * is stored as an error result. When the completion loses only to an uncertain-mark made under
   * this attempt's own fence, it completes from `uncertain` (docs/protocol.md#transitions allows
   * the owner to).
   */
  /** The completion of `claimed` with `outcome` (and its delivery) in one write; a result over the bounds becomes an error result keeping the receipt (see {@link unstorableResult}). */
  completion(claimed: CheckpointRecord, outcome: ToolOutcome): TransitionResult {
    const complete = (result: ToolOutcome): TransitionResult =>
      completeAndDeliver(claimed, { attemptId: this.call.attemptId, deliveryId: this.call.deliveryId, at: this.now(claimed), result, maxPayloadBytes: this.deps.maxPayloadBytes });
    try {
      return complete(outcome);
    } catch (error) {
      if (!isCheckpointError(error, 'PAYLOAD_TOO_LARGE') && !isCheckpointError(error, 'NOT_JSON')) throw error;
      return complete(unstorableResult(error, outcome, complete));
    }
  }

  /**
   * Applies the tool under `claimed`, a claim this attempt made by a grouped write (an item of a
   * batch): the crash points and checks of {@link runAndStore} around {@link invoke}, without its
   * re-read (the grouped write returned the claim) and without storing (the caller groups that).
   */
  async applyClaimed(claimed: CheckpointRecord): Promise<Invoked> {
    Context.current().heartbeat(this.heartbeatDetails(claimed, 'execute'));
    await this.step('after-claim');
    await this.step('before-execute');
    const deadlineAt = Date.parse(claimed.execution!.deadlineAt ?? this.deadlineFrom(claimed.execution!.claimedAt));
    if (this.clock().getTime() >= deadlineAt) {
      return { kind: 'unknown', reason: `the claim's deadline ${new Date(deadlineAt).toISOString()} passed before the item was applied; nothing was sent` };
    }
    const outcome = await this.invoke(claimed, 'executed');
    await this.step('after-effect');
    return outcome;
  }

  private async store(claimed: CheckpointRecord, outcome: ToolOutcome, source: ResultSource): Promise<Step> {
    const complete = (current: CheckpointRecord, result: ToolOutcome): TransitionResult =>
      completeAndDeliver(current, { attemptId: this.call.attemptId, deliveryId: this.call.deliveryId, at: this.now(current), result, maxPayloadBytes: this.deps.maxPayloadBytes });
    let payload = outcome;
    try {
      complete(claimed, outcome);
    } catch (error) {
      if (!isCheckpointError(error, 'PAYLOAD_TOO_LARGE') && !isCheckpointError(error, 'NOT_JSON')) throw error;
      payload = unstorableResult(error, outcome, (candidate) => complete(claimed, candidate));
    }
    let current = claimed;
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      // Throws FENCE_CONFLICT once another attempt holds the fence: this result is discarded.
      const completion = complete(current, payload);
      if (await this.cas(completion, current)) {
        // The crash windows (docs/protocol.md#crash-windows) after the result is stored: the next
        // attempt finds it delivered and returns it from the store.
        await this.step('after-result-stored');
        await this.step('after-delivery-claimed');
        await this.step('after-delivery-completed');
        return this.result(completion.next, source);
      }
      current = await this.reread();
    }
    throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `call ${this.call.binding.callId}: the result could not be stored (${MAX_ROUNDS} lost compare-and-swaps)`, { callId: this.call.binding.callId });
  }

  /**
   * Calls a user's activity (`deps.executeIsUserActivity`) once, renewing the claim while it runs
   * (see `./claim-renewal`): the activity may ignore the abort signal, so the fence waits for it
   * however long it takes instead of declaring the outcome unknown at the deadline while it may
   * still apply its effect. Its heartbeats are its own (no fence heartbeats while it runs).
   * @returns the outcome, and the record as the last renewal left it.
   */
  private async invokeUserActivity(claimed: CheckpointRecord, source: ResultSource): Promise<Invoked & { record: CheckpointRecord }> {
    const { tool } = this.call;
    const renewal = new ClaimRenewal({
      store: this.deps.store,
      claimed,
      attemptId: this.call.attemptId,
      deadlineMs: tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS,
      now: (record) => this.now(record),
      nowMs: () => this.clock().getTime(),
    });
    const signal = AbortSignal.any([Context.current().cancellationSignal, renewal.signal]);
    renewal.start();
    let outcome: Invoked;
    try {
      const value = await tool.execute(this.call.args as never, this.context(signal));
      outcome = { kind: 'done', value: { ok: true, output: value.output, receipt: value.receipt ?? null, ...(value.encoding === undefined ? {} : { encoding: value.encoding }) } };
    } catch (error) {
      outcome = this.classified(error);
      // A transient failure proves this request not applied; after a same-key repeat it proves nothing about the earlier one.
      if (outcome.kind === 'done' && toolErrorKind(error) === 'transient' && source !== 'same-key-repeat') outcome = { ...outcome, notApplied: { retryAfterMs: retryAfterOf(error) } };
    }
    const record = await renewal.stop();
    return { ...outcome, record };
  }

  /**
   * A tool error by its `kind` (see `ToolError`): an unknown outcome unless it says otherwise (a
   * transient error of class OUTCOME_UNKNOWN, a keyed request answered 409, is unknown too);
   * `rejected` and an exhausted `transient` are the call's final error result.
   */
  private classified(error: unknown): Invoked {
    const { tool } = this.call;
    const kind = toolErrorKind(error);
    const raw = error instanceof Error ? error.message : String(error);
    const type = (error as { type?: unknown } | null)?.type;
    if (kind === 'unknown-outcome' || type === 'OUTCOME_UNKNOWN') return { kind: 'unknown', reason: sanitizeReason(raw, `${tool.name} failed without a message after the request may have been sent`) };
    const message = sanitizeReason(raw, `${tool.name} failed without a message`);
    return { kind: 'done', value: { ok: false, error: { type: typeof type === 'string' ? type : kind === 'transient' ? 'TRANSIENT_EXHAUSTED' : 'BUSINESS_REJECTION', message } } };
  }

  /**
   * Calls `execute` with heartbeats, retrying transient failures with full-jitter backoff and
   * Retry-After, until the call deadline (claim time + `callDeadlineMs`), when `ctx.signal`
   * aborts and the fence stops waiting: the outcome is then unknown.
   */
  private async invoke(claimed: CheckpointRecord, source: ResultSource): Promise<Invoked> {
    const { tool } = this.call;
    const deadlineMs = tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS;
    // A batch call has no deadline of its own: each of its items has `callDeadlineMs` (./batch-fence).
    const batch = tool.batch === true ? this.batchRun() : undefined;
    const deadlineAt = batch !== undefined ? Number.MAX_SAFE_INTEGER : Date.parse(claimed.execution!.deadlineAt ?? this.deadlineFrom(claimed.execution!.claimedAt));
    // After a same-key repeat, or once the provider said the key is in flight, an earlier request may have applied the effect.
    let mayBeApplied = source === 'same-key-repeat';
    // An item's request is not aborted by cancellation (the batch stops between items, so the item's outcome stays known).
    const cancellation = this.call.item === undefined ? Context.current().cancellationSignal : new AbortController().signal;
    const deadline = new AbortController();
    const timer = batch !== undefined ? undefined : setTimeout(() => deadline.abort(new Error(`the call deadline of ${deadlineMs} ms passed`)), Math.max(0, deadlineAt - this.clock().getTime()));
    const signal = AbortSignal.any([cancellation, deadline.signal]);
    const expired = new Promise<never>((_, reject) => deadline.signal.addEventListener('abort', () => reject(DEADLINE), { once: true }));
    expired.catch(() => undefined);
    try {
      const value: ToolSuccess = await this.heartbeating(
        () =>
          Promise.race([
            retryTransient(() => tool.execute(this.call.args as never, this.context(signal, batch)), {
              policy: this.deps.transientRetry ?? DEFAULT_TRANSIENT_RETRY,
              deadlineAt,
              now: () => this.clock().getTime(),
              isTransient: (error) => {
                if ((error as { type?: unknown } | null)?.type === 'OUTCOME_UNKNOWN') mayBeApplied = true;
                return toolErrorKind(error) === 'transient';
              },
              signal,
            }),
            expired,
          ]),
        batch === undefined ? this.heartbeatDetails(claimed, 'execute') : () => fenceHeartbeatDetails(this.call.input.callId, 'executing', 'items', batch.progress()),
      );
      // A tool that returned without awaiting its batch: the attempt ends only once no item is being applied.
      await batch?.idle();
      batch?.rethrowStop();
      return { kind: 'done', value: { ok: true, output: value.output, receipt: value.receipt ?? null } };
    } catch (error) {
      await batch?.idle();
      // What stopped a batch (an item to reconcile or resolve, cancellation, the store) fails the attempt as it is; the call is not marked unknown.
      if (batch?.stopped === true) throw batch.stopError;
      if (error === DEADLINE || (deadline.signal.aborted && !cancellation.aborted)) {
        return { kind: 'unknown', reason: `${tool.name} did not finish within its call deadline of ${deadlineMs} ms; the request was aborted and its outcome is unknown` };
      }
      const outcome = this.classified(error);
      if (outcome.kind === 'unknown' || toolErrorKind(error) !== 'transient') return outcome;
      const raw = error instanceof Error ? error.message : String(error);
      if (mayBeApplied && !cancellation.aborted) {
        return { kind: 'unknown', reason: sanitizeReason(`${raw} (after ${source === 'same-key-repeat' ? 'a same-key repeat' : 'the provider said the key was in flight'}, a failure proves nothing about an earlier request)`, `${tool.name} failed after a same-key repeat`) };
      }
      if (cancellation.aborted) {
        // Shutdown or cancellation during backoff: nothing was applied by this attempt, but it holds the claim; the next attempt decides.
        throw new CancelledFailure(`cancelled while ${tool.name} was backing off after a transient error (${sanitizeReason(raw, `${tool.name} failed without a message`)}); the call is left to the next attempt`);
      }
      // Every request of this claim was refused before the provider accepted it: proven not applied.
      return { ...outcome, notApplied: { retryAfterMs: retryAfterOf(error) } };
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      // The call is over: abort the per-call signal so the AbortSignal.any() signal a tool may still
      // listen to is released (Node keeps such signals alive until they abort).
      if (!deadline.signal.aborted) deadline.abort(new Error(`${tool.name} call is over`));
    }
  }

  /** Runs `work`, heartbeating `details` (or what it returns, at each beat) every third of the heartbeat timeout (at least every 200 ms). */
  private async heartbeating<T>(work: () => Promise<T>, details: FenceHeartbeatDetails | (() => FenceHeartbeatDetails)): Promise<T> {
    const ctx = Context.current();
    const intervalMs = Math.max(200, Math.floor((ctx.info.heartbeatTimeoutMs ?? 3_000) / 3));
    const timer = setInterval(() => ctx.heartbeat(typeof details === 'function' ? details() : details), intervalMs);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /** The fence's heartbeat details while it works on the call whose checkpoint is `record` (see `../telemetry/heartbeat-details`). */
  private heartbeatDetails(record: CheckpointRecord, phase: FencePhase): FenceHeartbeatDetails {
    const progress = this.call.batchProgress;
    return progress === undefined ? fenceHeartbeatDetails(this.call.input.callId, record.status, phase) : fenceHeartbeatDetails(this.call.input.callId, record.status, 'items', progress());
  }

  /** The batch of this attempt of a `batch` tool: its items are settled by {@link settleItem} with this attempt's deps. */
  private batchRun(): BatchRun {
    const ctx = Context.current();
    const fence = { store: this.deps.store, settle: (item: PreparedCall) => settleItem(this.deps, item), claimed: (item: PreparedCall) => claimedItem(this.deps, item), now: () => transitionTime(this.deps), cancelRequested: () => ctx.cancellationDetails?.cancelRequested === true };
    return new BatchRun(this.call, fence, ctx.cancellationSignal, (progress) => ctx.heartbeat(fenceHeartbeatDetails(this.call.input.callId, 'executing', 'items', progress)));
  }

  private context(signal: AbortSignal, batch?: BatchRun): ToolContext {
    const ctx = Context.current();
    return {
      idempotencyKey: this.call.idempotencyKey,
      intentDigest: this.call.intentDigest,
      attemptId: this.call.attemptId,
      callId: this.call.input.callId,
      workflowId: this.call.workflowId,
      signal,
      heartbeat: (details?: unknown) => ctx.heartbeat(details),
      ...(batch === undefined ? {} : { forEachItem: batch.forEachItem }),
      ...(this.call.item === undefined ? {} : { item: this.call.item }),
    };
  }

  /** The deadline a claim made at `at` declares: `at` + the tool's `callDeadlineMs`, ISO-8601 UTC. */
  private deadlineFrom(at: string): string {
    return new Date(Date.parse(at) + (this.call.tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS)).toISOString();
  }

  /** Refuses a fresh claim once the call's approval has expired (docs/protocol.md#agent-workflow: an approval carries an expiry). */
  private assertApprovalLive(): void {
    if (!this.approvalExpired()) return;
    throw new CheckpointError('APPROVAL_EXPIRED', `${this.call.tool.name} call ${JSON.stringify(this.call.input.callId)}: its approval expired at ${this.call.input.approvalExpiresAt}, before this attempt could claim it; nothing ran`, {
      callId: this.call.input.callId,
      approvalExpiresAt: String(this.call.input.approvalExpiresAt),
    });
  }

  private approvalExpired(): boolean {
    const expiresAt = this.call.input.approvalExpiresAt;
    return expiresAt !== undefined && this.clock().getTime() >= Date.parse(expiresAt);
  }

  private outcomeUnknown(reason: string): CheckpointError {
    return new CheckpointError('OUTCOME_UNKNOWN', `${this.call.tool.name} call ${this.call.input.callId}: the outcome is unknown and cannot be looked up (${reason}); the run waits for a person`, {
      callId: this.call.input.callId,
      toolName: this.call.tool.name,
      toolRevision: this.call.tool.revision,
      idempotencyKey: this.call.idempotencyKey,
      intentDigest: this.call.intentDigest,
      reason,
    });
  }

  private pending(message: string, retryAfterMs: number | undefined): CheckpointError {
    return new CheckpointError('RECONCILE_PENDING', message, {
      callId: this.call.input.callId,
      ...(retryAfterMs !== undefined && retryAfterMs > 0 ? { retryAfterMs: Math.ceil(retryAfterMs) } : {}),
    });
  }

  private result(record: CheckpointRecord, source: ResultSource): FencedToolResult {
    return {
      callId: this.call.input.callId,
      toolName: this.call.tool.name,
      toolRevision: this.call.tool.revision,
      source,
      outcome: record.result!.payload as ToolOutcome,
      idempotencyKey: this.call.idempotencyKey,
      intentDigest: this.call.intentDigest,
    };
  }

  private async reread(): Promise<CheckpointRecord> {
    const current = await this.deps.store.get(this.call.binding);
    if (current === null) throw new CheckpointError('INVALID_CHECKPOINT', `checkpoint of ${this.call.binding.callId} disappeared while claimed`, { callId: this.call.binding.callId });
    this.evidence.seen = current;
    return current;
  }

  private async step(point: FencePoint): Promise<void> {
    if (point !== 'before-execute') crashPoint(point, this.call.tool.name);
    await this.deps.hooks?.step?.(point, this.call.attemptId);
  }

  /** Compare-and-swap from `from` (the record `t` was computed from, as the store returned it) to `t.next`. */
  private cas(t: TransitionResult, from: CheckpointRecord): Promise<boolean> {
    return this.deps.store.compareAndSwap(t.expectedRevision, t.next, from);
  }

  /** Now, never earlier than the record's `updatedAt` (see {@link transitionTime}). */
  private now(record?: CheckpointRecord): string {
    return transitionTime(this.deps, record);
  }
}

const DEADLINE = Symbol('call deadline');

/** Largest receipt kept in the error result of a result that could not be stored, UTF-8 bytes of its canonical JSON. */
export const TOO_LARGE_RECEIPT_MAX_BYTES = 4_096;

/**
 * The error result stored when a tool ran but its outcome cannot be stored (PAYLOAD_TOO_LARGE,
 * NOT_JSON): `{ ok: false, error: { type, message, receipt? } }`, keeping the provider's receipt
 * (so a person can still reconcile the effect) when it is JSON of at most
 * {@link TOO_LARGE_RECEIPT_MAX_BYTES} bytes and the record with it still fits (`fits` throws
 * otherwise); else without it, the message saying why.
 */
export function unstorableResult(error: CheckpointError, outcome: ToolOutcome, fits: (candidate: ToolOutcome) => unknown): ToolOutcome {
  const message = `the tool ran, but its result cannot be stored: ${error.message}`;
  const receipt = outcome.ok ? outcome.receipt : null;
  if (receipt === null || receipt === undefined) return { ok: false, error: { type: error.code, message } };
  let why: string;
  try {
    const bytes = utf8ByteLength(canonicalJson(receipt, 'receipt'));
    if (bytes <= TOO_LARGE_RECEIPT_MAX_BYTES) {
      const kept: ToolOutcome = { ok: false, error: { type: error.code, message, receipt } };
      fits(kept);
      return kept;
    }
    why = `the receipt is ${bytes} bytes, over ${TOO_LARGE_RECEIPT_MAX_BYTES}`;
  } catch (failure) {
    if (!isCheckpointError(failure, 'PAYLOAD_TOO_LARGE') && !isCheckpointError(failure, 'NOT_JSON')) throw failure;
    why = `the receipt cannot be stored either (${failure.code})`;
  }
  return { ok: false, error: { type: error.code, message: `${message} (${why}, so it is not kept)` } };
}

/** An error's `retryAfterMs` (ms, as the provider clients set it), when it is a positive number. */
function retryAfterOf(error: unknown): number | undefined {
  const value = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}
