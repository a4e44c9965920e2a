/**
 * Message definitions of the agent workflow: the status query, the cancel signal, and the
 * approve / reject / resolve updates. Clients import these to talk to a run. Sandbox-safe.
 *
 * Updates are validated before they are accepted: a refused update leaves no trace in the
 * workflow history, and the client receives a `WorkflowUpdateFailedError` whose cause is an
 * `ApplicationFailure` with one of the {@link MESSAGE_ERROR_TYPES} as `type`.
 *
 * @see docs/protocol.md#agent-workflow
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalDecisionResult, ApproveCallRequest, CancelRunRequest, RejectCallRequest, ResolveOutcomeRequest, ResolveOutcomeResult, RunStatusView } from './types';

/**
 * Failure types with which the workflow refuses an update (the `type` of the
 * `ApplicationFailure`). Stable: never renamed.
 */
export const MESSAGE_ERROR_TYPES = {
  /** The approval's intent digest differs from the pending call's. */
  APPROVAL_MISMATCH: 'APPROVAL_MISMATCH',
  /** The approval carries a state version other than the run's current one: re-read the status and decide again. */
  STALE_STATE_VERSION: 'STALE_STATE_VERSION',
  /** The call's approval window has passed (the call is, or will be, rejected). */
  APPROVAL_EXPIRED: 'APPROVAL_EXPIRED',
  /** No call with this id is awaiting approval (unknown id, no approval needed, or already decided). */
  CALL_NOT_AWAITING_APPROVAL: 'CALL_NOT_AWAITING_APPROVAL',
  /** No call with this id is paused on an unknown outcome, or a resolution for it is already being applied. */
  CALL_NOT_PAUSED: 'CALL_NOT_PAUSED',
  /** The resolution was made for another pause than the one the run waits on now (a compensation, a batch item or a later generation of the same call): read the status again and decide on what is paused now. */
  STALE_PAUSE: 'STALE_PAUSE',
  /** The update's payload is malformed (missing or wrong field). */
  INVALID_REQUEST: 'INVALID_REQUEST',
  /** The run has already stopped. */
  RUN_FINISHED: 'RUN_FINISHED',
} as const;
export type MessageErrorType = (typeof MESSAGE_ERROR_TYPES)[keyof typeof MESSAGE_ERROR_TYPES];

/** Query `runStatus`: phase, pending calls, per-call statuses, budget used, state version. Returns {@link RunStatusView}. */
export const runStatusQuery = defineQuery<RunStatusView>('runStatus');

/**
 * Signal `cancelRun` ({@link CancelRunRequest}): the run stops before its next step; a running
 * activity is cancelled (the fenced tool learns of it through its heartbeat). The workflow
 * result lists which calls ran (`completed`…), which did not (`not-run`) and which may have
 * (`unknown`).
 */
export const cancelRunSignal = defineSignal<[CancelRunRequest]>('cancelRun');

/**
 * Update `approveCall` ({@link ApproveCallRequest}) → {@link ApprovalDecisionResult}. Releases
 * exactly the named call. Refused with APPROVAL_MISMATCH, STALE_STATE_VERSION,
 * APPROVAL_EXPIRED, CALL_NOT_AWAITING_APPROVAL, INVALID_REQUEST or RUN_FINISHED.
 */
export const approveCallUpdate = defineUpdate<ApprovalDecisionResult, [ApproveCallRequest]>('approveCall');

/**
 * Update `rejectCall` ({@link RejectCallRequest}) → {@link ApprovalDecisionResult}. The model
 * receives a rejection result with the reason; nothing runs. Refused with APPROVAL_EXPIRED,
 * CALL_NOT_AWAITING_APPROVAL, INVALID_REQUEST or RUN_FINISHED.
 */
export const rejectCallUpdate = defineUpdate<ApprovalDecisionResult, [RejectCallRequest]>('rejectCall');

/**
 * Update `resolveOutcome` ({@link ResolveOutcomeRequest}) → {@link ResolveOutcomeResult}, for the
 * call the run is paused on. Completes once the workflow has acted:
 * - `applied`: the result is stored through `resolveToolCall` (completeExecution under the
 *   original fence) and handed to the model; if the worker refuses, the update fails with the
 *   worker's failure type and the run stays paused;
 * - `absent`: the call runs again under `<callId>~retryN`; the old checkpoint is never reopened;
 * - `abandon`: the run ends `abandoned` with the reason. When the call is paused on one item of a
 * batch call (`paused.item`), `applied` (the item's result) and `absent` are stored in that item's
 * checkpoint (`resolveToolCall` with `item`) and the same call runs again under its own id,
 * resuming after the item. When what is paused is the call's compensation (`paused.role ===
 * 'compensation'`): `applied` stores the compensation's result (`resolveToolCall` with `role:
 * 'compensation'`), `absent` runs the compensation again as its next generation, `abandon` leaves
 * it "compensation pending" and the run goes on compensating the others. The request carries the
 * `pauseId` of the pause the person saw (`runStatus().paused.pauseId`); one made for any other
 * pause is refused (STALE_PAUSE) and nothing changes. Refused with CALL_NOT_PAUSED, STALE_PAUSE,
 * INVALID_REQUEST or RUN_FINISHED.
 */
export const resolveOutcomeUpdate = defineUpdate<ResolveOutcomeResult, [ResolveOutcomeRequest]>('resolveOutcome');

/** `{ decidedBy }` for a resolution that names who decided (sent to `resolveToolCall` for the checkpoint's audit), else nothing. */
export function decidedBy(req: ResolveOutcomeRequest): { decidedBy?: string } {
  return typeof req.by === 'string' ? { decidedBy: req.by } : {};
}
