/**
 * A deploy that changed a fenced activity's `revision` between two attempts of a call (real dev
 * server, real SQLite store, real worker processes): the worker fencing `chargeCard` as `v1` is
 * SIGKILLed right after the charge reached the provider (the ledger), and the next worker fences
 * `chargeCard` as `v2`.
 * - The fence entry declares `lookupFindsEarlierRevisions`: the v2 worker's lookup, asked for the
 *   key the v1 attempt sent, finds the charge once the claim's settle time has passed; the call is
 *   settled with it (one charge) and the workflow gets it.
 * - Without the declaration the call pauses (`onUnknownOutcome: 'wait'`), and the activity's last
 *   failure, as Temporal reports it to anyone who describes the workflow, has its type and names
 *   the call, the tool and the key the v1 attempt sent (not "Failure exceeds size limit.").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { readLedger } from './payment-activities';
import type { PluginWorkerOptions } from './plugin-worker';
import { spawnPluginWorker, type Spawned } from './plugin-worker-process';
import { checkoutWorkflow } from './workflows';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

describe('a plugin-fenced activity whose revision changed after its worker was killed past the effect', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  const running: Spawned[] = [];

  // Concurrent tests start before beforeAll hooks end (a jest rule): each awaits the setup itself.
  const ready = (async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-plugin-revision-'));
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

  /** Starts the call on a v1 worker that SIGKILLs itself right after the charge; returns the run, the ledger's one charge and the v1 options. */
  async function chargeThenKill(
    name: string,
    workflowId = name,
  ): Promise<{ handle: WorkflowHandleWithFirstExecutionRunId<typeof checkoutWorkflow>; options: PluginWorkerOptions; charge: ReturnType<typeof readLedger>[number] }> {
    const options: PluginWorkerOptions = {
      address: env.devServer.address,
      taskQueue: name,
      storeUrl: `sqlite:${join(dir, 'checkpoints.db')}`,
      ledger: join(dir, `${name}.jsonl`),
      lookup: true,
    };
    const doomed = await spawnPluginWorker(options, 'after-effect');
    running.push(doomed);
    const handle = await env.client.workflow.start(checkoutWorkflow, { workflowId, taskQueue: name, args: ['cus_7', 1_900] });
    expect(await doomed.exited).toBe('SIGKILL');
    const effects = readLedger(options.ledger);
    expect(effects).toEqual([expect.objectContaining({ kind: 'charge', pid: doomed.pid })]);
    return { handle, options, charge: effects[0]! };
  }

  // The two cases are independent (own task queue, workflow and ledger) and mostly wait for Temporal's retry: they run side by side.
  it.concurrent("with lookupFindsEarlierRevisions, v2's lookup finds v1's charge: the call settles with it, one charge", async () => {
    await ready;
    const { handle, options, charge } = await chargeThenKill('revision-lookup');
    running.push(await spawnPluginWorker({ ...options, revision: 'v2', lookupFindsEarlierRevisions: true }));

    expect(await handle.result()).toEqual({ chargeId: charge.id });
    expect(readLedger(options.ledger)).toEqual([charge]);
    // Stored under the revision the claim was made under, taken over by a later attempt, delivered.
    const record = await store.getByCall('default/default', callBindingId({ runChainId: handle.firstExecutionRunId, workflowId: handle.workflowId, callId: 'act-1' }));
    expect(record?.status).toBe('delivered');
    expect(record?.binding.toolRevision).toBe('v1');
    expect(record?.result?.payload).toEqual({ ok: true, output: { chargeId: charge.id }, receipt: null });
    expect(record?.execution?.attemptId).toMatch(/^attempt-[2-9]/);
  });

  it.concurrent("without it, the call pauses under onUnknownOutcome 'wait' and Temporal's last failure has the type and names call, tool and key", async () => {
    await ready;
    // A long workflow id (a user's own naming: tenant, order, line items; Temporal allows 1,000
    // characters): the fence's messages quote the call's binding, which holds it.
    const workflowId = `revision-pause/tenant-acme-corporation/${Array.from({ length: 12 }, (_, i) => `order-line-${i}-sku-0000${i}`).join('/')}`;
    const { handle, options, charge } = await chargeThenKill('revision-pause', workflowId);
    running.push(await spawnPluginWorker({ ...options, revision: 'v2', onUnknownOutcome: 'wait', unknownOutcomeRetryMs: 1_000 }));

    const failure = await lastFailureOnce(handle, (f) => f.applicationFailureInfo?.type === 'OUTCOME_UNKNOWN' || /size limit/i.test(f.message ?? ''));
    expect(failure.message).not.toMatch(/size limit/i);
    expect(failure.applicationFailureInfo?.type).toBe('OUTCOME_UNKNOWN');
    expect(failure.applicationFailureInfo?.nonRetryable).toBeFalsy();
    expect(failure.message).toContain('act-1');
    const details = (failure.applicationFailureInfo?.details?.payloads ?? []).map((p) => defaultPayloadConverter.fromPayload(p as never));
    // The key the v1 attempt sent with the charge: what an operator searches the provider's log by.
    expect(details[0]).toMatchObject({ callId: 'act-1', toolName: 'chargeCard', toolRevision: 'v1', idempotencyKey: charge.idempotencyKey });
    expect(readLedger(options.ledger)).toEqual([charge]);
    await handle.terminate('test over');
  });

  /** The pending activity's last failure, once `ready` holds for it (polled from `describe`, as an operator's tool reads it). */
  async function lastFailureOnce(handle: WorkflowHandle, ready: (failure: temporal.api.failure.v1.IFailure) => boolean): Promise<temporal.api.failure.v1.IFailure> {
    for (let i = 0; i < 600; i += 1) {
      const failure = (await handle.describe()).raw.pendingActivities?.[0]?.lastFailure;
      if (failure !== null && failure !== undefined && ready(failure)) return failure;
      await new Promise((done) => setTimeout(done, 200));
    }
    throw new Error('the activity never reported the expected failure');
  }
});
