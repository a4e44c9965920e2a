/**
 * A user's plain workflows for the plugin-errors tests: they call one activity by name through
 * `proxyActivities`, as any Temporal workflow does, and let its failure fail the workflow.
 */
import { proxyActivities } from '@temporalio/workflow';

type AnyActivities = Record<string, (...args: unknown[]) => Promise<unknown>>;

/** Calls `activity` with `args` (retried every 100 ms, at most 10 attempts) and returns its result. */
export async function callActivityWorkflow(activity: string, ...args: unknown[]): Promise<unknown> {
  const activities = proxyActivities<AnyActivities>({
    startToCloseTimeout: '30s',
    heartbeatTimeout: '10s',
    retry: { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 10 },
  });
  return activities[activity]!(...args);
}
