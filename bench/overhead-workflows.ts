// Workflow code for bench/overhead-bench.ts (runs in the workflow sandbox).
import { proxyActivities } from '@temporalio/workflow';
import type { FencedToolInput, FencedToolResult } from '../src/activities/contract';

interface BenchActivities {
  plainTool(input: { i: number }): Promise<{ ok: true; output: { i: number } }>;
  runFencedTool(input: FencedToolInput): Promise<FencedToolResult>;
}

const activities = proxyActivities<BenchActivities>({ startToCloseTimeout: '30 seconds', heartbeatTimeout: '10 seconds' });

/** N sequential tool calls, either plain activities or fenced ones. */
export async function sequentialCalls(mode: 'plain' | 'fenced', n: number): Promise<number> {
  for (let i = 0; i < n; i += 1) {
    if (mode === 'plain') await activities.plainTool({ i });
    else await activities.runFencedTool({ tenant: 'bench', callId: `call-${i}`, toolName: 'echo', input: { i } });
  }
  return n;
}
