/**
 * The state of one agent run (the workflow's `AgentRun`, `./agent-workflow`) and what every step
 * of it uses: the stops (cancel, deadline, budgets), the run's result, activity calls bounded by
 * the time left, and a call's bookkeeping once it ends (completed, failed, rejected, its tool
 * message). The steps are layered on it: approvals, resolutions, tool calls, compensation, and
 * the loop. Sandbox code.
 *
 * @see docs/protocol.md#agent-workflow
 */
import { ApplicationFailure, type ActivityOptions, CancellationScope, isCancellation, log, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { DeliveredOutcome, FencedToolInput } from '../../activities/contract/contract';
import type { ToolErrorClass } from '../../activities/contract/error-classes';
import type { JsonValue } from '../../checkpoint/types';
import type { LoggedMessage } from '../../model/types';
import type { BatchCancellationReport } from '../../activities/contract/batch-items';
import type { ToolActivities } from './activity-types';
import type { WindDownAttempt } from '../common/compensation-rules';
import { CONVERSATION_BRANCHES_PATCH, RESET_SAFE_CALLS_PATCH } from './agent-patches';
import { nextSegmentScope, occurrenceScopeOf } from '../../checkpoint/run-scope';
import { Conversation } from './conversation';
import { listEffects } from './effects';
import { batchCancellationReportOf, isScheduleToCloseTimeout, isTimeout } from '../common/failures';
import { activityOptionsFor, DEFAULT_MAX_CONVERSATION_BYTES, runLimits, type ActivityKind } from './input';
import { MESSAGE_ERROR_TYPES, type MessageErrorType } from './messages';
import { MODEL_ERROR_MESSAGES, modelErrorForFailure, modelErrorForResult } from './model-errors';
import { RunSearchAttributes } from './run-search-attributes';
import { decidedByRefusal, iso, RunState, summarizeCalls, type CallState, type RunStop } from './run-state';
import { answeredByNote, appliedByRunNote } from './call-views';
import type { AgentWorkflowInput, AgentWorkflowResult, ResolveOutcomeRequest, ResolveOutcomeResult, RunLimits } from './types';

/** One agent run's state and what every step uses; the steps it calls that the layers built on it define (tool calls, resolutions, compensation) are declared abstract here. */
export abstract class AgentRunBase {
  protected readonly state: RunState;
  protected readonly conversation: Conversation;
  protected readonly approvalRequired: NonNullable<AgentWorkflowInput['approvalRequired']>;
  protected readonly limits: Required<RunLimits>;
  protected readonly maxConversationBytes: number;
  protected finalText: string;
  protected cancel: { readonly reason: string } | null = null;
  protected readonly activeScopes = new Set<CancellationScope>();
  protected resolution: PendingResolution | null = null;
  /** Calls whose outcome became unknown while other calls of the turn ran; they pause one by one after. */
  protected deferredPauses: CallState[] = [];
  /** Set while the run compensates: activities run non-cancellable, not bounded by the deadline; pauses wait for a person only. */
  protected windingDown = false;
  protected readonly continuations: number;
  /** Whether this run's calls are reset-safe (patch `ttc-reset-safe-calls`): addressed per run, claimed per occurrence of their intent. */
  protected readonly resetSafe: boolean;
  /** Whether this reset-safe run is of a reset lineage (a reset run, or continued from one: `ResetLineage`). */
  protected readonly inResetLineage: boolean;
  /** Reset-safe runs: the run this run addresses its calls in (itself in a reset lineage, else the chain's first). */
  protected readonly callsAddressedIn: string | null;
  /** Segments whose start refuses this run's turns and calls (`ResetLineage.refusedIfStarted`); empty outside a reset lineage. */
  protected readonly refusedIfStarted: readonly string[];
  /** Where this run counts the occurrences of its calls' intents (`occurrenceScopeOf` in `checkpoint/run-scope.ts`). */
  protected readonly occurrenceScope: string;
  /** Turns taken before this run started (0, or what an earlier run of the chain took). */
  protected readonly turnsAtStart: number;

  constructor(
    protected readonly input: AgentWorkflowInput,
    now: number,
    protected readonly longRuns: boolean,
    protected readonly searchAttributes: RunSearchAttributes,
  ) {
    const continued = input.continued;
    this.state = new RunState(input.budget, continued?.startedAt ?? now, continued, workflowInfo().firstExecutionRunId);
    // Calls addressed per run and claimed per occurrence of their intent (a reset never repeats an effect); asked once, at the start.
    this.resetSafe = patched(RESET_SAFE_CALLS_PATCH);
    // A reset run's id differs from the one its start was first written under (`originalExecutionRunId`).
    const info = workflowInfo();
    this.inResetLineage = this.resetSafe && (info.runId !== info.originalExecutionRunId || continued?.resetLineage !== undefined);
    // A run of a reset lineage addresses its calls in itself; any other run in the run its conversation goes on in (the chain's first).
    this.callsAddressedIn = this.resetSafe ? (this.inResetLineage ? info.runId : (continued?.conversation.segments?.at(-1)?.runId ?? info.firstExecutionRunId)) : null;
    if (this.callsAddressedIn !== null) this.state.addressCallsIn(this.callsAddressedIn);
    // A reset run outside a reset lineage: the segment after the run it reset must not have started (that run continued as new).
    const resetOfLineageStart = info.runId !== info.originalExecutionRunId && continued?.resetLineage === undefined;
    this.occurrenceScope = occurrenceScopeOf(info, continued?.occurrenceScope);
    this.refusedIfStarted = !this.inResetLineage ? [] : [...(continued?.resetLineage?.refusedIfStarted ?? []), ...(resetOfLineageStart ? [nextSegmentScope(info)] : [])];
    // By reference, the log forks at a reset (a reset run never writes over the branch it discards,
    // and each run of its lineage writes its own log); runs whose history has no marker keep one
    // log per run chain. Asked once, at the start.
    const ownLog = info.runId !== info.originalExecutionRunId || this.inResetLineage ? { ownLog: info.runId } : {};
    const forksOf = longRuns && patched(CONVERSATION_BRANCHES_PATCH) ? { runChainId: info.firstExecutionRunId, ...ownLog } : undefined;
    this.conversation = new Conversation(longRuns, continued?.conversation, forksOf);
    if (continued === undefined) this.conversation.add({ role: 'user', text: input.prompt });
    this.finalText = continued?.finalText ?? '';
    this.continuations = continued?.continuations ?? 0;
    this.turnsAtStart = continued?.turns ?? 0;
    this.approvalRequired = input.approvalRequired ?? {};
    this.limits = runLimits(input);
    this.maxConversationBytes = input.budget.maxConversationBytes ?? DEFAULT_MAX_CONVERSATION_BYTES;
  }

  /** See `./agent-run-compensation`. */
  protected abstract compensateOnStop(call: CallState, outcome: DeliveredOutcome): RunStop | null;
  /** See `./agent-run-resolutions`. */
  protected abstract fail(pending: PendingResolution, type: string, message: string): void;
  /** See `./agent-run-tool-calls`. */
  protected abstract inlineMaxBytes(): number;
  /** See `./agent-run-tool-calls`. */
  protected abstract refusedBeforeRunning(call: CallState): boolean;
  /** See `./agent-run-tool-calls`. */
  protected abstract runTool(call: CallState, deferPause?: boolean): Promise<RunStop | null>;

  protected abstract processCall(call: CallState, deferPause: boolean): Promise<RunStop | null>;
  /** See `./agent-run-tool-calls`. */
  protected abstract toolInput(call: CallState): FencedToolInput;
  /** See `./agent-run-compensation`. */
  protected abstract windDownActivity<T>(kind: ActivityKind, toolName: string | null, run: (options: ActivityOptions) => Promise<T>): Promise<WindDownAttempt<T>>;

  protected stopBefore(step: 'model' | 'tool' | 'refused-call' | 'describe'): RunStop | null {
    if (this.cancel) return this.cancelStop();
    if (Date.now() >= this.state.deadlineAt) return this.deadlineStop();
    const { maxTurns, maxToolCalls } = this.input.budget;
    if (step === 'model' && this.state.turns >= maxTurns) {
      return { status: 'budget-exhausted', because: 'max-turns', reason: `the model used all ${maxTurns} turns of its budget` };
    }
    if (step === 'tool' && this.state.toolCallsUsed >= maxToolCalls) {
      return { status: 'budget-exhausted', because: 'max-tool-calls', reason: `the model used all ${maxToolCalls} tool calls of its budget` };
    }
    if (step === 'model' && this.conversation.bytes > this.maxConversationBytes) {
      return {
        status: 'budget-exhausted',
        because: 'max-conversation-bytes',
        reason: `the conversation holds ${this.conversation.bytes} bytes, over its budget of ${this.maxConversationBytes} bytes; the next model turn was not taken`,
      };
    }
    return null;
  }

  protected cancelStop(): RunStop {
    return { status: 'cancelled', because: 'cancel', reason: this.cancel?.reason ?? 'cancelled' };
  }

  protected deadlineStop(): RunStop {
    return {
      status: 'deadline-exceeded',
      because: 'deadline',
      reason: `the run deadline of ${this.input.budget.deadlineMs} ms passed at ${iso(this.state.deadlineAt)}`,
    };
  }

  protected finish(stop: RunStop): AgentWorkflowResult {
    this.state.stop(stop);
    this.publishWaiting();
    if (this.resolution !== null) this.fail(this.resolution, MESSAGE_ERROR_TYPES.RUN_FINISHED, `the run stopped (${stop.because}) before the resolution was applied`);
    const calls = this.state.finalCalls();
    return {
      status: stop.status,
      finalText: this.finalText,
      calls,
      summary: summarizeCalls(calls),
      effects: listEffects(calls),
      turns: this.state.turns,
      stoppedBecause: stop.because,
      reason: stop.reason,
      ...(this.continuations > 0 ? { continued: { continuations: this.continuations, earlierCalls: this.state.earlierCalls } } : {}),
    };
  }

  /**
   * Brings the run's search attributes in step with the calls now waiting for a person; call
   * after every change of a call to or from `awaiting-approval` / `paused` (a no-op when nothing
   * changed, or when the run was started without them).
   */
  protected publishWaiting(): void {
    this.searchAttributes.publish(this.state.waitingCallIds());
  }

  /**
   * Calls one activity in its own cancellation scope (so `cancelRunSignal` can cancel it), with
   * timeouts bounded by the time left before the deadline.
   */
  protected async callActivity<T>(
    kind: ActivityKind,
    call: (options: ActivityOptions) => Promise<T>,
    opts: AgentWorkflowInput['activityOptions'] = this.input.activityOptions,
  ): Promise<ActivityAttempt<T>> {
    if (this.windingDown) return this.windDownActivity(kind, null, (options) => call(options));
    const remainingMs = this.state.deadlineAt - Date.now();
    if (remainingMs <= 0) return { kind: 'deadline' };
    const options = activityOptionsFor(kind, remainingMs, opts);
    const scope = new CancellationScope();
    this.activeScopes.add(scope);
    try {
      return { kind: 'ok', value: await scope.run(() => call(options)) };
    } catch (err) {
      if (isCancellation(err)) {
        this.cancel ??= { reason: 'the workflow was cancelled' };
        return { kind: 'cancelled', batch: batchCancellationReportOf(err) };
      }
      if (isScheduleToCloseTimeout(err) || (isTimeout(err) && Date.now() >= this.state.deadlineAt)) return { kind: 'deadline' };
      return { kind: 'failed', error: err };
    } finally {
      this.activeScopes.delete(scope);
    }
  }

  /**
   * Records the call's outcome (kept whole in the status and result) and hands it to the model:
   * a success as the tool's output; an error result as `modelErrorForResult` shows it (a tool's
   * own error as written, an error the fence stored as a fixed sentence).
   */
  protected completeCall(call: CallState, status: 'completed' | 'resolved-applied', outcome: DeliveredOutcome, reason: string | null = null): void {
    call.status = status;
    call.outcome = outcome;
    call.receipt = outcome.ok ? outcome.receipt : (outcome.error.receipt ?? null);
    call.errorType = null;
    call.reason = reason;
    if (outcome.ok) this.state.markApplied(call);
    if (outcome.ok && 'outputRef' in outcome) {
      // The output stays in the side store; the model-turn activity reads it (claim check).
      this.setToolMessage(call, { role: 'tool', callId: call.modelCallId, toolName: call.toolName, contentRef: outcome.outputRef, isError: false });
      return;
    }
    if (outcome.ok) {
      // A call another run answered (or a run a reset discarded): the model reads that the action was already done, with its output.
      const note = call.answeredBy !== undefined ? answeredByNote(call.answeredBy) : call.appliedByRun !== undefined ? appliedByRunNote(call.appliedByRun) : null;
      this.appendToolMessage(call, note !== null ? { output: outcome.output, note } : outcome.output, false);
      return;
    }
    const shown = modelErrorForResult(outcome.error);
    if (shown.message !== outcome.error.message)
      log.warn('tool call ended with an error result; the model reads a short typed message', {
        callId: call.callId,
        toolName: call.toolName,
        errorType: outcome.error.type,
        detail: outcome.error.message,
      });
    this.appendToolMessage(call, { error: { type: shown.type, message: shown.message } }, true);
  }

  /**
   * Fails a call before its tool ran. Operators keep `message` in the status, the result and
   * the workflow log; the model reads `modelErrorForFailure(errorType, message)`: a fixed short
   * sentence per failure type, never a store's path, user, host or driver text or a worker's
   * tool list.
   */
  protected failCall(call: CallState, errorType: string, message: string): void {
    call.status = 'failed';
    call.errorType = errorType;
    call.reason = message;
    const shown = modelErrorForFailure(errorType, message);
    log.warn('tool call failed before its tool ran; the model reads a short typed message', { callId: call.callId, toolName: call.toolName, errorType, detail: message });
    this.appendToolMessage(call, { error: { type: shown.type, message: shown.message } }, true);
  }

  /** Rejects a call nothing ran for: operators keep `reason`; the model reads `modelReason`. */
  protected rejectCall(call: CallState, reason: string, modelReason: string): void {
    call.status = 'rejected';
    call.errorType = USER_REJECTION;
    call.reason = reason;
    this.appendToolMessage(call, { rejected: true, reason: modelReason }, true);
  }

  protected appendToolMessage(call: CallState, content: JsonValue, isError: boolean): void {
    const shown = this.longRuns && isError ? clipTexts(content, this.inlineMaxBytes()) : content;
    this.setToolMessage(call, { role: 'tool', callId: call.modelCallId, toolName: call.toolName, content: shown, isError });
  }

  /** Keeps the call's tool message; the turn hands them to the model in the model's order. */
  protected setToolMessage(call: CallState, message: LoggedMessage): void {
    call.message = message;
    this.state.bump();
    this.publishWaiting();
  }
}

/** A resolution accepted by `resolveOutcomeUpdate`, waiting for the loop to act on it. */
export interface PendingResolution {
  readonly request: ResolveOutcomeRequest;
  settled: boolean;
  result: ResolveOutcomeResult | null;
  failure: { readonly type: string; readonly message: string } | null;
}

export type ActivityAttempt<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'cancelled'; readonly batch: BatchCancellationReport | null }
  | { readonly kind: 'deadline' }
  | { readonly kind: 'failed'; readonly error: unknown };

