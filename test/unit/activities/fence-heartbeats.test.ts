/**
 * The fence heartbeats while a tool runs only when the activity has a heartbeat timeout: without
 * one, a fenced call sends no heartbeat a plain activity would not send.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../../src/activities';
import type { FencedToolResult } from '../../../src/activities/contract/contract';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';

let store: CheckpointStore;
beforeEach(async () => {
  store = await openCheckpointStore('sqlite::memory:');
});
afterEach(async () => {
  await store.close();
});

/** Runs one fresh call of a tool that returns when `until` resolves; @returns the heartbeats the activity sent. */
async function beatsDuring(heartbeatTimeoutMs: number | undefined, until: (beats: unknown[]) => Promise<void>): Promise<unknown[]> {
  const beats: unknown[] = [];
  const tool = defineTool({
    name: 'slow_tool',
    revision: '1',
    input: z.object({}),
    async execute() {
      await until(beats);
      return { output: { ok: true } };
    },
  });
  const { runFencedTool } = createToolActivities({ store, tools: [tool] });
  const env = new MockActivityEnvironment({ attempt: 1, heartbeatTimeoutMs, workflowExecution: { workflowId: 'wf', runId: 'run' } } as never);
  env.on('heartbeat', (details: unknown) => beats.push(details));
  const result = (await env.run(runFencedTool, { tenant: 't', callId: 'c1', toolName: 'slow_tool', input: {} })) as FencedToolResult;
  expect(result.source).toBe('executed');
  return beats;
}

describe('fence heartbeats', () => {
  it('with a heartbeat timeout, the fence heartbeats while the tool runs', async () => {
    const beats = await beatsDuring(600, async (seen) => {
      while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    });
    expect(beats.length).toBeGreaterThan(0);
  });

  it('without a heartbeat timeout, a tool running 1.2 s makes no heartbeat', async () => {
    const beats = await beatsDuring(undefined, () => new Promise((resolve) => setTimeout(resolve, 1_200)));
    expect(beats).toEqual([]);
  });
});
