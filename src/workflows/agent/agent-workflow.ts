/**
 * The agent workflow (LAYER 3, sandbox): a model turn as an activity, then each tool call the
 * model asked for, in order, as a fenced activity, results appended as tool messages, until
 * the model stops or a budget (turns, tool calls, deadline) runs out. People approve or reject
 * calls of tools that need approval, resolve calls whose outcome is unknown, or cancel.
 *
 * Imports only `@temporalio/workflow`, sandbox-safe project files (`checkpoint/types`,
 * `checkpoint/errors`, `model/types`, `activities/contract/contract`) and this folder. Never Node
 * builtins, `checkpoint/digest` or `checkpoint/codec` (node:crypto), the stores, the activity
 * implementations or `src/index.ts`; the workflow obtains digests through `describeToolCall`.
 *
 * This file is the table of contents: `agentWorkflow` and the run's loop (`AgentRun`: model
 * turns, their bounds, continue-as-new, the message handlers). The rest of a run is layered
 * under it, one job per file: `agent-run-base.ts` (state, stops, activity calls, a call's
 * bookkeeping), `agent-run-approvals.ts`, `agent-run-resolutions.ts`, `agent-run-tool-calls.ts`,
 * `agent-run-compensation.ts`; the patch ids are in `agent-patches.ts`.
 *
 * @see docs/protocol.md#agent-workflow
 */
