// Workflow code for bench/batch-items.ts (runs in the workflow sandbox): one batch call.
import { proxyActivities } from '@temporalio/workflow';
import type { FencedToolInput, FencedToolResult } from '../src/activities/contract/contract';

const { runFencedTool } = proxyActivities<{ runFencedTool(input: FencedToolInput): Promise<FencedToolResult> }>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});

/** Runs the batch call once. */
export async function batchOnce(input: FencedToolInput): Promise<FencedToolResult> {
  return runFencedTool(input);
}
