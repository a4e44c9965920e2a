// Workflow code for bench/overhead-bench.ts (runs in the workflow sandbox).
import { proxyActivities } from '@temporalio/workflow';
import { toolCallSummary, type FencedToolResult, type ToolCallInput } from '../src/activities/contract/contract';

interface BenchActivities {
  plainTool(input: { i: number }): Promise<{ ok: true; output: { i: number } }>;
  /** The fenced `echo` tool: its own activity type, as `agentWorkflow` schedules a tool. */
  echo(input: ToolCallInput): Promise<FencedToolResult>;
}

const options = { startToCloseTimeout: '30 seconds', heartbeatTimeout: '10 seconds' } as const;
const activities = proxyActivities<BenchActivities>(options);

/** N sequential tool calls, either plain activities or fenced ones (with a summary, as agentWorkflow gives them). */
export async function sequentialCalls(mode: 'plain' | 'fenced', n: number): Promise<number> {
  for (let i = 0; i < n; i += 1) {
    const callId = `call-${i}`;
    if (mode === 'plain') await activities.plainTool({ i });
    else await proxyActivities<BenchActivities>({ ...options, summary: toolCallSummary('echo', callId) }).echo({ tenant: 'bench', callId, input: { i } });
  }
  return n;
}

/** N tool calls with `width` in flight at all times (the event-loop section: 16 concurrent calls on one worker). */
export async function concurrentCalls(mode: 'plain' | 'fenced', n: number, width: number): Promise<number> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      const callId = `call-${i}`;
      if (mode === 'plain') await activities.plainTool({ i });
      else await proxyActivities<BenchActivities>({ ...options, summary: toolCallSummary('echo', callId) }).echo({ tenant: 'bench', callId, input: { i } });
    }
  };
  await Promise.all(Array.from({ length: width }, lane));
  return n;
}
