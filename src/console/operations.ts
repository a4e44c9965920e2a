/**
 * What the console does to runs, as one interface: list the runs waiting for a person and send
 * the approve / reject / resolve updates. {@link temporalOperations} implements it with the
 * shared operator functions (src/operator), so the console sends exactly the validated updates
 * the command line sends, and the run refuses a stale or changed decision the same way.
 */
import type { Client } from '@temporalio/client';
import { approveCall, rejectCall, resolveCall } from '../operator/run-decisions';
import { listWaitingRuns, type WaitingRun } from '../operator/waiting-runs';
import type { ApprovalDecisionResult, ApproveCallRequest, RejectCallRequest, ResolveOutcomeRequest, ResolveOutcomeResult } from '../workflows/types';

/**
 * The console's view of Temporal. Each decision throws `DecisionRefusedError` (src/operator/run-decisions.ts)
 * when the run refuses it (its `.type` is the workflow's refusal, e.g. APPROVAL_MISMATCH) and
 * Temporal's errors otherwise.
 */
export interface ConsoleOperations {
  /** Running agent runs with a call awaiting approval or paused, and those that did not answer. */
  listWaitingRuns(): Promise<WaitingRun[]>;
  /** `approveCall` with the intent digest and state version the person saw. */
  approveCall(workflowId: string, request: ApproveCallRequest): Promise<ApprovalDecisionResult>;
  /** `rejectCall` with the reason the model will read. */
  rejectCall(workflowId: string, request: RejectCallRequest): Promise<ApprovalDecisionResult>;
  /** `resolveOutcome` for the call the run is paused on. */
  resolveCall(workflowId: string, request: ResolveOutcomeRequest): Promise<ResolveOutcomeResult>;
}

/** {@link ConsoleOperations} on a connected Temporal client (its namespace is the client's). */
export function temporalOperations(client: Client): ConsoleOperations {
  const handle = (workflowId: string) => client.workflow.getHandle(workflowId);
  return {
    listWaitingRuns: () => listWaitingRuns(client),
    approveCall: (workflowId, request) => approveCall(handle(workflowId), request),
    rejectCall: (workflowId, request) => rejectCall(handle(workflowId), request),
    resolveCall: (workflowId, request) => resolveCall(handle(workflowId), request),
  };
}
