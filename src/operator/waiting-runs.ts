/**
 * Runs that need a person, for `pending` and the console: running agent runs with a call
 * awaiting approval or paused on an unknown outcome, each with its status query's answer (or why
 * it gave none). Node side (a Temporal client).
 *
 * On a namespace with the run search attributes registered (docs/visibility.md) the runs come
 * from the visibility query {@link WAITING_RUNS_QUERY}; otherwise every running agent run is
 * asked. Visibility is eventually consistent: a run that has just started waiting may show up a
 * moment later, and each listed run's status query has the last word on what waits.
 */
import type { Client } from '@temporalio/client';
import { hasRunSearchAttributes } from '../visibility/namespace-search-attributes';
import { runStatusQuery } from '../workflows/messages';
import { TTC_NEEDS_PERSON } from '../workflows/search-attributes';
import type { PendingCallView, RunStatusView } from '../workflows/types';

/** One running agent run as seen by an operator. */
export type WaitingRun =
  | { readonly workflowId: string; readonly status: RunStatusView; readonly waiting: readonly PendingCallView[] }
  /** The run did not answer its status query (no worker polls its task queue, or its payloads cannot be decoded here). */
  | { readonly workflowId: string; readonly error: unknown };

/** Visibility query for running agent runs (every one is asked: the fallback). */
export const RUNNING_AGENT_RUNS_QUERY = `WorkflowType = 'agentWorkflow' AND ExecutionStatus = 'Running'`;

/**
 * Visibility query for running agent runs that may wait for a person: those whose
 * `TtcNeedsPerson` is true, plus those without the attribute (started before it was registered,
 * or by a client that did not set it), which are asked as the fallback would.
 */
export const WAITING_RUNS_QUERY = `${RUNNING_AGENT_RUNS_QUERY} AND (${TTC_NEEDS_PERSON.name} = true OR ${TTC_NEEDS_PERSON.name} IS NULL)`;

/** Options of {@link listWaitingRuns}. */
export interface ListWaitingRunsOptions {
  /** Most runs returned. @default 200 */
  readonly limit?: number;
  /**
   * Whether to list by the search attributes ({@link WAITING_RUNS_QUERY}) or ask every running
   * agent run ({@link RUNNING_AGENT_RUNS_QUERY}). @default whether the namespace has them
   * registered (`hasRunSearchAttributes`, asked once per client)
   */
  readonly searchAttributes?: boolean;
}

/**
 * Running agent runs with at least one call waiting for a person (awaiting approval or paused),
 * plus those that did not answer (an operator must see a run that may be waiting). At most
 * `limit` runs.
 *
 * @throws the client's error when the visibility list itself fails (server unreachable)
 */
export async function listWaitingRuns(client: Client, options: ListWaitingRunsOptions = {}): Promise<WaitingRun[]> {
  const limit = options.limit ?? 200;
  const query = (options.searchAttributes ?? (await hasRunSearchAttributes(client))) ? WAITING_RUNS_QUERY : RUNNING_AGENT_RUNS_QUERY;
  const runs: WaitingRun[] = [];
  for await (const execution of client.workflow.list({ query })) {
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
