/**
 * The attempt of one fenced call or batch item (docs/protocol.md#the-fenced-attempt,
 * #overlapping-attempts): one round reads the checkpoint, decides (`decideCheckpoint`) and
 * executes, delivers or reconciles, every change by compare-and-swap. The entry points that run
 * rounds to a result are in `./fenced-tool.ts`.
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import { sanitizeReason } from '../../checkpoint/bounds';
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import { decideCheckpoint } from '../../checkpoint/decide';
import { createCheckpoint } from '../../checkpoint/record';
import { completeAndDeliver, createClaimed, redeliver } from '../../checkpoint/compose';
import { claimExecution, markExecutionUncertain, reclaimExecution, releaseExecution } from '../../checkpoint/transitions';
import type { CheckpointRecord, TransitionResult } from '../../checkpoint/types';
import type { CreateResult } from '../../stores/checkpoint-store';
import { type AttemptObserver } from '../../telemetry/attempt-telemetry';
import { fenceHeartbeatDetails } from '../../telemetry/heartbeat-details';
import type { FencedToolResult, ResultSource, ToolOutcome } from '../contract/contract';
import { crashPoint, type FencePoint } from './crash-points';
import { DEFAULT_CALL_DEADLINE_MS, type LookupResult } from '../tools/define-tool';
import type { PreparedCall } from './prepare-call';
import { BatchRun } from './batch-fence';
import type { ClaimedItem, Invoked } from './batch-types';
import { lastAttempt } from './attempt-standing';
import { claimDeadline, DEFAULT_RECONCILE_MARGIN_MS, keyOutlivesRepeat, settleTime, transitionTime, type AttemptEvidence, type FencedToolDeps } from './fence-deps';
import { ToolInvocation } from './tool-invocation';
import { adoptionOf, type Adopted } from './adoption';
import { answeredBy, awaitFirstCall, withAnsweredBy } from './business-key';
import { dedupeOptions } from './intent-dedupe';
import { assertApprovalLive, callApprovalExpired } from './approval-checks';
import { unstorableResult } from './unstorable-result';
import { outcomeUnknown, pendingReconcile } from './attempt-errors';

/** Returned by a step whose compare-and-swap lost: read the record again and decide again. */
export const REREAD = Symbol('reread');
export type Step = FencedToolResult | typeof REREAD;
export const MAX_ROUNDS = 8;

/** How the attempt of a batch call settles its items (`./item-attempt.ts`), given to it by `settleCall`. */
export interface ItemSettler {
  settle(deps: FencedToolDeps, item: PreparedCall): Promise<FencedToolResult>;
  claimed(deps: FencedToolDeps, item: PreparedCall): ClaimedItem;
}

/** One attempt of a call or an item: {@link Attempt.round} reads, decides and acts once (see the module comment). */
export class Attempt {
  private readonly clock: () => Date;
  private readonly marginMs: number;
  private invocation: ToolInvocation;
  private rounds = 0;

  constructor(
    private readonly deps: FencedToolDeps,
    private call: PreparedCall,
    private readonly evidence: AttemptEvidence,
    private readonly observer: AttemptObserver,
    private readonly items?: ItemSettler,
  ) {
    this.clock = deps.clock ?? (() => new Date());
    this.marginMs = deps.reconcileMarginMs ?? DEFAULT_RECONCILE_MARGIN_MS;
    this.invocation = new ToolInvocation(deps, call, () => this.batchRun());
  }

