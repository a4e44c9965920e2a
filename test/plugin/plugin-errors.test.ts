/**
 * Errors of a fenced user activity (real dev server, real SQLite store, the plugin on a real
 * worker). A `nonRetryable` ApplicationFailure is the call's final error result: the workflow
 * sees what it would see unfenced (ActivityFailure → ApplicationFailure with the user's type and
 * message, no retry), the activity runs once, and a later attempt delivers the stored failure
 * without running it. A custom `classifyError` can mark an error `rejected`; a retryable error
 * still leaves the outcome unknown (paused, or reconciled by `lookup`).
 */
import { appendFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import type { FencePoint, ToolContext } from '../../src/activities';
import { ToolCheckpointPlugin, fencedCallContext, type FencedActivityOptions } from '../../src/plugin';
import { defaultClassifyError } from '../../src/plugin/error-classification';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { readLedger } from './payment-activities';
import { callActivityWorkflow } from './plugin-errors-workflows';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

/** A retryable error a user's code defines (unfenced, Temporal retries it). */
class CardDeclinedError extends Error {
  override readonly name = 'CardDeclinedError';
}

/** What the workflow's failure carried, as the client sees it. */
interface SeenFailure {
  readonly type: string | null | undefined;
  readonly message: string;
  readonly nonRetryable: boolean | null | undefined;
  readonly details: unknown;
}

describe('errors of a fenced user activity', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  /** The workflows bundled once with the plugin's workflow interceptor (as `bundleWorkflowCode({ plugins })` does), for the fenced runs. */
  let fencedBundle: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-plugin-errors-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    const bundlingPlugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } });
    [env, fencedBundle] = await Promise.all([
      createLocalEnv(),
      bundleWorkflowCode({ workflowsPath: require.resolve('./plugin-errors-workflows'), plugins: [bundlingPlugin], logger: quietLogger }),
    ]);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Runs `callActivityWorkflow('chargeCard', 'cus_1')` on a fresh worker whose `chargeCard` is
   * `activity`, fenced by `fence` (unfenced when null). @returns the workflow's result or failure,
   * how often the activity ran, and the attempt the activity's last start was.
   */
  async function run(
    workflowId: string,
    activity: () => Promise<unknown>,
    fence: FencedActivityOptions | null,
    extra: { hooks?: { step(p: FencePoint): void }; reconcileMarginMs?: number } = {},
  ) {
    let calls = 0;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: workflowId,
      // The unfenced run bundles its workflows without the plugin; the fenced runs share the bundle made once with it.
      ...(fence === null ? { workflowsPath: require.resolve('./plugin-errors-workflows') } : { workflowBundle: fencedBundle }),
      activities: {
        chargeCard: async () => {
          calls += 1;
          return activity();
        },
      },
      plugins: fence === null ? [] : [new ToolCheckpointPlugin({ store, fence: { chargeCard: fence }, ...extra })],
    });
    const outcome = await worker.runUntil(
      env.client.workflow.execute(callActivityWorkflow, { workflowId, taskQueue: workflowId, args: ['chargeCard', 'cus_1'] }).then(
        (value) => ({ value, failure: null }),
        (error: unknown) => ({ value: null, failure: activityCause(error) }),
      ),
    );
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const started = (history.events ?? []).flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
    return { ...outcome, calls, lastStartedAttempt: started.at(-1) };
  }

  /** The ApplicationFailure behind a WorkflowFailedError from an activity's failure. */
  function activityCause(error: unknown): SeenFailure {
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const activityFailure = (error as WorkflowFailedError).cause;
    expect(activityFailure).toBeInstanceOf(ActivityFailure);
    const cause = (activityFailure as ActivityFailure).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    const { type, message, nonRetryable, details } = cause as ApplicationFailure;
    return { type, message, nonRetryable, details };
  }

  async function checkpointOf(workflowId: string) {
    const handle = env.client.workflow.getHandle(workflowId);
    const description = await handle.describe();
    const runChainId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
    return store.getByCall('default/default', callBindingId({ runChainId, workflowId, callId: 'act-1' }));
  }

  const declined = async (): Promise<never> => {
    throw ApplicationFailure.nonRetryable('card declined', 'CardDeclined');
  };

  it("a nonRetryable ApplicationFailure fails the workflow as it would unfenced (user type and message, no retry), and is stored as the call's result", async () => {
    const unfenced = await run('errors-unfenced', declined, null);
    const fenced = await run('errors-fenced', declined, { revision: 'v1' });
    expect(unfenced.failure).toMatchObject({ type: 'CardDeclined', message: 'card declined', nonRetryable: true });
    expect(fenced.failure).toMatchObject({ type: 'CardDeclined', message: 'card declined', nonRetryable: true });
    // Same outcome as unfenced: one run of the activity, no retry.
    expect(unfenced.calls).toBe(1);
    expect(fenced.calls).toBe(1);
    expect(fenced.lastStartedAttempt).toBe(1);
    const record = await checkpointOf('errors-fenced');
    expect(record?.status).toBe('delivered');
    expect(record?.result?.payload).toEqual({ ok: false, error: { type: 'CardDeclined', message: 'card declined' } });
  });

  it('a later attempt delivers the stored failure without running the activity', async () => {
    let failed = false;
    const hooks = {
      step(point: FencePoint) {
        if (point === 'after-result-stored' && !failed) {
          failed = true;
          throw new Error('test hook: attempt 1 dies after its result is stored');
        }
      },
    };
    const outcome = await run('errors-redelivered', declined, { revision: 'v1' }, { hooks });
    expect(failed).toBe(true);
    expect(outcome.calls).toBe(1);
    expect(outcome.lastStartedAttempt).toBe(2);
    expect(outcome.failure).toMatchObject({ type: 'CardDeclined', message: 'card declined', nonRetryable: true });
    expect(outcome.failure?.details).toEqual([expect.objectContaining({ toolName: 'chargeCard', source: 'store' })]);
  });

  it('a custom classifyError marks a retryable error rejected: stored under its name, never retried', async () => {
    const throwDeclined = async (): Promise<never> => {
      throw new CardDeclinedError('insufficient funds');
    };
    const classifyError = (error: unknown) => (error instanceof CardDeclinedError ? 'rejected' : defaultClassifyError(error));
    const outcome = await run('errors-classified', throwDeclined, { revision: 'v1', classifyError });
    expect(outcome.failure).toMatchObject({ type: 'CardDeclinedError', message: 'insufficient funds', nonRetryable: true });
    expect(outcome.calls).toBe(1);
    expect(outcome.lastStartedAttempt).toBe(1);
    expect((await checkpointOf('errors-classified'))?.result?.payload).toEqual({ ok: false, error: { type: 'CardDeclinedError', message: 'insufficient funds' } });
  });

  it.each([
    { name: 'a plain Error', error: () => new Error('connection reset'), classifyError: undefined },
    { name: 'a retryable ApplicationFailure', error: () => ApplicationFailure.retryable('gateway timeout', 'GatewayTimeout'), classifyError: undefined },
    {
      name: 'a nonRetryable ApplicationFailure whose classifier throws',
      error: () => ApplicationFailure.nonRetryable('card declined', 'CardDeclined'),
      classifyError: () => {
        throw new Error('classifier bug');
      },
    },
    {
      name: 'a nonRetryable ApplicationFailure whose classifier answers nonsense',
      error: () => ApplicationFailure.nonRetryable('card declined', 'CardDeclined'),
      classifyError: () => 'maybe' as never,
    },
  ])('$name still leaves the outcome unknown: without lookup the call pauses as OUTCOME_UNKNOWN', async ({ name, error, classifyError }) => {
    const workflowId = `errors-unknown-${name.replace(/\W+/g, '-')}`;
    const outcome = await run(workflowId, async () => Promise.reject(error()), { revision: 'v1', ...(classifyError === undefined ? {} : { classifyError }) });
    expect(outcome.failure).toMatchObject({ type: 'OUTCOME_UNKNOWN', nonRetryable: true });
    expect(outcome.calls).toBe(1);
    expect((await checkpointOf(workflowId))?.status).toBe('uncertain');
  });

  it('a plain Error after the effect is reconciled by lookup as before: one effect, the workflow gets the found result', async () => {
    const ledger = join(dir, 'reconciled.jsonl');
    const chargeThenReset = async (): Promise<never> => {
      appendFileSync(
        ledger,
        `${JSON.stringify({ kind: 'charge', customer: 'cus_1', id: 'ch-1', idempotencyKey: fencedCallContext()?.idempotencyKey ?? null, pid: process.pid })}\n`,
      );
      throw new Error('connection reset after the charge was applied');
    };
    const lookup = async (ctx: ToolContext) => {
      const entry = readLedger(ledger).find((e) => e.idempotencyKey === ctx.idempotencyKey);
      return entry === undefined ? ({ found: false } as const) : ({ found: true, output: { chargeId: entry.id } } as const);
    };
    const outcome = await run('errors-reconciled', chargeThenReset, { revision: 'v1', callDeadlineMs: 500, lookup }, { reconcileMarginMs: 0 });
    expect(outcome.failure).toBeNull();
    expect(outcome.value).toEqual({ chargeId: 'ch-1' });
    expect(outcome.calls).toBe(1);
    expect(readLedger(ledger)).toHaveLength(1);
    expect((await checkpointOf('errors-reconciled'))?.result?.payload).toEqual({ ok: true, output: { chargeId: 'ch-1' }, receipt: null });
  });

  it('refuses a classifyError that is not a function when the plugin is built', () => {
    expect(() => new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1', classifyError: 'rejected' as never } } })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'classifyError' }) }),
    );
  });
});
