/**
 * A fenced user activity's heartbeat details stay its own (docs/protocol.md#worker-plugin,
 * src/activities/fence/kept-heartbeat.ts), also while a retry's `lookup` reconciles an earlier
 * attempt's unfinished claim: the fence keeps re-sending the previous attempt's details
 * (`{ resumeFrom: 40 }`), never its own `{ callId, checkpointStatus, phase }`, so an attempt that
 * dies during or after the lookup hands the next one the activity's progress. Found by a review.
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

jest.setTimeout(60_000);

const QUIET = new DefaultLogger('ERROR');

describe("a fenced user activity's heartbeat details during a retry's lookup", () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-lookup-hb-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the fence sends none of its own details while the lookup runs: only the activity’s (here the previous attempt’s)', async () => {
    let offsetMs = 0;
    let crashed = false;
    const plugin = new ToolCheckpointPlugin({
      store,
      clock: () => new Date(Date.now() + offsetMs),
      hooks: {
        step(point) {
          if (point === 'after-claim' && !crashed) {
            crashed = true;
            throw new Error('test hook: attempt 1 dies right after its claim');
          }
        },
      },
      fence: {
        importRows: {
          revision: 'v1',
          callDeadlineMs: 1_000,
          async lookup() {
            await sleep(1_000); // a provider search slower than a third of the heartbeat timeout
            return { found: false };
          },
        },
      },
    });
    const interceptors = plugin.configureWorker({ taskQueue: 'unit' } as WorkerOptions).interceptors?.activity ?? [];
    const info = { activityType: 'importRows', activityId: '1', heartbeatTimeoutMs: 600, workflowExecution: { workflowId: 'wf-lookup-hb', runId: 'run-lookup-hb' } };
    const importRows = async () => {
      Context.current().heartbeat({ resumeFrom: 41 });
      return { imported: 1 };
    };
    await expect(new MockActivityEnvironment({ ...info, attempt: 1 }, { interceptors, logger: QUIET }).run(importRows)).rejects.toThrow('attempt 1 dies');
    offsetMs = 60_000; // past the claim's settle time: attempt 2 looks the claim up
    const retry = new MockActivityEnvironment({ ...info, attempt: 2, heartbeatDetails: { resumeFrom: 40 } }, { interceptors, logger: QUIET });
    const sent: unknown[] = [];
    retry.on('heartbeat', (details: unknown) => sent.push(details));
    await expect(retry.run(importRows)).resolves.toEqual({ imported: 1 });
    // Every detail Temporal was sent is the activity's own (the previous attempt's, then its new one).
    expect(sent.filter((d) => (d as { phase?: unknown } | undefined)?.phase !== undefined)).toEqual([]);
    expect(sent.every((d) => d !== undefined && 'resumeFrom' in (d as object))).toBe(true);
  });
});