  /**
   * One read-decide-act round. The claim of a fresh call is its insert (docs/protocol.md#cost:
   * create and claimExecution composed into one write, `createClaimed`); when the call already has a
   * record, the store returns it unchanged and this attempt decides on it (or on the call it adopts).
   * A retry (Temporal attempt > 1, or a later round) reads first: a re-delivery is one statement.
   */
  async round(): Promise<Step> {
    await this.step('before-claim');
    const expectsRecord = this.rounds++ > 0 || Context.current().info.attempt > 1;
    const existing = expectsRecord ? await this.deps.store.get(this.call.binding) : null;
    if (existing !== null) {
      this.evidence.seen = existing;
      return this.decide(existing, false);
    }
    // A call whose approval expired is not claimed: its ready record (no dedupe key) lets the execute path refuse it (APPROVAL_EXPIRED).
    const at = this.now();
    const claim = this.approvalExpired() ? null : createClaimed(this.call.binding, { attemptId: this.call.attemptId, at, deadlineAt: this.deadlineFrom(at) });
    const claimSentBefore = this.evidence.claimSent;
    if (claim !== null) this.evidence.claimSent = true;
    for (;;) {
      let inserted: CreateResult;
      try {
        const options = claim !== null && this.call.dedupe !== undefined ? dedupeOptions(this.call.dedupe, at) : undefined;
        inserted = await this.deps.store.createIfAbsent(claim ?? createCheckpoint(this.call.binding, { createdAt: at }), options);
      } catch (error) {
        // STORE_UNAVAILABLE: nothing was written (the store's contract), so this attempt holds no claim; any other failure may have written it.
        if (isCheckpointError(error, 'STORE_UNAVAILABLE')) this.evidence.claimSent = claimSentBefore;
        throw error;
      }
      const { created, record } = inserted;
      if (record.binding.callId === this.call.binding.callId) this.evidence.seen = record; // not another call's, unless adopted below
      // Also after a lost connection the store may answer created: false for this very insert; the fence is this attempt's alone.
      if (claim !== null && record.status === 'executing' && record.execution?.attemptId === this.call.attemptId) {
        this.observer.decided(created ? null : record, 'execute');
        return this.runAndStore(record, 'executed');
      }
      if (!created) this.evidence.claimSent = claimSentBefore; // the insert was refused: this round put nothing of this attempt in the store
      const adopted = created ? null : await adoptionOf(this.deps.store, this.call, record, at);
      if (adopted !== null && typeof adopted === 'object' && 'next' in adopted) {
        this.call = adopted.next; // an occurrence this call passes by: claim the next one
        continue;
      }
      if (adopted === 'reread') return REREAD;
      if (adopted === null) return this.decide(record, created);
      return this.adopt(adopted);
    }
  }

  /** Goes on as the call `adopted` names, deciding on its record. */
  private adopt(adopted: Adopted): Promise<Step> {
    this.call = this.evidence.adopted = adopted.call;
    this.invocation = new ToolInvocation(this.deps, adopted.call, () => this.batchRun());
    this.evidence.seen = adopted.record;
    return this.decide(adopted.record, false);
  }

