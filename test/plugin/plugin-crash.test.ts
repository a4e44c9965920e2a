/**
 * A user's plain workflow fenced by the plugin, with a real worker process
 * SIGKILLed right after the effect (`TTC_CRASH_AT`). A second worker finishes the call: one
 * effect, and the result the workflow gets is the one the store holds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { readLedger } from './payment-activities';
import type { PluginWorkerOptions } from './plugin-worker';
import { spawnPluginWorker, type Spawned } from './plugin-worker-process';
import { checkoutWorkflow, readmeCheckoutWorkflow } from './workflows';
import { temporal } from '@temporalio/proto';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

describe('ToolCheckpointPlugin: SIGKILL after the effect', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  const running: Spawned[] = [];

  // Concurrent tests start before beforeAll hooks end (a jest rule): each awaits the setup itself.
  const ready = (async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-plugin-crash-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  })();
  beforeAll(() => ready);

  afterAll(async () => {
    await ready.catch(() => undefined);
    for (const worker of running) worker.kill();
    await Promise.all(running.map((w) => w.exited));
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  // The rows are independent (own task queue, workflow and ledger) and mostly wait for Temporal's retry: they run side by side.
  it.concurrent.each([
    { crashAt: 'after-result-stored' as const, lookup: false, lookupByArgs: false, customer: 'cus_9', source: 'the stored result' },
    { crashAt: 'after-effect' as const, lookup: true, lookupByArgs: false, customer: 'cus_9', source: 'the lookup by idempotency key, stored then delivered' },
    // The lookup finds the charge by the activity's arguments (`ctx.args`), not by the key.
    { crashAt: 'after-effect' as const, lookup: true, lookupByArgs: true, customer: 'order-7781', source: 'the lookup by the activity arguments, stored then delivered' },
  ])('killed at $crashAt: one effect, the retry delivers $source', async ({ crashAt, lookup, lookupByArgs, customer }) => {
    await ready;
    const taskQueue = `plugin-crash-${crashAt}${lookupByArgs ? '-by-args' : ''}`;
    const workflowId = taskQueue;
    const options: PluginWorkerOptions = {
      address: env.devServer.address,
      taskQueue,
      storeUrl: `sqlite:${join(dir, 'checkpoints.db')}`,
      ledger: join(dir, `${taskQueue}.jsonl`),
      lookup,
      lookupByArgs,
    };
    const doomed = await spawnPluginWorker(options, crashAt);
    running.push(doomed);
    const handle = await env.client.workflow.start(checkoutWorkflow, { workflowId, taskQueue, args: [customer, 4_200] });
    expect(await doomed.exited).toBe('SIGKILL');
    const effects = readLedger(options.ledger);
    expect(effects).toEqual([expect.objectContaining({ kind: 'charge', customer, pid: doomed.pid })]);

    const survivor = await spawnPluginWorker(options);
    running.push(survivor);
    const result = await handle.result();
    expect(readLedger(options.ledger)).toEqual(effects);
    expect(result).toEqual({ chargeId: effects[0]!.id });
    const record = await store.getByCall('default/default', callBindingId({ runChainId: handle.firstExecutionRunId, workflowId, callId: 'act-1' }));
    expect(record?.status).toBe('delivered');
    expect(record?.result?.payload).toEqual({ ok: true, output: result, receipt: null });
    // A lookup's find is taken over by a later attempt, not written by the killed one.
    expect(record?.execution?.attemptId).toMatch(lookup ? /^attempt-[2-9]/ : /^attempt-1-/);
  });

  it.concurrent(
    'with the README options (no heartbeat timeout): the killed attempt is noticed by the heartbeat timeout the plugin gave it, not the start-to-close timeout',
    async () => {
      await ready;
      const taskQueue = 'plugin-crash-readme-options';
      const options: PluginWorkerOptions = {
        address: env.devServer.address,
        taskQueue,
        storeUrl: `sqlite:${join(dir, 'checkpoints.db')}`,
        ledger: join(dir, `${taskQueue}.jsonl`),
        lookup: true,
        heartbeatTimeoutMs: 2_000,
      };
      const doomed = await spawnPluginWorker(options, 'after-effect');
      running.push(doomed);
      const handle = await env.client.workflow.start(readmeCheckoutWorkflow, { workflowId: taskQueue, taskQueue, args: ['cus_7', 700] });
      expect(await doomed.exited).toBe('SIGKILL');
      const survivor = await spawnPluginWorker(options);
      running.push(survivor);
      const result = await handle.result();
      const effects = readLedger(options.ledger);
      expect(effects).toHaveLength(1);
      expect(result).toEqual({ chargeId: effects[0]!.id });
      const history = await handle.fetchHistory();
      const started = history.events?.map((e) => e.activityTaskStartedEventAttributes).find((a) => a !== null && a !== undefined);
      const scheduled = history.events?.map((e) => e.activityTaskScheduledEventAttributes).find((a) => a !== null && a !== undefined);
      expect(Number(scheduled?.heartbeatTimeout?.seconds)).toBe(2);
      expect(started?.attempt).toBeGreaterThan(1);
      // The attempt that delivered was started because the killed one missed its heartbeats.
      expect(started?.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT);
    },
  );
});
