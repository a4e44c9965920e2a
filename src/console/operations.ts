/**
 * What the console does to runs, as one interface: list the runs waiting for a person and send
 * the approve / reject / resolve updates. {@link temporalOperations} implements it with the
 * shared operator functions (src/operator), so the console sends exactly the validated updates
 * the command line sends, and the run refuses a stale or changed decision the same way.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { approveCall, DecisionRefusedError, readWaitingCall, rejectCall, resolveCall } from '../operator/run-decisions';
import { describedRunChain, signAgentApproval } from '../operator/approval-grants';
import type { GrantSigningKey } from '../checkpoint/approval-grant';
import { MESSAGE_ERROR_TYPES } from '../workflows/agent/messages';
import { listWaitingRuns, type ListWaitingRunsOptions, type WaitingRun } from '../operator/waiting-runs';
import type { ApprovalDecisionResult, ApproveCallRequest, RejectCallRequest, ResolveOutcomeRequest, ResolveOutcomeResult } from '../workflows/agent/types';

/**
 * The console's view of Temporal. Each decision throws `DecisionRefusedError` (src/operator/run-decisions.ts)
 * when the run refuses it (its `.type` is the workflow's refusal, e.g. APPROVAL_MISMATCH) and
 * Temporal's errors otherwise.
 */
export interface ConsoleOperations {
  /** Running agent runs with a call awaiting approval or paused, and those that did not answer (each status query bounded in time). */
  listWaitingRuns(): Promise<WaitingRun[]>;
  /** `approveCall` with the intent digest and state version the person saw. */
  approveCall(workflowId: string, request: ApproveCallRequest): Promise<ApprovalDecisionResult>;
  /**
   * `rejectCall` with the reason the model will read, once the call is seen awaiting approval with
   * the intent digest the page showed (`shown`); else refused (CALL_NOT_AWAITING_APPROVAL,
   * APPROVAL_MISMATCH) and nothing is sent.
   */
  rejectCall(workflowId: string, request: RejectCallRequest, shown: ShownCall): Promise<ApprovalDecisionResult>;
  /**
   * `resolveOutcome` for the call the run is paused on, once it is seen paused on the pause the
   * request names (`request.pauseId`) with the intent digest the page showed (`shown`); else
   * refused (CALL_NOT_PAUSED, STALE_PAUSE, APPROVAL_MISMATCH) and nothing is sent. The run
   * checks the pause again itself.
   */
  resolveCall(workflowId: string, request: ResolveOutcomeRequest, shown: ShownCall): Promise<ResolveOutcomeResult>;
}

/** What the page showed of the call a reject or resolve form decides. */
export interface ShownCall {
  /** The call's intent digest as shown (null: the page showed none). */
  readonly intentDigest: string | null;
}

/** How the console asks runs for their status: `queryTimeoutMs` per run and `queryConcurrency` at once (see `listWaitingRuns`). */
export type ConsoleQueryOptions = Pick<ListWaitingRunsOptions, 'queryTimeoutMs' | 'queryConcurrency'>;

/**
 * {@link ConsoleOperations} on a connected Temporal client (its namespace is the client's). With
 * `approvalSigningKey`, an approval carries a grant signed for the call as the run shows it and
 * the digest the page showed, approver the request's `by` (docs/protocol.md#approval-grants).
 */
export function temporalOperations(client: Client, queries: ConsoleQueryOptions = {}, approvalSigningKey?: GrantSigningKey): ConsoleOperations {
  const handle = (workflowId: string) => client.workflow.getHandle(workflowId);
  /** Refuses, before anything is sent, a decision on a call that is not waiting for it or whose intent is not the one the page showed. */
  const checkShown = async (run: WorkflowHandle, callId: string, waitingFor: 'awaiting-approval' | 'paused', shown: ShownCall, pauseId?: string) => {
    const { call, status } = await readWaitingCall(run, client.options.namespace, callId, waitingFor);
    if (pauseId !== undefined && status.paused !== null && status.paused.pauseId !== pauseId) {
      throw new DecisionRefusedError(
        MESSAGE_ERROR_TYPES.STALE_PAUSE,
        run.workflowId,
        callId,
        `the page showed pause ${pauseId}, the run now waits on pause ${status.paused.pauseId}; nothing was sent`,
      );
    }
    if (call.intentDigest !== shown.intentDigest) {
      const named = (digest: string | null) => (digest === null ? 'none' : digest);
      throw new DecisionRefusedError(
        MESSAGE_ERROR_TYPES.APPROVAL_MISMATCH,
        run.workflowId,
        callId,
        `the page showed intent digest ${named(shown.intentDigest)}, the call has ${named(call.intentDigest)}; nothing was sent`,
      );
    }
  };
  return {
    listWaitingRuns: () => listWaitingRuns(client, queries),
    approveCall: async (workflowId, request) => {
      const run = handle(workflowId);
      if (approvalSigningKey === undefined) return approveCall(run, request);
      const waiting = await readWaitingCall(run, client.options.namespace, request.callId, 'awaiting-approval');
      const grant = signAgentApproval(waiting, {
        namespace: client.options.namespace,
        runChainId: await describedRunChain(run),
        intentDigest: request.intentDigest,
        approver: request.by ?? 'console',
        key: approvalSigningKey,
      });
      return approveCall(run, { ...request, grant });
    },
    rejectCall: async (workflowId, request, shown) => {
      const run = handle(workflowId);
      await checkShown(run, request.callId, 'awaiting-approval', shown);
      return rejectCall(run, request);
    },
    resolveCall: async (workflowId, request, shown) => {
      const run = handle(workflowId);
      await checkShown(run, request.callId, 'paused', shown, request.pauseId);
      return resolveCall(run, request);
    },
  };
}
