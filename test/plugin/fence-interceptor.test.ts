/**
 * The fence interceptor without a server (MockActivityEnvironment): which calls it fences, the
 * call identity without the workflow interceptor's header, the plugin given twice, and option
 * checks. The header path needs a real worker (plugin-fence.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { WorkerOptions } from '@temporalio/worker';
import { z } from 'zod';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { defineTool } from '../../src/activities';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';

const INFO = { activityType: 'chargeCard', activityId: '7', workflowExecution: { workflowId: 'wf-unit', runId: 'run-unit' } };

describe('ToolFenceInboundInterceptor', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-fence-unit-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The activity interceptor factories the plugin adds, applied `times` times (as Worker.create would). */
  function interceptorsOf(plugin: ToolCheckpointPlugin, times = 1): NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']> {
    let options = { taskQueue: 'unit' } as WorkerOptions;
    for (let i = 0; i < times; i += 1) options = plugin.configureWorker(options);
    return options.interceptors?.activity ?? [];
  }

  it('without the call header, keys the call by activity id in the run, and redelivers the stored result without calling the activity', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } });
    const keys: Array<string | undefined> = [];
    const charge = async (customer: string): Promise<{ chargeId: string; customer: string }> => {
      keys.push(fencedCallContext()?.idempotencyKey);
      return { chargeId: `ch-${keys.length}`, customer };
    };
    const first = await new MockActivityEnvironment(INFO, { interceptors: interceptorsOf(plugin) }).run(charge, 'cus_1');
    const again = await new MockActivityEnvironment({ ...INFO, attempt: 2 }, { interceptors: interceptorsOf(plugin) }).run(charge, 'cus_1');
    expect(first).toEqual({ chargeId: 'ch-1', customer: 'cus_1' });
    expect(again).toEqual(first);
    expect(keys).toHaveLength(1);
    const record = await store.getByCall('default/default', callBindingId({ runChainId: 'run-unit', workflowId: 'wf-unit', callId: 'activity-7' }));
    expect(record?.result?.payload).toEqual({ ok: true, output: first, receipt: null });
  });

  it('passes activities it does not fence straight through', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } });
    const result = await new MockActivityEnvironment({ ...INFO, activityType: 'refund' }, { interceptors: interceptorsOf(plugin) }).run(
      async () => fencedCallContext() ?? 'unfenced',
    );
    expect(result).toBe('unfenced');
  });

  it('fences once when the plugin is applied twice', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } });
    let calls = 0;
    const interceptors = interceptorsOf(plugin, 2);
    expect(interceptors).toHaveLength(2);
    const result = await new MockActivityEnvironment({ ...INFO, activityId: 'twice' }, { interceptors }).run(async () => ({ n: (calls += 1) }));
    expect(result).toEqual({ n: 1 });
  });

  it('stores a rejected call as its result and fails every attempt with it, non-retryably', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } });
    const reject = async (): Promise<never> => {
      throw Object.assign(new Error('card declined'), { kind: 'rejected', type: 'BUSINESS_REJECTION' });
    };
    const info = { ...INFO, activityId: 'declined' };
    for (const attempt of [1, 2]) {
      await expect(new MockActivityEnvironment({ ...info, attempt }, { interceptors: interceptorsOf(plugin) }).run(reject)).rejects.toMatchObject({
        type: 'BUSINESS_REJECTION',
        nonRetryable: true,
        message: 'card declined',
      });
    }
  });

  it.each([
    ['fail', true, "onUnknownOutcome 'fail': the activity fails without a retry and your workflow decides"],
    ['wait', false, "onUnknownOutcome 'wait': the call is tried again every 60000 ms and delivers its outcome once a person has stored it (ttc resolve-in-store)"],
  ] as const)(
    "an unknown outcome in the user's own workflow (onUnknownOutcome %s) names OUTCOME_UNKNOWN once, says what happens to the activity, not that a run waits, and names the key",
    async (mode, nonRetryable, says) => {
      const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, onUnknownOutcome: mode, unknownOutcomeRetryMs: 60_000 });
      const keys: Array<string | undefined> = [];
      const dropped = async (): Promise<never> => {
        keys.push(fencedCallContext()?.idempotencyKey);
        throw new Error('connection reset after the request was sent');
      };
      const failure = await new MockActivityEnvironment({ ...INFO, activityId: `unknown-${mode}` }, { interceptors: interceptorsOf(plugin) }).run(dropped).then(
        () => null,
        (error: unknown) => error as { type?: string; message: string; nonRetryable?: boolean; details?: unknown[]; cause?: unknown },
      );
      expect(failure).toMatchObject({ type: 'OUTCOME_UNKNOWN', nonRetryable });
      expect(failure!.message).not.toMatch(/OUTCOME_UNKNOWN/);
      expect(failure!.message).not.toContain('the run waits for a person');
      expect(failure!.message).toBe(
        `chargeCard call activity-unknown-${mode}: the outcome is unknown and cannot be looked up (connection reset after the request was sent); ${says}; look the effect up at the provider by idempotency key ${keys[0]}`,
      );
      // The failure chain does not repeat the message in a cause.
      expect(failure!.cause).toBeUndefined();
      expect(failure!.details?.[0]).toMatchObject({ callId: `activity-unknown-${mode}`, toolName: 'chargeCard', toolRevision: 'v1', idempotencyKey: keys[0] });
    },
  );

  it('refuses bad options when constructed', () => {
    const tool = defineTool({ name: 'chargeCard', revision: 'v1', input: z.object({}), execute: async () => ({ output: null }) });
    expect(() => new ToolCheckpointPlugin({ store, tools: [tool], fence: { chargeCard: { revision: 'v1' } } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => new ToolCheckpointPlugin({ store, fence: { __temporal_x: { revision: 'v1' } } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: '' } } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1', dedupesByKey: true } } })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    // @ts-expect-error the store is required
    expect(() => new ToolCheckpointPlugin({ fence: {} })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
