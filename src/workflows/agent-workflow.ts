/**
 * The agent workflow (LAYER 3, sandbox): a model turn as an activity, then each tool call the
 * model asked for, in order, as a fenced activity, results appended as tool messages, until
 * the model stops or a budget (turns, tool calls, deadline) runs out. People approve or reject
 * calls of tools that need approval, resolve calls whose outcome is unknown, or cancel.
 *
 * Imports only `@temporalio/workflow`, sandbox-safe project files (`checkpoint/types`,
 * `checkpoint/errors`, `model/types`, `activities/contract`) and this folder. Never Node
 * builtins, `checkpoint/digest` or `checkpoint/codec` (node:crypto), the stores, the activity
 * implementations or `src/index.ts`; the workflow obtains digests through `describeToolCall`.
 *
 * @see docs/protocol.md#agent-workflow
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  type ActivityOptions,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { ACTIVITY_NOT_REGISTERED, toolCallSummary, type DeliveredOutcome, type FencedToolInput, type ToolCallInput, type ToolOutcome } from '../activities/contract';
import type { ToolErrorClass } from '../activities/error-classes';
import type { JsonValue } from '../checkpoint/types';
import { describeItem } from '../checkpoint/item-position';
import type { LoggedMessage, ModelTurnResult, ToolCallRequest } from '../model/types';
import type { BatchCancellationReport } from '../activities/batch-items';
import type { AgentToolResult, ToolActivities, ToolCallActivities } from './activity-types';
import { compensateRun, type CompensationHost, type WindDownAttempt } from './compensation';
import { Conversation, utf8Length } from './conversation';
import { listEffects } from './effects';
import {
  activityFailureDetails,
  activityFailureMessage,
  activityFailureType,
  batchCancellationReportOf,
  claimIdentityOf,
  isNothingApplied,
  isScheduleToCloseTimeout,
  isTimeout,
  pausedItemOf,
} from './failures';
import { activityOptionsFor, DEFAULT_MAX_CONVERSATION_BYTES, runLimits, toolActivityOptions, validateAgentWorkflowInput, windDownActivityOptions, type ActivityKind } from './input';
import {
  approveCallUpdate,
  cancelRunSignal,
  MESSAGE_ERROR_TYPES,
  rejectCallUpdate,
  resolveOutcomeUpdate,
  runStatusQuery,
  type MessageErrorType,
} from './messages';
import { MODEL_ERROR_MESSAGES, modelErrorForFailure, modelErrorForResult } from './model-errors';
import { countApprovalDecision } from './run-metrics';
import { RunSearchAttributes } from './run-search-attributes';
import { decidedByRefusal, iso, RunState, summarizeCalls, type CallState, type RunStop } from './run-state';
import { DEFAULT_MAX_TOOL_CALLS_PER_TURN, DEFAULT_MAX_TOOL_INPUT_BYTES_PER_TURN, isTurnRefusal, turnRefusals, type TurnRefusal } from './turn-bounds';
import type {
  AgentWorkflowInput,
  AgentWorkflowResult,
  ApprovalDecisionResult,
  ContinuedRun,
  ApproveCallRequest,
  CancelRunRequest,
  RejectCallRequest,
  ResolveOutcomeRequest,
  ResolveOutcomeResult,
  RunLimits,
  StopReason,
} from './types';

/**
 * Runs one agent conversation to its end.
 *
 * Per step: cancel, the deadline and the budgets are checked first; every activity's timeouts
 * are bounded by the time left. A model turn's decision is recorded in history before any of
 * its tool calls runs. Tool calls run one at a time, in the order the model gave them:
 * - a tool in `approvalRequired` waits for `approveCallUpdate` / `rejectCallUpdate`; all such
 *   calls of a turn become pending together (each with its intent digest from
 *   `describeToolCall` and its own expiry), and each decision releases only its call; an
 *   approval whose expiry passes before the call starts is refused and nothing runs;
 * - a failure that proves nothing applied (see `NOTHING_APPLIED_CODES`) is shown to the model;
 * - any other failure (OUTCOME_UNKNOWN first of all) pauses the run until
 *   `resolveOutcomeUpdate`; a failure naming a batch item (`details.item`) pauses on that item,
 *   and its resolution is stored for the item before the same call runs again.
 * A run with a `compensateOn` policy stops on a tool result of a type it names and, when it
 * stops by cancel, abandon or such a result, undoes its applied effects in reverse (see
 * `compensation.ts`).
 *
 * @param input see {@link AgentWorkflowInput}
 * @returns {@link AgentWorkflowResult}: status, final text, per call status/source/receipt/outcome
 *   (and compensation), the effects applied / compensated / compensation pending / not run / unknown,
 *   turns, why it stopped
 * @throws ApplicationFailure `INVALID_ARGUMENT` when the input is invalid; the model turn's
 *   activity failure when the model cannot answer
 */
