/**
 * Adversarial: a user's existing activity keeps working when the plugin fences it.
 * Temporal's default payload converter sends an activity's result as JSON (`Date` as its ISO
 * string, `undefined` properties dropped, `toJSON` honoured); the fence must store and deliver
 * the same value, on the first attempt and from the store, not refuse it as NOT_JSON after the
 * effect. Values Temporal cannot send either (BigInt, cycles) stay refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { WorkerOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';

const INFO = { activityType: 'createOrder', workflowExecution: { workflowId: 'wf-results', runId: 'run-results' } };

describe('a fenced activity returning what Temporal sends as JSON', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-attack-results-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `activity` as attempts 1 and 2 of one call through the plugin's interceptor; returns both results and the activity's call count. */
  async function twoAttempts(activityId: string, activity: () => Promise<unknown>): Promise<{ results: unknown[]; calls: number }> {
    const plugin = new ToolCheckpointPlugin({ store, fence: { createOrder: { revision: 'v1' } } });
    const interceptors = plugin.configureWorker({ taskQueue: 'unit' } as WorkerOptions).interceptors?.activity ?? [];
    let calls = 0;
    const counted = async (): Promise<unknown> => {
      calls += 1;
      return activity();
    };
    const results: unknown[] = [];
    for (const attempt of [1, 2]) results.push(await new MockActivityEnvironment({ ...INFO, activityId, attempt }, { interceptors }).run(counted));
    return { results, calls };
  }

  it('delivers a Date as its ISO string and drops undefined properties, as the payload converter would, once', async () => {
    const order = { id: 'ord_1', createdAt: new Date('2026-01-02T03:04:05.000Z'), note: undefined, total: { toJSON: () => '12.50 EUR' } };
    const { results, calls } = await twoAttempts('date', async () => order);
    const sent = JSON.parse(JSON.stringify(order)) as unknown;
    expect(sent).toEqual({ id: 'ord_1', createdAt: '2026-01-02T03:04:05.000Z', total: '12.50 EUR' });
    expect(results).toEqual([sent, sent]);
    expect(calls).toBe(1);
  });

  it('fences a call with an undefined argument (Temporal sends it; the fence fingerprints it as null) and runs the activity once', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { createOrder: { revision: 'v1' } } });
    const interceptors = plugin.configureWorker({ taskQueue: 'unit' } as WorkerOptions).interceptors?.activity ?? [];
    const seen: unknown[][] = [];
    const activity = async (...args: unknown[]): Promise<unknown> => {
      seen.push(args);
      return { id: `ord_${seen.length}` };
    };
    const results: unknown[] = [];
    for (const attempt of [1, 2])
      results.push(await new MockActivityEnvironment({ ...INFO, activityId: 'undefined-arg', attempt }, { interceptors }).run(activity, 'cus_1', undefined));
    expect(results).toEqual([{ id: 'ord_1' }, { id: 'ord_1' }]);
    // The activity itself receives its arguments unchanged.
    expect(seen).toEqual([['cus_1', undefined]]);
  });

  it('still refuses a BigInt result (Temporal cannot send it either), non-retryably, without running the activity again', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { createOrder: { revision: 'v1' } } });
    const interceptors = plugin.configureWorker({ taskQueue: 'unit' } as WorkerOptions).interceptors?.activity ?? [];
    let calls = 0;
    const activity = async (): Promise<unknown> => ({ amount: BigInt((calls += 1)) });
    for (const attempt of [1, 2]) {
      await expect(new MockActivityEnvironment({ ...INFO, activityId: 'bigint', attempt }, { interceptors }).run(activity)).rejects.toMatchObject({
        type: 'NOT_JSON',
        nonRetryable: true,
      });
    }
    expect(calls).toBe(1);
  });
});
