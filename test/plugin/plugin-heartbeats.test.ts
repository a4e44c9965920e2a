/**
 * Heartbeat details of fenced calls (what the Temporal UI shows for a running attempt).
 * - A fenced user activity owns its heartbeat details (Temporal keeps only the last ones, and a
 *   retry resumes from them): while the activity runs the fence re-sends the last details the
 *   activity sent (at first the previous attempt's), never its own.
 * - A tool's activity (the fence heartbeats for it) shows `{ callId, checkpointStatus, phase }`:
 *   on a real dev server, in `describe()`'s pending activity, while the tool runs; and while a
 *   retry looks up what an earlier attempt's unfinished claim did.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, Worker, type WorkerOptions } from '@temporalio/worker';
import { z } from 'zod';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { createToolActivities, defineTool } from '../../src/activities';
import type { FencedToolInput } from '../../src/activities/contract/contract';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { callToolOnce } from '../fixtures/fenced-workflows';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const QUIET = new DefaultLogger('ERROR');

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((done) => (open = done));
  return { opened, open };
}

describe('heartbeat details of a fenced user activity', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-heartbeats-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the previous attempt's details before the activity runs and never overwrites the activity's own", async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { importRows: { revision: 'v1' } } });
    const interceptors = plugin.configureWorker({ taskQueue: 'unit' } as WorkerOptions).interceptors?.activity ?? [];
    const env = new MockActivityEnvironment(
      {
        activityType: 'importRows',
        activityId: '1',
        attempt: 1,
        heartbeatTimeoutMs: 90,
        heartbeatDetails: { resumeFrom: 40 },
        workflowExecution: { workflowId: 'wf-hb', runId: 'run-hb' },
      },
      { interceptors, logger: QUIET },
    );
    const sent: unknown[] = [];
    env.on('heartbeat', (details: unknown) => sent.push(details));
    const result = await env.run(async () => {
      const from = (Context.current().info.heartbeatDetails as { resumeFrom: number }).resumeFrom;
      // Quiet until the fence has beaten for it: the previous attempt's details, kept.
      while (sent.length === 0) await sleep(20);
      for (let row = from; row < from + 3; row += 1) {
        Context.current().heartbeat({ resumeFrom: row + 1 });
        // Quiet until the fence has beaten for it (every 200 ms at least): a repeat of these details.
        while (sent.filter((d) => (d as { resumeFrom?: number }).resumeFrom === row + 1).length < 2) await sleep(20);
      }
      return { imported: 3 };
    });
    expect(result).toEqual({ imported: 3 });
    // The fence's beats repeat what the activity sent last: with repeats collapsed, exactly the activity's own sequence.
    const collapsed = sent.filter((d, i) => i === 0 || JSON.stringify(d) !== JSON.stringify(sent[i - 1]));
    expect(collapsed).toEqual([{ resumeFrom: 40 }, { resumeFrom: 41 }, { resumeFrom: 42 }, { resumeFrom: 43 }]);
    expect(sent.length).toBeGreaterThanOrEqual(collapsed.length + 3);
  });
});

describe('heartbeat details of a tool call the fence runs', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-heartbeats-tool-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("while the tool runs, the pending activity's heartbeat details name the call, its checkpoint status and the phase", async () => {
    const release = gate();
    const running = gate();
    const tool = defineTool({
      name: 'slow_export',
      revision: 'v1',
      input: z.object({ rows: z.number() }).strict(),
      async execute(input) {
        running.open();
        await release.opened;
        return { output: { exported: input.rows } };
      },
    });
    const taskQueue = 'heartbeat-details';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../fixtures/fenced-workflows'),
      activities: createToolActivities({ store, tools: [tool] }),
    });
    const input: FencedToolInput = { tenant: 'acme', callId: 'call-export-1', toolName: 'slow_export', input: { rows: 3 } };
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(callToolOnce, { workflowId: 'heartbeat-details', taskQueue, args: [input] });
      await running.opened;
      let details: unknown;
      // The claim's heartbeat goes out at once (the SDK throttles only the later ones): poll until the server has it.
      for (let i = 0; i < 100 && details === undefined; i += 1) {
        const payload = (await handle.describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
        if (payload) details = defaultPayloadConverter.fromPayload(payload);
        else await sleep(50);
      }
      release.open();
      expect(details).toEqual({ callId: 'call-export-1', checkpointStatus: 'executing', phase: 'execute' });
      return handle.result();
    });
    expect(result).toMatchObject({ result: { source: 'executed', outcome: { ok: true, output: { exported: 3 } } } });
  });

  it("a retry that looks up an earlier attempt's unfinished claim heartbeats the lookup phase", async () => {
    let offsetMs = 0;
    let crashed = false;
    const lookingUp = gate();
    const tool = defineTool({
      name: 'send_invoice',
      revision: 'v1',
      input: z.object({ invoice: z.string() }).strict(),
      callDeadlineMs: 1_000,
      async execute() {
        throw new Error('attempt 1 never gets here');
      },
      async lookup() {
        await lookingUp.opened; // until the fence has heartbeated during the lookup
        return { found: true, output: { sent: true } };
      },
    });
    const activities = createToolActivities({
      store,
      tools: [tool],
      clock: () => new Date(Date.now() + offsetMs),
      hooks: {
        step(point) {
          if (point === 'after-claim' && !crashed) {
            crashed = true;
            throw new Error('test hook: attempt 1 dies right after its claim');
          }
        },
      },
    });
    const input: FencedToolInput = { tenant: 'acme', callId: 'call-invoice-1', toolName: 'send_invoice', input: { invoice: 'INV-1' } };
    const info = { activityType: 'send_invoice', heartbeatTimeoutMs: 600, workflowExecution: { workflowId: 'wf-lookup', runId: 'run-lookup' } };
    await expect(new MockActivityEnvironment({ ...info, attempt: 1 }, { logger: QUIET }).run(activities.runFencedTool, input)).rejects.toThrow('attempt 1 dies');
    // Past the claim's deadline plus the margin: attempt 2 may reconcile it.
    offsetMs = 60_000;
    const retry = new MockActivityEnvironment({ ...info, attempt: 2 }, { logger: QUIET });
    const sent: unknown[] = [];
    retry.on('heartbeat', (details: unknown) => {
      sent.push(details);
      lookingUp.open();
    });
    const result = await retry.run(activities.runFencedTool, input);
    expect(result).toMatchObject({ source: 'lookup', outcome: { ok: true, output: { sent: true } } });
    expect(sent[0]).toEqual({ callId: 'call-invoice-1', checkpointStatus: 'executing', phase: 'lookup' });
  });
});