/** The error class of a call a person rejected or whose approval expired (see `TOOL_ERROR_CLASSES`). */
export const USER_REJECTION: ToolErrorClass = 'USER_REJECTION';

/** The agent's own activities with these options. */
export function agentActivities(options: ActivityOptions) {
  return proxyActivities<ToolActivities>(options);
}

/**
 * An error or rejection as the model reads it in a wide turn: each string cut to `maxChars`
 * (with `…`), so a turn of many failing calls stays under {@link TURN_INLINE_BYTES} like its
 * outputs do; the whole text stays in the call's status and result for operators.
 */
export function clipTexts(content: JsonValue, maxChars: number): JsonValue {
  if (typeof content === 'string') return content.length <= maxChars ? content : `${content.slice(0, Math.max(0, maxChars - 1))}…`;
  if (Array.isArray(content)) return content.map((item) => clipTexts(item, maxChars));
  if (typeof content === 'object' && content !== null) return Object.fromEntries(Object.entries(content).map(([key, value]) => [key, clipTexts(value, maxChars)]));
  return content;
}

/** Most bytes of tool outputs one turn carries inline (the rest go by reference). */
export const TURN_INLINE_BYTES = 256 * 1024;

/** What the model reads when a call's approval expired (the times stay in the status). */
export const APPROVAL_EXPIRED_FOR_MODEL = `APPROVAL_EXPIRED: ${MODEL_ERROR_MESSAGES.APPROVAL_EXPIRED}`;

/** Refuses, in an update validator, a `by` that names no one acceptably (INVALID_REQUEST; see `decidedByRefusal`). */
export function refuseBadDecidedBy(by: unknown): void {
  const refusal = decidedByRefusal(by);
  if (refusal !== null) refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, refusal);
}

/** Refuses an update (in a validator) or fails it (in a handler) with a typed ApplicationFailure. */
export function refuse(type: MessageErrorType | string, message: string): never {
  throw ApplicationFailure.create({ type, message: `${type}: ${message}`, nonRetryable: true });
}
