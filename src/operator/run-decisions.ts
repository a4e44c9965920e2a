/**
 * What a person does to a run, shared by the command line (`approve`, `reject`, `resolve`) and
 * the console: read the call a decision is about from the run's status query, then send the
 * workflow's own validated update. The run is the authority: an approval carries the intent
 * digest and state version the person saw, and the workflow's validator refuses a changed intent
 * (APPROVAL_MISMATCH) or a run that moved on (STALE_STATE_VERSION), so a stale page or a slow
 * operator can never release a call nobody looked at. Node side (a Temporal client).
 *
 * @see docs/protocol.md#agent-workflow, src/workflows/agent/messages.ts for the updates and their refusals.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { findNamedCall } from '../checkpoint/run-scope';
import { CheckpointError } from '../checkpoint/errors';
import { approveCallUpdate, MESSAGE_ERROR_TYPES, rejectCallUpdate, resolveOutcomeUpdate, runStatusQuery, type MessageErrorType } from '../workflows/agent/messages';
import type {
  ApprovalDecisionResult,
  ApproveCallRequest,
  PendingCallView,
  RejectCallRequest,
  ResolveOutcomeRequest,
  ResolveOutcomeResult,
  RunStatusView,
} from '../workflows/agent/types';

/**
 * A run's refusal of a person's decision, with the workflow's failure type (see
 * {@link MESSAGE_ERROR_TYPES}). Its message names the type once, then the run, the call and the
 * run's reason: `STALE_STATE_VERSION: run <workflowId> refused the decision on <callId>: the
 * approval was given at state version 3, the run is at 5; …`.
 */
export class DecisionRefusedError extends Error {
  override readonly name = 'DecisionRefusedError';

