/**
 * Adversarial (resets): can workflow code, through a forged `occurrences` input
 * (scope, from, liveCalls, liveRuns), make a call adopt a result it must not: another tool's,
 * another workflow's, another run chain's? The fence's activities in MockActivityEnvironment
 * against a SQLite file store, as test/integration/reset-occurrences.test.ts drives them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

jest.setTimeout(60_000);

describe('forged occurrences input', () => {
  let dir: string;
  let store: CheckpointStore;
  let acts: ToolActivities;
  const applied: string[] = [];

  const tool = (name: string) =>
    defineTool({
      name,
      revision: 'v1',
      input: z.object({ orderId: z.string() }),
      callDeadlineMs: 500,
      async execute(input, ctx) {
        applied.push(`${name}:${input.orderId}:${ctx.workflowId}`);
        return { output: { by: name, orderId: input.orderId, n: applied.length } };
      },
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-forged-occurrences-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    acts = createToolActivities({ store, tools: [tool('charge'), tool('refund')], reconcileMarginMs: 100 });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function call(
    workflowId: string,
    runId: string,
    input: Partial<FencedToolInput> & Pick<FencedToolInput, 'callId' | 'toolName' | 'runChainId'>,
  ): Promise<FencedToolResult | Error> {
    const env = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId, runId }, heartbeatTimeoutMs: 30_000 } as never);
    try {
      return await env.run(acts.runFencedTool, { tenant: 'acme', input: { orderId: 'o-1' }, ...input } as FencedToolInput);
    } catch (error) {
      return error as Error;
    }
  }

  it('another tool with the same arguments and scope is never adopted', async () => {
    const chain = randomUUID();
    const first = await call('wf-f1', chain, { callId: 'c1', toolName: 'charge', runChainId: chain, occurrences: { scope: chain } });
    const reset = randomUUID();
    const other = await call('wf-f1', reset, { callId: `r1@${reset}`, toolName: 'refund', runChainId: chain, occurrences: { scope: chain } });
    expect((first as FencedToolResult).source).toBe('executed');
    expect((other as FencedToolResult).source).toBe('executed');
    expect((other as FencedToolResult).outcome).toEqual(expect.objectContaining({ output: expect.objectContaining({ by: 'refund' }) }));
  });

  it("another workflow's call is never adopted, whatever scope it forges", async () => {
    const chain = randomUUID();
    await call('wf-f2a', chain, { callId: 'c1', toolName: 'charge', runChainId: chain, occurrences: { scope: chain } });
    const chain2 = randomUUID();
    const forged = await call('wf-f2b', chain2, { callId: 'c1', toolName: 'charge', runChainId: chain2, occurrences: { scope: chain } });
    expect((forged as FencedToolResult).source).toBe('executed');
  });

  it('another run chain of the same workflow id (the scope of the earlier chain forged) is never adopted', async () => {
    const chain = randomUUID();
    await call('wf-f3', chain, { callId: 'c1', toolName: 'charge', runChainId: chain, occurrences: { scope: chain } });
    const chain2 = randomUUID();
    const forged = await call('wf-f3', chain2, { callId: 'c1', toolName: 'charge', runChainId: chain2, occurrences: { scope: chain } });
    // Either it runs as its own call, or it is refused with nothing applied; it must not get the earlier chain's result.
    if (forged instanceof Error) expect(String(forged)).toMatch(/BINDING_CONFLICT|nothing ran/);
    else expect(forged.appliedByRun).toBeUndefined();
  });

  it('a forged `from` past the discarded holder makes the reset run apply the action again (workflow code can opt out of the rule)', async () => {
    const chain = randomUUID();
    await call('wf-f4', chain, { callId: 'c1', toolName: 'charge', runChainId: chain, occurrences: { scope: chain } });
    const reset = randomUUID();
    const again = await call('wf-f4', reset, { callId: `c2@${reset}`, toolName: 'charge', runChainId: chain, occurrences: { scope: chain, from: 1 } });
    // Documenting the trust boundary: the fence believes `from`; a plugin header or an agent run computes it.
    expect((again as FencedToolResult).source).toBe('executed');
  });
});
