/**
 * A paused call in a user's own workflow (docs/protocol.md#worker-plugin; real dev server, real SQLite
 * store, the plugin on a real worker). The activity applies its effect, then fails without
 * proof (a plain Error): its outcome is unknown and there is no lookup.
 * - default `onUnknownOutcome: 'fail'`: the activity fails at once, non-retryably, with type
 *   OUTCOME_UNKNOWN naming the call, although the workflow's retry policy has no attempt limit;
 * - `'wait'`: the attempt fails retryably after `unknownOutcomeRetryMs`, each later attempt only
 *   re-reads the store; a person stores the outcome (`get`, `completeExecution` under the stored
 *   attempt id, CAS), and the next attempt delivers it: the workflow returns it, the effect ran once.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { defineTool } from '../../src/activities';
import { completeExecution } from '../../src/checkpoint/transitions';
import type { CheckpointRecord, JsonValue } from '../../src/checkpoint/types';
import { ToolCheckpointPlugin, fencedCallContext, type ToolCheckpointPluginOptions } from '../../src/plugin';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { readLedger } from './payment-activities';
import { callUntilDoneWorkflow } from './plugin-errors-workflows';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

describe("onUnknownOutcome: a paused call in the user's own workflow", () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-unknown-outcome-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A charge that is applied (a ledger line), then fails as a dropped connection would: the fence cannot know it was applied. */
  function chargeThenDrop(ledger: string): { calls: () => number; chargeCard: (customer: string) => Promise<never> } {
    let calls = 0;
    return {
      calls: () => calls,
      async chargeCard(customer) {
        calls += 1;
        appendFileSync(
          ledger,
          `${JSON.stringify({ kind: 'charge', customer, id: `ch-${calls}`, idempotencyKey: fencedCallContext()?.idempotencyKey ?? null, pid: process.pid })}\n`,
        );
        throw new Error('connection reset after the request was sent');
      },
    };
  }

  async function startWorker(
    taskQueue: string,
    activities: Record<string, (...args: never[]) => Promise<unknown>>,
    options: Omit<ToolCheckpointPluginOptions, 'store'>,
  ): Promise<Worker> {
    return Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./plugin-errors-workflows'),
      activities,
      plugins: [new ToolCheckpointPlugin({ store, ...options })],
    });
  }

  /** The call's checkpoint, by the call id the header (`act-1`) or the tool input gives it. */
  async function checkpointOf(workflowId: string, namespace: string, callId: string): Promise<CheckpointRecord | null> {
    const description = await env.client.workflow.getHandle(workflowId).describe();
    const runChainId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
    return store.getByCall(namespace, callBindingId({ runChainId, workflowId, callId }));
  }

  /** The pending activity's attempt and last failure, once `ready` holds for them. */
  async function waitForPendingActivity(
    handle: WorkflowHandle,
    ready: (attempt: number) => boolean,
  ): Promise<{ attempt: number; failureType: string | null | undefined; nonRetryable: boolean | null | undefined; backoffMs: number }> {
    for (let i = 0; i < 300; i += 1) {
      const pending = (await handle.describe()).raw.pendingActivities?.[0];
      const attempt = pending?.attempt ?? 0;
      const [failed, next] = [pending?.lastAttemptCompleteTime, pending?.nextAttemptScheduleTime].map((t) =>
        t ? Number(t.seconds) * 1_000 + Math.round((t.nanos ?? 0) / 1e6) : null,
      );
      // Between attempts (the server has scheduled the next one): how long it waits.
      if (ready(attempt) && failed != null && next != null) {
        const info = pending?.lastFailure?.applicationFailureInfo;
        return { attempt, failureType: info?.type, nonRetryable: info?.nonRetryable, backoffMs: next - failed };
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the activity never reached the expected attempt');
  }

  /** What a person does: read the record, store the outcome under the stored attempt id with a CAS. */
  async function storeOutcomeAsAPerson(found: CheckpointRecord, output: JsonValue): Promise<void> {
    const record = await store.get(found.binding);
    expect(record?.status).toBe('uncertain');
    const at = new Date(Math.max(Date.now(), Date.parse(record!.updatedAt))).toISOString();
    const done = completeExecution(record!, { attemptId: record!.execution!.attemptId, at, result: { ok: true, output, receipt: null } });
    expect(await store.compareAndSwap(done.expectedRevision, done.next, record!)).toBe(true);
  }

  it("by default ('fail'), the activity fails at once and non-retryably with OUTCOME_UNKNOWN naming the call, whatever the retry policy", async () => {
    const ledger = join(dir, 'fail.jsonl');
    const activity = chargeThenDrop(ledger);
    const worker = await startWorker('unknown-fail', { chargeCard: activity.chargeCard }, { fence: { chargeCard: { revision: 'v1' } } });
    const failure = await worker.runUntil(
      env.client.workflow.execute(callUntilDoneWorkflow, { workflowId: 'unknown-fail', taskQueue: 'unknown-fail', args: ['chargeCard', 'cus_1'] }).then(
        () => null,
        (error: unknown) => error,
      ),
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const activityFailure = (failure as WorkflowFailedError).cause as ActivityFailure;
    expect(activityFailure).toBeInstanceOf(ActivityFailure);
    const cause = activityFailure.cause as ApplicationFailure;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause).toMatchObject({ type: 'OUTCOME_UNKNOWN', nonRetryable: true });
    expect(cause.details?.[0]).toMatchObject({ callId: 'act-1', toolName: 'chargeCard', idempotencyKey: expect.stringMatching(/^ttc/) });
    expect(activity.calls()).toBe(1);
    expect(readLedger(ledger)).toHaveLength(1);
    const history = await env.client.workflow.getHandle('unknown-fail').fetchHistory();
    expect((history.events ?? []).flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []))).toEqual([1]);
  });

  it("with 'wait', the activity retries without writing; once a person stores the outcome, the next attempt delivers it (the effect ran once)", async () => {
    const ledger = join(dir, 'wait.jsonl');
    const activity = chargeThenDrop(ledger);
    const worker = await startWorker(
      'unknown-wait',
      { chargeCard: activity.chargeCard },
      { fence: { chargeCard: { revision: 'v1' } }, onUnknownOutcome: 'wait', unknownOutcomeRetryMs: 400 },
    );
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(callUntilDoneWorkflow, { workflowId: 'unknown-wait', taskQueue: 'unknown-wait', args: ['chargeCard', 'cus_2'] });
      // Attempt 1 ran the activity and paused; attempt 2 re-read the store and waits again.
      const waiting = await waitForPendingActivity(handle, (attempt) => attempt >= 3);
      expect(waiting).toMatchObject({ failureType: 'OUTCOME_UNKNOWN', nonRetryable: false });
      // The next attempt comes after unknownOutcomeRetryMs (400 ms), not after the policy's 100 ms.
      expect(waiting.backoffMs).toBeGreaterThanOrEqual(400);
      expect(waiting.backoffMs).toBeLessThan(1_000);
      const paused = await checkpointOf('unknown-wait', 'default/default', 'act-1');
      expect(paused?.status).toBe('uncertain');
      await waitForPendingActivity(handle, (attempt) => attempt >= waiting.attempt + 1);
      // Later attempts wrote nothing: the record is exactly as the pause left it.
      expect((await checkpointOf('unknown-wait', 'default/default', 'act-1'))?.revision).toBe(paused?.revision);
      await storeOutcomeAsAPerson(paused!, { chargeId: readLedger(ledger)[0]!.id });
      return handle.result();
    });
    expect(result).toEqual({ chargeId: 'ch-1' });
    expect(activity.calls()).toBe(1);
    expect(readLedger(ledger)).toHaveLength(1);
    const record = await checkpointOf('unknown-wait', 'default/default', 'act-1');
    expect(record?.status).toBe('delivered');
  });

  it("with 'wait', a plugin tool's paused call waits too, and delivers what the person stored", async () => {
    let executions = 0;
    const sendEmail = defineTool({
      name: 'send_email',
      revision: 'v1',
      input: z.object({ to: z.string() }).strict(),
      async execute() {
        executions += 1;
        throw new Error('SMTP connection dropped after DATA');
      },
    });
    const worker = await startWorker('unknown-wait-tool', {}, { tools: [sendEmail], onUnknownOutcome: 'wait', unknownOutcomeRetryMs: 400 });
    const result = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(callUntilDoneWorkflow, {
        workflowId: 'unknown-wait-tool',
        taskQueue: 'unknown-wait-tool',
        args: ['send_email', { tenant: 'acme', callId: 'call-1', input: { to: 'ops@example.com' } }],
      });
      expect(await waitForPendingActivity(handle, (attempt) => attempt >= 2)).toMatchObject({ failureType: 'OUTCOME_UNKNOWN', nonRetryable: false });
      await storeOutcomeAsAPerson((await checkpointOf('unknown-wait-tool', 'default/acme', 'call-1'))!, { messageId: 'm-1' });
      return handle.result();
    });
    expect(result).toMatchObject({ toolName: 'send_email', source: 'store', outcome: { ok: true, output: { messageId: 'm-1' }, receipt: null } });
    expect(executions).toBe(1);
  });

  it("with 'wait', other failures keep their retryability: a nonRetryable ApplicationFailure still fails at once", async () => {
    let calls = 0;
    const chargeCard = async (): Promise<never> => {
      calls += 1;
      throw ApplicationFailure.nonRetryable('card declined', 'CardDeclined');
    };
    const worker = await startWorker('unknown-wait-declined', { chargeCard }, { fence: { chargeCard: { revision: 'v1' } }, onUnknownOutcome: 'wait', unknownOutcomeRetryMs: 400 });
    const failure = await worker.runUntil(
      env.client.workflow.execute(callUntilDoneWorkflow, { workflowId: 'unknown-wait-declined', taskQueue: 'unknown-wait-declined', args: ['chargeCard', 'cus_3'] }).then(
        () => null,
        (error: unknown) => error,
      ),
    );
    expect(((failure as WorkflowFailedError).cause as ActivityFailure).cause).toMatchObject({ type: 'CardDeclined', nonRetryable: true });
    expect(calls).toBe(1);
  });

  it('refuses a bad onUnknownOutcome or unknownOutcomeRetryMs when the plugin is built', () => {
    const build = (options: Partial<ToolCheckpointPluginOptions>) => () => new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, ...options });
    expect(build({ onUnknownOutcome: 'later' as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'onUnknownOutcome' }) }),
    );
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '300000' as never]) {
      expect(build({ onUnknownOutcome: 'wait', unknownOutcomeRetryMs: bad })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'unknownOutcomeRetryMs' }) }),
      );
    }
    expect(build({ onUnknownOutcome: 'wait', unknownOutcomeRetryMs: 1 })).not.toThrow();
  });
});