  /**
   * @param type the workflow's refusal (`APPROVAL_MISMATCH`, `STALE_STATE_VERSION`, …), or
   *   `CALL_NOT_AWAITING_APPROVAL` / `CALL_NOT_PAUSED` when the status query already shows the
   *   call is not waiting for this decision.
   * @param message the reason; a leading `<type>: ` (the workflow's refusals start with it) is dropped.
   */
  constructor(
    readonly type: MessageErrorType,
    readonly workflowId: string,
    readonly callId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${type}: run ${workflowId} refused the decision on ${callId}: ${withoutTypePrefix(message, type)}`, options);
  }
}

/** `message` without a leading `<type>: ` (the workflow's refusals start with their type; the error's message names it once). */
function withoutTypePrefix(message: string, type: string): string {
  return message.startsWith(`${type}: `) ? message.slice(type.length + 2) : message;
}

/** A call waiting for a person, with the run status it was read from. */
export interface WaitingCall {
  readonly workflowId: string;
  /** The run's status when the call was read (its `stateVersion` goes into an approval). */
  readonly status: RunStatusView;
  readonly call: PendingCallView;
}

/**
 * Reads the run's status.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (field `workflowId`) when no such run exists;
 *   Temporal's errors otherwise (a run no worker answers for times out).
 */
export async function readRunStatus(handle: WorkflowHandle, namespace: string): Promise<RunStatusView> {
  return handle.query(runStatusQuery).catch((error: unknown) => {
    if (error instanceof WorkflowNotFoundError)
      throw new CheckpointError(
        'INVALID_ARGUMENT',
        `no run with workflow id ${JSON.stringify(handle.workflowId)} in namespace ${namespace}`,
        { field: 'workflowId' },
        { cause: error },
      );
    throw error;
  });
}

/**
 * The call `callId` of the run, when it waits for `waitingFor` (`awaiting-approval` for approve /
 * reject, `paused` for resolve).
 *
 * @throws {@link DecisionRefusedError} CALL_NOT_AWAITING_APPROVAL / CALL_NOT_PAUSED when the run
 *   has no such call waiting (named with the call's actual status, or that the run has none);
 *   the errors of {@link readRunStatus}.
 */
export async function readWaitingCall(handle: WorkflowHandle, namespace: string, callId: string, waitingFor: 'awaiting-approval' | 'paused'): Promise<WaitingCall> {
  const status = await readRunStatus(handle, namespace);
  const call = findNamedCall(status.pendingCalls, callId);
  if (call === undefined || call.status !== waitingFor) {
    const type = waitingFor === 'paused' ? MESSAGE_ERROR_TYPES.CALL_NOT_PAUSED : MESSAGE_ERROR_TYPES.CALL_NOT_AWAITING_APPROVAL;
    const actual =
      call !== undefined
        ? `is ${call.status}`
        : findNamedCall(status.calls, callId) !== undefined
          ? `is ${findNamedCall(status.calls, callId)!.status}`
          : 'is not a call of this run';
    throw new DecisionRefusedError(type, handle.workflowId, callId, `the run is ${status.phase} and call ${callId} ${actual}, not ${waitingFor}; nothing was sent`);
  }
  return { workflowId: handle.workflowId, status, call };
}

/** Sends `approveCall` with the digest and state version the person saw. @throws {@link DecisionRefusedError} with the workflow's refusal; Temporal's errors otherwise. */
export async function approveCall(handle: WorkflowHandle, request: ApproveCallRequest): Promise<ApprovalDecisionResult> {
  return handle.executeUpdate(approveCallUpdate, { args: [request] }).catch(refusal(handle.workflowId, request.callId));
}

/** Sends `rejectCall` with the reason the model will read. @throws {@link DecisionRefusedError} with the workflow's refusal; Temporal's errors otherwise. */
export async function rejectCall(handle: WorkflowHandle, request: RejectCallRequest): Promise<ApprovalDecisionResult> {
  return handle.executeUpdate(rejectCallUpdate, { args: [request] }).catch(refusal(handle.workflowId, request.callId));
}

/** Sends `resolveOutcome` for the paused call. @throws {@link DecisionRefusedError} with the workflow's refusal; Temporal's errors otherwise. */
export async function resolveCall(handle: WorkflowHandle, request: ResolveOutcomeRequest): Promise<ResolveOutcomeResult> {
  return handle.executeUpdate(resolveOutcomeUpdate, { args: [request] }).catch(refusal(handle.workflowId, request.callId));
}

/** Maps a `WorkflowUpdateFailedError` whose cause names one of the workflow's refusal types to a {@link DecisionRefusedError}; rethrows anything else. */
function refusal(workflowId: string, callId: string): (error: unknown) => never {
  return (error: unknown) => {
    if (error instanceof WorkflowUpdateFailedError) {
      const cause = error.cause as { type?: unknown; message?: unknown } | undefined;
      const type = typeof cause?.type === 'string' ? cause.type : '';
      const message = typeof cause?.message === 'string' ? cause.message : error.message;
      if ((Object.values(MESSAGE_ERROR_TYPES) as string[]).includes(type)) throw new DecisionRefusedError(type as MessageErrorType, workflowId, callId, message, { cause: error });
    }
    throw error;
  };
}

/**
 * What happens next after a resolution the run acted on, as one sentence for the person who sent
 * it (the command line and the console print it after the call's new status), or null when
 * nothing more happens (an applied call, an abandon):
 * - a batch item (`result.item`): whether the item is sent again (absent: as its next generation,
 *   under a new key; applied: never) and whether the call resumes the batch after it;
 * - a compensation proven absent: the generation it runs again as;
 * - a call proven absent: the call id it runs again under.
 */
export function resolutionNextStep(result: ResolveOutcomeResult): string | null {
  if (result.item !== undefined) {
    const item = `item ${JSON.stringify(result.item.key)} (generation ${result.item.generation})`;
    const sent =
      result.resolution === 'applied'
        ? `${item} is stored as applied and is not sent again`
        : `${item} is sent again as generation ${result.item.generation + 1}, under a new idempotency key`;
    const resumes =
      result.retryCallId !== null
        ? `call ${result.retryCallId} runs again and resumes the batch ${result.resolution === 'applied' ? 'after it' : 'with it'}`
        : 'the batch does not resume: the run is stopping';
    return `${sent}; ${resumes}`;
  }
  if (result.role === 'compensation') return result.compensationGeneration !== undefined ? `the compensation runs again as generation ${result.compensationGeneration}` : null;
  return result.retryCallId !== null ? `it runs again as ${result.retryCallId}` : null;
}
