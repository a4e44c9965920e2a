/**
 * The context the fence runs a user's activity under
 * (src/activities/fence/kept-heartbeat.ts): everything but `heartbeat` is the activity's own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activityInfo, cancellationSignal, Context, heartbeat, log, metricMeter, sleep } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type WorkerOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';

describe('the derived context of a fenced user activity', () => {
  let dir: string;
  let store: CheckpointStore;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-fenced-ctx-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('info, sleep, cancellation, log, metricMeter and heartbeat work, and a cancellation during sleep reaches the activity', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { work: { revision: 'v1' } } });
    const interceptors = plugin.configureWorker({ taskQueue: 'unit' } as WorkerOptions).interceptors?.activity ?? [];
    const env = new MockActivityEnvironment(
      { activityType: 'work', activityId: '7', attempt: 1, heartbeatTimeoutMs: 300, workflowExecution: { workflowId: 'wf-ctx', runId: 'run-ctx' } },
      { interceptors, logger: new DefaultLogger('ERROR') },
    );
    const seen: string[] = [];
    const run = env.run(async () => {
      const ctx = Context.current();
      seen.push(activityInfo().activityType, String(ctx instanceof Context), typeof log.info, typeof metricMeter.createCounter);
      metricMeter.createCounter('c').add(1);
      heartbeat({ step: 1 });
      await sleep(10);
      await ctx.sleep(10);
      setTimeout(() => env.cancel('CANCELLED'), 50);
      try {
        await ctx.sleep(5_000);
      } catch (error) {
        seen.push(`cancelled:${(error as Error).name}:${String(cancellationSignal().aborted)}`);
        throw error;
      }
      return 'done';
    });
    await expect(run).rejects.toBeTruthy();
    expect(seen).toEqual(['work', 'true', 'function', 'function', 'cancelled:CancelledFailure:true']);
  });
});
