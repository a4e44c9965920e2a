/**
 * The approvals of an agent run: the calls of a turn that need approval become pending together
 * (each with its intent digest from `describeToolCall` and its own expiry), people approve or
 * reject them (`approveCallUpdate`, `rejectCallUpdate`), and each call waits for its decision.
 * Sandbox code.
 *
 * @see docs/protocol.md#agent-workflow
 */
import { condition, patched } from '@temporalio/workflow';
import { approvalExpired, intentMismatch, MAX_GRANT_LENGTH } from '../../checkpoint/approval';
import { activityFailureMessage, failureTypeOrUnclassified } from '../common/failures';
import { MESSAGE_ERROR_TYPES } from './messages';
import { countApprovalDecision } from './run-metrics';
import { iso, type CallState, type RunStop } from './run-state';
import type { ApprovalDecisionResult, ApproveCallRequest, RejectCallRequest } from './types';
import { AgentRunBase } from './agent-run-base';
import { agentActivities, APPROVAL_EXPIRED_FOR_MODEL, refuseBadDecidedBy, refuse } from './agent-run-base';
import { APPROVAL_ARGUMENTS_PATCH } from './agent-patches';

/** An agent run with its approvals (see the module comment). */
export abstract class RunApprovals extends AgentRunBase {
  /**
   * Makes every call of this turn that needs approval (and fits in the tool-call budget) pending
   * at once, frozen with its tool revision and intent digest from `describeToolCall`.
   */
  protected async prepareApprovals(calls: readonly CallState[]): Promise<RunStop | null> {
    const budgetLeft = this.input.budget.maxToolCalls - this.state.toolCallsUsed;
    let registered = false;
    // The calls before this one that take budget (see `refusedBeforeRunning`): a call at or past
    // the budget left is stopped by the budget before it runs, so nobody is asked about it.
    let counted = 0;
    for (const call of calls) {
      const position = this.refusedBeforeRunning(call) ? null : counted++;
      const policy = this.approvalRequired[call.toolName];
      if (policy === undefined || position === null || position >= budgetLeft || call.preFailure !== null || !this.input.tools.includes(call.toolName)) continue;
      const stop = this.stopBefore('describe');
      if (stop) return stop;
      const attempt = await this.callActivity('describe', (options) => agentActivities(options).describeToolCall(this.toolInput(call)));
      if (attempt.kind === 'cancelled') return this.cancelStop();
      if (attempt.kind === 'deadline') return this.deadlineStop();
      if (attempt.kind === 'failed') {
        const type = failureTypeOrUnclassified(attempt.error);
        call.preFailure = { type, message: activityFailureMessage(attempt.error) };
        if (this.refusedBeforeRunning(call)) counted -= 1;
        continue;
      }
      const described = attempt.value;
      if (described.arguments === undefined && patched(APPROVAL_ARGUMENTS_PATCH)) {
        // A worker that does not report the validated arguments (older code during a deploy): the
        // approver could not see what would run, so the call is refused (fail closed). Runs
        // described before this change replay as they ran (patched() is false for them).
        call.preFailure = {
          type: 'INVALID_ARGUMENT',
          message: `INVALID_ARGUMENT: the worker that described ${call.toolName} call "${call.callId}" did not report its validated arguments; nothing ran`,
        };
        if (this.refusedBeforeRunning(call)) counted -= 1;
        continue;
      }
      call.toolRevision = described.toolRevision;
      call.intentDigest = described.intentDigest;
      call.idempotencyKey = described.idempotencyKey;
      call.arguments = described.arguments;
      call.target = described.target ?? null;
      call.approval = { expiresAfterMs: policy.expiresAfterMs, expiresAt: Date.now() + policy.expiresAfterMs, decision: null, decidedAt: null, reason: null };
      call.status = 'awaiting-approval';
      registered = true;
    }
    if (registered) {
      this.state.bump();
      this.publishWaiting();
    }
    return null;
  }

  /** Waits for the call's decision; expiry and the deadline end the wait. */
  protected async awaitApproval(call: CallState): Promise<'approved' | 'rejected' | RunStop> {
    const approval = call.approval!;
    const expiresAt = approval.expiresAt!;
    while (approval.decision === null) {
      if (this.cancel) return this.cancelStop();
      const now = Date.now();
      if (approvalExpired(expiresAt, now)) {
        approval.decision = 'expired';
        approval.decidedAt = now;
        break;
      }
      if (now >= this.state.deadlineAt) return this.deadlineStop();
      this.state.phase = 'awaiting-approval';
      await condition(() => approval.decision !== null || this.cancel !== null, Math.min(expiresAt, this.state.deadlineAt) - now);
    }
    if (this.cancel) return this.cancelStop();
    if (approval.decision === 'rejected') {
      // The person's reason is meant for the model (RejectCallRequest.reason).
      const reason = `REJECTED: a person rejected the call: ${approval.reason ?? ''}`;
      this.rejectCall(call, reason, reason);
      return 'rejected';
    }
    if (approval.decision === 'expired') {
      countApprovalDecision('expired', call.toolName);
      this.rejectCall(call, `APPROVAL_EXPIRED: nobody approved the call before its approval expired at ${iso(expiresAt)}; nothing ran`, APPROVAL_EXPIRED_FOR_MODEL);
      return 'rejected';
    }
    const now = Date.now();
    if (approvalExpired(expiresAt, now)) {
      this.rejectCall(
        call,
        `APPROVAL_EXPIRED: the call was approved at ${iso(approval.decidedAt ?? now)} but could not start before its approval expired at ${iso(expiresAt)}; nothing ran`,
        APPROVAL_EXPIRED_FOR_MODEL,
      );
      return 'rejected';
    }
    return 'approved';
  }

