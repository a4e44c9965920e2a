/**
 * The resolutions of an agent run: a call whose outcome is unknown pauses the run until a person
 * resolves it (`resolveOutcomeUpdate`: applied, absent, abandon), for the call or for one item of
 * a batch call, and the run acts on the resolution. Sandbox code.
 *
 * @see docs/protocol.md#agent-workflow
 */
import { CancellationScope, condition } from '@temporalio/workflow';
import type { ToolOutcome } from '../../activities/contract/contract';
import { describeItem } from '../../checkpoint/item-position';
import { activityFailureMessage, failureTypeOrUnclassified } from '../common/failures';
import { decidedBy, MESSAGE_ERROR_TYPES } from './messages';
import { iso, type CallState, type RunStop } from './run-state';
import { learnAppliedByRun } from './call-state';
import type { ResolveOutcomeRequest, ResolveOutcomeResult } from './types';
import { RunApprovals } from './agent-run-approvals';
import { agentActivities, refuseBadDecidedBy, refuse, type PendingResolution } from './agent-run-base';

/** An agent run with its resolutions (see the module comment). */
export abstract class RunResolutions extends RunApprovals {
  /** Marks a call whose outcome is unknown as paused (the run waits on it in {@link awaitResolution}). */
  protected markPaused(call: CallState, errorType: string, message: string): void {
    call.status = 'paused';
    call.errorType = errorType;
    call.reason = message;
    call.pausedAt = Date.now();
    this.state.bump();
    this.publishWaiting();
  }

  /**
   * The run waits durably until a person resolves the call, cancels, or the deadline passes.
   * While the run winds down (compensating) only a person ends the wait: `absent` does
   * not run the call again and `abandon` leaves the call abandoned without stopping anything else.
   * A paused batch item (`call.pausedItem`) is resolved in the item's checkpoint and the call runs
   * again under its own id (see {@link resolveItem}).
   */
  protected async awaitResolution(call: CallState): Promise<RunStop | null> {
    this.state.paused = call;
    this.state.phase = 'paused';
    this.state.bump();
    for (;;) {
      if (!this.windingDown && this.cancel) return this.cancelStop();
      const remainingMs = this.state.deadlineAt - Date.now();
      if (!this.windingDown && remainingMs <= 0) return this.deadlineStop();
      if (this.windingDown) await condition(() => this.resolution !== null);
      else await condition(() => this.resolution !== null || this.cancel !== null, remainingMs);
      const pending = this.resolution;
      if ((!this.windingDown && this.cancel) || pending === null || this.refuseIfStale(pending)) continue;
      const req = pending.request;
      if (req.resolution === 'abandon') {
        call.status = 'abandoned';
        call.reason = `abandoned by a person: ${req.reason}`;
        call.pausedItem = null;
        this.state.paused = null;
        this.settle(pending, { callId: call.callId, resolution: 'abandon', status: 'abandoned', retryCallId: null });
        return this.windingDown ? null : { status: 'abandoned', because: 'abandon', reason: req.reason };
      }
      if (call.pausedItem !== null) {
        const itemStop = await this.resolveItem(call, pending);
        if (itemStop === 'paused') continue;
        return itemStop;
      }
      if (req.resolution === 'absent') {
        call.status = 'resolved-absent';
        call.reason = `a person proved the effect absent: ${req.reason}`;
        this.state.paused = null;
        if (this.windingDown) {
          this.settle(pending, { callId: call.callId, resolution: 'absent', status: 'resolved-absent', retryCallId: null });
          return null;
        }
        const retry = this.state.addRetry(call);
        // Later calls with this intent (a dedupeByIntent tool) use the rerun's generation, never the proven-absent one.
        if (call.intentDigest !== null) this.state.intentGenerations[call.intentDigest] = retry.attempt;
        this.settle(pending, { callId: call.callId, resolution: 'absent', status: 'resolved-absent', retryCallId: retry.callId });
        this.state.bump();
        if (retry.approval !== null && retry.approval.expiresAt === null) {
          // Approved with a signed grant: the rerun is a new effect, and the grant names the original call only.
          retry.approval.expiresAt = Date.now() + retry.approval.expiresAfterMs;
          retry.status = 'awaiting-approval';
          this.publishWaiting();
          return this.processCall(retry, false);
        }
        return this.runTool(retry);
      }
      if (req.resolution !== 'applied') continue;
      const outcome: ToolOutcome = { ok: true, output: req.result, receipt: req.receipt ?? null };
      this.state.phase = 'tools';
      const attempt = await this.callActivity('resolve', (options) =>
        agentActivities(options).resolveToolCall({ ...this.toolInput(call), resolution: 'applied', result: outcome, reason: req.reason, ...decidedBy(req) }),
      );
      if (attempt.kind === 'ok') {
        const stored = attempt.value;
        call.source = 'resolution';
        call.toolRevision = stored.toolRevision;
        call.intentDigest = stored.intentDigest;
        call.idempotencyKey = stored.idempotencyKey;
        if (stored.appliedByRun !== undefined) learnAppliedByRun(call, stored.appliedByRun);
        this.state.paused = null;
        this.completeCall(call, 'resolved-applied', stored.outcome, `a person proved the effect applied: ${req.reason}`);
        this.settle(pending, { callId: call.callId, resolution: 'applied', status: 'resolved-applied', retryCallId: null });
        return null;
      }
      this.state.phase = 'paused';
      if (attempt.kind === 'failed') {
        const type = failureTypeOrUnclassified(attempt.error);
        this.fail(pending, type, `the worker refused to store the result (${activityFailureMessage(attempt.error)}); the run stays paused`);
        continue;
      }
      this.fail(pending, MESSAGE_ERROR_TYPES.RUN_FINISHED, 'the run stopped while the result was being stored');
      return attempt.kind === 'cancelled' ? this.cancelStop() : this.deadlineStop();
    }
  }

