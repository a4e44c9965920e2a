/**
 * A failure the tool proves not applied (a 503 before the provider accepted the request,
 * classified `transient`) leaves the call to the next attempt: the attempt gives its claim back
 * (`releaseExecution`, executing → ready) and fails retryably (RECONCILE_PENDING, cause
 * TRANSIENT_EXHAUSTED), and the next attempt sends the call again under the same idempotency key.
 * Only the end of the attempts stores TRANSIENT_EXHAUSTED as the call's final result: the retry
 * policy's last attempt (`maximumAttempts`), or an attempt after which the next one would start
 * past the schedule-to-close deadline (agentWorkflow: the run's deadline). Under the plugin, one
 * 503 no longer ends the activity for good. Real SQLite store (TTC_ADVERSARIAL_STORE=postgres:
 * PostgreSQL).
 */
import fc from 'fast-check';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { WorkerOptions } from '@temporalio/worker';
import { classifyHttpFailure, defineTool, ToolError, type ToolDefinition } from '../../src/activities';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { Harness, Provider, schema, typeOf, type Call, type Outcome } from './harness';

jest.setTimeout(120_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

/** A provider that answers 503 before accepting the request while `unavailable()` says so. */
function ticketTool(provider: Provider, unavailable: () => boolean): ToolDefinition<any> {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: schema,
    callDeadlineMs: 5_000,
    async execute(_input, ctx) {
      provider.requests.push(ctx.idempotencyKey);
      if (unavailable()) {
        const c = classifyHttpFailure({ status: 503 });
        throw new ToolError(c.kind, 'HTTP 503 Service Unavailable', undefined, c.type);
      }
      return { output: provider.find(ctx.idempotencyKey) ?? provider.apply(ctx.idempotencyKey) };
    },
  });
}

/** Attempt `n` under a retry policy of `maximumAttempts` (0: unlimited) and a schedule-to-close timeout (0: none). */
async function attempt(acts: ReturnType<Harness['activities']>, call: Call, n: number, maximumAttempts: number, scheduleToCloseTimeoutMs = 0): Promise<Outcome> {
  const env = new MockActivityEnvironment(
    {
      attempt: n,
      workflowExecution: { workflowId: call.workflowId, runId: call.runId },
      heartbeatTimeoutMs: 30_000,
      retryPolicy: maximumAttempts > 0 ? { maximumAttempts, initialInterval: 1_000, backoffCoefficient: 2 } : { initialInterval: 1_000, backoffCoefficient: 2 },
      scheduledTimestampMs: h.clock().getTime(),
      scheduleToCloseTimeoutMs,
    } as never,
    { logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined } },
  );
  return h.run(acts, call, n, env);
}

const FAST = { transientRetry: { initialIntervalMs: 1, maximumIntervalMs: 1, maximumAttempts: 2 } };

describe('a transient failure proven not applied', () => {
  test('a 503 on attempt 1 of 3 releases the claim (ready again, no result) and fails retryably; attempt 2 sends the call again under the same key and stores its result: one effect', async () => {
    const provider = new Provider();
    let down = true;
    const acts = h.activities([ticketTool(provider, () => down)], FAST);
    const call = h.newCall();

    const first = await attempt(acts, call, 1, 3);
    expect(first).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
    const released = await h.recordOf(call);
    expect({ status: released?.status, result: released?.result, execution: released?.execution }).toEqual({ status: 'ready', result: null, execution: null });

    down = false;
    const second = await attempt(acts, call, 2, 3);
    expect(typeOf(second)).toBe('result:executed');
    expect(new Set(provider.requests).size).toBe(1); // every request under the call's one idempotency key
    expect(provider.total()).toBe(1);
  });

  test('the last attempt of the retry policy stores TRANSIENT_EXHAUSTED as the call final result, and every later attempt delivers it', async () => {
    const provider = new Provider();
    const acts = h.activities([ticketTool(provider, () => true)], FAST);
    const call = h.newCall();
    for (const n of [1, 2]) expect(typeOf(await attempt(acts, call, n, 3))).toBe('failure:RECONCILE_PENDING');
    const last = await attempt(acts, call, 3, 3);
    expect(last).toEqual({
      result: expect.objectContaining({ source: 'executed', outcome: expect.objectContaining({ ok: false, error: expect.objectContaining({ type: 'TRANSIENT_EXHAUSTED' }) }) }),
    });
    expect((await h.recordOf(call))?.result?.payload).toEqual(expect.objectContaining({ ok: false }));
    expect(typeOf(await attempt(acts, call, 4, 3))).toBe('result:store');
    expect(provider.total()).toBe(0);
  });

  test('the attempt after which the next one would start past the schedule-to-close deadline (the run deadline) stores TRANSIENT_EXHAUSTED', async () => {
    const provider = new Provider();
    const acts = h.activities([ticketTool(provider, () => true)], FAST);
    const call = h.newCall();
    // Unlimited attempts; 500 ms left before schedule-to-close, the next attempt would start after 1 s.
    const only = await attempt(acts, call, 1, 0, 500);
    expect(only).toEqual({ result: expect.objectContaining({ outcome: expect.objectContaining({ ok: false, error: expect.objectContaining({ type: 'TRANSIENT_EXHAUSTED' }) }) }) });
  });

  test('property: over any sequence of available / unavailable attempts, the call ends with at most one effect, every request under one key, and TRANSIENT_EXHAUSTED stored only by the last attempt', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }), async (maximumAttempts, downs) => {
        const provider = new Provider();
        let n = 0;
        const acts = h.activities([ticketTool(provider, () => downs[n - 1]!)], FAST);
        const call = h.newCall();
        let end: Outcome | undefined;
        for (n = 1; n <= maximumAttempts; n += 1) {
          end = await attempt(acts, call, n, maximumAttempts);
          if (!('failure' in end)) break;
          expect(end.failure).toEqual(expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }));
        }
        const stopped = Math.min(n, maximumAttempts);
        const stored = (await h.recordOf(call))?.result?.payload as { ok: boolean; error?: { type: string } } | undefined;
        expect(end).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
        expect(provider.total()).toBe(stored?.ok === true ? 1 : 0);
        expect(new Set(provider.requests).size).toBe(1);
        if (stored?.ok === false) expect({ type: stored.error?.type, by: stopped }).toEqual({ type: 'TRANSIENT_EXHAUSTED', by: maximumAttempts });
      }),
      { numRuns: 30 },
    );
  });
});