export async function agentWorkflow(input: AgentWorkflowInput): Promise<AgentWorkflowResult> {
  validateAgentWorkflowInput(input);
  // Runs whose history has no marker (started before patch `ttc-long-runs`) keep the conversation
  // inline, results inline, ids as the model gave them and one call at a time, so they replay as
  // they ran.
  const longRuns = patched(LONG_RUNS_PATCH);
  // Upserts TtcNeedsPerson / TtcWaitingCalls only when the run was started with them (see run-search-attributes.ts).
  const searchAttributes = RunSearchAttributes.fromStart();
  const run = new AgentRun(input, Date.now(), longRuns, searchAttributes);
  run.installHandlers();
  let end: RunEnd;
  try {
    end = await run.execute();
  } catch (error) {
    // Cancelled through Temporal (`handle.cancel()`, `temporal workflow cancel`) while the run
    // waited (an approval, a person): it compensates as a cancelRun would before the cancellation
    // closes it. Then, or when it failed: the closed run waits for nobody, so
    // visibility must not list it.
    if (isCancellation(error)) await run.compensateCancelled();
    searchAttributes.publish([]);
    throw error;
  }
  await condition(allHandlersFinished);
  if (end.kind === 'result') return end.result;
  // A signal or update that came in while handlers finished: a cancel still wins.
  const cancelled = await run.cancelledResult();
  if (cancelled !== null) return cancelled;
  return continueAsNew<typeof agentWorkflow>({ ...input, continued: end.continued });
}

/** How `AgentRun.execute` ends: with the run's result, or by handing over to a new run. */
type RunEnd = { readonly kind: 'result'; readonly result: AgentWorkflowResult } | { readonly kind: 'continue'; readonly continued: ContinuedRun };

/** A resolution accepted by `resolveOutcomeUpdate`, waiting for the loop to act on it. */
interface PendingResolution {
  readonly request: ResolveOutcomeRequest;
  settled: boolean;
  result: ResolveOutcomeResult | null;
  failure: { readonly type: string; readonly message: string } | null;
}

type ActivityAttempt<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'cancelled'; readonly batch: BatchCancellationReport | null }
  | { readonly kind: 'deadline' }
  | { readonly kind: 'failed'; readonly error: unknown };

class AgentRun {
  private readonly state: RunState;
  private readonly conversation: Conversation;
  private readonly approvalRequired: NonNullable<AgentWorkflowInput['approvalRequired']>;
  private readonly limits: Required<RunLimits>;
  private readonly maxConversationBytes: number;
  private finalText: string;
  private cancel: { readonly reason: string } | null = null;
  private readonly activeScopes = new Set<CancellationScope>();
  private resolution: PendingResolution | null = null;
  /** Calls whose outcome became unknown while other calls of the turn ran; they pause one by one after. */
  private deferredPauses: CallState[] = [];
  /** Set while the run compensates: activities run non-cancellable, not bounded by the deadline; pauses wait for a person only. */
  private windingDown = false;
  private readonly continuations: number;
  /** Turns taken before this run started (0, or what an earlier run of the chain took). */
  private readonly turnsAtStart: number;

  constructor(
    private readonly input: AgentWorkflowInput,
    now: number,
    private readonly longRuns: boolean,
    private readonly searchAttributes: RunSearchAttributes,
  ) {
    const continued = input.continued;
    this.state = new RunState(input.budget, continued?.startedAt ?? now, continued, workflowInfo().firstExecutionRunId);
    this.conversation = new Conversation(longRuns, continued?.conversation);
    if (continued === undefined) this.conversation.add({ role: 'user', text: input.prompt });
    this.finalText = continued?.finalText ?? '';
    this.continuations = continued?.continuations ?? 0;
    this.turnsAtStart = continued?.turns ?? 0;
    this.approvalRequired = input.approvalRequired ?? {};
    this.limits = runLimits(input);
    this.maxConversationBytes = input.budget.maxConversationBytes ?? DEFAULT_MAX_CONVERSATION_BYTES;
  }

  installHandlers(): void {
    setHandler(runStatusQuery, () => ({
      ...this.state.view(Date.now()),
      tenant: this.input.tenant,
      ...(this.longRuns
        ? {
            continuations: this.continuations,
            earlierCalls: this.state.earlierCalls,
            conversation: { messages: this.conversation.messages, bytes: this.conversation.bytes, maxBytes: this.maxConversationBytes, byReference: true },
          }
        : {}),
    }));
    setHandler(cancelRunSignal, (req) => this.requestCancel(req));
    setHandler(approveCallUpdate, (req) => this.approve(req), { validator: (req) => this.validateApprove(req) });
    setHandler(rejectCallUpdate, (req) => this.reject(req), { validator: (req) => this.validateReject(req) });
    setHandler(resolveOutcomeUpdate, (req) => this.acceptResolution(req), { validator: (req) => this.validateResolution(req) });
  }