  protected validateApprove(req: ApproveCallRequest): void {
    if (typeof req?.intentDigest !== 'string' || typeof req.stateVersion !== 'number') {
      refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, 'approveCall needs { callId: string, intentDigest: string, stateVersion: number }');
    }
    const call = this.awaitingApproval(req.callId);
    refuseBadDecidedBy(req.by);
    if (req.grant !== undefined && (typeof req.grant !== 'string' || req.grant === '' || req.grant.length > MAX_GRANT_LENGTH)) {
      refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, `approveCall: grant must be non-empty text of at most ${MAX_GRANT_LENGTH} characters`);
    }
    if (intentMismatch(req.intentDigest, call.intentDigest)) {
      refuse(MESSAGE_ERROR_TYPES.APPROVAL_MISMATCH, `call "${call.callId}" has intent digest ${call.intentDigest}, the approval names ${req.intentDigest}`);
    }
    if (req.stateVersion !== this.state.stateVersion) {
      refuse(
        MESSAGE_ERROR_TYPES.STALE_STATE_VERSION,
        `the approval was given at state version ${req.stateVersion}, the run is at ${this.state.stateVersion}; read the run again (ttc pending, ttc show, the console or the runStatus query) and decide again`,
      );
    }
  }

  protected approve(req: ApproveCallRequest): ApprovalDecisionResult {
    const result = this.decide(req.callId, 'approved', null, req.by);
    if (req.grant !== undefined) this.state.get(req.callId)!.approval!.grant = req.grant;
    return result;
  }

  protected validateReject(req: RejectCallRequest): void {
    if (typeof req?.reason !== 'string' || req.reason.length === 0) {
      refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, 'rejectCall needs { callId: string, reason: non-empty string }');
    }
    this.awaitingApproval(req.callId);
    refuseBadDecidedBy(req.by);
  }

  protected reject(req: RejectCallRequest): ApprovalDecisionResult {
    return this.decide(req.callId, 'rejected', req.reason, req.by);
  }

  protected decide(callId: string, decision: 'approved' | 'rejected', reason: string | null, by: string | undefined): ApprovalDecisionResult {
    const call = this.state.get(callId)!;
    const approval = call.approval!;
    const now = Date.now();
    approval.decision = decision;
    approval.decidedAt = now;
    approval.reason = reason;
    call.status = decision === 'approved' ? 'approved' : 'rejected';
    call.decisions.push({ kind: decision, by: by ?? null, at: iso(now) });
    if (decision === 'approved') call.approvedIntentDigest = call.intentDigest;
    if (decision === 'rejected') call.reason = `REJECTED: a person rejected the call: ${reason ?? ''}`;
    countApprovalDecision(decision, call.toolName);
    this.publishWaiting();
    return { callId, decision, decidedAt: iso(now), approvalExpiresAt: iso(approval.expiresAt!) };
  }

  /** The call awaiting a decision, or a refusal (RUN_FINISHED, CALL_NOT_AWAITING_APPROVAL, APPROVAL_EXPIRED). */
  protected awaitingApproval(callId: unknown): CallState {
    if (this.state.stopped !== null) refuse(MESSAGE_ERROR_TYPES.RUN_FINISHED, `the run has stopped (${this.state.stopped.because})`);
    if (typeof callId !== 'string') refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, 'callId must be a string');
    const call = this.state.get(callId);
    const approval = call?.approval;
    if (call === undefined || approval == null || approval.expiresAt === null) {
      refuse(MESSAGE_ERROR_TYPES.CALL_NOT_AWAITING_APPROVAL, `no call "${callId}" is awaiting approval in this run`);
    }
    if (approval.decision === 'expired' || (approval.decision === null && approvalExpired(approval.expiresAt, Date.now()))) {
      refuse(MESSAGE_ERROR_TYPES.APPROVAL_EXPIRED, `the approval of call "${callId}" expired at ${iso(approval.expiresAt)}`);
    }
    if (approval.decision !== null || call.status !== 'awaiting-approval') {
      refuse(MESSAGE_ERROR_TYPES.CALL_NOT_AWAITING_APPROVAL, `call "${callId}" is ${call.status}, not awaiting approval`);
    }
    return call;
  }
}
