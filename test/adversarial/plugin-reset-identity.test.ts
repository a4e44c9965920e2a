/**
 * Adversarial (identity): a workflow RESET keeps `firstExecutionRunId` and restarts the
 * activity sequence numbers, so the reset run's activity calls get the SAME call ids (`act-<seq>`
 * in the same run chain) as the original run's. When the reset run takes another path (the
 * signal after the reset point differs), its call `act-N` is a different call: another amount,
 * or even another activity type. The fence sees BINDING_CONFLICT (another fingerprint / tool) and
 * `settleFailedAttempt` treated BINDING_CONFLICT as "a deploy changed the binding" and DELIVERED THE
 * OLD CALL'S STORED RESULT: the workflow received a charge of 100 as the result of its charge of
 * 200 (or a charge as the result of its refund), and the new effect was never applied.
 *
 * The rule now (docs/protocol.md#resets): a run other than the chain's first addresses its calls
 * as `act-<seq>@<runId>`, so a reset run's call never lands on a discarded call's checkpoint; a
 * call that is the same action (activity type and arguments, and how many such calls the run made
 * before) as one the discarded branch applied is answered from that call's checkpoint through the
 * occurrence of its action; any other call runs as a call of its own. A stored result is delivered
 * to a call at the same call id only when it was made for the same tool and input.
 *
 * Real dev server, real SQLite store.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { SignalDefinition } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { actionSignal, amountSignal, chargeOrRefund, chargeSignalledAmount, type AdvActivities } from './plugin-workflows';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(120_000);

interface Entry {
  kind: string;
  amountCents: number;
  id: string;
  key: string | null;
}

function ledgerActivities(file: string): AdvActivities {
  const read = (): Entry[] =>
    existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Entry)
      : [];
  const apply = (kind: string, amountCents: number): Entry => {
    const entry = { kind, amountCents, id: `${kind}-${read().length + 1}`, key: fencedCallContext()?.idempotencyKey ?? null };
    appendFileSync(file, `${JSON.stringify(entry)}\n`);
    return entry;
  };
  return {
    async chargeCard(_customer, amountCents) {
      const e = apply('charge', amountCents);
      return { chargeId: e.id, amountCents };
    },
    async refundCard(_customer, amountCents) {
      const e = apply('refund', amountCents);
      return { refundId: e.id, amountCents };
    },
  };
}

function readLedger(file: string): Entry[] {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Entry)
    : [];
}

describe('plugin identity under workflow reset', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv-reset-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Waits until the run's first workflow task completed, so the signal lands after the reset point (not in that task). */
  async function firstTaskCompleted(handle: { fetchHistory(): Promise<{ events?: Array<{ workflowTaskCompletedEventAttributes?: unknown }> | null }> }): Promise<void> {
    for (let i = 0; i < 200; i += 1) {
      const { events } = await handle.fetchHistory();
      if (events?.some((e) => e.workflowTaskCompletedEventAttributes != null)) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('the first workflow task did not complete');
  }

  /** Resets `workflowId` to its first workflow task completion without reapplying signals; returns the new run id. */
  async function resetToFirstTask(workflowId: string, runId: string): Promise<string> {
    const history = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const firstTask = history.events!.find((e) => e.workflowTaskCompletedEventAttributes != null)!;
    const response = await env.client.workflowService.resetWorkflowExecution({
      namespace: env.namespace ?? 'default',
      workflowExecution: { workflowId, runId },
      reason: 'adversarial test: re-run from before the signal',
      workflowTaskFinishEventId: firstTask.eventId,
      requestId: randomUUID(),
      resetReapplyType: 2, // RESET_REAPPLY_TYPE_NONE: the old signal is not reapplied
    });
    return response.runId!;
  }

  async function run<T>(taskQueue: string, ledger: string, body: () => Promise<T>): Promise<T> {
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./plugin-workflows'),
      activities: ledgerActivities(ledger),
      plugins: [new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' }, refundCard: { revision: 'v1' } } })],
    });
    return worker.runUntil(body());
  }

  /**
   * Runs `workflow` on a fresh task queue, signals `before`, waits for its result, resets it to its
   * first workflow task (the signal not reapplied) and signals `after` to the reset run.
   * @returns the first run's result and the reset run's value or failure.
   */
  async function runThenReset<A>(name: string, workflow: typeof chargeSignalledAmount | typeof chargeOrRefund, signal: SignalDefinition<[A]>, before: A, after: A) {
    const ledger = join(dir, `ledger-${name}.jsonl`);
    const taskQueue = `adv-reset-${name}`;
    const workflowId = `adv-reset-${name}-1`;
    const outcome = await run(taskQueue, ledger, async () => {
      const handle = await env.client.workflow.start(workflow, { workflowId, taskQueue, args: [`cus_${name}`] });
      await firstTaskCompleted(handle);
      await handle.signal(signal, before);
      const first = await handle.result();
      const reset = env.client.workflow.getHandle(workflowId, await resetToFirstTask(workflowId, handle.firstExecutionRunId));
      await reset.signal(signal, after);
      const second = await reset.result().then(
        (value: unknown) => ({ value, failure: undefined }),
        (error: unknown) => ({ value: undefined, failure: error }),
      );
      return { first, second };
    });
    return { ...outcome, ledger: readLedger(ledger) };
  }

  it('a reset run that charges ANOTHER amount runs it under its own identity, never receiving the old charge', async () => {
    const { first, second, ledger } = await runThenReset('amount', chargeSignalledAmount, amountSignal, 100, 200);
    expect(first).toEqual({ chargeId: 'charge-1', amountCents: 100 });
    // The reset run asked for a charge of 200: a new call, applied once; the 100 charge is never its answer.
    expect(second.failure).toBeUndefined();
    expect(second.value).toEqual({ chargeId: 'charge-2', amountCents: 200 });
    expect(ledger.map((e) => e.amountCents)).toEqual([100, 200]);
    expect(new Set(ledger.map((e) => e.key)).size).toBe(2);
  });

  it('a reset run that REFUNDS instead of charging runs the refund under its own identity, never receiving the charge', async () => {
    const { first, second, ledger } = await runThenReset('kind', chargeOrRefund, actionSignal, 'charge', 'refund');
    expect(first).toEqual({ chargeId: 'charge-1', amountCents: 100 });
    expect(second.failure).toBeUndefined();
    expect(second.value).toEqual({ refundId: 'refund-2', amountCents: 100 });
    expect(ledger.map((e) => e.kind)).toEqual(['charge', 'refund']);
  });

  it('a reset run that charges the SAME amount again is answered from the discarded call: one charge', async () => {
    const { first, second, ledger } = await runThenReset('same', chargeSignalledAmount, amountSignal, 100, 100);
    expect(first).toEqual({ chargeId: 'charge-1', amountCents: 100 });
    expect(second.failure).toBeUndefined();
    expect(second.value).toEqual({ chargeId: 'charge-1', amountCents: 100 });
    expect(ledger.map((e) => e.amountCents)).toEqual([100]);
  });
});