  async execute(): Promise<RunEnd> {
    for (;;) {
      const beforeModel = this.stopBefore('model');
      if (beforeModel) return this.end(beforeModel);
      // Only after a turn of its own: a run must make progress whatever it was handed (a handover
      // larger than a bound would otherwise continue as new again and again).
      if (this.longRuns && this.state.turns > this.turnsAtStart && this.shouldContinueAsNew()) return { kind: 'continue', continued: this.handOver() };
      const turn = await this.modelTurn();
      if ('status' in turn) return this.end(turn);
      const modelStop = this.modelStop(turn);
      if (modelStop) return this.end(modelStop);
      if (turn.toolCalls.length === 0) {
        // Anthropic `pause_turn`: the model continues in the next turn, from the conversation as it stands.
        if (turn.stopReason === 'pause_turn') continue;
        return this.end({ status: 'completed', because: 'model-stopped', reason: null });
      }
      const calls = this.state.turnCalls();
      const approvalsStop = await this.prepareApprovals(calls);
      if (approvalsStop) return this.end(approvalsStop);
      const width = this.longRuns ? Math.min(this.input.toolConcurrency ?? calls.length, calls.length) : 1;
      const stop = width > 1 ? await this.runConcurrently([...calls], width) : await this.runInOrder([...calls]);
      if (stop) return this.end(stop);
      // The model reads the results in its own order, whatever order they finished in.
      for (const call of this.state.turnCalls()) if (call.message !== null) this.conversation.add(call.message);
    }
  }

  /**
   * A run cancelled through Temporal while it waited on a condition (an approval, a paused call):
   * the cancellation reaches the workflow as a thrown CancelledFailure, not as a cancelled
   * activity. When the run compensates on cancel, its applied effects are undone (its unknown
   * calls settled by a person first) in a non-cancellable scope before the run closes cancelled.
   */
  async compensateCancelled(): Promise<void> {
    this.cancel ??= { reason: 'the workflow was cancelled' };
    if (this.windingDown || !this.compensates('cancel')) return;
    await this.conclude(this.cancelStop());
  }

  /** A run that was cancelled while its handlers finished, as a result (compensated if its policy says so; else null). */
  async cancelledResult(): Promise<AgentWorkflowResult | null> {
    return this.cancel === null ? null : this.conclude(this.cancelStop());
  }

  private async end(stop: RunStop): Promise<RunEnd> {
    return { kind: 'result', result: await this.conclude(stop) };
  }

  /**
   * The run's result for `stop`: first, when the run compensates (see {@link compensates}), its
   * unknown calls are settled by a person and its applied effects undone in reverse, in a
   * non-cancellable scope (a Temporal cancellation of the run does not cut it short).
   */
  private async conclude(stop: RunStop): Promise<AgentWorkflowResult> {
    if (this.compensates(stop.because)) {
      this.windingDown = true;
      await CancellationScope.nonCancellable(() => compensateRun(this.compensationHost()));
    }
    return this.finish(stop);
  }

  /**
   * Whether the run compensates when it stops for `because`: it has a `compensateOn` policy and
   * stopped by cancel, abandon or a result its policy names. Behind {@link COMPENSATION_PATCH}:
   * a history without the marker replays as it ran.
   */
  private compensates(because: StopReason): boolean {
    return this.input.compensateOn !== undefined && COMPENSATING_STOPS.includes(because) && patched(COMPENSATION_PATCH);
  }

  /** The stop a tool result asks for: an error result whose type the run's `compensateOn` names (else null). */
  private compensateOnStop(call: CallState, outcome: DeliveredOutcome): RunStop | null {
    if (outcome.ok || this.input.compensateOn?.includes(outcome.error.type) !== true || !patched(COMPENSATION_PATCH)) return null;
    return {
      status: 'incomplete',
      because: 'compensate-on',
      reason: `${call.toolName} call "${call.callId}" ended with ${outcome.error.type}, which the run's compensateOn names: ${outcome.error.message}`,
    };
  }

  /** What {@link compensateRun} uses of this run. */
  private compensationHost(): CompensationHost {
    return {
      state: this.state,
      toolInput: (call) => this.toolInput(call),
      windDownActivity: <T>(kind: ActivityKind, toolName: string | null, run: (options: ActivityOptions) => Promise<T>) => this.windDownActivity(kind, toolName, run),
      nextResolution: async () => {
        let pending: PendingResolution;
        do {
          await condition(() => this.resolution !== null);
          pending = this.resolution!;
        } while (this.refuseIfStale(pending));
        return { request: pending.request, settle: (result) => this.settle(pending, result), fail: (type, message) => this.fail(pending, type, message) };
      },
      settleUnknownCall: async (call) => {
        if (call.status === 'unknown') this.markPaused(call, call.errorType ?? 'CANCELLED', call.reason ?? 'the run stopped while the call was running; its effect may have been applied');
        await this.awaitResolution(call);
      },
      changed: () => {
        this.state.bump();
        this.publishWaiting();
      },
    };
  }

  /** Runs one activity while winding down: wind-down options (see `windDownActivityOptions`), failures returned, never cancelled. */
  private async windDownActivity<T>(kind: ActivityKind, toolName: string | null, run: (options: ActivityOptions) => Promise<T>): Promise<WindDownAttempt<T>> {
    const opts = toolName === null ? this.input.activityOptions : toolActivityOptions(this.input.activityOptions, toolName);
    try {
      return { kind: 'ok', value: await run(windDownActivityOptions(kind, opts)) };
    } catch (error) {
      return { kind: 'failed', error };
    }
  }

