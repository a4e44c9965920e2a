/**
 * Compensations in a user's own workflow ("For users' own workflows, a small helper in
 * the workflow-safe entry records compensations as steps complete and runs them, fenced, in
 * reverse"). Real dev server, real SQLite store, one worker with `ToolCheckpointPlugin` fencing
 * every order activity (`./saga-activities`, `./saga-workflows`). Each compensation runs under the
 * call id `<step call id>/compensation`: reserve is `act-1`, charge `act-2`, so the refund's
 * checkpoint is `act-2/compensation` and the release's `act-1/compensation`. The worker lists the
 * plugin's workflow interceptor module a second time under another path, so two interceptors see
 * every schedule (the ids must not change).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { resolveCallInStore, ToolCheckpointPlugin } from '../../src/plugin';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { readSagaLedger, refundLookup, sagaActivities, type SagaOrder } from './saga-activities';
import { cancellableOrderWorkflow, compensateAgainSignal, orderSagaWorkflow, sagaStateQuery } from './saga-workflows';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(90_000);

const TASK_QUEUE = 'compensations';

describe("Compensations: a user's own workflow undoes its applied steps, fenced, in reverse", () => {
  let env: LocalTestEnv;
  let dir: string;
  let ledger: string;
  let store: CheckpointStore;
  let worker: Worker;
  let running: Promise<void>;
  const executions = new Map<string, number>();

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-compensations-'));
    ledger = join(dir, 'ledger.jsonl');
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    const fenced = { revision: 'v1', callDeadlineMs: 2_000 };
    const plugin = new ToolCheckpointPlugin({
      store,
      reconcileMarginMs: 0,
      fence: { reserveStock: fenced, chargeCard: fenced, createShipment: fenced, releaseStock: fenced, refundCharge: { ...fenced, lookup: refundLookup(ledger) } },
    });
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: TASK_QUEUE,
      workflowsPath: require.resolve('./saga-workflows'),
      activities: { ...sagaActivities(ledger, executions) },
      // The plugin's workflow interceptor module listed once more under another path (as a worker that still names it by
      // hand): two interceptors see each schedule, the call ids stay.
      interceptors: { workflowModules: [require.resolve('../../src/workflows/fenced/workflow-interceptors').replace(/\.ts$/, '')] },
      plugins: [plugin],
    });
    running = worker.run();
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The checkpoint of `callId` in the run chain of `workflowId`. */
  async function checkpointOf(workflowId: string, callId: string): Promise<CheckpointRecord | null> {
    const runChainId = (await env.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.firstRunId;
    return store.getByCall(`${env.devServer.namespace}/default`, callBindingId({ runChainId: runChainId!, workflowId, callId }));
  }

  /** The ledger lines of `order` as `kind` strings, in the order the effects were applied. */
  const effectsOf = (order: SagaOrder): string[] =>
    readSagaLedger(ledger)
      .filter((e) => e.orderId === order.id)
      .map((e) => e.kind);

  it('the shipment is rejected: refund then release run once each, in that order, under call ids derived from the charge and the reservation', async () => {
    const order: SagaOrder = { id: 'o-rejected' };
    const result = await env.client.workflow.execute(orderSagaWorkflow, { workflowId: order.id, taskQueue: TASK_QUEUE, args: [order] });
    expect(result).toEqual({
      shipmentError: 'ShipmentRejected',
      reports: [
        {
          compensated: [
            { name: 'refund charge', callId: 'act-2/compensation', stepCallId: 'act-2' },
            { name: 'release stock', callId: 'act-1/compensation', stepCallId: 'act-1' },
          ],
          failed: [],
          pending: [],
        },
      ],
    });
    expect(effectsOf(order)).toEqual(['reserve', 'charge', 'refund', 'release']);
    for (const [callId, toolName] of [
      ['act-2/compensation', 'refundCharge'],
      ['act-1/compensation', 'releaseStock'],
    ] as const) {
      expect(await checkpointOf(order.id, callId)).toMatchObject({ status: 'delivered', binding: { toolName } });
    }
    // Each compensation's idempotency key is its own (not the step's), the one its checkpoint's call was sent with.
    const keys = readSagaLedger(ledger)
      .filter((e) => e.orderId === order.id)
      .map((e) => e.idempotencyKey);
    expect(new Set(keys).size).toBe(4);
    expect(await env.client.workflow.getHandle(order.id).query(sagaStateQuery)).toMatchObject({ outstanding: [] });
  });

  it('a compensation recorded by add runs under its own call id (act-<seq>), not tied to a step, in the same reverse order', async () => {
    const order = { id: 'o-add', refundByAdd: true };
    const result = await env.client.workflow.execute(orderSagaWorkflow, { workflowId: order.id, taskQueue: TASK_QUEUE, args: [order] });
    // reserve act-1, charge act-2, shipment act-3: the refund is the fourth activity.
    expect(result.reports).toEqual([
      {
        compensated: [
          { name: 'refund charge', callId: 'act-4', stepCallId: null },
          { name: 'release stock', callId: 'act-1/compensation', stepCallId: 'act-1' },
        ],
        failed: [],
        pending: [],
      },
    ]);
    expect(effectsOf(order)).toEqual(['reserve', 'charge', 'refund', 'release']);
    expect(await checkpointOf(order.id, 'act-4')).toMatchObject({ status: 'delivered', binding: { toolName: 'refundCharge' } });
  });

  it('a refund whose first attempt fails after its effect is retried and reconciled by its lookup: refunded once', async () => {
    const order: SagaOrder = { id: 'o-refund-dropped', faults: { refundCharge: 'drop-after-effect' } };
    const result = await env.client.workflow.execute(orderSagaWorkflow, { workflowId: order.id, taskQueue: TASK_QUEUE, args: [order] });
    expect(result.reports).toEqual([
      expect.objectContaining({
        compensated: [expect.objectContaining({ name: 'refund charge', callId: 'act-2/compensation' }), expect.objectContaining({ name: 'release stock' })],
        failed: [],
        pending: [],
      }),
    ]);
    expect(effectsOf(order)).toEqual(['reserve', 'charge', 'refund', 'release']);
    expect(executions.get(`refund:${order.id}`)).toBe(1);
    // The refund activity was attempted twice; the second attempt found the effect by its key.
    const history = await env.client.workflow.getHandle(order.id).fetchHistory();
    const refundScheduled = history.events!.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'refundCharge')!;
    const refundAttempts = history.events!.filter(
      (e) => e.activityTaskCompletedEventAttributes && String(e.activityTaskCompletedEventAttributes.scheduledEventId) === String(refundScheduled.eventId),
    );
    expect(refundAttempts).toHaveLength(1);
    const started = history.events!.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId ?? '') === String(refundScheduled.eventId));
    expect(started?.activityTaskStartedEventAttributes?.attempt).toBe(2);
    const refund = await checkpointOf(order.id, 'act-2/compensation');
    expect(refund?.status).toBe('delivered');
    expect(refund?.result?.payload).toMatchObject({ ok: true, output: { refundId: `refund-${order.id}` } });
  });

  it('a refund the provider declines is reported failed and the release still runs; a release whose outcome is unknown is pending until a person resolves it in the store', async () => {
    const order: SagaOrder = { id: 'o-declined', faults: { refundCharge: 'decline', releaseStock: 'drop-after-effect' } };
    const handle = await env.client.workflow.start(orderSagaWorkflow, { workflowId: order.id, taskQueue: TASK_QUEUE, args: [order] });
    let state = await handle.query(sagaStateQuery);
    for (let i = 0; i < 200 && state.reports.length === 0; i += 1) {
      await new Promise((r) => setTimeout(r, 100));
      state = await handle.query(sagaStateQuery);
    }
    expect(state.reports).toEqual([
      {
        compensated: [],
        failed: [
          {
            name: 'refund charge',
            callId: 'act-2/compensation',
            stepCallId: 'act-2',
            error: { type: 'RefundDeclined', message: `refund of order ${order.id} declined by the provider` },
          },
        ],
        pending: [{ name: 'release stock', callId: 'act-1/compensation', stepCallId: 'act-1', error: expect.objectContaining({ type: 'OUTCOME_UNKNOWN' }) }],
      },
    ]);
    expect(state.outstanding).toEqual(['refund charge', 'release stock']);
    // A person finds the release applied and stores it under the call id the report names.
    await resolveCallInStore(store, {
      namespace: env.devServer.namespace,
      workflowId: order.id,
      callId: 'act-1/compensation',
      resolution: { applied: { releaseId: `release-${order.id}` } },
      reason: 'release found at the warehouse',
    });
    await handle.signal(compensateAgainSignal);
    const result = await handle.result();
    expect(result.reports[1]).toEqual({
      compensated: [{ name: 'release stock', callId: 'act-1/compensation', stepCallId: 'act-1' }],
      failed: [expect.objectContaining({ name: 'refund charge', error: expect.objectContaining({ type: 'RefundDeclined' }) })],
      pending: [],
    });
    // The declined refund was not run again (its stored rejection was delivered), nor the release (its resolution was).
    expect(executions.get(`refund:${order.id}`)).toBe(1);
    expect(executions.get(`release:${order.id}`)).toBe(1);
    expect(effectsOf(order)).toEqual(['reserve', 'charge', 'release']);
  });

  it('a workflow cancelled after its steps compensates them in reverse, then ends cancelled', async () => {
    const order: SagaOrder = { id: 'o-cancelled' };
    const handle = await env.client.workflow.start(cancellableOrderWorkflow, { workflowId: order.id, taskQueue: TASK_QUEUE, args: [order] });
    for (let i = 0; i < 200 && (await handle.query(sagaStateQuery)).outstanding.length < 2; i += 1) await new Promise((r) => setTimeout(r, 100));
    await handle.cancel();
    const failure = await handle.result().then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(effectsOf(order)).toEqual(['reserve', 'charge', 'refund', 'release']);
    expect((await handle.query(sagaStateQuery)).reports).toEqual([
      {
        compensated: [
          { name: 'refund charge', callId: 'act-2/compensation', stepCallId: 'act-2' },
          { name: 'release stock', callId: 'act-1/compensation', stepCallId: 'act-1' },
        ],
        failed: [],
        pending: [],
      },
    ]);
  });
});