  /** Decides on `record` (`created`: this round inserted it) and executes, delivers or reconciles. */
  private async decide(record: CheckpointRecord, created: boolean): Promise<Step> {
    const { action } = decideCheckpoint(record, this.call.binding);
    this.observer.decided(created ? null : record, action);
    // Another run's call is that run's to execute or reconcile: this call only delivers it, waits or pauses.
    if ((action === 'execute' || action === 'reconcile-execution') && answeredBy(this.call) !== undefined)
      throw awaitFirstCall(this.call, record.execution === null ? 0 : settleTime(record, this.call.tool, this.marginMs), this.clock().getTime());
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
    assertApprovalLive(this.call, this.clock().getTime());
    const at = this.now(record);
    const claim = claimExecution(record, { attemptId: this.call.attemptId, at, deadlineAt: this.deadlineFrom(at) });
    this.evidence.claimSent = true;
    if (!(await this.cas(claim, record))) {
      throw pendingReconcile(this.call, `another attempt claimed ${this.call.tool.name} call ${this.call.input.callId} first; the next attempt reads what it left`, undefined);
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
    // A same-key repeat is safe only if the provider still remembers the key until neither the repeat's
    // request nor the holder's can land: the repeat's from the time its takeover declares (now, after
    // the lookup, never before the record's updatedAt) to its call deadline plus the margin (the
    // takeover declares exactly that time); the holder's until its settle time.
    const repeatAt = this.now(record);
    const settleAt = settleTime(record, tool, this.marginMs);
    // A user's activity may ignore the abort signal and its holder renews the claim while it runs, so
    // its deadline bounds nothing: its claim is repeated only once renewals stopped (its settle time).
    const holderBounded = this.deps.executeIsUserActivity !== true || now >= settleAt;
    const keyLive = holderBounded && keyOutlivesRepeat(record, tool, Date.parse(repeatAt) + (tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS) + this.marginMs, settleAt);
    // A claim is taken over only once its holder's request can no longer be outstanding, or at once
    // for a same-key repeat (docs/protocol.md#overlapping-attempts); a lookup that finds the effect
    // then settles the call without a request.
    const mayTakeOver = keyLive || now >= settleAt;
    if (found?.found === true && mayTakeOver) return this.store(await this.takeOver(record), { ok: true, output: found.output, receipt: found.receipt ?? null }, 'lookup');
    if (keyLive) {
      // The repeat may be the first request the provider sees (the holder may have sent nothing): not after the approval expired.
      if (this.approvalExpired()) {
        throw outcomeUnknown(
          this.call,
          `an earlier attempt claimed this call and did not finish, and the call's approval expired at ${this.call.input.approvalExpiresAt}, so it is not repeated with the same key; resolve it as absent to run it again under a new approval, or abandon`,
        );
      }
      return this.runAndStore(await this.takeOver(record, repeatAt), 'same-key-repeat');
    }
    if (now < settleAt && (found !== undefined || record.status === 'executing')) {
      const lookupSays =
        found === undefined
          ? 'it is not reconciled'
          : found.found
            ? 'it is not taken over (the holder may still store the effect the lookup found)'
            : 'a lookup that finds nothing proves no absence';
      throw pendingReconcile(
        this.call,
        `${tool.name} call ${this.call.input.callId} is claimed by ${record.execution!.attemptId} since ${record.execution!.claimedAt}; its request may be outstanding until ${new Date(settleAt).toISOString()} (claim + callDeadlineMs + margin), so ${lookupSays} before then`,
        settleAt - now,
      );
    }
    if (found !== undefined) {
      if (this.approvalExpired()) {
        throw outcomeUnknown(
          this.call,
          `lookup proved the effect of the earlier claim absent, but the call's approval expired at ${this.call.input.approvalExpiresAt}; resolve it as absent to run it again under a new approval, or abandon`,
        );
      }
      return this.runAndStore(await this.takeOver(record), 'executed');
    }
    const why =
      tool.dedupesByKey === true
        ? `an earlier attempt claimed this call and did not finish; the provider deduplicates by key, but the key would expire before a same-key repeat settles (keyRetentionMs ${tool.keyRetentionMs}) and the tool has no lookup`
        : 'an earlier attempt claimed this call and did not finish; the tool has no lookup and its provider does not deduplicate by key';
    if (record.status === 'executing') {
      const mark = markExecutionUncertain(record, { attemptId: record.execution!.attemptId, at: this.now(record), reason: why });
      if (!(await this.cas(mark, record))) return REREAD;
    }
    throw outcomeUnknown(this.call, record.execution?.uncertainReason ?? why);
  }

  /** Calls the tool's lookup for the claim of `record`; a failed or malformed lookup proves nothing (RECONCILE_PENDING). */
  private async lookup(record: CheckpointRecord): Promise<LookupResult> {
    const { tool } = this.call;
    let found: LookupResult;
    try {
      found = await this.invocation.heartbeating(
        () => tool.lookup!(this.invocation.context(Context.current().cancellationSignal)),
        this.invocation.heartbeatDetails(record, 'lookup'),
      );
    } catch (error) {
      throw pendingReconcile(
        this.call,
        `the lookup of ${tool.name} call ${this.call.input.callId} failed (${sanitizeReason(error instanceof Error ? error.message : String(error), 'no message')}); absence is not proven`,
        undefined,
      );
    }
    if (found?.found !== true && found?.found !== false) {
      throw pendingReconcile(
        this.call,
        `the lookup of ${tool.name} call ${this.call.input.callId} answered neither { found: true, output } nor { found: false }; absence is not proven`,
        undefined,
      );
    }
    return found;
  }

  /** Takes the fence over from the holder of `record` (reclaimExecution); a lost race means a live competitor. @returns the record under this attempt's fence. */
  /** Takes the claim of `record` over, declaring `at` (@default now, never before the record's `updatedAt`) and `at` + the call deadline. */
  private async takeOver(record: CheckpointRecord, at: string = this.now(record)): Promise<CheckpointRecord> {
    const takeover = reclaimExecution(record, { attemptId: this.call.attemptId, previousAttemptId: record.execution!.attemptId, at, deadlineAt: this.deadlineFrom(at) });
    this.evidence.claimSent = true;
    if (!(await this.cas(takeover, record))) {
      throw pendingReconcile(this.call, `another attempt took ${this.call.tool.name} call ${this.call.input.callId} over first; the next attempt reads what it left`, undefined);
    }
    return takeover.next;
  }

  /**
   * completed, or delivering (Temporal records at most one completion per activity, so this attempt releases the
   * earlier delivery and redelivers): claim and record this delivery in one write (`redeliver`); the tool is not called.
   */
  private async deliver(record: CheckpointRecord, source: ResultSource): Promise<Step> {
    const delivery = redeliver(record, { deliveryId: this.call.deliveryId, at: this.now(record) });
    if (!(await this.cas(delivery, record))) return REREAD;
    await this.step('after-delivery-claimed');
    await this.step('after-delivery-completed');
    return this.result(delivery.next, source);
  }

  /**
   * Runs the tool under this attempt's fence and stores what happened. Right before `execute` it
   * checks cancellation and the claim's own deadline; while the tool runs it heartbeats (every
   * third of the heartbeat timeout: a call shorter than that makes no Temporal request beyond the
   * plain activity's, `npm run bench:overhead`). It does not read the record again: before the
   * claim's deadline only a same-key repeat takes it over (the provider deduplicates that request
   * by key), and after it the tool is not called (docs/protocol.md#overlapping-attempts). `claimed`
   * is the record as this attempt wrote it.
   */
  private async runAndStore(claimed: CheckpointRecord, source: ResultSource): Promise<Step> {
    const ctx = Context.current();
    await this.step('after-claim');
    await this.step('before-execute');
    // An item of a batch is not stopped by cancellation once claimed: the batch stops between items (./batch-fence).
    if (this.call.item === undefined && ctx.cancellationSignal.aborted)
      throw new CancelledFailure(`cancelled after the claim, before ${this.call.tool.name} was called; the call was not sent`);
    const execution = claimed.execution!;
    const deadlineAt = Date.parse(execution.deadlineAt ?? this.deadlineFrom(execution.claimedAt));
    // A batch call has no deadline of its own (its items have), and is taken over at once anyway.
    if (this.call.tool.batch !== true && this.clock().getTime() >= deadlineAt) {
      // Another attempt may take the claim over from now on: a request sent now could land after it.
      throw pendingReconcile(
        this.call,
        `${this.call.tool.name} call ${this.call.input.callId}: the claim's deadline ${new Date(deadlineAt).toISOString()} passed before the tool was called; nothing was sent, the next attempt reconciles`,
        undefined,
      );
    }
    const { record, ...outcome } =
      this.deps.executeIsUserActivity === true
        ? await this.invocation.invokeUserActivity(claimed, source)
        : { ...(await this.invocation.invoke(claimed, source)), record: claimed };
    await this.step('after-effect');
    if (outcome.kind === 'unknown') return this.recordUnknown(record, outcome.reason);
    if (outcome.notApplied !== undefined && this.call.tool.batch !== true && !this.lastAttempt(outcome.notApplied.retryAfterMs))
      return this.release(record, outcome.value, outcome.notApplied.retryAfterMs);
    return this.store(record, outcome.value, source);
  }

  /** Whether Temporal starts no further attempt of this activity after this one fails retryably (see {@link lastAttempt}). */
  private lastAttempt(retryAfterMs: number | undefined): boolean {
    return lastAttempt(Context.current().info, () => this.clock().getTime(), retryAfterMs);
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
      throw pendingReconcile(
        this.call,
        `${tool.name} call ${input.callId}: ${why}; proven not applied, but the claim changed before it could be released; the next attempt reads what it left`,
        undefined,
      );
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
      if (round + 1 >= MAX_ROUNDS)
        throw new CheckpointError(
          'STORE_OUTCOME_UNKNOWN',
          `call ${this.call.binding.callId}: the outcome could not be recorded as unknown (${MAX_ROUNDS} lost compare-and-swaps)`,
          { callId: this.call.binding.callId },
        );
      current = await this.reread();
    }
    const { tool } = this.call;
    if (tool.lookup === undefined && tool.dedupesByKey !== true) throw outcomeUnknown(this.call, reason);
    const wait = settleTime(claimed, tool, this.marginMs) - this.clock().getTime();
    throw pendingReconcile(
      this.call,
      `${tool.name} call ${this.call.input.callId}: outcome unknown (${reason}); the next attempt reconciles under the same key`,
      tool.dedupesByKey === true ? undefined : wait,
    );
  }

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

