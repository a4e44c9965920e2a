/**
 * Shapes of the agent workflow: its input and result, the status query's view, and the payloads
 * of its signals and updates. Type-only and sandbox-safe.
 *
 * Units: every duration is in ms; every timestamp is an ISO-8601 UTC string named `…At`, taken
 * from workflow time.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type { BatchCancellationReport } from '../activities/batch-items';
import type { BatchItemRef, DeliveredOutcome, ResultSource, ToolCallResolution } from '../activities/contract';
import type { LoggedMessage } from '../model/types';
import type { JsonValue } from '../checkpoint/types';

/** Retry policy for the workflow's activities, in ms (converted once to Temporal's RetryPolicy). */
export interface ActivityRetryInput {
  /** @default 1000 (Temporal's default) */
  readonly initialIntervalMs?: number;
  /** @default 2 */
  readonly backoffCoefficient?: number;
  /** @default 100 × initialIntervalMs */
  readonly maximumIntervalMs?: number;
  /** 0 or absent: unlimited, bounded by the run deadline. */
  readonly maximumAttempts?: number;
  /** Extra failure types never retried (the CheckpointError table already marks its own). */
  readonly nonRetryableErrorTypes?: readonly string[];
}

/** Timeouts and retry of one kind of activity. Every timeout is also bounded by the run deadline. */
export interface ToolActivityOptions {
  /** Per attempt, ms. @default 60000 */
  readonly startToCloseTimeoutMs?: number;
  /** Heartbeat timeout of the tool activities only (the fenced activity heartbeats while the tool runs), ms. @default none */
  readonly heartbeatTimeoutMs?: number;
  readonly retry?: ActivityRetryInput;
}

/** Timeouts and retry for the workflow's activities. Every timeout is also bounded by the run deadline. */
export interface AgentActivityOptions extends ToolActivityOptions {
  /**
   * Per tool name (each tool is its own activity type): options of that tool's activity, over
   * the ones above field by field (`retry` too: a field it leaves out keeps the run's value).
   * Every key must be one of the run's `tools`. Applies to the tool's activity only, not to
   * `describeToolCall` / `resolveToolCall`. @default {}
   */
  readonly perTool?: Readonly<Record<string, ToolActivityOptions>>;
}

/** Budgets of one run. The first three are required; every one must be a positive integer. */
export interface AgentBudget {
  /** Most model turns the run may take. */
  readonly maxTurns: number;
  /** Most tool calls the model may make in the whole run (a retry after `absent` does not count again). */
  readonly maxToolCalls: number;
  /** Total run deadline in ms of workflow time, from the start of the run. */
  readonly deadlineMs: number;
  /**
   * Most UTF-8 bytes the conversation may hold (every message's JSON, tool outputs kept by
   * reference counted at their full size). A model turn that would send more is not taken: the
   * run stops `budget-exhausted` / `max-conversation-bytes`. @default 33,554,432 (32 MiB)
   */
  readonly maxConversationBytes?: number;
  /**
   * Most tool calls one model turn may run. The calls after the first this many are not run: the
   * model reads `TOO_MANY_TOOL_CALLS` for each (see `turn-bounds.ts`); they take nothing of
   * `maxToolCalls`. @default 64
   */
  readonly maxToolCallsPerTurn?: number;
  /**
   * Most UTF-8 bytes of tool input (each call's input as JSON, summed) one model turn may run. The
   * call that crosses it and every later one are not run: the model reads `TURN_INPUT_TOO_LARGE`.
   * @default 524,288 (512 KiB)
   */
  readonly maxToolInputBytesPerTurn?: number;
}

/**
 * Size limits of a run (Temporal refuses a payload over 2 MB and a history over
 * 50 MB). Every field optional; each must be a positive integer. Runs started without the patch
 * replay with their old behaviour (patch `ttc-long-runs`).
 */
