/**
 * The agent run's bookkeeping: every tool call with its status, the phase, the budget used and
 * the state version, plus the views the status query and the result are built from. Plain data
 * and pure methods; no Temporal calls, no clock (callers pass workflow time). Sandbox-safe.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type { ToolCallRequest } from '../../model/types';
import type {
  AgentBudget,
  CallReport,
  ContinuedRun,
  EarlierCalls,
  FinalCallStatus,
  LiveCallStatus,
  PendingCallView,
  RunPhase,
  RunStatus,
  RunStatusView,
  StopReason,
} from './types';
import { deciderNameRefusal } from '../../checkpoint/visible-text';
import { callIdHash, packCallIdHashes, unpackCallIdHashes } from './call-id-hashes';
import { findNamedCall, runOfCallId, runScopedCallId } from '../../checkpoint/run-scope';
import type { TurnRefusal } from './turn-bounds';
import { isLive, newCall, retryId, type CallState } from './call-state';
import { compensationPendingView, describePause, iso, pausedView, report, summarizeCalls } from './call-views';
import { chainTagOf, pauseIdOf } from './pause-identity';
import { lastAppliedFirst } from '../common/compensation-rules';
import { isNothingAppliedOutcome } from '../../activities/contract/contract';

export type { ApprovalState, CallState, CompensationState } from './call-state';
export { retryId } from './call-state';
export { iso, summarizeCalls } from './call-views';
export { chainTagOf, pauseIdOf } from './pause-identity';

/** How the run stopped. */
export interface RunStop {
  readonly status: RunStatus;
  readonly because: StopReason;
  readonly reason: string | null;
}

const PHASE_OF_STATUS: Readonly<Record<RunStatus, RunPhase>> = {
  completed: 'completed',
  incomplete: 'incomplete',
  'budget-exhausted': 'budget-exhausted',
  'deadline-exceeded': 'deadline-exceeded',
  cancelled: 'cancelled',
  abandoned: 'abandoned',
};

/** Mutable state of one agent run. */
export class RunState {
  phase: RunPhase = 'model';
  stateVersion = 0;
  turns = 0;
  toolCallsUsed = 0;
  stopped: RunStop | null = null;
  private pausedCall: CallState | null = null;
  /** How many pauses this run has begun (the last part of a pause's identity). */
  private pauseCount = 0;
  private currentPauseId: string | null = null;
  /** What names the run chain in a pause id ({@link chainTagOf}). */
  private readonly chainTag: string;
  private readonly runChainId: string;
  /** The current generation per intent digest, raised when a person proves a call's effect absent (dedupeByIntent tools). */
  readonly intentGenerations: Record<string, number> = {};
  /** Calls that finished in earlier runs of the chain (continue-as-new), counted. */
  readonly earlierCalls: EarlierCalls;
  private readonly calls: CallState[] = [];
  private readonly byId = new Map<string, CallState>();
  /** Hashes of the call ids used in earlier runs of the chain (their calls are not in `calls`; see `call-id-hashes.ts`). */
  private readonly usedBefore: ReadonlySet<string>;
  private currentTurn: CallState[] = [];
  /** How many calls of this run applied an effect so far (see `CallState.appliedSeq`). */
  private appliedCount = 0;
  /** This run (`run-scope.ts`); null: calls keep the model's ids (runs started before patch `ttc-reset-safe-calls`). */
  private runId: string | null = null;

  /**
   * @param budget the run's budgets
   * @param startedAt workflow time the run (or, with `continued`, its chain) started, ms
   * @param continued what an earlier run of the chain handed over (continue-as-new), if any
   * @param runChainId the run chain (`workflowInfo().firstExecutionRunId`), named by every pause id
   */
  constructor(
    readonly budget: AgentBudget,
    readonly startedAt: number,
    continued?: ContinuedRun,
    runChainId = '',
  ) {
    this.chainTag = chainTagOf(runChainId);
    this.runChainId = runChainId;
    this.usedBefore = unpackCallIdHashes(continued?.usedCallIdHashes ?? '');
    this.earlierCalls = continued?.earlierCalls ?? { ran: 0, notRun: 0, unknown: 0 };
    if (continued !== undefined) {
      this.stateVersion = continued.stateVersion;
      this.turns = continued.turns;
      this.toolCallsUsed = continued.toolCallsUsed;
      Object.assign(this.intentGenerations, continued.intentGenerations);
    }
  }