  /**
   * A person's resolution of the batch item the call is paused on: stored in the
   * item's checkpoint by `resolveToolCall` with `item` (`applied` with the item's outcome, or
   * `absent`: the item runs again as its next generation); then the same call runs again (same
   * call id and input) and the batch resumes after the item. While the run winds down the call is
   * not run again: it stays `unknown` (some items may have applied). A refusal by the worker
   * fails the update and the call stays paused (`'paused'`).
   */
  protected async resolveItem(call: CallState, pending: PendingResolution): Promise<RunStop | null | 'paused'> {
    const req = pending.request;
    const item = call.pausedItem!;
    const ref = { key: item.key, generation: item.generation };
    const resolution = req.resolution === 'applied' ? 'applied' : 'absent';
    const result: ToolOutcome | undefined = req.resolution === 'applied' ? { ok: true, output: req.result, receipt: req.receipt ?? null } : undefined;
    this.state.phase = 'tools';
    const attempt = await this.callActivity('resolve', (options) =>
      agentActivities(options).resolveToolCall({
        ...this.toolInput(call),
        resolution,
        ...(result !== undefined ? { result } : {}),
        item: ref,
        reason: req.reason,
        ...decidedBy(req),
      }),
    );
    if (attempt.kind === 'failed') {
      this.state.phase = 'paused';
      const type = failureTypeOrUnclassified(attempt.error);
      this.fail(pending, type, `the worker refused to store the resolution of item "${item.key}" (${activityFailureMessage(attempt.error)}); the run stays paused`);
      return 'paused';
    }
    if (attempt.kind !== 'ok') {
      this.fail(pending, MESSAGE_ERROR_TYPES.RUN_FINISHED, 'the run stopped while the resolution was being stored');
      return attempt.kind === 'cancelled' ? this.cancelStop() : this.deadlineStop();
    }
    call.pausedItem = null;
    call.reason = `a person proved ${describeItem(item)} ${resolution}: ${req.reason}`;
    this.state.paused = null;
    // The call runs again (resuming the batch after the item) unless the run is winding down.
    this.settle(pending, {
      callId: call.callId,
      resolution,
      status: resolution === 'applied' ? 'resolved-applied' : 'resolved-absent',
      retryCallId: this.windingDown ? null : call.callId,
      item: ref,
    });
    if (this.windingDown) {
      call.status = 'unknown';
      call.reason += '; the batch did not resume: the run is stopping (items after it did not run)';
      return null;
    }
    return this.runTool(call);
  }

