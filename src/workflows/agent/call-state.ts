/**
 * One tool call as the agent workflow tracks it: its status, outcome, approval, pause and
 * compensation bookkeeping, how a new call (or a retry after `absent`) starts, and which
 * statuses are live. Plain data; sandbox-safe.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type { BatchCancellationReport } from '../../activities/contract/batch-items';
import type { AppliedByRun, DeliveredOutcome } from '../../activities/contract/contract';
import type { JsonValue } from '../../checkpoint/types';
import type { LoggedMessage } from '../../model/types';
import type { CallReport, CallSource, CallStatus, CompensationReport, DecisionRecord, LiveCallStatus, PausedItem } from './types';
import { LIVE_CALL_STATUSES } from './types';

/** Approval bookkeeping of one call. Times are workflow time in ms since the epoch. */
export interface ApprovalState {
  readonly expiresAfterMs: number;
  /** Set when the call became pending (after `describeToolCall` answered). */
  expiresAt: number | null;
  decision: 'approved' | 'rejected' | 'expired' | null;
  decidedAt: number | null;
  reason: string | null;
  /** The signed grant the approval carried (docs/protocol.md#approval-grants); absent in unsigned mode. */
  grant?: string;
}

/** One tool call as the workflow tracks it. */
export interface CallState {
  readonly callId: string;
  readonly modelCallId: string;
  readonly toolName: string;
  /** The arguments as the model sent them (the fence validates them again on every attempt). */
  readonly input: JsonValue;
  readonly turn: number;
  /** 0 for the model's call; n for `<modelCallId>~retryn`. */
  readonly attempt: number;
  status: CallStatus;
  source: CallSource | null;
  receipt: JsonValue | null;
  outcome: DeliveredOutcome | null;
  toolRevision: string | null;
  intentDigest: string | null;
  idempotencyKey: string | null;
  /**
   * The schema-validated arguments in canonical form, as `describeToolCall` reported them: what
   * `intentDigest` covers and `execute` receives. Null until a worker described the call (calls
   * needing approval only).
   */
  arguments: JsonValue | null;
  /** The tool's target for those arguments (also covered by the digest); null when none or not described. */
  target: JsonValue | null;
  errorType: string | null;
  reason: string | null;
  /** A refusal known before the call's turn in the loop (duplicate id, describe failure). */
  preFailure: { readonly type: string; readonly message: string } | null;
  approval: ApprovalState | null;
  /** The intent digest a person approved; passed to `runFencedTool` as `expectedIntentDigest` (also for reruns after `absent`). */
  approvedIntentDigest: string | null;
  pausedAt: number | null;
  /** The tool message for the model, once the call has one; handed over in the model's order after the turn. */
  message: LoggedMessage | null;
  /** The batch item the call is paused on, while it is; else null. */
  pausedItem: PausedItem | null;
  /** A batch call cancelled part-way: the activity's report of its items; else null. */
  batch: BatchCancellationReport | null;
  /** Order in which the call's effect was applied in this run (1, 2, …; compensations run in reverse); null while not applied. */
  appliedSeq: number | null;
  /** The call's compensation, once the run started compensating it; else null. */
  compensation: CompensationState | null;
  /** The decisions people took on the call, in order (see {@link DecisionRecord}). */
  readonly decisions: DecisionRecord[];
  /** The call of another run whose checkpoint answered this one (see {@link CallReport.answeredBy}); absent otherwise. */
  answeredBy?: CallReport['answeredBy'];
  /** The call of a run a reset discarded whose checkpoint answered this one (see {@link CallReport.appliedByRun}); absent otherwise. */
  appliedByRun?: CallReport['appliedByRun'];
  /** With `appliedByRun`: the run this call's adoption is recorded for (`FencedToolResult.appliedByRun.recordedFor`). */
  adoptionRecordedFor?: string;
}

/** A call's compensation as the workflow tracks it (see {@link CompensationReport}); `pausedAt` is workflow time in ms. */
export type CompensationState = { -readonly [K in keyof CompensationReport]: CompensationReport[K] } & { pausedAt: number | null };

/** A call's initial state: `queued`, nothing known yet. */
export function newCall(callId: string, modelCallId: string, toolName: string, input: JsonValue, turn: number, attempt: number): CallState {
  return {
    callId,
    modelCallId,
    toolName,
    input,
    turn,
    attempt,
    status: 'queued',
    source: null,
    receipt: null,
    outcome: null,
    toolRevision: null,
    intentDigest: null,
    idempotencyKey: null,
    arguments: null,
    target: null,
    errorType: null,
    reason: null,
    preFailure: null,
    approval: null,
    approvedIntentDigest: null,
    pausedAt: null,
    message: null,
    pausedItem: null,
    batch: null,
    appliedSeq: null,
    compensation: null,
    decisions: [],
  };
}

/** The call id a retry after `absent` runs under. */
export function retryId(modelCallId: string, attempt: number): string {
  return `${modelCallId}~retry${attempt}`;
}

/** Whether `status` is a live (not final) call status. */
export function isLive(status: CallStatus): status is LiveCallStatus {
  return (LIVE_CALL_STATUSES as readonly string[]).includes(status);
}

/**
 * Keeps what a delivery or a person's resolution says of a call a reset discarded that answered
 * `call` (`appliedByRun`): that call for the report, and the run `call`'s adoption is recorded for,
 * where later runs of this history look for it (docs/protocol.md#resets).
 */
export function learnAppliedByRun(call: CallState, appliedByRun: AppliedByRun): void {
  const { recordedFor, ...by } = appliedByRun;
  call.appliedByRun = by;
  if (recordedFor !== undefined) call.adoptionRecordedFor = recordedFor;
}