  /** The call the run is paused on (the call itself, its compensation or one of its batch items), while phase is `paused`. */
  get paused(): CallState | null {
    return this.pausedCall;
  }

  /**
   * Setting a call begins a new pause, with a new identity ({@link pauseIdOf}) built from what is
   * paused at that moment (the call, its compensation's generation, its batch item's key and
   * generation); set what is paused on the call first. Null ends the pause.
   */
  set paused(call: CallState | null) {
    this.pausedCall = call;
    if (call === null) {
      this.currentPauseId = null;
      return;
    }
    this.pauseCount += 1;
    this.currentPauseId = pauseIdOf(call, this.pauseCount, this.chainTag);
  }

  /** The identity of the pause the run waits on now, or null. */
  get pauseId(): string | null {
    return this.currentPauseId;
  }

  /**
   * Why a resolution of `callId` made for pause `pauseId` is refused now, or null when it is for
   * the pause the run waits on. Refusals: INVALID_REQUEST (no call id or pause id),
   * CALL_NOT_PAUSED (the run waits on no call, on another call, or a resolution is already being
   * applied: `inFlight`), STALE_PAUSE (the same call, but another pause than the one waiting now).
   */
  resolutionRefusal(
    callId: unknown,
    pauseId: unknown,
    inFlight: boolean,
  ): { readonly type: 'INVALID_REQUEST' | 'CALL_NOT_PAUSED' | 'STALE_PAUSE'; readonly message: string } | null {
    if (typeof callId !== 'string') return { type: 'INVALID_REQUEST', message: 'resolveOutcome needs a callId string' };
    if (typeof pauseId !== 'string' || pauseId.length === 0) {
      return {
        type: 'INVALID_REQUEST',
        message: `resolveOutcome needs the pauseId of the pause the person decided on (runStatus: paused.pauseId${this.currentPauseId === null ? '' : `; the run waits on ${this.currentPauseId}`})`,
      };
    }
    const paused = this.pausedCall;
    const waiting = paused !== null && (paused.status === 'paused' || this.pausedOnCompensation());
    if (paused === null || !waiting) return { type: 'CALL_NOT_PAUSED', message: `the run is not paused; no call "${callId}" awaits a resolution` };
    if (inFlight) return { type: 'CALL_NOT_PAUSED', message: `a resolution of call "${paused.callId}" is already being applied` };
    if (paused.callId !== callId && this.get(callId) !== paused) return { type: 'CALL_NOT_PAUSED', message: `the run is paused on call "${paused.callId}", not "${callId}"` };
    if (pauseId !== this.currentPauseId) {
      return {
        type: 'STALE_PAUSE',
        message: `the decision was made for pause ${pauseId}, but the run now waits on pause ${this.currentPauseId} (${describePause(paused)}); nothing was changed: read the status again and decide on what is paused now`,
      };
    }
    return null;
  }

  /**
   * From now on, addresses calls by the run that planned them (see {@link startTurn}): `<id>@<runId>`
   * unless it is the chain's first run (`run-scope.ts`), so a reset run never reuses a discarded
   * call's checkpoint. `runId` is the run this run's own calls are addressed in: itself when it is
   * a reset run, else the run its conversation goes on in (the chain's first, or the last reset run).
   */
  addressCallsIn(runId: string): void {
    this.runId = runId;
  }

  /**
   * The call ids in this run's history that applied nothing in it: rejected (by a person, or an
   * expired approval), failed before anything ran (a nothing-applied code, DISCARDED_BY_RESET
   * among them), never started, or answered with a stored nothing-applied refusal. Another branch
   * may have run them under the same id.
   */
  notRunCallIds(): string[] {
    return this.calls.filter((call) => NEVER_APPLIED.has(call.status) || isNothingAppliedOutcome(call.outcome)).map((call) => call.callId);
  }

  /** The call ids in this run's history that other runs made (a reset run's calls before its reset point). */
  callIdsOfOtherRuns(): string[] {
    const own = this.runId ?? this.runChainId;
    return this.calls.filter((call) => runOfCallId(call.callId, this.runChainId) !== own).map((call) => call.callId);
  }

  /** `callId` addressed in run `runId` (see {@link addressCallsIn}); as it is when calls are not addressed by run or the run is not known. */
  private inRun(callId: string, runId: string | null): string {
    return this.runId === null || runId === null ? callId : runScopedCallId(callId, runId, this.runChainId);
  }