  protected validateResolution(req: ResolveOutcomeRequest): void {
    if (this.state.stopped !== null) refuse(MESSAGE_ERROR_TYPES.RUN_FINISHED, `the run has stopped (${this.state.stopped.because})`);
    // The decision applies only to the pause the person saw (its pauseId), never to a later one of the same call.
    const refusal = this.state.resolutionRefusal(req?.callId, req?.pauseId, this.resolution !== null);
    if (refusal !== null) refuse(MESSAGE_ERROR_TYPES[refusal.type], refusal.message);
    refuseBadDecidedBy(req.by);
    if (!['applied', 'absent', 'abandon'].includes(req.resolution)) {
      refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, `resolution must be 'applied', 'absent' or 'abandon', got ${JSON.stringify(req.resolution)}`);
    }
    if (typeof req.reason !== 'string' || req.reason.length === 0) refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, 'reason must be a non-empty string');
    if (req.resolution === 'applied' && req.result === undefined) {
      refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, "resolution 'applied' needs the exact result JSON in `result`");
    }
  }

  protected async acceptResolution(req: ResolveOutcomeRequest): Promise<ResolveOutcomeResult> {
    const pending: PendingResolution = { request: req, settled: false, result: null, failure: null };
    this.resolution = pending;
    // A run that compensates acts on resolutions after a Temporal cancellation too (it settles
    // unknown calls before compensating), so its handler must outlive the cancelled root scope.
    if (this.input.compensateOn !== undefined) await CancellationScope.nonCancellable(() => condition(() => pending.settled));
    else await condition(() => pending.settled);
    if (pending.failure !== null) refuse(pending.failure.type, pending.failure.message);
    return pending.result!;
  }

  protected settle(pending: PendingResolution, result: Omit<ResolveOutcomeResult, 'pauseId'>): void {
    pending.result = { ...result, pauseId: pending.request.pauseId };
    // Who decided, kept with the call (the run's result and status show it).
    this.state.get(result.callId)?.decisions.push({
      kind: result.status,
      by: pending.request.by ?? null,
      at: iso(Date.now()),
      ...(pending.request.pauseId === undefined ? {} : { pauseId: pending.request.pauseId }),
      ...(result.role === undefined ? {} : { role: result.role }),
    });
    pending.settled = true;
    if (this.resolution === pending) this.resolution = null;
    this.state.bump();
    this.publishWaiting();
  }

  /**
   * Fails a waiting decision made for a pause that is no longer the one waiting (a cancel or a
   * compensation moved the run on between the validator and now) with STALE_PAUSE; true if so.
   */
  protected refuseIfStale(pending: PendingResolution): boolean {
    // A request without a pauseId was accepted by older code's validator: it replays as it ran.
    if (pending.request.pauseId === undefined) return false;
    const refusal = this.state.resolutionRefusal(pending.request.callId, pending.request.pauseId, false);
    if (refusal === null) return false;
    this.fail(pending, MESSAGE_ERROR_TYPES[refusal.type], refusal.message);
    return true;
  }

  protected fail(pending: PendingResolution, type: string, message: string): void {
    pending.failure = { type, message };
    pending.settled = true;
    if (this.resolution === pending) this.resolution = null;
  }
}
