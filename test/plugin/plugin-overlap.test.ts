/**
 * docs/protocol.md#overlapping-attempts on a real server: a user's activity that ignores cancellation
 * outlives its start-to-close timeout, so Temporal starts later attempts while the first still
 * runs in the worker. The fence renews the first attempt's claim while the activity runs: the
 * later attempts wait (RECONCILE_PENDING) instead of finding nothing by lookup and charging
 * again, and one of them delivers the first attempt's stored result.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from '@temporalio/worker';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { chargeLookup, paymentActivities, readLedger } from './payment-activities';
import { slowCheckoutWorkflow } from './overlap-workflows';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(120_000);

describe('a fenced activity that outlives its start-to-close timeout (real server)', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-plugin-overlap-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the attempts Temporal starts meanwhile wait for it: one charge, the workflow gets it', async () => {
    const ledger = join(dir, 'ledger.jsonl');
    const { chargeCard } = paymentActivities(ledger);
    let started = 0;
    const slowCharge = async (customer: string): Promise<{ chargeId: string }> => {
      started += 1;
      await sleep(4_000); // ignores cancellation and fencedCallContext().signal, as an unmodified activity does
      return chargeCard(customer, 100);
    };
    const plugin = new ToolCheckpointPlugin({ store, reconcileMarginMs: 200, fence: { slowCharge: { revision: 'v1', callDeadlineMs: 500, lookup: chargeLookup(ledger) } } });
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'plugin-overlap',
      workflowsPath: require.resolve('./overlap-workflows'),
      activities: { slowCharge },
      plugins: [plugin],
    });
    const workflowId = 'plugin-overlap-1';
    const result = await worker.runUntil(env.client.workflow.execute(slowCheckoutWorkflow, { workflowId, taskQueue: 'plugin-overlap', args: ['cus_overlap'] }));
    const effects = readLedger(ledger);
    expect(effects).toHaveLength(1);
    expect(started).toBe(1);
    expect(result).toEqual({ chargeId: effects[0]!.id });
    // Temporal did start later attempts while the first ran (its start-to-close timeout is 1 s).
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const completed = history.events?.find((e) => e.activityTaskCompletedEventAttributes);
    const startedEvent = history.events?.find((e) => e.eventId?.toString() === completed?.activityTaskCompletedEventAttributes?.startedEventId?.toString());
    expect(startedEvent?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThan(1);
    const description = await env.client.workflow.getHandle(workflowId).describe();
    const record = await store.getByCall('default/default', callBindingId({ runChainId: description.runId, workflowId, callId: 'act-1' }));
    expect(record?.status).toBe('delivered');
    expect(record?.execution?.previousAttemptId).toBeNull();
    expect(Date.parse(record!.execution!.deadlineAt!) - Date.parse(record!.execution!.claimedAt)).toBeGreaterThan(3_000);
  });
});