  /** Whether a call id was used before in this chain. */
  private used(callId: string): boolean {
    return this.byId.has(callId) || this.usedBefore.has(callIdHash(callId));
  }

  /** Every call id used in the chain so far, hashed and packed, for the next run (continue-as-new). */
  usedCallIdHashes(): string {
    // The model's ids too: a later run addresses its calls by run, yet a model id reused across runs still gets a turn-scoped id.
    return packCallIdHashes(new Set([...this.usedBefore, ...this.calls.flatMap((call) => [callIdHash(call.callId), callIdHash(call.modelCallId)])]));
  }

  /** Earlier runs' counts plus this run's finished calls (call between turns, when none is live). */
  callCounts(): EarlierCalls {
    const own = summarizeCalls(this.calls.filter((call) => !isLive(call.status)).map((call) => report(call) as CallReport<FinalCallStatus>));
    return { ran: this.earlierCalls.ran + own.ran.length, notRun: this.earlierCalls.notRun + own.notRun.length, unknown: this.earlierCalls.unknown + own.unknown.length };
  }

  /** The calls of the current turn in the model's order, retries after `absent` right after their original. */
  turnCalls(): readonly CallState[] {
    return this.currentTurn;
  }

  /**
   * Ids of the calls waiting for a person: awaiting approval or paused on an unknown outcome, in
   * the model's order (what the `TtcNeedsPerson` / `TtcWaitingCalls` search attributes show).
   */
  waitingCallIds(): string[] {
    const ids = this.currentTurn.filter((call) => call.status === 'awaiting-approval' || call.status === 'paused').map((call) => call.callId);
    if (this.pausedOnCompensation() && !ids.includes(this.paused!.callId)) ids.push(this.paused!.callId);
    return ids;
  }

  /** Records that `call`'s effect applied now (its place in the order compensations undo). */
  markApplied(call: CallState): void {
    this.appliedCount += 1;
    call.appliedSeq = this.appliedCount;
  }

  /** This run's calls whose effect applied (completed or resolved applied with an `ok` outcome, not answered by another run), last applied first. */
  appliedInReverse(): CallState[] {
    // A call another run answered applied nothing here: that run owns the effect and its compensation.
    const applied = this.calls.filter((call) => (call.status === 'completed' || call.status === 'resolved-applied') && call.outcome?.ok === true && call.answeredBy === undefined);
    return lastAppliedFirst(applied, (call) => call.appliedSeq);
  }

  /** This run's calls that may have applied an effect nobody has settled: paused, or cut off by a stop while running (`unknown`), in order. */
  unsettledCalls(): CallState[] {
    return this.calls.filter((call) => call.status === 'paused' || call.status === 'unknown');
  }

  /** Whether the run is paused on this call's compensation rather than on the call. */
  pausedOnCompensation(): boolean {
    return this.paused !== null && this.paused.compensation?.status === 'paused';
  }

  /** Run deadline, ms since the epoch (workflow time). */
  get deadlineAt(): number {
    return this.startedAt + this.budget.deadlineMs;
  }

  /** Marks that the run advanced; approvals carrying an older version are stale. */
  bump(): void {
    this.stateVersion += 1;
  }

  /** The call with this id (the first, if the model repeated an id); in a run that addresses its calls by run, also the id without the run (`e1` for `e1@<runId>`). */
  get(callId: string): CallState | undefined {
    const exact = this.byId.get(callId);
    if (exact !== undefined || this.runId === null || typeof callId !== 'string') return exact;
    return this.byId.get(this.inRun(callId, this.runId)) ?? findNamedCall(this.calls, callId);
  }