export interface RunLimits {
  /**
   * A tool output whose JSON text is longer than this (UTF-8 bytes) stays in the side store's
   * conversation log and reaches history, the status query and the result as an `OutputRef`
   * (claim check). @default 4,096
   */
  readonly inlineResultMaxBytes?: number;
  /**
   * The run continues as new (between model turns, once every handler has finished) when its
   * history holds this many events, or earlier when the server sets `continueAsNewSuggested`.
   * @default 10,000
   */
  readonly continueAsNewAfterEvents?: number;
  /** …or when its history holds this many bytes (`workflowInfo().historySize`). @default 10,485,760 (10 MiB) */
  readonly continueAsNewAfterHistoryBytes?: number;
  /**
   * …or when this run's calls, as the status query and the result report them, take this many
   * UTF-8 bytes of JSON, so neither nears Temporal's 2 MB payload limit (each run reports its own
   * calls; earlier runs' are counted). @default 1,048,576 (1 MiB)
   */
  readonly continueAsNewAfterStateBytes?: number;
}

/**
 * What a run hands to the run it continues as. Carried between model turns, when no
 * call is pending: budgets used, the state version (so approvals read before keep their
 * meaning), intent generations, every call id used (call identity: a reused id gets a
 * turn-scoped one), the conversation's place in the side store and counts of the calls of
 * earlier runs (their details stay in those runs' histories and results). Set by the workflow
 * itself; never pass it when starting a run.
 */
export interface ContinuedRun {
  /** How many times the chain has continued as new, counting this one. */
  readonly continuations: number;
  /** Workflow time the chain started, ms since the epoch (the deadline counts from it). */
  readonly startedAt: number;
  readonly stateVersion: number;
  readonly turns: number;
  readonly toolCallsUsed: number;
  readonly finalText: string;
  readonly intentGenerations: Readonly<Record<string, number>>;
  /**
   * Every call id used so far in the chain (model ids, turn-scoped and `~retryN` ids), as 8-hex
   * FNV-1a hashes concatenated: 8 bytes per call whatever the ids' length (`call-id-hashes.ts`).
   */
  readonly usedCallIdHashes: string;
  readonly conversation: ConversationState;
  /** Calls that finished in earlier runs of the chain, counted by {@link CallSummary} group. */
  readonly earlierCalls: EarlierCalls;
}

/** Where the conversation stands: `logged` messages in the side store, `pending` not yet written, `bytes` in all. */
export interface ConversationState {
  readonly logged: number;
  readonly pending: readonly LoggedMessage[];
  readonly bytes: number;
}

/** Counts of calls that finished in earlier runs of a chain, by {@link CallSummary} group. */
export interface EarlierCalls {
  readonly ran: number;
  readonly notRun: number;
  readonly unknown: number;
}

/** Approval policy of one tool: a pending call must be approved within `expiresAfterMs` and must start running before then. */
export interface ApprovalPolicy {
  readonly expiresAfterMs: number;
}

/** Input of {@link agentWorkflow}. */
export interface AgentWorkflowInput {
  /** Tenant within the Temporal namespace (part of every checkpoint binding). */
  readonly tenant: string;
  /** Model adapter name, e.g. `scripted`, `anthropic`, `openai`. */
  readonly model: string;
  /** Opaque adapter options, passed to every model turn. */
  readonly modelOptions?: JsonValue;
  /** The user's request; the first message of the conversation. */
  readonly prompt: string;
  /** Names of the tools the model may call; a call to any other tool fails with UNKNOWN_TOOL and nothing runs. */
  readonly tools: readonly string[];
  readonly budget: AgentBudget;
  /** Tools whose calls need a person's approval, by tool name. @default {} */
  readonly approvalRequired?: Readonly<Record<string, ApprovalPolicy>>;
  readonly activityOptions?: AgentActivityOptions;
  /**
   * How many tool calls of one model turn run at once. Results reach the model in the model's order
   * whatever order they finish in. A positive integer. @default every call of the turn
   */
  readonly toolConcurrency?: number;
  readonly limits?: RunLimits;
  /**
   * Compensation policy (saga): present = the run compensates. When the run is cancelled, abandoned
   * by a person, or a tool call's result is an error whose `type` is listed here (for example
   * `BUSINESS_REJECTION`; the run then stops `incomplete` / `compensate-on`), the run undoes its
   * applied effects (calls completed `ok`, or resolved applied) in the reverse order they were
   * applied, each through the tool's declared compensation (`compensateToolCall`). A call whose
   * outcome is unknown pauses for a person first; a call proven absent or not run is never
   * compensated. `[]`: compensate on cancel and abandon only. Up to 100 distinct non-empty types of
   * at most 256 characters each. Absent: nothing is compensated (runs started before compensations
   * existed). Compensations cover this run's calls, not calls of earlier runs of a continue-as-new
   * chain.
   */
  readonly compensateOn?: readonly string[];
  /** Set by the workflow when it continues as new; see {@link ContinuedRun}. */
  readonly continued?: ContinuedRun;
}