  // ---- steps -------------------------------------------------------------------------------

  private async modelTurn(): Promise<ModelTurnResult | RunStop> {
    this.state.phase = 'model';
    const runChainId = workflowInfo().firstExecutionRunId;
    const attempt = await this.callActivity('model', (options) =>
      agentActivities(options).runModelTurn({
        tenant: this.input.tenant,
        model: this.input.model,
        ...(this.input.modelOptions !== undefined ? { modelOptions: this.input.modelOptions } : {}),
        turn: this.state.turns,
        ...this.conversation.turnInput(runChainId),
        tools: this.input.tools,
      }),
    );
    if (attempt.kind === 'cancelled') return this.cancelStop();
    if (attempt.kind === 'deadline') return this.deadlineStop();
    if (attempt.kind === 'failed') throw attempt.error;
    const turn = attempt.value;
    this.conversation.turnTaken();
    this.state.turns += 1;
    this.finalText = turn.text;
    // A truncated or refused answer hands out no call (the adapters drop them); guard anyway.
    const requests = turn.stopReason === 'max_tokens' || turn.stopReason === 'refusal' ? [] : turn.toolCalls;
    const calls = this.state.startTurn(requests, this.state.turns - 1, this.longRuns, this.turnRefusals(requests));
    // The conversation names each call by the id it runs under (unique per conversation).
    const toolCalls: ToolCallRequest[] = requests.map((req, i) => (calls[i]!.callId === req.callId ? req : { ...req, callId: calls[i]!.callId }));
    this.conversation.add({ role: 'assistant', text: turn.text, toolCalls });
    this.state.bump();
    return turn;
  }

  /**
   * The calls of a turn beyond its bounds (`budget.maxToolCallsPerTurn`, `maxToolInputBytesPerTurn`;
   * see `turn-bounds.ts`), refused before anything is scheduled. Runs that refused nothing, or
   * whose history predates the bounds (patch `ttc-turn-bounds`), run every call as before.
   */
  private turnRefusals(requests: readonly ToolCallRequest[]): (TurnRefusal | null)[] {
    const { maxToolCallsPerTurn = DEFAULT_MAX_TOOL_CALLS_PER_TURN, maxToolInputBytesPerTurn = DEFAULT_MAX_TOOL_INPUT_BYTES_PER_TURN } = this.input.budget;
    const refusals = turnRefusals(
      requests.map((req) => req.input),
      { maxCalls: maxToolCallsPerTurn, maxInputBytes: maxToolInputBytesPerTurn },
    );
    return refusals.some((r) => r !== null) && patched(TURN_BOUNDS_PATCH) ? refusals : [];
  }

  /** The stop a model answer asks for: cut off (`max_tokens`) or refused (`refusal`): `incomplete`, nothing of it runs. */
  private modelStop(turn: ModelTurnResult): RunStop | null {
    const dropped = turn.droppedToolCalls ?? 0;
    const notRun = dropped > 0 ? `; ${dropped} tool call${dropped === 1 ? '' : 's'} of that answer did not run` : '';
    if (turn.stopReason === 'max_tokens') {
      return { status: 'incomplete', because: 'model-truncated', reason: `the model's answer was cut off at its output token limit${notRun}` };
    }
    if (turn.stopReason === 'refusal') {
      return { status: 'incomplete', because: 'model-refused', reason: `the model refused to answer, or the provider filtered its answer${notRun}` };
    }
    return null;
  }

  /**
   * Whether `call` is refused before it runs (beyond the turn's bounds, a repeated call id, input
   * the adapter refused, a tool the run does not offer, a description that failed): it takes
   * nothing of `budget.maxToolCalls` and no budget stops it, so the model reads why. Runs whose
   * history counted such calls (before patch `ttc-refused-calls-uncounted`) replay as they ran.
   */
  private refusedBeforeRunning(call: CallState): boolean {
    if (isTurnRefusal(call.preFailure?.type)) return true;
    return (call.preFailure !== null || !this.input.tools.includes(call.toolName)) && patched(REFUSED_CALLS_UNCOUNTED_PATCH);
  }

  /** The stop before `call` (see {@link stopBefore}), and counts it against the budget unless it is refused before it runs. */
  private startCall(call: CallState): RunStop | null {
    const refused = this.refusedBeforeRunning(call);
    const stop = this.stopBefore(refused ? 'refused-call' : 'tool');
    if (stop === null && !refused) this.state.toolCallsUsed += 1;
    return stop;
  }