  /**
   * Registers the tool calls of a new turn as `queued` and returns them in order; retries added
   * later are not in the returned array. Refused up front, with a `preFailure` the model sees as
   * its tool result: a repeated call id (DUPLICATE_CALL_ID) and a call whose input the adapter
   * refused (`inputError`, INVALID_TOOL_INPUT); and, given `refusals` (see `turn-bounds.ts`), the
   * calls beyond the turn's bounds. `plannedIn`: the run whose model turn asked for the calls (the
   * model turn's result names it, so a reset run replaying the turn gives the calls the ids they had).
   */
  startTurn(requests: readonly ToolCallRequest[], turn: number, scopeIds = false, refusals: readonly (TurnRefusal | null)[] = [], plannedIn: string | null = null): CallState[] {
    const inRun = (callId: string) => this.inRun(callId, plannedIn);
    this.currentTurn = requests.map((req, index) => {
      const reused = this.used(req.callId) || this.used(inRun(req.callId));
      // A provider that reuses ids across turns (`ollama_0`, `list_dir:0`) gets a
      // turn-scoped id, so each call has its own checkpoint and ids in history stay unique.
      // A repeat within one turn is still refused, under a unique id of its own.
      const sameTurn = requests.some((other) => other !== req && other.callId === req.callId && requests.indexOf(other) < requests.indexOf(req));
      const modelCallId = scopeIds && reused ? this.scopedId(req.callId, turn, inRun) : req.callId;
      const duplicate = scopeIds ? sameTurn : reused;
      const call = newCall(inRun(modelCallId), modelCallId, req.toolName, req.input, turn, 0);
      if (duplicate) {
        call.preFailure = {
          type: 'DUPLICATE_CALL_ID',
          message: `DUPLICATE_CALL_ID: the model reused tool-call id "${req.callId}" in this run; the call was not run`,
        };
        if (scopeIds) this.byId.set(call.callId, call);
      } else {
        this.byId.set(call.callId, call);
        // The adapter refused this call's input: only this call fails.
        if (req.inputError !== undefined) call.preFailure = { type: req.inputError.type, message: req.inputError.message };
        const refusal = refusals[index];
        if (refusal !== undefined && refusal !== null) call.preFailure = { type: refusal.type, message: refusal.message };
      }
      this.calls.push(call);
      return call;
    });
    return [...this.currentTurn];
  }

  /** `<id>_t<turn>`, with `_<n>` added until no call of the chain used it. */
  private scopedId(callId: string, turn: number, inRun: (callId: string) => string): string {
    const base = `${callId}_t${turn}`;
    let candidate = base;
    for (let n = 2; this.used(candidate) || this.used(inRun(candidate)); n += 1) candidate = `${base}_${n}`;
    return candidate;
  }

  /** The call ids of this run's calls for model call `modelCallId` whose effect a person proved absent, in order. */
  provenAbsent(modelCallId: string): string[] {
    return this.calls.filter((call) => call.modelCallId === modelCallId && call.status === 'resolved-absent').map((call) => call.callId);
  }

  /**
   * Adds `<modelCallId>~retryN` right after `original` and returns it (status `queued`). A call
   * approved with a signed grant gets a new approval to wait for instead (the grant names the
   * original call only; `expiresAt` null until the wait starts).
   */
  addRetry(original: CallState): CallState {
    let attempt = original.attempt + 1;
    // Addressed in the original's run: a rerun is the same action, whichever run asks for it.
    const inRun = (callId: string) => this.inRun(callId, runOfCallId(original.callId, this.runChainId));
    while (this.used(inRun(retryId(original.modelCallId, attempt)))) attempt += 1;
    const retry = newCall(inRun(retryId(original.modelCallId, attempt)), original.modelCallId, original.toolName, original.input, original.turn, attempt);
    // The rerun runs under the original's approval: its digest (hence with the arguments the
    // approver saw), its expiry (the worker refuses to claim after it) and who gave it.
    if (original.approval?.grant !== undefined) {
      retry.approval = { expiresAfterMs: original.approval.expiresAfterMs, expiresAt: null, decision: null, decidedAt: null, reason: null };
      retry.intentDigest = original.intentDigest;
      retry.toolRevision = original.toolRevision;
    } else {
      retry.approvedIntentDigest = original.approvedIntentDigest;
      retry.approval = original.approval === null ? null : { ...original.approval };
      retry.decisions.push(...original.decisions.filter((decision) => decision.kind === 'approved'));
    }
    retry.arguments = original.arguments;
    retry.target = original.target;
    this.byId.set(retry.callId, retry);
    this.calls.splice(this.calls.indexOf(original) + 1, 0, retry);
    const at = this.currentTurn.indexOf(original);
    if (at >= 0) this.currentTurn.splice(at + 1, 0, retry);
    return retry;
  }

