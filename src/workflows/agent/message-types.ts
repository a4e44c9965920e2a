/**
 * What the agent workflow's messages carry: the status query's view (phase, pending calls,
 * budget, what the run is paused on) and the payloads and results of its signals and updates
 * (approve, reject, resolve an outcome, cancel). Type-only (and the phase list) and sandbox-safe.
 *
 * Units: every duration is in ms; every timestamp is an ISO-8601 UTC string named `…At`, taken
 * from workflow time.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type { BatchItemRef, ToolCallResolution } from '../../activities/contract/contract';
import type { JsonValue } from '../../checkpoint/types';
import type { EarlierCalls } from './input-types';
import type { CallReport, LiveCallStatus, PausedItem, StopReason } from './result-types';

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
  /** The run chain (`firstExecutionRunId`), which an approval grant names. Absent in runs of older code. */
  readonly runChainId?: string;
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
  /**
   * The person's signed approval grant of this call (docs/protocol.md#approval-grants), from the
   * approve path's key; the run passes it to the tool's activity, whose worker verifies it. At
   * most 4,096 characters. @default none (unsigned mode)
   */
  readonly grant?: string;
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
