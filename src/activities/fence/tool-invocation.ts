/**
 * Calling a call's tool under the claim its attempt holds (`./fenced-tool`): `execute` with
 * heartbeats, in-attempt transient retries and the call deadline, or a user's activity with its
 * claim renewed while it runs (`./claim-renewal`); the context the tool receives; and what a
 * thrown error means (`kind`: transient, rejected, unknown outcome). Writes nothing to the
 * checkpoint but those claim renewals; storing the outcome is the attempt's.
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import { sanitizeReason } from '../../checkpoint/bounds';
import type { CheckpointRecord } from '../../checkpoint/types';
import { heartbeatIntervalMs, heartbeatTimeoutOf, withKeptHeartbeat } from './kept-heartbeat';
import { fenceHeartbeatDetails, type FencePhase } from '../../telemetry/heartbeat-details';
import type { BatchRun } from './batch-fence';
import type { Invoked } from './batch-types';
import { CallDeadline, DEADLINE } from './call-deadline';
import { ClaimRenewal } from './claim-renewal';
import type { ResultSource } from '../contract/contract';
import { DEFAULT_CALL_DEADLINE_MS, toolErrorKind } from '../tools/define-tool';
import { claimDeadline, DEFAULT_RECONCILE_MARGIN_MS, keyLiveDeadline, transitionTime, type FencedToolDeps } from './fence-deps';
import type { PreparedCall } from './prepare-call';
import type { ToolContext, ToolSuccess } from '../contract/tool-types';
import { DEFAULT_TRANSIENT_RETRY, retryTransient } from '../tools/transient-retry';

/** The tool of one attempt of `call`, called under the attempt's claim. */
export class ToolInvocation {
  private readonly clock: () => Date;

  /** @param batchRun the attempt's batch, for a `batch` tool (made when the tool is called). */
  constructor(
    private readonly deps: FencedToolDeps,
    private readonly call: PreparedCall,
    private readonly batchRun: () => BatchRun,
  ) {
    this.clock = deps.clock ?? (() => new Date());
  }

  /**
   * Calls a user's activity (`deps.executeIsUserActivity`) once, renewing the claim while it runs
   * (see `./claim-renewal`): the activity may ignore the abort signal, so the fence waits for it
   * however long it takes instead of declaring the outcome unknown at the deadline while it may
   * still apply its effect. While it runs the fence heartbeats for it, re-sending the activity's
   * own last heartbeat details (`./kept-heartbeat`).
   * @returns the outcome, and the record as the last renewal left it.
   */
  async invokeUserActivity(claimed: CheckpointRecord, source: ResultSource): Promise<Invoked & { record: CheckpointRecord }> {
    const { tool } = this.call;
    // A same-key repeat's request must land while the provider remembers the key (docs/protocol.md#key-lifetime):
    // its claim is not renewed past that, and an activity that returns later may have applied the effect again.
    const limitMs = source === 'same-key-repeat' ? keyLiveDeadline(Date.parse(claimed.createdAt), tool, this.deps.reconcileMarginMs ?? DEFAULT_RECONCILE_MARGIN_MS) : undefined;
    const renewal = new ClaimRenewal({
      store: this.deps.store,
      claimed,
      attemptId: this.call.attemptId,
      deadlineMs: tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS,
      now: (record) => this.now(record),
      nowMs: () => this.clock().getTime(),
      ...(limitMs === undefined ? {} : { deadlineLimitMs: limitMs }),
    });
    const signal = AbortSignal.any([Context.current().cancellationSignal, renewal.signal]);
    renewal.start();
    let outcome: Invoked;
    try {
      const value = await withKeptHeartbeat(() => tool.execute(this.call.args as never, this.context(signal)));
      outcome = { kind: 'done', value: { ok: true, output: value.output, receipt: value.receipt ?? null, ...(value.encoding === undefined ? {} : { encoding: value.encoding }) } };
    } catch (error) {
      outcome = this.classified(error);
      // A transient failure proves this request not applied; after a same-key repeat it proves nothing about the earlier one.
      if (outcome.kind === 'done' && toolErrorKind(error) === 'transient' && source !== 'same-key-repeat')
        outcome = { ...outcome, notApplied: { retryAfterMs: retryAfterOf(error) } };
    }
    const record = await renewal.stop();
    if (limitMs !== undefined && this.clock().getTime() >= limitMs) {
      outcome = {
        kind: 'unknown',
        reason: `the activity repeated with the same key ran past ${new Date(limitMs).toISOString()}, after which the provider may have forgotten the key and applied it again`,
      };
    }
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
    if (kind === 'unknown-outcome' || type === 'OUTCOME_UNKNOWN')
      return { kind: 'unknown', reason: sanitizeReason(raw, `${tool.name} failed without a message after the request may have been sent`) };
    const message = sanitizeReason(raw, `${tool.name} failed without a message`);
    return { kind: 'done', value: { ok: false, error: { type: typeof type === 'string' ? type : kind === 'transient' ? 'TRANSIENT_EXHAUSTED' : 'BUSINESS_REJECTION', message } } };
  }

