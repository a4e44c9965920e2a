/**
 * Runs that need a person, for `pending` and the console: running agent runs with a call
 * awaiting approval or paused on an unknown outcome, each with its status query's answer (or why
 * it gave none). Node side (a Temporal client).
 */
import type { Client } from '@temporalio/client';
import { runStatusQuery } from '../workflows/messages';
import type { PendingCallView, RunStatusView } from '../workflows/types';

/** One running agent run as seen by an operator. */
export type WaitingRun =
  | { readonly workflowId: string; readonly status: RunStatusView; readonly waiting: readonly PendingCallView[] }
  /** The run did not answer its status query (no worker polls its task queue, or its payloads cannot be decoded here). */
  | { readonly workflowId: string; readonly error: unknown };

/** Visibility query for running agent runs. */
const RUNNING_AGENT_RUNS = `WorkflowType = 'agentWorkflow' AND ExecutionStatus = 'Running'`;

/**
 * Running agent runs with at least one call waiting for a person (awaiting approval or paused),
 * plus those that did not answer (an operator must see a run that may be waiting). At most
 * `limit` runs (default 200).
 */
export async function listWaitingRuns(client: Client, options: { limit?: number } = {}): Promise<WaitingRun[]> {
  const limit = options.limit ?? 200;
  const runs: WaitingRun[] = [];
  for await (const execution of client.workflow.list({ query: RUNNING_AGENT_RUNS })) {
    if (runs.length >= limit) break;
    try {
      const status = await client.workflow.getHandle(execution.workflowId).query(runStatusQuery);
      const waiting = status.pendingCalls.filter((c) => c.status === 'awaiting-approval' || c.status === 'paused');
      if (waiting.length > 0) runs.push({ workflowId: execution.workflowId, status, waiting });
    } catch (error) {
      runs.push({ workflowId: execution.workflowId, error });
    }
  }
  return runs;
}