  /**
   * Stops the run: records why, sets the phase, and turns every unfinished call into a final
   * status (`queued`/`awaiting-approval`/`approved` → `not-run`; `running`/`paused` → `unknown`).
   */
  stop(stop: RunStop): void {
    this.stopped = stop;
    this.phase = PHASE_OF_STATUS[stop.status];
    const why = stop.reason ?? stop.because;
    for (const call of this.calls) {
      if (call.status === 'running') {
        call.status = 'unknown';
        call.reason ??= `the run stopped (${why}) while the call was running; its effect may have been applied`;
      } else if (call.status === 'paused') {
        call.status = 'unknown';
        call.reason = `${call.reason ?? 'outcome unknown'}; the run stopped (${why}) before anyone resolved it`;
      } else if (isLive(call.status)) {
        call.status = 'not-run';
        call.reason ??= `not started: the run stopped (${why})`;
      }
      const compensation = call.compensation;
      if (compensation !== null && (compensation.status === 'running' || compensation.status === 'paused')) {
        compensation.status = 'pending';
        compensation.reason = `${compensation.reason ?? 'not finished'}; the run stopped (${why}) before the compensation finished`;
      }
      call.pausedItem = null;
    }
    this.paused = null;
    this.bump();
  }

  /** Every call of this run as the status query reports it (between turns, when none is live, as the result would). */
  finalCallsSoFar(): CallReport[] {
    return this.calls.map(report);
  }

  /** Every call with its final status; call after {@link stop}. */
  finalCalls(): CallReport<FinalCallStatus>[] {
    return this.calls.map((call) => report(call) as CallReport<FinalCallStatus>);
  }

  /** An earlier call of this run (before `call`) that completed with the same intent digest, if any. */
  earlierWithIntent(call: CallState, intentDigest: string): CallState | undefined {
    const before = this.calls.slice(0, this.calls.indexOf(call));
    return before.find((c) => c.intentDigest === intentDigest && (c.status === 'completed' || c.status === 'resolved-applied'));
  }

  /** The status query's view at workflow time `now` (ms). */
  view(now: number): RunStatusView {
    const pendingCalls: PendingCallView[] = this.currentTurn
      .filter((call) => isLive(call.status))
      .map((call) => ({
        ...(report(call) as CallReport<LiveCallStatus>),
        arguments: call.arguments,
        target: call.target,
        modelInput: call.input,
        approvalExpiresAt: call.approval?.expiresAt != null ? iso(call.approval.expiresAt) : null,
      }));
    if (this.pausedOnCompensation()) pendingCalls.push({ ...compensationPendingView(this.paused!), pauseId: this.currentPauseId! });
    const paused = this.paused;
    // The call the run waits on now carries the pause's identity, for the forms built from pending calls.
    const waitingOn = pendingCalls.findIndex(
      (call) => paused !== null && call.callId === paused.callId && call.status === 'paused' && call.pauseId === undefined && !this.pausedOnCompensation(),
    );
    if (waitingOn >= 0) pendingCalls[waitingOn] = { ...pendingCalls[waitingOn]!, pauseId: this.currentPauseId! };
    return {
      phase: this.phase,
      stateVersion: this.stateVersion,
      turns: this.turns,
      pendingCalls,
      calls: this.calls.map(report),
      budget: {
        turnsUsed: this.turns,
        maxTurns: this.budget.maxTurns,
        toolCallsUsed: this.toolCallsUsed,
        maxToolCalls: this.budget.maxToolCalls,
        startedAt: iso(this.startedAt),
        deadlineAt: iso(this.deadlineAt),
        remainingMs: Math.max(0, this.deadlineAt - now),
      },
      paused: paused === null ? null : pausedView(paused, this.currentPauseId!, now),
      stoppedBecause: this.stopped?.because ?? null,
    };
  }
}

/**
 * Why `by` (who took a decision) is refused, or null when it is absent or names someone (see
 * `deciderNameRefusal` in src/checkpoint/visible-text.ts: 1 to 256 characters, none hidden, not
 * blank). Pure; the workflow's update validators refuse with INVALID_REQUEST.
 */
export function decidedByRefusal(by: unknown): string | null {
  if (by === undefined) return null;
  const refusal = deciderNameRefusal(by);
  return refusal === null ? null : `by: ${refusal}`;
}

/** Final statuses of a call that applied nothing in its run (see `FINAL_CALL_STATUSES`). */
// Not `resolved-absent`: that call claimed in this run, and its checkpoint is the same call in any branch (its rerun passes it as this run's own).
const NEVER_APPLIED: ReadonlySet<string> = new Set(['rejected', 'failed', 'not-run']);