/** How a run ended. */
export const RUN_STATUSES = ['completed', 'incomplete', 'budget-exhausted', 'deadline-exceeded', 'cancelled', 'abandoned'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * Why a run stopped: the model ended its turn, its answer was cut off (`model-truncated`:
 * Anthropic `max_tokens`, OpenAI `length`) or refused (`model-refused`: `refusal`,
 * `content_filter`) — both end the run `incomplete` and none of that answer's calls runs — a
 * budget or the deadline ran out, a person cancelled or abandoned, or a tool call's error result
 * has a type the run's `compensateOn` names (`compensate-on`: the run ends `incomplete` and
 * compensates).
 */
export const STOP_REASONS = [
  'model-stopped',
  'model-truncated',
  'model-refused',
  'max-turns',
  'max-tool-calls',
  'max-conversation-bytes',
  'deadline',
  'cancel',
  'abandon',
  'compensate-on',
] as const;
export type StopReason = (typeof STOP_REASONS)[number];

/**
 * Final status of a tool call in the result:
 * - `completed`: the fenced activity returned an outcome (success or the tool's own error);
 * - `rejected`: a person rejected it, its approval expired, or it was approved but could not
 *   start before the approval expired; nothing ran;
 * - `failed`: refused before anything ran (unknown tool, invalid input, binding conflict, …);
 *   the model sees the error;
 * - `not-run`: never started (budget, deadline or cancel came first);
 * - `unknown`: it may have run (it was running or paused when the run stopped);
 * - `resolved-applied`: paused, then a person proved it applied and gave the result;
 * - `resolved-absent`: paused, then a person proved it never applied; it ran again as `<callId>~retryN`;
 * - `abandoned`: paused, then a person abandoned the run.
 */
export const FINAL_CALL_STATUSES = [
  'completed',
  'rejected',
  'failed',
  'not-run',
  'unknown',
  'resolved-applied',
  'resolved-absent',
  'abandoned',
] as const;
export type FinalCallStatus = (typeof FINAL_CALL_STATUSES)[number];

/**
 * Status of a call that has not finished, as the status query shows it: `queued` (waiting its
 * turn), `awaiting-approval`, `approved` (not started yet), `running`, `paused` (outcome unknown,
 * waiting for `resolveOutcomeUpdate`).
 */
export const LIVE_CALL_STATUSES = ['queued', 'awaiting-approval', 'approved', 'running', 'paused'] as const;
export type LiveCallStatus = (typeof LIVE_CALL_STATUSES)[number];

/** Any call status the status query can show. */
export type CallStatus = FinalCallStatus | LiveCallStatus;

/** Where a call's outcome came from: the fenced activity's source, or `resolution` when a person supplied it. */
export type CallSource = ResultSource | 'resolution';

