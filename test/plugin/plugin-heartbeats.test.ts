/**
 * A fenced user activity owns its heartbeat details (Temporal keeps only the last ones, and a
 * retry resumes from them): the fence's own heartbeat carries the previous attempt's details,
 * and the fence sends no heartbeats of its own while the activity runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type WorkerOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';

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
      { activityType: 'importRows', activityId: '1', attempt: 1, heartbeatTimeoutMs: 90, heartbeatDetails: { resumeFrom: 40 }, workflowExecution: { workflowId: 'wf-hb', runId: 'run-hb' } },
      { interceptors, logger: new DefaultLogger('ERROR') },
    );
    const sent: unknown[] = [];
    env.on('heartbeat', (details: unknown) => sent.push(details));
    const result = await env.run(async () => {
      const from = (Context.current().info.heartbeatDetails as { resumeFrom: number }).resumeFrom;
      for (let row = from; row < from + 3; row += 1) {
        Context.current().heartbeat({ resumeFrom: row + 1 });
        await sleep(120); // longer than the fence's heartbeat interval (heartbeatTimeout / 3) used to be
      }
      return { imported: 3 };
    });
    expect(result).toEqual({ imported: 3 });
    expect(sent).toEqual([{ resumeFrom: 40 }, { resumeFrom: 41 }, { resumeFrom: 42 }, { resumeFrom: 43 }]);
  });
});
