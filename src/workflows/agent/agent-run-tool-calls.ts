/**
 * The tool calls of an agent run: a turn's calls run in order or a few at a time, each as its
 * tool's fenced activity, its result or failure recorded for the model, a failure that may have
 * applied pausing the run. Sandbox code.
 *
 * @see docs/protocol.md#agent-workflow
 */
import { patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { hasApprovedIntent } from '../../checkpoint/approval';
import { ACTIVITY_NOT_REGISTERED, toolCallSummary, type FencedToolInput, type ToolCallInput } from '../../activities/contract/contract';
import type { AgentToolResult, ToolCallActivities } from './activity-types';
import { activityFailureDetails, activityFailureMessage, failureTypeOrUnclassified, claimIdentityOf, isNothingApplied, pausedItemOf } from '../common/failures';
import { toolActivityOptions } from './input';
import { iso, type CallState, type RunStop } from './run-state';
import { learnAppliedByRun } from './call-state';
import { isTurnRefusal } from './turn-bounds';
import { RunResolutions } from './agent-run-resolutions';
import { agentActivities, TURN_INLINE_BYTES, APPROVAL_EXPIRED_FOR_MODEL, type ActivityAttempt } from './agent-run-base';
import { TOOL_ACTIVITY_TYPES_PATCH, REFUSED_CALLS_UNCOUNTED_PATCH, ANSWERED_BY_PATCH } from './agent-patches';
import { answeredByNote, appliedByRunNote } from './call-views';
import { packCallHashes, runOfCallId } from '../../checkpoint/run-scope';
import type { ResetLineage } from './input-types';

/** An agent run with its tool calls (see the module comment). */
export abstract class RunToolCalls extends RunResolutions {
  /**
   * Whether `call` is refused before it runs (beyond the turn's bounds, a repeated call id, input
   * the adapter refused, a tool the run does not offer, a description that failed): it takes
   * nothing of `budget.maxToolCalls` and no budget stops it, so the model reads why. Runs whose
   * history counted such calls (before patch `ttc-refused-calls-uncounted`) replay as they ran.
   */
  protected refusedBeforeRunning(call: CallState): boolean {
    if (isTurnRefusal(call.preFailure?.type)) return true;
    return (call.preFailure !== null || !this.input.tools.includes(call.toolName)) && patched(REFUSED_CALLS_UNCOUNTED_PATCH);
  }

  /** The stop before `call` (see {@link stopBefore}), and counts it against the budget unless it is refused before it runs. */
  protected startCall(call: CallState): RunStop | null {
    const refused = this.refusedBeforeRunning(call);
    const stop = this.stopBefore(refused ? 'refused-call' : 'tool');
    if (stop === null && !refused) this.state.toolCallsUsed += 1;
    return stop;
  }

  /** Runs the calls of a turn one at a time, in the model's order (runs without patch `ttc-long-runs`, or `toolConcurrency: 1`). */
  protected async runInOrder(calls: readonly CallState[]): Promise<RunStop | null> {
    for (const call of calls) {
      const beforeTool = this.startCall(call);
      if (beforeTool) return beforeTool;
      const stop = await this.processCall(call, false);
      if (stop) return stop;
    }
    return null;
  }

  /**
   * Runs the calls of a turn `width` at a time. Each call counts against the budget
   * when it starts; once the budget, the deadline or a cancel stops the turn, no further call
   * starts and the running ones settle. A call whose outcome is unknown does not hold the others
   * up: once every call has settled, the run pauses on each such call in turn.
   */
  protected async runConcurrently(calls: readonly CallState[], width: number): Promise<RunStop | null> {
    let next = 0;
    let stop: RunStop | null = null;
    const lane = async (): Promise<void> => {
      while (stop === null && next < calls.length) {
        const call = calls[next++]!;
        const beforeTool = this.startCall(call);
        if (beforeTool) {
          stop = beforeTool;
          return;
        }
        const callStop = await this.processCall(call, true);
        if (callStop) stop ??= callStop;
      }
    };
    await Promise.all(Array.from({ length: width }, lane));
    const deferred = this.deferredPauses;
    this.deferredPauses = [];
    if (stop !== null && (stop as RunStop).status !== 'budget-exhausted') return stop;
    // A budget stop still waits for a person on every unknown outcome of the turn, as one call at a time would.
    for (const call of deferred) {
      const pauseStop = await this.awaitResolution(call);
      if (pauseStop) return pauseStop;
    }
    return stop;
  }

  protected async processCall(call: CallState, deferPause: boolean): Promise<RunStop | null> {
    if (!this.input.tools.includes(call.toolName)) {
      this.failCall(call, 'UNKNOWN_TOOL', `UNKNOWN_TOOL: the model asked for tool "${call.toolName}", which this run does not offer (tools: ${this.input.tools.join(', ')})`);
      return null;
    }
    if (call.preFailure !== null) {
      this.failCall(call, call.preFailure.type, call.preFailure.message);
      return null;
    }
    if (call.approval !== null) {
      const decision = await this.awaitApproval(call);
      if (decision !== 'approved') return decision === 'rejected' ? null : decision;
    }
    if (this.approvalRequired[call.toolName] !== undefined && !hasApprovedIntent(call.approvedIntentDigest)) {
      // Fail closed: a tool that needs approval never runs without an approved intent.
      this.failCall(call, 'APPROVAL_REQUIRED', `APPROVAL_REQUIRED: ${call.toolName} call "${call.callId}" needs a person's approval and was never approved; nothing ran`);
      return null;
    }
    return this.runTool(call, deferPause);
  }

  protected async runTool(call: CallState, deferPause = false): Promise<RunStop | null> {
    this.state.phase = 'tools';
    call.status = 'running';
    const ownType = patched(TOOL_ACTIVITY_TYPES_PATCH);
    const attempt = await this.scheduleTool(call, ownType);
    switch (attempt.kind) {
      case 'ok': {
        const result = attempt.value;
        call.source = result.source;
        call.toolRevision = result.toolRevision;
        call.intentDigest = result.intentDigest;
        call.idempotencyKey = result.idempotencyKey;
        // A dedupeByIntent tool answers a re-planned intent from the earlier call's checkpoint.
        const earlier = result.source === 'store' && result.intentDigest !== null ? this.state.earlierWithIntent(call, result.intentDigest) : undefined;
        const by = result.answeredBy !== undefined && patched(ANSWERED_BY_PATCH) ? result.answeredBy : undefined;
        let note = by
          ? answeredByNote(by)
          : earlier
            ? `same intent as call "${earlier.callId}": answered from its checkpoint, the effect was not applied again`
            : result.storedUnder !== undefined
              ? `the result was stored under ${result.storedUnder.toolName} revision ${result.storedUnder.toolRevision} before a deploy; delivered as stored, the tool was not called again`
              : null;
        if (by !== undefined) call.answeredBy = by;
        if (result.appliedByRun !== undefined) {
          learnAppliedByRun(call, result.appliedByRun);
          note = appliedByRunNote(result.appliedByRun);
        }
        this.completeCall(call, 'completed', result.outcome, note);
        return this.compensateOnStop(call, result.outcome);
      }
      case 'cancelled':
        call.status = 'unknown';
        call.reason = 'cancelled while the tool call was running; its effect may have been applied';
        if (attempt.batch !== null) {
          const { total, applied, notApplied, unknown } = attempt.batch;
          call.batch = attempt.batch;
          call.reason = `cancelled during the batch of ${total} items: ${applied.count} applied, ${notApplied.count} not applied, ${unknown.count} unknown`;
        }
        return this.cancelStop();
      case 'deadline':
        call.status = 'unknown';
        call.errorType = 'DEADLINE_EXCEEDED';
        call.reason = 'the run deadline passed while the tool call was running; its effect may have been applied';
        return this.deadlineStop();
      case 'failed': {
        const type = failureTypeOrUnclassified(attempt.error);
        const message = activityFailureMessage(attempt.error);
        if (ownType && type === ACTIVITY_NOT_REGISTERED) {
          // No worker function ran: the run offers a tool the worker does not register.
          this.failCall(call, 'UNKNOWN_TOOL', `UNKNOWN_TOOL: the worker does not register tool "${call.toolName}" (activity type ${call.toolName}); nothing ran (${message})`);
          return null;
        }
        const digest = activityFailureDetails(attempt.error)?.intentDigest;
        if (typeof digest === 'string') call.intentDigest = digest;
        if (type === 'APPROVAL_EXPIRED') {
          this.rejectCall(call, message, APPROVAL_EXPIRED_FOR_MODEL);
          return null;
        }
        if (isNothingApplied(attempt.error)) {
          this.failCall(call, type, message);
          return null;
        }
        call.pausedItem = pausedItemOf(attempt.error);
        // What the person looks the effect up by at the provider: the key and revision the call was claimed under.
        const claimed = claimIdentityOf(attempt.error);
        call.toolRevision = claimed.toolRevision ?? call.toolRevision;
        call.idempotencyKey = claimed.idempotencyKey ?? call.idempotencyKey;
        this.markPaused(call, type, message);
        if (deferPause) {
          this.deferredPauses.push(call);
          return null;
        }
        return this.awaitResolution(call);
      }
    }
  }

  /**
   * Runs one fenced attempt of the call as the tool's own activity (type = tool name, summary
   * naming the call id, the tool's `perTool` activity options; an activity type no worker
   * registers fails at once, see {@link ACTIVITY_NOT_REGISTERED}). A run whose history predates
   * per-tool activity types (`ownType` false: no {@link TOOL_ACTIVITY_TYPES_PATCH} marker) keeps
   * scheduling `runFencedTool` with the tool name in its input, so it replays as it ran.
   */
  protected scheduleTool(call: CallState, ownType: boolean): Promise<ActivityAttempt<AgentToolResult>> {
    if (!ownType) return this.callActivity('tool', (options) => agentActivities(options).runFencedTool(this.toolInput(call)));
    const { toolName: _toolName, ...input }: ToolCallInput = this.toolInput(call);
    const summary = toolCallSummary(call.toolName, call.callId);
    return this.callActivity(
      'tool',
      (options) => {
        const nonRetryableErrorTypes = [...(options.retry?.nonRetryableErrorTypes ?? []), ACTIVITY_NOT_REGISTERED];
        return proxyActivities<ToolCallActivities>({ ...options, summary, retry: { ...options.retry, nonRetryableErrorTypes } })[call.toolName]!(input);
      },
      toolActivityOptions(this.input.activityOptions, call.toolName),
    );
  }

  /**
   * The activity input of a call: the run chain (`firstExecutionRunId`, so a new chain that
   * reuses the workflow id never sees this chain's checkpoints); for a call a person approved,
   * the approved intent digest (the worker refuses another intent: APPROVAL_MISMATCH) and the
   * approval's expiry (the worker refuses to claim after it: APPROVAL_EXPIRED); the intent
   * generation for a rerun after `absent` and the run's generation per intent digest (a
   * `dedupeByIntent` tool must never reopen a proven-absent checkpoint).
   */
  protected toolInput(call: CallState): FencedToolInput {
    const expiresAt = call.approval?.decision === 'approved' ? call.approval.expiresAt : null;
    const approvedBy = call.decisions.find((decision) => decision.kind === 'approved')?.by ?? null;
    const generations = this.state.intentGenerations;
    return {
      tenant: this.input.tenant,
      callId: call.callId,
      runChainId: workflowInfo().firstExecutionRunId,
      toolName: call.toolName,
      input: call.input,
      ...(call.approvedIntentDigest !== null ? { expectedIntentDigest: call.approvedIntentDigest } : {}),
      ...(expiresAt !== null ? { approvalExpiresAt: iso(expiresAt) } : {}),
      ...(approvedBy !== null ? { approvedBy } : {}),
      ...(call.approval?.decision === 'approved' && call.approval.grant !== undefined ? { approvalGrant: call.approval.grant } : {}),
      ...(call.attempt > 0 ? { intentGeneration: call.attempt } : {}),
      ...(call.attempt > 0 ? { provenAbsentCallIds: this.state.provenAbsent(call.modelCallId) } : {}),
      ...(Object.keys(generations).length > 0 ? { intentGenerations: { ...generations } } : {}),
      ...(this.resetSafe ? { occurrences: this.occurrences() } : {}),
      ...(this.longRuns ? { resultByReference: { inlineMaxBytes: this.inlineMaxBytes() } } : {}),
    };
  }

  /**
   * Where a call claims the occurrences of its intent (docs/protocol.md#resets): the run chain's
   * segment (`occurrenceScopeOf`: a continued run counts afresh, a run of a reset lineage in the
   * reset run's), the run its own calls are addressed in, and this run's history that other runs
   * made (its reset lineage's earlier runs, and the calls of other runs it replayed), which the call
   * passes by instead of adopting; in a reset lineage, the segments whose start refuses it.
   */
  private occurrences(): NonNullable<FencedToolInput['occurrences']> {
    const scope = this.occurrenceScope;
    const { runs, liveCalls, liveRuns, notRun } = this.historyOfOtherRuns();
    return {
      scope,
      ...(liveCalls.length > 0 ? { liveCalls, liveRuns } : {}),
      ...(runs.length > 0 ? { earlierRuns: runs } : {}),
      ...(notRun !== undefined && notRun.length > 0 ? { notRun } : {}),
      ...(this.callsAddressedIn !== null ? { ownCallsIn: this.callsAddressedIn } : {}),
      ...(this.refusedIfStarted.length > 0 ? { refusedIfStarted: [...this.refusedIfStarted] } : {}),
      // A reset run that dispatches this input again before any attempt claimed refuses it (DISCARDED_BY_RESET).
      builtInRun: workflowInfo().runId,
    };
  }

  /**
   * This run's history that other runs made: the earlier runs of its reset lineage (`runs`, handed
   * over), and the calls of other runs its reset runs replayed (`liveCalls`, `liveRuns`: handed over,
   * plus this run's own); and the calls of its history that never ran (`notRun`: handed over, plus
   * this run's: rejected, or refused as built by a discarded run).
   */
  protected historyOfOtherRuns(): Omit<ResetLineage, 'refusedIfStarted'> {
    const earlier = this.input.continued?.resetLineage;
    const others = this.state.callIdsOfOtherRuns();
    const chain = workflowInfo().firstExecutionRunId;
    // Where their adoptions are recorded: the run each was made in, or the run that ran it after a reset.
    const recordedFor = others.flatMap((id) => {
      const ranIn = this.state.get(id)?.adoptionRecordedFor;
      return ranIn === undefined ? [runOfCallId(id, chain)] : [runOfCallId(id, chain), ranIn];
    });
    return {
      runs: [...(earlier?.runs ?? [])],
      liveCalls: (earlier?.liveCalls ?? '') + packCallHashes(others),
      liveRuns: [...new Set([...(earlier?.liveRuns ?? []), ...recordedFor])],
      notRun: (earlier?.notRun ?? '') + packCallHashes(this.state.notRunCallIds()),
    };
  }

  /**
   * The inline threshold of this turn's calls: `limits.inlineResultMaxBytes`, lowered for a wide
   * turn so that its outputs together stay under {@link TURN_INLINE_BYTES} (what the next model
   * turn's input and a handover carry stays bounded however many calls a turn makes).
   */
  protected inlineMaxBytes(): number {
    const calls = Math.max(1, this.state.turnCalls().length);
    return Math.max(MIN_INLINE_BYTES, Math.min(this.limits.inlineResultMaxBytes, Math.floor(TURN_INLINE_BYTES / calls)));
  }
}

/** The inline threshold never goes below this (a short output by reference costs more than it saves). */
const MIN_INLINE_BYTES = 256;