/** One tool call as the result and the status query report it. */
export interface CallReport<S extends CallStatus = CallStatus> {
  /** The call id the activity ran under: the model's id, or `<model id>~retryN` after `absent`. */
  readonly callId: string;
  /** The model's tool-call id (what the model's conversation refers to). */
  readonly modelCallId: string;
  readonly toolName: string;
  /** 0-based model turn that asked for the call. */
  readonly turn: number;
  readonly status: S;
  readonly source: CallSource | null;
  /** The provider's receipt from a successful outcome, else null. */
  readonly receipt: JsonValue | null;
  /** The outcome as delivered: a large output is an `OutputRef` to the side store (see `RunLimits.inlineResultMaxBytes`). */
  readonly outcome: DeliveredOutcome | null;
  /** Known once `describeToolCall` or the tool's activity answered; else null. */
  readonly toolRevision: string | null;
  readonly intentDigest: string | null;
  /**
   * The key the call's request is sent with. Known once the activity answered, or from the failure
   * that paused it (with `toolRevision`: the revision it was claimed under); else null.
   */
  readonly idempotencyKey: string | null;
  /** Failure type behind `failed`, `paused`, `unknown` (e.g. `OUTCOME_UNKNOWN`), else null. */
  readonly errorType: string | null;
  /** Why it was rejected, failed, paused, unknown, resolved or abandoned; else null. */
  readonly reason: string | null;
  /** The compensation of this call, once the run started compensating it. Absent otherwise. */
  readonly compensation?: CompensationReport;
  /**
   * The batch item the call is paused on (a batch tool's `ctx.forEachItem` item whose outcome is
   * unknown): a resolution of the call is stored in that item's checkpoint and the call
   * then runs again under the same call id, resuming after the item. Absent otherwise.
   */
  readonly item?: PausedItem;
  /** A batch call cancelled part-way: its items applied / not applied / unknown, as the activity reported them. Absent otherwise. */
  readonly batch?: BatchCancellationReport;
  /** The decisions people took on this call (approval, rejection, resolutions of its pauses), in order, with who took them. Absent when none. */
  readonly decisions?: readonly DecisionRecord[];
}

/**
 * One decision a person took on a call, as the run keeps it: what was decided, by whom (the
 * request's `by`; null when it named no one), when (workflow time, ISO-8601 UTC), and for a
 * resolution the pause it settled (`pauseId`, `role: 'compensation'` for a compensation's).
 */
export interface DecisionRecord {
  readonly kind: 'approved' | 'rejected' | 'resolved-applied' | 'resolved-absent' | 'abandoned';
  readonly by: string | null;
  readonly at: string;
  readonly pauseId?: string;
  readonly role?: 'compensation';
}

/**
 * A paused batch item, from the OUTCOME_UNKNOWN failure's `details.item`: key, generation, 0-based
 * index, the batch's size (absent from older workers) and the item's idempotency key. People are
 * shown the position counted from 1 (`item 3 of 100`, see `checkpoint/item-position.ts`).
 */
export interface PausedItem extends BatchItemRef {
  readonly index: number;
  readonly total?: number;
  readonly idempotencyKey: string | null;
}

/**
 * Where a call's compensation stands:
 * - `running`: `compensateToolCall` is running;
 * - `paused`: its outcome is unknown, or the provider refused it (`ok: false`); waits for
 *   `resolveOutcomeUpdate` (applied / absent → runs again as the next generation / abandon);
 * - `compensated`: the compensation applied (ran `ok`, or a person resolved it applied);
 * - `pending`: not done: a person abandoned it, or the run stopped while it waited;
 * - `not-declared`: the call's tool declares no compensation; the effect stays applied.
 */
export const COMPENSATION_STATUSES = ['running', 'paused', 'compensated', 'pending', 'not-declared'] as const;
export type CompensationStatus = (typeof COMPENSATION_STATUSES)[number];

