/**
 * The plugin's heartbeat default (docs/protocol.md#worker-plugin) reaches only activities the
 * plugin fences: the workflow interceptor picks them by type, but whether an activity is fenced is
 * decided by the worker that runs it. So the default goes only to activities on the workflow's own
 * task queue. Found by a review: a fenced type routed to another queue, whose worker does not fence
 * it, got a heartbeat timeout nobody heartbeated; Temporal timed it out while it ran and started it
 * again: three charges for one call. Also: a history recorded without the default replays under it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { releaseReplayHooks } from '../helpers/replay-hooks';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { routedChargeWorkflow } from './heartbeat-routing-workflows';
import { heartbeatDefaultsWorkflow } from './heartbeat-workflows';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(120_000);
afterEach(releaseReplayHooks);

describe('heartbeat default on an activity routed to a worker that does not fence it (real server)', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-hb-routing-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an unfenced activity scheduled without a heartbeat timeout is not given one (it runs once)', async () => {
    const taskQueue = 'hb-routing-workflows';
    const paymentsQueue = 'hb-routing-payments';
    let charges = 0;
    const slowCharge = async (customer: string) => {
      charges += 1;
      const n = charges;
      await sleep(3_000); // a plain activity, longer than the plugin's heartbeat timeout; it never heartbeats (none was asked for)
      return { chargeId: `ch-${customer}-${n}` };
    };
    // The workflow worker fences slowCharge for its own queue (the plugin's heartbeat timeout is 1 s).
    const plugin = new ToolCheckpointPlugin({ store, heartbeatTimeoutMs: 1_000, fence: { slowCharge: { revision: 'v1' } } });
    const workflowWorker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./heartbeat-routing-workflows'),
      activities: { slowCharge },
      plugins: [plugin],
    });
    // The payments worker runs slowCharge plainly: no plugin, nobody heartbeats for it.
    const paymentsWorker = await Worker.create({ connection: env.nativeConnection, taskQueue: paymentsQueue, activities: { slowCharge } });
    const handle = await env.client.workflow.start(routedChargeWorkflow, { workflowId: 'hb-routing-routed', taskQueue, args: ['cus_1', paymentsQueue] });
    const result = await workflowWorker.runUntil(paymentsWorker.runUntil(handle.result().catch((error: unknown) => ({ error }))));
    await sleep(3_500); // let any overlapping attempt finish its charge
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? []).map((e) => e.activityTaskScheduledEventAttributes).filter((a) => a !== null && a !== undefined);
    // One call, one charge (before the fix each of 3 attempts was timed out by the 1 s heartbeat timeout while charging).
    expect({ charges, result }).toEqual({ charges: 1, result: 'ch-cus_1-1' });
    // The workflow asked for no heartbeat timeout, and the worker that ran the activity does not fence it.
    expect(scheduled.map((a) => Number(a.heartbeatTimeout?.seconds ?? 0))).toEqual([0]);
  });

  it('held: a history recorded without the heartbeat default (heartbeatTimeoutMs null) replays under the default plugin', async () => {
    const taskQueue = 'hb-routing-replay';
    const activities = { slowCharge: async (customer: string) => ({ chargeId: `ch-${customer}` }), audit: async (customer: string) => `audited ${customer}` };
    const fence = { slowCharge: { revision: 'v1' } };
    const before = new ToolCheckpointPlugin({ store, heartbeatTimeoutMs: null, fence });
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowsPath: require.resolve('./heartbeat-workflows'), activities, plugins: [before] });
    const handle = await env.client.workflow.start(heartbeatDefaultsWorkflow, { workflowId: taskQueue, taskQueue, args: ['cus_r'] });
    await worker.runUntil(handle.result());
    const history = await handle.fetchHistory();
    const after = new ToolCheckpointPlugin({ store, fence });
    await expect(Worker.runReplayHistory({ workflowsPath: require.resolve('./heartbeat-workflows'), plugins: [after] }, history, taskQueue)).resolves.toBeUndefined();
  });
});
