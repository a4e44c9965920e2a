/**
 * A plugin-fenced workflow reset with the `temporal` CLI onto fixed code never repeats an effect
 * (docs/deploying.md#resetting-a-run): the fixed release inserts a refund before the charges and
 * reorders them, so every call lands at another activity sequence number than in the discarded
 * run. Each charge that is the same action (activity type, arguments, and how many such calls the
 * run made before) is answered from the discarded call's checkpoint; the refund, a new action,
 * runs once. Real dev server, real SQLite store, two worker builds on one task queue.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { resetWithCli } from '../helpers/workflow-reset';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import type { LedgerActivities } from './reset-workflows/shared';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(120_000);

const TASK_QUEUE = 'plugin-resets';

describe('plugin: a reset onto fixed code never repeats an effect', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let ledger: string;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-plugin-resets-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    ledger = join(dir, 'ledger.jsonl');
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  const entries = (): { kind: string; amountCents: number; id: string; key: string }[] =>
    existsSync(ledger)
      ? readFileSync(ledger, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line))
      : [];

  const activities: LedgerActivities = {
    async chargeCard(_customer, amountCents) {
      const id = `charge-${entries().length + 1}`;
      appendFileSync(ledger, `${JSON.stringify({ kind: 'charge', amountCents, id, key: fencedCallContext()!.idempotencyKey })}\n`);
      return { chargeId: id, amountCents };
    },
    async refundCard(_customer, amountCents) {
      const id = `refund-${entries().length + 1}`;
      appendFileSync(ledger, `${JSON.stringify({ kind: 'refund', amountCents, id, key: fencedCallContext()!.idempotencyKey })}\n`);
      return { refundId: id, amountCents };
    },
  };

  function workerOf(release: string): Promise<Worker> {
    return Worker.create({
      connection: env.nativeConnection,
      taskQueue: TASK_QUEUE,
      workflowsPath: require.resolve(`./reset-workflows/${release}`),
      activities,
      plugins: [new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' }, refundCard: { revision: 'v1' } } })],
    });
  }

  it('the fixed release run after `temporal workflow reset` gets every charge from the store and applies only its refund', async () => {
    const workflowId = 'checkout-1';
    const first = await (
      await workerOf('release-1')
    ).runUntil(async () => {
      const handle = await env.client.workflow.start('checkout', { workflowId, taskQueue: TASK_QUEUE, args: ['cus_1'] });
      return { runId: handle.firstExecutionRunId, result: await handle.result() };
    });
    expect(first.result).toEqual(['charge-1', 'charge-2', 'charge-3']);

    const second = await (
      await workerOf('release-2')
    ).runUntil(async () => {
      await resetWithCli(env.devServer, env.client, workflowId, first.runId, 'first');
      const handle = env.client.workflow.getHandle(workflowId);
      expect((await handle.describe()).runId).not.toBe(first.runId);
      return handle.result();
    });
    // The refund is new; each charge is the discarded call of the same action, in the order the fixed code asks.
    expect(second).toEqual(['refund-4', 'charge-1', 'charge-3', 'charge-2']);
    expect(entries().map((e) => `${e.kind}:${e.amountCents}`)).toEqual(['charge:100', 'charge:100', 'charge:250', 'refund:5']);
  });
});