/** A call's compensation as the result and the status query report it. */
export interface CompensationReport {
  readonly status: CompensationStatus;
  /** Which run of the compensation: 1, raised by one each time a person proves a run absent. */
  readonly generation: number;
  /** The compensation that ran: the named tool, or `<tool>~compensation` for a function; null until the worker answered. */
  readonly toolName: string | null;
  readonly toolRevision: string | null;
  readonly source: CallSource | null;
  /** The compensation's outcome (`ok: false`: the provider refused it). Null until known. */
  readonly outcome: DeliveredOutcome | null;
  /** The compensation's `ttcc-…` idempotency key; null until the worker answered. */
  readonly idempotencyKey: string | null;
  /** Failure or refusal type behind `paused` / `pending`, else null. */
  readonly errorType: string | null;
  readonly reason: string | null;
}

/**
 * The run's effects, by call id: what is in place at the end of the run and what was
 * undone. Every call is in exactly one list.
 */
export interface RunEffects {
  /** Applied and left in place (completed `ok` or resolved applied; not compensated: the run did not compensate, or the tool declares no compensation). */
  readonly applied: readonly string[];
  /** Applied, then undone by its compensation. */
  readonly compensated: readonly string[];
  /** Applied, and its compensation did not finish (abandoned by a person, or the run stopped while it waited). */
  readonly compensationPending: readonly string[];
  /** Nothing applied: not run, rejected, failed, proven absent, or the tool's own error result. */
  readonly notRun: readonly string[];
  /**
   * May have been applied, nobody knows: `unknown`, `abandoned` (never compensated). A batch call
   * cancelled part-way is grouped by its items' report instead: `applied` when an item applied
   * and none is unknown, `notRun` when none applied and none is unknown.
   */
  readonly unknown: readonly string[];
}

/**
 * Which calls ran, which did not, and which may have, by call id (as in `calls`). Above all the
 * answer to "what happened" when a budget, the deadline, a cancel or an abandon stops a run.
 */
export interface CallSummary {
  /** The tool ran to a known outcome: `completed` (success or the tool's own error result), `resolved-applied`. */
  readonly ran: readonly string[];
  /** Nothing was applied: `not-run`, `rejected`, `failed`, `resolved-absent` (its rerun is listed on its own). */
  readonly notRun: readonly string[];
  /**
   * The effect may have been applied: `unknown`, `abandoned`. A batch call cancelled part-way
   * (`unknown` with a `batch` report whose items are all known) is in `ran` when an item applied,
   * else in `notRun`.
   */
  readonly unknown: readonly string[];
}

/** Result of {@link agentWorkflow}. */
export interface AgentWorkflowResult {
  readonly status: RunStatus;
  /** The model's text from its last turn ('' if it never answered). */
  readonly finalText: string;
  /** Every call the model asked for, in order, plus retries after `absent` right after their original. */
  readonly calls: readonly CallReport<FinalCallStatus>[];
  /** `calls` grouped into ran / not run / unknown. */
  readonly summary: CallSummary;
  /** `calls` grouped by effect: applied, compensated, compensation pending, not run, unknown. */
  readonly effects: RunEffects;
  /** Model turns taken. */
  readonly turns: number;
  readonly stoppedBecause: StopReason;
  /** The cancel or abandon reason, or a sentence about the budget or deadline; null when the model stopped. */
  readonly reason: string | null;
  /**
   * Set when the run continued as new: how many times, and the calls that finished in the
   * earlier runs (counted; `calls` and `summary` hold this run's calls). Absent otherwise.
   */
  readonly continued?: { readonly continuations: number; readonly earlierCalls: EarlierCalls };
}

/** What the run is doing now. */
export const RUN_PHASES = [
  'model',
  'tools',
  'compensating',
  'awaiting-approval',
  'paused',
  'completed',
  'incomplete',
  'cancelled',
  'budget-exhausted',
  'deadline-exceeded',
  'abandoned',
] as const;
export type RunPhase = (typeof RUN_PHASES)[number];

/**
 * A call that still needs something, with what a person needs to decide on it. An approval is bound
 * to `intentDigest`, the digest over `toolName`, `toolRevision`, `arguments` and `target`
 * (docs/protocol.md#keys-and-digests): what a person approves is exactly `arguments`, and the fence
 * runs the call only when it computes the same digest (else APPROVAL_MISMATCH, nothing runs).
 */
