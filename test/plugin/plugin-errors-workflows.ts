/**
 * A user's plain workflows for the plugin-errors, plugin-tool-approval and plugin-unknown-outcome
 * tests: they call one activity by name through `proxyActivities`, as any Temporal workflow
 * does, and let its failure fail the workflow.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { withApprovedIntent, type ApprovedIntent } from '../../src/workflow';

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

/** Calls `activity` with `args` under the default retry policy (unlimited attempts; 100 ms between them unless the failure says otherwise) and returns its result. */
export async function callUntilDoneWorkflow(activity: string, ...args: unknown[]): Promise<unknown> {
  const activities = proxyActivities<AnyActivities>({ startToCloseTimeout: '30s', heartbeatTimeout: '10s', retry: { initialInterval: '100ms', backoffCoefficient: 1 } });
  return activities[activity]!(...args);
}

/** Calls the plugin's tool `tool` with `input` inside `withApprovedIntent(approval)` (at most 5 attempts). */
export async function approvedToolWorkflow(tool: string, input: Omit<FencedToolInput, 'toolName'>, approval: ApprovedIntent): Promise<FencedToolResult> {
  const tools = proxyActivities<Record<string, (input: Omit<FencedToolInput, 'toolName'>) => Promise<FencedToolResult>>>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 5 },
  });
  return withApprovedIntent(approval, () => tools[tool]!(input));
}
