/**
 * Adversarial (resets): a Temporal reset (`temporal workflow reset`) of a plugin-fenced workflow
 * never repeats an effect, also for arguments that are not strict JSON, calls that never started,
 * continue-as-new and workflow retries. Each test runs a plain workflow fenced by the
 * plugin on a real dev server with a real SQLite store, resets it with the `temporal` CLI (or the
 * reset API where the CLI cannot express it) and counts the effects the provider applied.
 *
 * The rule under test: after any reset, each action (activity type + arguments) is applied at most
 * as often as one branch of the run chain asked for it; and a continued run (continue-as-new)
 * counts its actions afresh (docs/protocol.md#resets).
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { resetWithCli } from '../helpers/workflow-reset';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import type { ResetActionActivities } from './reset-action-workflows';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(180_000);

interface Entry {
  workflowId: string;
  amountCents: number;
  id: string;
  key: string | null;
  callId: string | null;
}

describe('plugin resets', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let ledgerFile: string;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv-reset-plugin-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    ledgerFile = join(dir, 'ledger.jsonl');
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  const ledger = (workflowId: string): Entry[] =>
    existsSync(ledgerFile)
      ? readFileSync(ledgerFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Entry)
          .filter((e) => e.workflowId === workflowId)
      : [];

  function apply(amountCents: number): { chargeId: string; amountCents: number } {
    const ctx = fencedCallContext();
    const all = existsSync(ledgerFile) ? readFileSync(ledgerFile, 'utf8').split('\n').filter(Boolean).length : 0;
    const entry: Entry = { workflowId: ctx?.workflowId ?? '?', amountCents, id: `charge-${all + 1}`, key: ctx?.idempotencyKey ?? null, callId: ctx?.callId ?? null };
    appendFileSync(ledgerFile, `${JSON.stringify(entry)}\n`);
    return { chargeId: entry.id, amountCents };
  }

  const activities: ResetActionActivities = {
    async chargeCard(_customer, amountCents) {
      return apply(amountCents);
    },
    async chargeOrder(order) {
      return apply(order.amountCents);
    },
    async chargeAt(_customer, amountCents) {
      return apply(amountCents);
    },
  };

  const fence = { chargeCard: { revision: 'v1' }, chargeOrder: { revision: 'v1' }, chargeAt: { revision: 'v1' } };

  function workerOn(taskQueue: string, withActivities = true): Promise<Worker> {
    return Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./reset-action-workflows'),
      ...(withActivities ? { activities } : {}),
      plugins: [new ToolCheckpointPlugin({ store, fence })],
    });
  }

  /** `temporal workflow reset` of run `runId` to its first workflow task; returns the new current run id. */
  async function resetToFirst(workflowId: string, runId: string): Promise<string> {
    return resetWithCli(env.devServer, env.client, workflowId, runId, 'first');
  }

  /** The run ids of a continue-as-new chain, first to last, following `continuedExecutionRunId` backwards from the current run. */
  async function chainRuns(workflowId: string, lastRunId: string): Promise<string[]> {
    const runs = [lastRunId];
    for (;;) {
      const { events } = await env.client.workflow.getHandle(workflowId, runs[0]).fetchHistory();
      const from = events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
      if (!from) return runs;
      runs.unshift(from);
    }
  }

  it('an argument with a member left undefined: the reset run is answered from the store, one charge', async () => {
    const taskQueue = 'adv-reset-undefined';
    const workflowId = 'adv-reset-undefined-1';
    const worker = await workerOn(taskQueue);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('chargeWithOptionalField', { workflowId, taskQueue, args: ['cus_1'] });
      await handle.result();
      const resetRun = await resetToFirst(workflowId, handle.firstExecutionRunId);
      await env.client.workflow.getHandle(workflowId, resetRun).result();
    });
    if (process.env.RESET_DEBUG) console.log(JSON.stringify(ledger(workflowId)));
    // One branch asked for one charge; the reset run must be answered from the discarded call.
    expect(ledger(workflowId).map((e) => e.amountCents)).toEqual([100]);
  });

  it('a Date argument: the reset run is answered from the store, one charge', async () => {
    const taskQueue = 'adv-reset-date';
    const workflowId = 'adv-reset-date-1';
    const worker = await workerOn(taskQueue);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('chargeWithDate', { workflowId, taskQueue, args: ['cus_2'] });
      await handle.result();
      const resetRun = await resetToFirst(workflowId, handle.firstExecutionRunId);
      await env.client.workflow.getHandle(workflowId, resetRun).result();
    });
    expect(ledger(workflowId).map((e) => e.amountCents)).toEqual([100]);
  });

  it('a call that never started (schedule-to-start timeout) does not shift the count: one charge after the reset', async () => {
    const taskQueue = 'adv-reset-gap';
    const activityQueue = 'adv-reset-gap-activities';
    const workflowId = 'adv-reset-gap-1';
    // Only the workflow worker at first: the fast-path charge is never picked up (it times out before it starts).
    const workflows = await workerOn(taskQueue, false);
    await workflows.runUntil(async () => {
      const handle = await env.client.workflow.start('chargeWithFallback', { workflowId, taskQueue, args: ['cus_3', activityQueue] });
      // Wait until the fallback charge is scheduled (the fast one timed out), then bring the activity worker up.
      for (let i = 0; ; i += 1) {
        const { events } = await handle.fetchHistory();
        if ((events ?? []).filter((e) => e.activityTaskScheduledEventAttributes != null).length >= 2) break;
        if (i > 200) throw new Error('the fallback charge was never scheduled');
        await new Promise((r) => setTimeout(r, 100));
      }
      const activityWorker = await workerOn(activityQueue);
      await activityWorker.runUntil(async () => {
        await handle.result();
        expect(ledger(workflowId)).toHaveLength(1);
        // Reset with the activity worker up: the reset run's fast-path charge starts now.
        const resetRun = await resetToFirst(workflowId, handle.firstExecutionRunId);
        await env.client.workflow.getHandle(workflowId, resetRun).result();
      });
    });
    if (process.env.RESET_DEBUG) console.log(JSON.stringify(ledger(workflowId)));
    // Each branch asked for the charge once (the discarded branch's first call applied nothing).
    expect(ledger(workflowId).map((e) => e.amountCents)).toEqual([100]);
  });

  it('continue-as-new without a reset: each segment applies its own charge', async () => {
    const taskQueue = 'adv-reset-can-same';
    const workflowId = 'adv-reset-can-same-1';
    const worker = await workerOn(taskQueue);
    await worker.runUntil(async () => {
      await env.client.workflow.start('chargeEverySegment', { workflowId, taskQueue, args: ['cus_4', 2] });
      return env.client.workflow.getHandle(workflowId).result();
    });
    // Three segments each charge once: "a continued run counts afresh".
    expect(ledger(workflowId).map((e) => e.amountCents)).toEqual([100, 100, 100]);
  });

  // A run hands its continuation the scope named after the run that first wrote its start
  // (`nextSegmentScope`), which a reset keeps: the reset lineage's later segments meet the discarded ones.
  it("resetting an EARLIER (closed) run of a continued chain never applies the later segments' charges again", async () => {
    const taskQueue = 'adv-reset-can-earlier';
    const workflowId = 'adv-reset-can-earlier-1';
    const worker = await workerOn(taskQueue);
    await worker.runUntil(async () => {
      await env.client.workflow.start('chargeDistinctPerSegment', { workflowId, taskQueue, args: ['cus_5', 2] });
      const last = env.client.workflow.getHandle(workflowId);
      await last.result();
      const runs = await chainRuns(workflowId, (await last.describe()).runId);
      expect(runs).toHaveLength(3);
      expect(ledger(workflowId).map((e) => e.amountCents)).toEqual([102, 101, 100]);
      // Reset the middle run (it continued as new) to its first workflow task: it charges 101 again and continues.
      await resetToFirst(workflowId, runs[1]!);
      await env.client.workflow.getHandle(workflowId).result();
    });
    if (process.env.RESET_DEBUG) console.log(JSON.stringify(ledger(workflowId)));
    // The discarded branch (runs 2 and 3) applied 101 and 100; the new branch asks for the same: nothing new.
    expect(ledger(workflowId).map((e) => e.amountCents)).toEqual([102, 101, 100]);
  });

  it('workflow retries (each a new run continued from the last): every attempt applies its own charge', async () => {
    const taskQueue = 'adv-reset-retry';
    const workflowId = 'adv-reset-retry-1';
    const worker = await workerOn(taskQueue);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('chargeThenFail', {
        workflowId,
        taskQueue,
        args: ['cus_6'],
        retry: { initialInterval: '200ms', backoffCoefficient: 1, maximumAttempts: 3 },
      });
      await handle.result();
    });
    if (process.env.RESET_DEBUG) console.log(JSON.stringify(ledger(workflowId)));
    // Either every attempt charges (a retry runs the workflow afresh, as before 1c5e992) or only the
    // first does (never repeat across the chain); the second and third attempts must agree.
    expect([1, 3]).toContain(ledger(workflowId).length);
  });
});
