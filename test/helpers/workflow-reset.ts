/**
 * `temporal workflow reset` as an operator types it, for the reset tests: the real CLI binary
 * against a test's dev server.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { temporalCliPath } from '../../src/dev/temporal-binaries';

/** Where the reset goes: the first or the last workflow task, or the WorkflowTaskCompleted event with this id. */
export type ResetPoint = 'first' | 'last' | number;

/**
 * Resets run `runId` of `workflowId` to `to` with the `temporal` CLI and returns the reset run's id.
 * @throws when the CLI fails or the workflow's current run is still `runId` afterwards.
 */
export async function resetWithCli(server: { address: string; namespace: string }, client: Client, workflowId: string, runId: string, to: ResetPoint): Promise<string> {
  const where = to === 'first' ? ['--type', 'FirstWorkflowTask'] : to === 'last' ? ['--type', 'LastWorkflowTask'] : ['--event-id', String(to)];
  await promisify(execFile)(temporalCliPath(), [
    'workflow',
    'reset',
    '--workflow-id',
    workflowId,
    '--run-id',
    runId,
    ...where,
    '--reason',
    'repair the run',
    '--address',
    server.address,
    '--namespace',
    server.namespace,
  ]);
  const { runId: current } = await client.workflow.getHandle(workflowId).describe();
  if (current === runId) throw new Error(`workflow ${workflowId} still runs ${runId} after the reset`);
  return current;
}

/** The id of the WorkflowTaskCompleted event right after the `n`-th (1-based) completed activity of a run's history. */
export async function taskAfterActivity(
  handle: {
    fetchHistory(): Promise<{ events?: Array<{ eventId?: unknown; activityTaskCompletedEventAttributes?: unknown; workflowTaskCompletedEventAttributes?: unknown }> | null }>;
  },
  n: number,
): Promise<number> {
  const { events } = await handle.fetchHistory();
  let seen = 0;
  for (const event of events ?? []) {
    if (event.activityTaskCompletedEventAttributes != null) seen += 1;
    if (seen === n && event.workflowTaskCompletedEventAttributes != null) return Number(event.eventId);
  }
  throw new Error(`no workflow task completed after activity ${n}`);
}

/** The id of the last WorkflowTaskCompleted event of a run's history. */
export async function lastTask(handle: {
  fetchHistory(): Promise<{ events?: Array<{ eventId?: unknown; workflowTaskCompletedEventAttributes?: unknown }> | null }>;
}): Promise<number> {
  const { events } = await handle.fetchHistory();
  const tasks = (events ?? []).filter((event) => event.workflowTaskCompletedEventAttributes != null);
  if (tasks.length === 0) throw new Error('no workflow task completed');
  return Number(tasks.at(-1)!.eventId);
}