describe("the plugin's fence for a user's activity", () => {
  function interceptorsOf(plugin: ToolCheckpointPlugin): NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']> {
    return plugin.configureWorker({ taskQueue: 'transient-not-applied' } as WorkerOptions).interceptors?.activity ?? [];
  }

  test('one 503 (classified transient) no longer ends the activity: attempt 1 of 3 fails retryably, attempt 2 runs the activity again and returns its value; the last attempt makes TRANSIENT_EXHAUSTED final', async () => {
    const plugin = new ToolCheckpointPlugin({
      store: h.store,
      clock: h.clock,
      fence: { chargeCard: { revision: 'v1', classifyError: (e) => ((e as { status?: number }).status === 503 ? 'transient' : 'unknown-outcome') } },
    });
    const workflowId = `wf-transient-${(h.seq += 1)}`;
    const run = async (n: number, activity: () => Promise<unknown>, activityId = '1'): Promise<unknown> => {
      const info = {
        activityType: 'chargeCard',
        activityId,
        workflowExecution: { workflowId, runId: 'run-1' },
        attempt: n,
        retryPolicy: { maximumAttempts: 3 },
        scheduleToCloseTimeoutMs: 0,
      };
      try {
        return { value: await new MockActivityEnvironment(info, { interceptors: interceptorsOf(plugin) }).run(activity) };
      } catch (error) {
        if (!(error instanceof ApplicationFailure)) throw error;
        return { type: error.type, nonRetryable: error.nonRetryable === true };
      }
    };
    const unavailable = async (): Promise<never> => {
      throw Object.assign(new Error('HTTP 503'), { status: 503 });
    };
    let charges = 0;
    const charge = async (): Promise<{ chargeId: string }> => ({ chargeId: `ch-${(charges += 1)}` });

    expect(await run(1, unavailable)).toEqual({ type: 'RECONCILE_PENDING', nonRetryable: false });
    expect(await run(2, charge)).toEqual({ value: { chargeId: 'ch-1' } });
    expect(charges).toBe(1);

    // Another call, unavailable on every attempt: the third and last attempt stores the failure as final.
    expect(await run(1, unavailable, '2')).toEqual({ type: 'RECONCILE_PENDING', nonRetryable: false });
    expect(await run(2, unavailable, '2')).toEqual({ type: 'RECONCILE_PENDING', nonRetryable: false });
    expect(await run(3, unavailable, '2')).toEqual({ type: 'TRANSIENT_EXHAUSTED', nonRetryable: true });
    const record = await h.store.getByCall('default/default', callBindingId({ runChainId: 'run-1', workflowId, callId: 'activity-2' }));
    expect(record?.result?.payload).toEqual(expect.objectContaining({ ok: false, error: expect.objectContaining({ type: 'TRANSIENT_EXHAUSTED' }) }));
  });
});