export interface PendingCallView extends CallReport<LiveCallStatus> {
  /**
   * The arguments that will run: validated by the tool's schema (unknown keys stripped, defaults
   * filled) in RFC 8785 canonical form, as `describeToolCall` reported them; `intentDigest`
   * covers them and `execute` receives them. Null until a worker described the call (only calls
   * needing approval are described before they run).
   */
  readonly arguments: JsonValue | null;
  /** What the effect acts on, from the tool's `target(arguments)`; also covered by the digest. Null when the tool declares none or the call was not described. */
  readonly target: JsonValue | null;
  /** What the model sent, before validation. Shown for reference only: it is NOT what runs (see `arguments`). */
  readonly modelInput: JsonValue;
  /** For a call needing approval: when the approval expires (it must also start running before then). */
  readonly approvalExpiresAt: string | null;
  /**
   * `compensation` when what is paused is the call's compensation, not the call: the
   * call itself applied; `errorType` / `reason` are the compensation's, and `compensation` holds
   * its details. Absent for the call itself.
   */
  readonly role?: 'compensation';
  /** The pause's identity ({@link PausedView.pauseId}) when the run waits on this call now. Absent otherwise. */
  readonly pauseId?: string;
}

/** Budget used against limits. */
export interface BudgetView {
  readonly turnsUsed: number;
  readonly maxTurns: number;
  readonly toolCallsUsed: number;
  readonly maxToolCalls: number;
  readonly startedAt: string;
  readonly deadlineAt: string;
  /** Deadline minus the workflow time of the last workflow task, ms (never negative). */
  readonly remainingMs: number;
}

/** What {@link runStatusQuery} returns. */
export interface RunStatusView {
  /** The run's tenant (from its input), so operators see whose run it is. Absent in runs started before runs reported their tenant. */
  readonly tenant?: string;
  readonly phase: RunPhase;
  /** Increments whenever the run advances (a model turn is recorded, a call finishes, the run pauses or resumes). Approvals must carry the current value. */
  readonly stateVersion: number;
  readonly turns: number;
  /** Calls of the current turn that have not finished, in order. */
  readonly pendingCalls: readonly PendingCallView[];
  /** Every call so far with its status. */
  readonly calls: readonly CallReport[];
  readonly budget: BudgetView;
  /** The paused call and why it paused, while phase is `paused`. */
  readonly paused: PausedView | null;
  /** Set once the run has stopped. */
  readonly stoppedBecause: StopReason | null;
  /** How many times the run continued as new (0 for a first run). Absent in runs started without patch `ttc-long-runs`. */
  readonly continuations?: number;
  /** Calls that finished in earlier runs of the chain (counted). Absent in runs started without patch `ttc-long-runs`. */
  readonly earlierCalls?: EarlierCalls;
  /** The conversation's size and where it lives. Absent in runs started without patch `ttc-long-runs`. */
  readonly conversation?: { readonly messages: number; readonly bytes: number; readonly maxBytes: number; readonly byReference: boolean };
}

/** What the run is paused on: the call (or, with `role: 'compensation'`, its compensation; with `item`, one item of a batch call). */
export interface PausedView {
  /**
   * The identity of this pause (see `pauseIdOf` in run-state.ts: what is paused, the call, the
   * compensation's or the batch item's generation, and the run's pause number). A resolution must
   * carry it; the run refuses one made for any other pause (STALE_PAUSE).
   */
  readonly pauseId: string;
  readonly callId: string;
  readonly toolName: string;
  readonly errorType: string;
  readonly reason: string;
  readonly pausedAt: string;
  /** `compensation` when the call's compensation is paused. Absent for the call itself. */
  readonly role?: 'compensation';
  /** The batch item the call is paused on. Absent otherwise. */
  readonly item?: PausedItem;
  /**
   * The revision the paused call (or compensation) was claimed under and the idempotency key its
   * request was sent with: what a person looks the effect up by in the provider's log (for a
   * batch item, `item.idempotencyKey` is the item's own key). Null when the failure that paused
   * the run named none (an activity timeout, an older worker).
   */
  readonly toolRevision: string | null;
  readonly idempotencyKey: string | null;
}

