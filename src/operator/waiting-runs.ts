/**
 * Runs that need a person, for `pending` and the console: running agent runs with a call
 * awaiting approval or paused on an unknown outcome, each with its status query's answer (or why
 * it gave none). Node side (a Temporal client).
 *
 * On a namespace with the run search attributes registered (docs/visibility.md) the runs come
 * from the visibility query {@link WAITING_RUNS_QUERY}; otherwise every running agent run is
 * asked. Visibility is eventually consistent: a run that has just started waiting may show up a
 * moment later, and each listed run's status query has the last word on what waits.
 *
 * The status queries are asked in parallel, at most {@link DEFAULT_STATUS_QUERY_CONCURRENCY} at
 * once, and each is bounded ({@link DEFAULT_STATUS_QUERY_TIMEOUT_MS}): a run on a task queue no
 * worker polls never answers (the server holds a query until a worker takes it), so it is listed
 * as not answering ({@link StatusQueryTimeoutError}) instead of holding the whole list.
 */
import type { Client } from '@temporalio/client';
import { CheckpointError } from '../checkpoint/errors';
import { hasRunSearchAttributes } from '../visibility/namespace-search-attributes';
import { runStatusQuery } from '../workflows/agent/messages';
import { TTC_NEEDS_PERSON } from '../workflows/agent/search-attributes';
import type { PendingCallView, RunStatusView } from '../workflows/agent/types';

/** How long one run's status query may take before the run is listed as not answering, ms. */
export const DEFAULT_STATUS_QUERY_TIMEOUT_MS = 3_000;
/** Status queries in flight at once. */
export const DEFAULT_STATUS_QUERY_CONCURRENCY = 8;

/**
 * The error of a run that gave no answer to its status query within the timeout (no worker polls
 * its task queue, or its workers are busy or down): it may be waiting for a person.
 */
export class StatusQueryTimeoutError extends Error {
  override readonly name = 'StatusQueryTimeoutError';
  constructor(
    readonly workflowId: string,
    /** The timeout that passed, ms. */
    readonly timeoutMs: number,
  ) {
    super(`no answer to its status query within ${timeoutMs} ms: no worker may be polling its task queue, or its workers are busy`);
  }
}

/** One running agent run as seen by an operator. */
export type WaitingRun =
  | { readonly workflowId: string; readonly status: RunStatusView; readonly waiting: readonly PendingCallView[] }
  /** The run did not answer its status query: in time ({@link StatusQueryTimeoutError}), or with an error (its payloads cannot be decoded here, …). */
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
  /** How long each run's status query may take, ms (then the run is listed with a {@link StatusQueryTimeoutError}). @default {@link DEFAULT_STATUS_QUERY_TIMEOUT_MS} */
  readonly queryTimeoutMs?: number;
  /** Status queries in flight at once (at least 1). @default {@link DEFAULT_STATUS_QUERY_CONCURRENCY} */
  readonly queryConcurrency?: number;
}

/**
 * Running agent runs with at least one call waiting for a person (awaiting approval or paused),
 * plus those that did not answer (an operator must see a run that may be waiting), in the order
 * visibility lists them. At most `limit` runs. Each status query is bounded by `queryTimeoutMs`
 * and at most `queryConcurrency` are in flight.
 *
 * @throws the client's error when the visibility list itself fails (server unreachable);
 *   {@link CheckpointError} INVALID_ARGUMENT for a timeout or concurrency that is not a positive integer
 */
export async function listWaitingRuns(client: Client, options: ListWaitingRunsOptions = {}): Promise<WaitingRun[]> {
  const timeoutMs = positiveInteger(options.queryTimeoutMs ?? DEFAULT_STATUS_QUERY_TIMEOUT_MS, 'queryTimeoutMs');
  const concurrency = positiveInteger(options.queryConcurrency ?? DEFAULT_STATUS_QUERY_CONCURRENCY, 'queryConcurrency');
  const query = (options.searchAttributes ?? (await hasRunSearchAttributes(client))) ? WAITING_RUNS_QUERY : RUNNING_AGENT_RUNS_QUERY;
  const ask = (workflowId: string): Promise<RunStatusView> => {
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        reject(new StatusQueryTimeoutError(workflowId, timeoutMs));
        abort.abort();
      }, timeoutMs);
    });
    // The abort cancels the gRPC call; the race answers even if a call ignored it.
    const answer = client.withAbortSignal(abort.signal, () => client.workflow.getHandle(workflowId).query(runStatusQuery));
    answer.catch(() => undefined);
    return Promise.race([answer, timedOut]).finally(() => clearTimeout(timer));
  };
  return askWaitingRuns(client.workflow.list({ query }), ask, { limit: options.limit ?? 200, concurrency });
}

/**
 * The pool behind {@link listWaitingRuns}: takes runs from `executions` and asks each with `ask`,
 * at most `concurrency` at once; keeps those with a call waiting for a person and those whose
 * `ask` failed, in the order of `executions`. Stops taking runs once `limit` are kept, and returns
 * at most `limit`. The timeout is `ask`'s.
 */
export async function askWaitingRuns(
  executions: AsyncIterable<{ readonly workflowId: string }>,
  ask: (workflowId: string) => Promise<RunStatusView>,
  options: { readonly limit: number; readonly concurrency: number },
): Promise<WaitingRun[]> {
  const iterator = executions[Symbol.asyncIterator]();
  const kept: { index: number; run: WaitingRun }[] = [];
  let next = 0;
  let done = false;
  // One taker at a time: an async iterator must not be advanced concurrently.
  let taking: Promise<unknown> = Promise.resolve();
  const take = (): Promise<{ index: number; workflowId: string } | null> => {
    const taken = taking.then(async () => {
      if (done || kept.length >= options.limit) return null;
      const item = await iterator.next();
      if (item.done) {
        done = true;
        return null;
      }
      return { index: next++, workflowId: item.value.workflowId };
    });
    taking = taken.catch(() => undefined);
    return taken;
  };
  const lane = async (): Promise<void> => {
    for (let item = await take(); item !== null; item = await take()) {
      const { index, workflowId } = item;
      try {
        const status = await ask(workflowId);
        const waiting = status.pendingCalls.filter((c) => c.status === 'awaiting-approval' || c.status === 'paused');
        if (waiting.length > 0) kept.push({ index, run: { workflowId, status, waiting } });
      } catch (error) {
        kept.push({ index, run: { workflowId, error } });
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, lane));
  } finally {
    if (!done) await Promise.resolve(iterator.return?.()).catch(() => undefined);
  }
  return kept
    .sort((a, b) => a.index - b.index)
    .slice(0, options.limit)
    .map((k) => k.run);
}

function positiveInteger(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must be a positive integer, got ${String(value)}`, { field });
  }
  return value;
}