  /** Runs the calls of a turn one at a time, in the model's order (runs without patch `ttc-long-runs`, or `toolConcurrency: 1`). */
  private async runInOrder(calls: readonly CallState[]): Promise<RunStop | null> {
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
  private async runConcurrently(calls: readonly CallState[], width: number): Promise<RunStop | null> {
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

  /** Whether to continue as new before the next model turn (server suggestion or the run's limits). */
  private shouldContinueAsNew(): boolean {
    const info = workflowInfo();
    return (
      info.continueAsNewSuggested ||
      info.historyLength >= this.limits.continueAsNewAfterEvents ||
      info.historySize >= this.limits.continueAsNewAfterHistoryBytes ||
      utf8Length(JSON.stringify(this.state.finalCallsSoFar())) >= this.limits.continueAsNewAfterStateBytes
    );
  }

  /** What the next run starts from (between turns: no call is live). */
  private handOver(): ContinuedRun {
    return {
      continuations: this.continuations + 1,
      startedAt: this.state.startedAt,
      stateVersion: this.state.stateVersion,
      turns: this.state.turns,
      toolCallsUsed: this.state.toolCallsUsed,
      finalText: this.finalText,
      intentGenerations: { ...this.state.intentGenerations },
      usedCallIdHashes: this.state.usedCallIdHashes(),
      conversation: this.conversation.state(),
      earlierCalls: this.state.callCounts(),
    };
  }

  /**
   * Makes every call of this turn that needs approval (and fits in the tool-call budget) pending
   * at once, frozen with its tool revision and intent digest from `describeToolCall`.
   */
  private async prepareApprovals(calls: readonly CallState[]): Promise<RunStop | null> {
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
        const type = activityFailureType(attempt.error) ?? 'UNCLASSIFIED';
        call.preFailure = { type, message: activityFailureMessage(attempt.error) };
        if (this.refusedBeforeRunning(call)) counted -= 1;
        continue;
      }
      const described = attempt.value;
      if (described.arguments === undefined && patched(APPROVAL_ARGUMENTS_PATCH)) {
        // A worker that does not report the validated arguments (older code during a deploy): the
        // approver could not see what would run, so the call is refused (fail closed). Runs
        // described before this change replay as they ran (patched() is false for them).
        call.preFailure = { type: 'INVALID_ARGUMENT', message: `INVALID_ARGUMENT: the worker that described ${call.toolName} call "${call.callId}" did not report its validated arguments; nothing ran` };
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

  private async processCall(call: CallState, deferPause: boolean): Promise<RunStop | null> {
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
    if (this.approvalRequired[call.toolName] !== undefined && call.approvedIntentDigest === null) {
      // Fail closed: a tool that needs approval never runs without an approved intent.
      this.failCall(call, 'APPROVAL_REQUIRED', `APPROVAL_REQUIRED: ${call.toolName} call "${call.callId}" needs a person's approval and was never approved; nothing ran`);
      return null;
    }
    return this.runTool(call, deferPause);
  }

  /** Waits for the call's decision; expiry and the deadline end the wait. */
  private async awaitApproval(call: CallState): Promise<'approved' | 'rejected' | RunStop> {
    const approval = call.approval!;
    const expiresAt = approval.expiresAt!;
    while (approval.decision === null) {
      if (this.cancel) return this.cancelStop();
      const now = Date.now();
      if (now >= expiresAt) {
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
    if (now >= expiresAt) {
      this.rejectCall(
        call,
        `APPROVAL_EXPIRED: the call was approved at ${iso(approval.decidedAt ?? now)} but could not start before its approval expired at ${iso(expiresAt)}; nothing ran`,
        APPROVAL_EXPIRED_FOR_MODEL,
      );
      return 'rejected';
    }
    return 'approved';
  }

  private async runTool(call: CallState, deferPause = false): Promise<RunStop | null> {
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
        const note = earlier
          ? `same intent as call "${earlier.callId}": answered from its checkpoint, the effect was not applied again`
          : result.storedUnder !== undefined
            ? `the result was stored under ${result.storedUnder.toolName} revision ${result.storedUnder.toolRevision} before a deploy; delivered as stored, the tool was not called again`
            : null;
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
        const type = activityFailureType(attempt.error) ?? 'UNCLASSIFIED';
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

  /** Marks a call whose outcome is unknown as paused (the run waits on it in {@link awaitResolution}). */
  private markPaused(call: CallState, errorType: string, message: string): void {
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
  private async awaitResolution(call: CallState): Promise<RunStop | null> {
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
        this.state.paused = null;
        this.completeCall(call, 'resolved-applied', stored.outcome, `a person proved the effect applied: ${req.reason}`);
        this.settle(pending, { callId: call.callId, resolution: 'applied', status: 'resolved-applied', retryCallId: null });
        return null;
      }
      this.state.phase = 'paused';
      if (attempt.kind === 'failed') {
        const type = activityFailureType(attempt.error) ?? 'UNCLASSIFIED';
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
  private async resolveItem(call: CallState, pending: PendingResolution): Promise<RunStop | null | 'paused'> {
    const req = pending.request;
    const item = call.pausedItem!;
    const ref = { key: item.key, generation: item.generation };
    const resolution = req.resolution === 'applied' ? 'applied' : 'absent';
    const result: ToolOutcome | undefined = req.resolution === 'applied' ? { ok: true, output: req.result, receipt: req.receipt ?? null } : undefined;
    this.state.phase = 'tools';
    const attempt = await this.callActivity('resolve', (options) =>
      agentActivities(options).resolveToolCall({ ...this.toolInput(call), resolution, ...(result !== undefined ? { result } : {}), item: ref, reason: req.reason, ...decidedBy(req) }),
    );
    if (attempt.kind === 'failed') {
      this.state.phase = 'paused';
      const type = activityFailureType(attempt.error) ?? 'UNCLASSIFIED';
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
    this.settle(pending, { callId: call.callId, resolution, status: resolution === 'applied' ? 'resolved-applied' : 'resolved-absent', retryCallId: this.windingDown ? null : call.callId, item: ref });
    if (this.windingDown) {
      call.status = 'unknown';
      call.reason += '; the batch did not resume: the run is stopping (items after it did not run)';
      return null;
    }
    return this.runTool(call);
  }

  // ---- calls -------------------------------------------------------------------------------

  /**
   * Runs one fenced attempt of the call as the tool's own activity (type = tool name, summary
   * naming the call id, the tool's `perTool` activity options; an activity type no worker
   * registers fails at once, see {@link ACTIVITY_NOT_REGISTERED}). A run whose history predates
   * per-tool activity types (`ownType` false: no {@link TOOL_ACTIVITY_TYPES_PATCH} marker) keeps
   * scheduling `runFencedTool` with the tool name in its input, so it replays as it ran.
   */
  private scheduleTool(call: CallState, ownType: boolean): Promise<ActivityAttempt<AgentToolResult>> {
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
  private toolInput(call: CallState): FencedToolInput {
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
      ...(call.attempt > 0 ? { intentGeneration: call.attempt } : {}),
      ...(Object.keys(generations).length > 0 ? { intentGenerations: { ...generations } } : {}),
      ...(this.longRuns ? { resultByReference: { inlineMaxBytes: this.inlineMaxBytes() } } : {}),
    };
  }

  /**
   * The inline threshold of this turn's calls: `limits.inlineResultMaxBytes`, lowered for a wide
   * turn so that its outputs together stay under {@link TURN_INLINE_BYTES} (what the next model
   * turn's input and a handover carry stays bounded however many calls a turn makes).
   */
  private inlineMaxBytes(): number {
    const calls = Math.max(1, this.state.turnCalls().length);
    return Math.max(MIN_INLINE_BYTES, Math.min(this.limits.inlineResultMaxBytes, Math.floor(TURN_INLINE_BYTES / calls)));
  }

  /**
   * Records the call's outcome (kept whole in the status and result) and hands it to the model:
   * a success as the tool's output; an error result as `modelErrorForResult` shows it (a tool's
   * own error as written, an error the fence stored as a fixed sentence).
   */
  private completeCall(call: CallState, status: 'completed' | 'resolved-applied', outcome: DeliveredOutcome, reason: string | null = null): void {
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
      this.appendToolMessage(call, outcome.output, false);
      return;
    }
    const shown = modelErrorForResult(outcome.error);
    if (shown.message !== outcome.error.message) log.warn('tool call ended with an error result; the model reads a short typed message', { callId: call.callId, toolName: call.toolName, errorType: outcome.error.type, detail: outcome.error.message });
    this.appendToolMessage(call, { error: { type: shown.type, message: shown.message } }, true);
  }

  /**
   * Fails a call before its tool ran. Operators keep `message` in the status, the result and
   * the workflow log; the model reads `modelErrorForFailure(errorType, message)`: a fixed short
   * sentence per failure type, never a store's path, user, host or driver text or a worker's
   * tool list.
   */
  private failCall(call: CallState, errorType: string, message: string): void {
    call.status = 'failed';
    call.errorType = errorType;
    call.reason = message;
    const shown = modelErrorForFailure(errorType, message);
    log.warn('tool call failed before its tool ran; the model reads a short typed message', { callId: call.callId, toolName: call.toolName, errorType, detail: message });
    this.appendToolMessage(call, { error: { type: shown.type, message: shown.message } }, true);
  }

  /** Rejects a call nothing ran for: operators keep `reason`; the model reads `modelReason`. */
  private rejectCall(call: CallState, reason: string, modelReason: string): void {
    call.status = 'rejected';
    call.errorType = USER_REJECTION;
    call.reason = reason;
    this.appendToolMessage(call, { rejected: true, reason: modelReason }, true);
  }

  private appendToolMessage(call: CallState, content: JsonValue, isError: boolean): void {
    const shown = this.longRuns && isError ? clipTexts(content, this.inlineMaxBytes()) : content;
    this.setToolMessage(call, { role: 'tool', callId: call.modelCallId, toolName: call.toolName, content: shown, isError });
  }

  /** Keeps the call's tool message; the turn hands them to the model in the model's order. */
  private setToolMessage(call: CallState, message: LoggedMessage): void {
    call.message = message;
    this.state.bump();
    this.publishWaiting();
  }

  /**
   * Brings the run's search attributes in step with the calls now waiting for a person; call
   * after every change of a call to or from `awaiting-approval` / `paused` (a no-op when nothing
   * changed, or when the run was started without them).
   */
  private publishWaiting(): void {
    this.searchAttributes.publish(this.state.waitingCallIds());
  }

  // ---- activities, stops -------------------------------------------------------------------

  /**
   * Calls one activity in its own cancellation scope (so `cancelRunSignal` can cancel it), with
   * timeouts bounded by the time left before the deadline.
   */
  private async callActivity<T>(
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

  private stopBefore(step: 'model' | 'tool' | 'refused-call' | 'describe'): RunStop | null {
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

  private cancelStop(): RunStop {
    return { status: 'cancelled', because: 'cancel', reason: this.cancel?.reason ?? 'cancelled' };
  }

  private deadlineStop(): RunStop {
    return {
      status: 'deadline-exceeded',
      because: 'deadline',
      reason: `the run deadline of ${this.input.budget.deadlineMs} ms passed at ${iso(this.state.deadlineAt)}`,
    };
  }

  private finish(stop: RunStop): AgentWorkflowResult {
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

  // ---- message handlers --------------------------------------------------------------------

  private requestCancel(req: CancelRunRequest | undefined): void {
    if (this.state.stopped !== null || this.cancel !== null) return;
    const reason = typeof req?.reason === 'string' && req.reason.length > 0 ? req.reason : 'cancelled';
    this.cancel = { reason };
    for (const scope of this.activeScopes) scope.cancel();
  }

  private validateApprove(req: ApproveCallRequest): void {
    if (typeof req?.intentDigest !== 'string' || typeof req.stateVersion !== 'number') {
      refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, 'approveCall needs { callId: string, intentDigest: string, stateVersion: number }');
    }
    const call = this.awaitingApproval(req.callId);
    refuseBadDecidedBy(req.by);
    if (req.intentDigest !== call.intentDigest) {
      refuse(
        MESSAGE_ERROR_TYPES.APPROVAL_MISMATCH,
        `call "${call.callId}" has intent digest ${call.intentDigest}, the approval names ${req.intentDigest}`,
      );
    }
    if (req.stateVersion !== this.state.stateVersion) {
      refuse(
        MESSAGE_ERROR_TYPES.STALE_STATE_VERSION,
        `the approval was given at state version ${req.stateVersion}, the run is at ${this.state.stateVersion}; read the run again (ttc pending, ttc show, the console or the runStatus query) and decide again`,
      );
    }
  }

  private approve(req: ApproveCallRequest): ApprovalDecisionResult {
    return this.decide(req.callId, 'approved', null, req.by);
  }

  private validateReject(req: RejectCallRequest): void {
    if (typeof req?.reason !== 'string' || req.reason.length === 0) {
      refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, 'rejectCall needs { callId: string, reason: non-empty string }');
    }
    this.awaitingApproval(req.callId);
    refuseBadDecidedBy(req.by);
  }

  private reject(req: RejectCallRequest): ApprovalDecisionResult {
    return this.decide(req.callId, 'rejected', req.reason, req.by);
  }

  private decide(callId: string, decision: 'approved' | 'rejected', reason: string | null, by: string | undefined): ApprovalDecisionResult {
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
  private awaitingApproval(callId: unknown): CallState {
    if (this.state.stopped !== null) refuse(MESSAGE_ERROR_TYPES.RUN_FINISHED, `the run has stopped (${this.state.stopped.because})`);
    if (typeof callId !== 'string') refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, 'callId must be a string');
    const call = this.state.get(callId);
    const approval = call?.approval;
    if (call === undefined || approval == null || approval.expiresAt === null) {
      refuse(MESSAGE_ERROR_TYPES.CALL_NOT_AWAITING_APPROVAL, `no call "${callId}" is awaiting approval in this run`);
    }
    if (approval.decision === 'expired' || (approval.decision === null && Date.now() >= approval.expiresAt)) {
      refuse(MESSAGE_ERROR_TYPES.APPROVAL_EXPIRED, `the approval of call "${callId}" expired at ${iso(approval.expiresAt)}`);
    }
    if (approval.decision !== null || call.status !== 'awaiting-approval') {
      refuse(MESSAGE_ERROR_TYPES.CALL_NOT_AWAITING_APPROVAL, `call "${callId}" is ${call.status}, not awaiting approval`);
    }
    return call;
  }

  private validateResolution(req: ResolveOutcomeRequest): void {
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

  private async acceptResolution(req: ResolveOutcomeRequest): Promise<ResolveOutcomeResult> {
    const pending: PendingResolution = { request: req, settled: false, result: null, failure: null };
    this.resolution = pending;
    // A run that compensates acts on resolutions after a Temporal cancellation too (it settles
    // unknown calls before compensating), so its handler must outlive the cancelled root scope.
    if (this.input.compensateOn !== undefined) await CancellationScope.nonCancellable(() => condition(() => pending.settled));
    else await condition(() => pending.settled);
    if (pending.failure !== null) refuse(pending.failure.type, pending.failure.message);
    return pending.result!;
  }

  private settle(pending: PendingResolution, result: Omit<ResolveOutcomeResult, 'pauseId'>): void {
    pending.result = { ...result, pauseId: pending.request.pauseId };
    // Who decided, kept with the call (the run's result and status show it).
    this.state.get(result.callId)?.decisions.push({ kind: result.status, by: pending.request.by ?? null, at: iso(Date.now()), ...(pending.request.pauseId === undefined ? {} : { pauseId: pending.request.pauseId }), ...(result.role === undefined ? {} : { role: result.role }) });
    pending.settled = true;
    if (this.resolution === pending) this.resolution = null;
    this.state.bump();
    this.publishWaiting();
  }

  /**
   * Fails a waiting decision made for a pause that is no longer the one waiting (a cancel or a
   * compensation moved the run on between the validator and now) with STALE_PAUSE; true if so.
   */
  private refuseIfStale(pending: PendingResolution): boolean {
    // A request without a pauseId was accepted by older code's validator: it replays as it ran.
    if (pending.request.pauseId === undefined) return false;
    const refusal = this.state.resolutionRefusal(pending.request.callId, pending.request.pauseId, false);
    if (refusal === null) return false;
    this.fail(pending, MESSAGE_ERROR_TYPES[refusal.type], refusal.message);
    return true;
  }

  private fail(pending: PendingResolution, type: string, message: string): void {
    pending.failure = { type, message };
    pending.settled = true;
    if (this.resolution === pending) this.resolution = null;
  }
}

/**
 * Patch id: a run with a `compensateOn` policy stops on a result its policy names and
 * compensates its applied effects when it stops by cancel, abandon or that result.
 */
const COMPENSATION_PATCH = 'ttc-compensation';

/** The stops after which a run with a `compensateOn` policy compensates. */
const COMPENSATING_STOPS: readonly StopReason[] = ['cancel', 'abandon', 'compensate-on'];

/** The error class of a call a person rejected or whose approval expired (see `TOOL_ERROR_CLASSES`). */
const USER_REJECTION: ToolErrorClass = 'USER_REJECTION';

/** The agent's own activities with these options. */
function agentActivities(options: ActivityOptions) {
  return proxyActivities<ToolActivities>(options);
}

/**
 * Patch id: each tool call is scheduled as the tool's own activity type. Runs whose
 * history has no marker (started before) schedule `runFencedTool`, which workers keep registered.
 */
const TOOL_ACTIVITY_TYPES_PATCH = 'ttc-tool-activity-types';

/**
 * Patch id: the conversation and large tool outputs by reference in the side store,
 * concurrent calls of a turn, turn-scoped ids for reused call ids, continue-as-new. Runs whose
 * history has no marker keep the old command sequence.
 */
const LONG_RUNS_PATCH = 'ttc-long-runs';

/**
 * An error or rejection as the model reads it in a wide turn: each string cut to `maxChars`
 * (with `…`), so a turn of many failing calls stays under {@link TURN_INLINE_BYTES} like its
 * outputs do; the whole text stays in the call's status and result for operators.
 */
function clipTexts(content: JsonValue, maxChars: number): JsonValue {
  if (typeof content === 'string') return content.length <= maxChars ? content : `${content.slice(0, Math.max(0, maxChars - 1))}…`;
  if (Array.isArray(content)) return content.map((item) => clipTexts(item, maxChars));
  if (typeof content === 'object' && content !== null) return Object.fromEntries(Object.entries(content).map(([key, value]) => [key, clipTexts(value, maxChars)]));
  return content;
}

/** Most bytes of tool outputs one turn carries inline (the rest go by reference). */
const TURN_INLINE_BYTES = 256 * 1024;

/** The inline threshold never goes below this (a short output by reference costs more than it saves). */
const MIN_INLINE_BYTES = 256;

/** Patch id: a call needing approval is refused when the worker did not report its validated arguments. */
const APPROVAL_ARGUMENTS_PATCH = 'ttc-approval-shows-validated-arguments';
/** Patch id: the calls of a turn beyond its bounds are refused (`turn-bounds.ts`). */
const TURN_BOUNDS_PATCH = 'ttc-turn-bounds';
/** Patch id: calls refused before they run take nothing of `budget.maxToolCalls` (see `refusedBeforeRunning`). */
const REFUSED_CALLS_UNCOUNTED_PATCH = 'ttc-refused-calls-uncounted';

/** What the model reads when a call's approval expired (the times stay in the status). */
const APPROVAL_EXPIRED_FOR_MODEL = `APPROVAL_EXPIRED: ${MODEL_ERROR_MESSAGES.APPROVAL_EXPIRED}`;

/** `{ decidedBy }` for a resolution that names who decided (sent to `resolveToolCall` for the checkpoint's audit), else nothing. */
function decidedBy(req: ResolveOutcomeRequest): { decidedBy?: string } {
  return typeof req.by === 'string' ? { decidedBy: req.by } : {};
}

/** Refuses, in an update validator, a `by` that names no one acceptably (INVALID_REQUEST; see `decidedByRefusal`). */
function refuseBadDecidedBy(by: unknown): void {
  const refusal = decidedByRefusal(by);
  if (refusal !== null) refuse(MESSAGE_ERROR_TYPES.INVALID_REQUEST, refusal);
}

/** Refuses an update (in a validator) or fails it (in a handler) with a typed ApplicationFailure. */
function refuse(type: MessageErrorType | string, message: string): never {
  throw ApplicationFailure.create({ type, message: `${type}: ${message}`, nonRetryable: true });
}