import { allHandlersFinished, condition, continueAsNew, isCancellation, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import type { ModelTurnResult, ToolCallRequest } from '../../model/types';
import { utf8Length } from './conversation';
import { validateAgentWorkflowInput } from './input';
import { nextSegmentScope } from '../../checkpoint/run-scope';
import { approveCallUpdate, cancelRunSignal, rejectCallUpdate, resolveOutcomeUpdate, runStatusQuery } from './messages';
import { RunSearchAttributes } from './run-search-attributes';
import type { RunStop } from './run-state';
import { DEFAULT_MAX_TOOL_CALLS_PER_TURN, DEFAULT_MAX_TOOL_INPUT_BYTES_PER_TURN, turnRefusals, type TurnRefusal } from './turn-bounds';
import type { AgentWorkflowInput, AgentWorkflowResult, ContinuedRun, CancelRunRequest } from './types';
import { RunCompensation } from './agent-run-compensation';
import { agentActivities } from './agent-run-base';
import { LONG_RUNS_PATCH, TURN_BOUNDS_PATCH } from './agent-patches';

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

/** One agent run: the loop of model turns and tool calls, and the handlers of its messages. */
class AgentRun extends RunCompensation {
  installHandlers(): void {
    setHandler(runStatusQuery, () => ({
      ...this.state.view(Date.now()),
      tenant: this.input.tenant,
      runChainId: workflowInfo().firstExecutionRunId,
      ...(this.longRuns
        ? {
            continuations: this.continuations,
            earlierCalls: this.state.earlierCalls,
            conversation: { messages: this.conversation.messages, bytes: this.conversation.bytes, maxBytes: this.maxConversationBytes, byReference: true },
          }
        : {}),
    }));
    setHandler(cancelRunSignal, (req) => this.requestCancel(req));
    // A person may name a call by the model's id (`e1`) in a run that addresses its calls by run (`e1@<runId>`).
    const named = <R>(req: R): R => {
      const given = (req as { callId?: unknown } | null)?.callId;
      const call = typeof given === 'string' ? this.state.get(given) : undefined;
      return call === undefined || call.callId === given ? req : { ...req, callId: call.callId };
    };
    setHandler(approveCallUpdate, (req) => this.approve(named(req)), { validator: (req) => this.validateApprove(named(req)) });
    setHandler(rejectCallUpdate, (req) => this.reject(named(req)), { validator: (req) => this.validateReject(named(req)) });
    setHandler(resolveOutcomeUpdate, (req) => this.acceptResolution(named(req)), { validator: (req) => this.validateResolution(named(req)) });
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

  /** A run that was cancelled while its handlers finished, as a result (compensated if its policy says so; else null). */
  async cancelledResult(): Promise<AgentWorkflowResult | null> {
    return this.cancel === null ? null : this.conclude(this.cancelStop());
  }

  private async end(stop: RunStop): Promise<RunEnd> {
    return { kind: 'result', result: await this.conclude(stop) };
  }

  private async modelTurn(): Promise<ModelTurnResult | RunStop> {
    this.state.phase = 'model';
    const runChainId = workflowInfo().firstExecutionRunId;
    const attempt = await this.callActivity('model', (options) =>
      agentActivities(options).runModelTurn({
        tenant: this.input.tenant,
        model: this.input.model,
        ...(this.input.modelOptions !== undefined ? { modelOptions: this.input.modelOptions } : {}),
        turn: this.state.turns,
        ...this.conversation.turnInput(runChainId, this.segmentMarks()),
        tools: this.input.tools,
      }),
    );
    if (attempt.kind === 'cancelled') return this.cancelStop();
    if (attempt.kind === 'deadline') return this.deadlineStop();
    if (attempt.kind === 'failed') throw attempt.error;
    const turn = attempt.value;
    this.conversation.turnTaken(turn.conversationRunId);
    this.state.turns += 1;
    this.finalText = turn.text;
    // A truncated or refused answer hands out no call (the adapters drop them); guard anyway.
    const requests = turn.stopReason === 'max_tokens' || turn.stopReason === 'refusal' ? [] : turn.toolCalls;
    // Addressed in the run that asked the model (from history: a reset run replaying this turn gives its calls the ids they had).
    const calls = this.state.startTurn(requests, this.state.turns - 1, this.longRuns, this.turnRefusals(requests), turn.conversationRunId ?? null);
    // The conversation names each call by the id its tool message answers (unique per conversation; without the run a later run addresses it in).
    const toolCalls: ToolCallRequest[] = requests.map((req, i) => (calls[i]!.modelCallId === req.callId ? req : { ...req, callId: calls[i]!.modelCallId }));
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
   * What a model turn tells the activity about this run's segment of the chain (reset-safe runs,
   * docs/protocol.md#resets): a continued run's first turn records the segment it counts in, and
   * a reset lineage's turns are refused (RESET_OF_CONTINUED_RUN) once the segment after the run its
   * reset run reset has started, since the calls made there would not be met.
   */
  private segmentMarks(): { startsSegment?: string; refusedIfStarted?: readonly string[] } {
    if (!this.resetSafe) return {};
    const info = workflowInfo();
    const continued = info.continuedFromExecutionRunId !== undefined && this.state.turns === this.turnsAtStart;
    return {
      ...(continued ? { startsSegment: this.occurrenceScope } : {}),
      ...(this.refusedIfStarted.length > 0 ? { refusedIfStarted: [...this.refusedIfStarted] } : {}),
    };
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

  /**
   * Where the next run counts its calls' occurrences (docs/protocol.md#resets): the next segment,
   * or in a reset lineage this run's segment, with the lineage's runs and replayed calls.
   */
  private occurrencesToHandOver(): Pick<ContinuedRun, 'occurrenceScope' | 'resetLineage'> {
    const info = workflowInfo();
    if (!this.inResetLineage) return { occurrenceScope: nextSegmentScope(info) };
    const lineage = this.historyOfOtherRuns();
    return {
      occurrenceScope: this.occurrenceScope,
      resetLineage: { ...lineage, runs: [...lineage.runs, info.runId], refusedIfStarted: [...this.refusedIfStarted] },
    };
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
      ...this.occurrencesToHandOver(),
      conversation: this.conversation.state(),
      earlierCalls: this.state.callCounts(),
    };
  }

  private requestCancel(req: CancelRunRequest | undefined): void {
    if (this.state.stopped !== null || this.cancel !== null) return;
    const reason = typeof req?.reason === 'string' && req.reason.length > 0 ? req.reason : 'cancelled';
    this.cancel = { reason };
    for (const scope of this.activeScopes) scope.cancel();
  }
}