/** Payload of `approveCallUpdate`: binds the approval to the call's frozen intent and the run's state. */
export interface ApproveCallRequest {
  readonly callId: string;
  /** Must equal the pending call's `intentDigest` (else APPROVAL_MISMATCH). */
  readonly intentDigest: string;
  /** Must equal the run's current `stateVersion` (else STALE_STATE_VERSION). */
  readonly stateVersion: number;
  /** Who approves (kept in the call's `decisions` and on the call's span as `ttc.decision.by`): 1 to 256 characters, none invisible (controls, bidi, zero-width, non-ASCII spaces), not blank. @default null */
  readonly by?: string;
}

/** Payload of `rejectCallUpdate`. */
export interface RejectCallRequest {
  readonly callId: string;
  /** Shown to the model in the rejection result. Non-empty. */
  readonly reason: string;
  /** Who rejects (see {@link ApproveCallRequest.by}). @default null */
  readonly by?: string;
}

/** What `approveCallUpdate` and `rejectCallUpdate` return: the decision as recorded. */
export interface ApprovalDecisionResult {
  readonly callId: string;
  readonly decision: 'approved' | 'rejected';
  /** Workflow time of the decision. */
  readonly decidedAt: string;
  /** An approved call must start running before this time, or it is refused and nothing runs. */
  readonly approvalExpiresAt: string;
}

/** Payload of `resolveOutcomeUpdate` for the paused call. */
export type ResolveOutcomeRequest =
  | {
      readonly callId: string;
      /** The `paused.pauseId` the person decided on (the run refuses any other: STALE_PAUSE). */
      readonly pauseId: string;
      readonly resolution: 'applied';
      /** The tool's exact output JSON, as the model should see it. */
      readonly result: JsonValue;
      /** The provider's receipt, if the person has one. @default null */
      readonly receipt?: JsonValue;
      /** Audit text, non-empty. */
      readonly reason: string;
      /** Who resolves (kept in the call's `decisions`, in the checkpoint's audit and on the span as `ttc.decision.by`; see {@link ApproveCallRequest.by}). @default null */
      readonly by?: string;
    }
  | { readonly callId: string; readonly pauseId: string; readonly resolution: 'absent' | 'abandon'; readonly reason: string; readonly by?: string };

/** What `resolveOutcomeUpdate` returns once the workflow has acted on the resolution. */
export interface ResolveOutcomeResult {
  readonly callId: string;
  /** The pause the resolution settled. */
  readonly pauseId: string;
  readonly resolution: ToolCallResolution;
  /**
   * The paused call's final status: `resolved-applied`, `resolved-absent` or `abandoned`. For a
   * batch item (`item`) or a compensation (`role`), what became of the item or the compensation.
   */
  readonly status: 'resolved-applied' | 'resolved-absent' | 'abandoned';
  /**
   * After `absent`: the call id the call runs again under (`<callId>~retryN`). For a batch item
   * (`applied` or `absent`): the same call id, which runs again and resumes the batch after the
   * item (an item resolved applied is not sent again; one resolved absent is sent again as its
   * next generation); null when the run is winding down and the batch does not resume. Else null;
   * null for a compensation.
   */
  readonly retryCallId: string | null;
  /** The batch item the resolution was stored for. Absent otherwise. */
  readonly item?: BatchItemRef;
  /** `compensation` when the resolution was of the call's compensation. Absent otherwise. */
  readonly role?: 'compensation';
  /** For a compensation resolved `absent`: the generation it runs again as. Absent otherwise. */
  readonly compensationGeneration?: number;
}

/** Payload of `cancelRunSignal`. */
export interface CancelRunRequest {
  /** Why (kept in the result). @default 'cancelled' */
  readonly reason?: string;
}