  /**
   * Calls `execute` with heartbeats, retrying transient failures with full-jitter backoff and
   * Retry-After, until the call deadline (claim time + `callDeadlineMs`), when `ctx.signal`
   * aborts and the fence stops waiting: the outcome is then unknown.
   */
  async invoke(claimed: CheckpointRecord, source: ResultSource): Promise<Invoked> {
    const { tool } = this.call;
    const deadlineMs = tool.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS;
    // A batch call has no deadline of its own: each of its items has `callDeadlineMs` (./batch-fence).
    const batch = tool.batch === true ? this.batchRun() : undefined;
    const deadlineAt = batch !== undefined ? Number.MAX_SAFE_INTEGER : Date.parse(claimed.execution!.deadlineAt ?? claimDeadline(tool, claimed.execution!.claimedAt));
    // After a same-key repeat, or once the provider said the key is in flight, an earlier request may have applied the effect.
    let mayBeApplied = source === 'same-key-repeat';
    // An item's request is not aborted by cancellation (the batch stops between items, so the item's outcome stays known).
    const cancellation = this.call.item === undefined ? Context.current().cancellationSignal : new AbortController().signal;
    const deadline = new CallDeadline(cancellation, batch !== undefined ? undefined : deadlineAt - this.clock().getTime(), `the call deadline of ${deadlineMs} ms passed`);
    try {
      const value: ToolSuccess = await this.heartbeating(
        () =>
          Promise.race([
            retryTransient(
              () =>
                tool.execute(
                  this.call.args as never,
                  this.context(() => deadline.signal, batch),
                ),
              {
                policy: this.deps.transientRetry ?? DEFAULT_TRANSIENT_RETRY,
                deadlineAt,
                now: () => this.clock().getTime(),
                isTransient: (error) => {
                  if ((error as { type?: unknown } | null)?.type === 'OUTCOME_UNKNOWN') mayBeApplied = true;
                  return toolErrorKind(error) === 'transient';
                },
                get signal() {
                  return deadline.signal;
                },
              },
            ),
            deadline.expired,
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
      if (error === DEADLINE || (deadline.passed && !cancellation.aborted)) {
        return { kind: 'unknown', reason: `${tool.name} did not finish within its call deadline of ${deadlineMs} ms; the request was aborted and its outcome is unknown` };
      }
      const outcome = this.classified(error);
      if (outcome.kind === 'unknown' || toolErrorKind(error) !== 'transient') return outcome;
      const raw = error instanceof Error ? error.message : String(error);
      if (mayBeApplied && !cancellation.aborted) {
        return {
          kind: 'unknown',
          reason: sanitizeReason(
            `${raw} (after ${source === 'same-key-repeat' ? 'a same-key repeat' : 'the provider said the key was in flight'}, a failure proves nothing about an earlier request)`,
            `${tool.name} failed after a same-key repeat`,
          ),
        };
      }
      if (cancellation.aborted) {
        // Shutdown or cancellation during backoff: nothing was applied by this attempt, but it holds the claim; the next attempt decides.
        throw new CancelledFailure(
          `cancelled while ${tool.name} was backing off after a transient error (${sanitizeReason(raw, `${tool.name} failed without a message`)}); the call is left to the next attempt`,
        );
      }
      // Every request of this claim was refused before the provider accepted it: proven not applied.
      return { ...outcome, notApplied: { retryAfterMs: retryAfterOf(error) } };
    } finally {
      deadline.end(tool.name);
    }
  }

  /**
   * Runs `work`, heartbeating `details` (or what it returns, at each beat) every third of the
   * heartbeat timeout (at least every 200 ms). Without a heartbeat timeout, or for a local
   * activity, `work` runs as it is: no heartbeat the plain activity would not send.
   */
  async heartbeating<T>(work: () => Promise<T>, details: unknown): Promise<T> {
    const ctx = Context.current();
    const timeoutMs = heartbeatTimeoutOf(ctx);
    if (timeoutMs === undefined) return work();
    const timer = setInterval(() => ctx.heartbeat(typeof details === 'function' ? (details as () => unknown)() : details), heartbeatIntervalMs(timeoutMs));
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /**
   * The details the fence heartbeats while it works on the call whose checkpoint is `record` (see
   * `../../telemetry/heartbeat-details`). A user's activity (`deps.executeIsUserActivity`) owns its
   * heartbeat details: for it, the previous attempt's, never the fence's.
   */
  heartbeatDetails(record: CheckpointRecord, phase: FencePhase): unknown {
    if (this.deps.executeIsUserActivity === true) return Context.current().info.heartbeatDetails;
    const progress = this.call.batchProgress;
    return progress === undefined
      ? fenceHeartbeatDetails(this.call.input.callId, record.status, phase)
      : fenceHeartbeatDetails(this.call.input.callId, record.status, 'items', progress());
  }

  /** The context `execute` and `lookup` receive: the call's key, intent and ids, `signal`, heartbeats, and `forEachItem` for the attempt's `batch`. */
  context(signal: AbortSignal | (() => AbortSignal), batch?: BatchRun): ToolContext {
    const ctx = Context.current();
    return {
      get signal() {
        return typeof signal === 'function' ? signal() : signal;
      },
      idempotencyKey: this.call.idempotencyKey,
      intentDigest: this.call.intentDigest,
      attemptId: this.call.attemptId,
      callId: this.call.input.callId,
      workflowId: this.call.workflowId,
      heartbeat: (details?: unknown) => ctx.heartbeat(details),
      ...(batch === undefined ? {} : { forEachItem: batch.forEachItem }),
      ...(this.call.item === undefined ? {} : { item: this.call.item }),
    };
  }

  /** Now, never earlier than the record's `updatedAt` (see {@link transitionTime}). */
  private now(record?: CheckpointRecord): string {
    return transitionTime(this.deps, record);
  }
}

/** An error's `retryAfterMs` (ms, as the provider clients set it), when it is a positive number. */
function retryAfterOf(error: unknown): number | undefined {
  const value = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}