  /** Applies the tool under `claimed`, an item's claim made by a grouped write: {@link runAndStore}'s crash points and checks, without storing (the caller groups that). */
  async applyClaimed(claimed: CheckpointRecord): Promise<Invoked> {
    Context.current().heartbeat(this.invocation.heartbeatDetails(claimed, 'execute'));
    await this.step('after-claim');
    await this.step('before-execute');
    const deadlineAt = Date.parse(claimed.execution!.deadlineAt ?? this.deadlineFrom(claimed.execution!.claimedAt));
    if (this.clock().getTime() >= deadlineAt) {
      return { kind: 'unknown', reason: `the claim's deadline ${new Date(deadlineAt).toISOString()} passed before the item was applied; nothing was sent` };
    }
    const outcome = await this.invocation.invoke(claimed, 'executed');
    await this.step('after-effect');
    return outcome;
  }

  /**
   * Stores `outcome` under this attempt's fence together with this attempt's delivery of it, in one
   * write (`completeAndDeliver`, docs/protocol.md#cost), and returns it. A result over the bounds
   * is stored as an error result. When the completion loses only to an uncertain-mark made under
   * this attempt's own fence, it completes from `uncertain` (docs/protocol.md#transitions allows
   * the owner to).
   */
  private async store(claimed: CheckpointRecord, outcome: ToolOutcome, source: ResultSource): Promise<Step> {
    const complete = (current: CheckpointRecord, result: ToolOutcome): TransitionResult =>
      completeAndDeliver(current, { attemptId: this.call.attemptId, deliveryId: this.call.deliveryId, at: this.now(current), result, maxPayloadBytes: this.deps.maxPayloadBytes });
    let payload = outcome;
    // The completion from `claimed`, reused by the first round (the common case: nothing raced it).
    let fromClaimed: TransitionResult | null = null;
    try {
      fromClaimed = complete(claimed, outcome);
    } catch (error) {
      if (!isCheckpointError(error, 'PAYLOAD_TOO_LARGE') && !isCheckpointError(error, 'NOT_JSON')) throw error;
      payload = unstorableResult(error, outcome, (candidate) => complete(claimed, candidate));
    }
    let current = claimed;
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      // Throws FENCE_CONFLICT once another attempt holds the fence: this result is discarded.
      const completion = current === claimed && fromClaimed !== null ? fromClaimed : complete(current, payload);
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
    throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `call ${this.call.binding.callId}: the result could not be stored (${MAX_ROUNDS} lost compare-and-swaps)`, {
      callId: this.call.binding.callId,
    });
  }

  /** The batch of this attempt of a `batch` tool: its items are settled by its {@link ItemSettler} with this attempt's deps. */
  private batchRun(): BatchRun {
    const ctx = Context.current();
    const items = this.items;
    if (items === undefined)
      throw new CheckpointError('INVALID_ARGUMENT', `call ${this.call.binding.callId}: an item of a batch runs no batch of its own`, { callId: this.call.input.callId });
    const fence = {
      store: this.deps.store,
      settle: (item: PreparedCall) => items.settle(this.deps, item),
      claimed: (item: PreparedCall) => items.claimed(this.deps, item),
      now: () => transitionTime(this.deps),
      marginMs: this.marginMs,
      cancelRequested: () => ctx.cancellationDetails?.cancelRequested === true,
    };
    return new BatchRun(this.call, fence, ctx.cancellationSignal, (progress) => ctx.heartbeat(fenceHeartbeatDetails(this.call.input.callId, 'executing', 'items', progress)));
  }

  /** The deadline a claim made at `at` declares: `at` + the tool's `callDeadlineMs`, ISO-8601 UTC. */
  private deadlineFrom(at: string): string {
    return claimDeadline(this.call.tool, at);
  }

  /** Whether the call's approval has expired now (docs/protocol.md#agent-workflow: an approval carries an expiry). */
  private approvalExpired(): boolean {
    return callApprovalExpired(this.call, this.clock().getTime());
  }

  private result(record: CheckpointRecord, source: ResultSource): FencedToolResult {
    const { input, tool, idempotencyKey, intentDigest } = this.call;
    const outcome = record.result!.payload as ToolOutcome;
    const appliedByRun = this.call.appliedByRun;
    const result = { callId: input.callId, toolName: tool.name, toolRevision: tool.revision, source, outcome, idempotencyKey, intentDigest };
    return withAnsweredBy(appliedByRun === undefined ? result : { ...result, appliedByRun }, this.call);
  }

  private async reread(): Promise<CheckpointRecord> {
    const current = await this.deps.store.get(this.call.binding);
    if (current === null)
      throw new CheckpointError('INVALID_CHECKPOINT', `checkpoint of ${this.call.binding.callId} disappeared while claimed`, { callId: this.call.binding.callId });
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
