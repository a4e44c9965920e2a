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
 * The rule now: a stored result is delivered to a call only when it was made for the same tool
 * and the same input (any revision); another call at the same call id fails closed with a
 * non-retryable BINDING_CONFLICT, and nothing runs. (Giving a reset run's calls their own
 * identity, so they run, is a follow-up.)
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

/** The `type` of every ApplicationFailure in an error's cause chain. */
function causeTypes(error: unknown): string[] {
  const types: string[] = [];
  for (let e = error as { type?: unknown; cause?: unknown } | undefined; e !== undefined && e !== null; e = e.cause as typeof e) {
    if (typeof e.type === 'string') types.push(e.type);
  }
  return types;
}

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

  it('a reset run that charges ANOTHER amount never gets the old charge: BINDING_CONFLICT, nothing run', async () => {
    const { first, second, ledger } = await runThenReset('amount', chargeSignalledAmount, amountSignal, 100, 200);
    expect(first).toEqual({ chargeId: 'charge-1', amountCents: 100 });
    // The reset run asked for a charge of 200: never answered with the 100 charge; refused, nothing run.
    expect(second.value).toBeUndefined();
    expect(causeTypes(second.failure)).toContain('BINDING_CONFLICT');
    expect(ledger.map((e) => e.amountCents)).toEqual([100]);
  });

  it('a reset run that REFUNDS instead of charging never receives the old charge as its refund result: BINDING_CONFLICT, nothing run', async () => {
    const { first, second, ledger } = await runThenReset('kind', chargeOrRefund, actionSignal, 'charge', 'refund');
    expect(first).toEqual({ chargeId: 'charge-1', amountCents: 100 });
    // refundCard never receives the charge as its result; refused, nothing run.
    expect(second.value).toBeUndefined();
    expect(causeTypes(second.failure)).toContain('BINDING_CONFLICT');
    expect(ledger.map((e) => e.kind)).toEqual(['charge']);
  });
});
