/**
 * Batch tools (`ctx.forEachItem`) on a real Temporal dev server with a real SQLite
 * store: every item applied once under its own checkpoint and key, a later attempt resumes after
 * the last settled item, an interrupted item is reconciled (lookup) or paused for a person
 * (no idempotency support) before the next item starts, and a person's resolution of the item
 * lets the batch go on.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { createToolActivities, defineTool, ToolError, type ToolContext } from '../../src/activities';
import type { FencedToolInput } from '../../src/activities/contract/contract';
import type { BatchCancellationReport } from '../../src/activities/contract/batch-items';
import { batchProgressOf } from '../../src/cli/batch-progress';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { callToolOnce } from '../fixtures/batch-workflows';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const TENANT = 'acme';
const RECIPIENTS = Array.from({ length: 100 }, (_, i) => `user-${i + 1}`);

/** The notification provider: what it applied, by item idempotency key, in order. */
interface Provider {
  sent: Array<{ to: string; key: string }>;
  /** Recipient whose send is applied but whose answer is lost (once). */
  loseAnswerOf: string | null;
  /** Recipient whose first send is lost before it reaches the provider (not applied, answer lost). */
  dropRequestOf: string | null;
  /** Start of each item's apply, by recipient, to prove the order. */
  started: string[];
  /** Recipient whose send waits until the activity is cancelled, then is applied. */
  holdUntilCancelled: string | null;
}

function notifyTool(name: string, provider: Provider, withLookup: boolean, callDeadlineMs = 5_000, dedupesByKey = false, keyRetentionMs = 24 * 3_600_000) {
  return defineTool({
    name,
    revision: 'v1',
    batch: true,
    callDeadlineMs,
    ...(dedupesByKey ? { dedupesByKey, keyRetentionMs } : {}),
    input: z.object({ recipients: z.array(z.string()).min(1) }).strict(),
    async execute(input, ctx) {
      const report = await ctx.forEachItem!(
        input.recipients,
        (to) => to,
        async (to, item) => {
          provider.started.push(to);
          if (provider.holdUntilCancelled === to) {
            // The call's signal aborts on cancellation; an item's does not (the batch stops between items).
            while (!ctx.signal.aborted) await new Promise((r) => setTimeout(r, 20));
          }
          if (provider.dropRequestOf === to) {
            provider.dropRequestOf = null;
            throw new ToolError('unknown-outcome', `connection reset sending to ${to}`);
          }
          const earlier = dedupesByKey ? provider.sent.findIndex((s) => s.key === item.idempotencyKey) : -1;
          if (earlier >= 0) return { output: { sent: to }, receipt: { messageId: `m-${earlier + 1}`, deduplicated: true } };
          provider.sent.push({ to, key: item.idempotencyKey });
          if (provider.loseAnswerOf === to) {
            provider.loseAnswerOf = null;
            throw new ToolError('unknown-outcome', `connection reset after sending to ${to}`);
          }
          return { output: { sent: to }, receipt: { messageId: `m-${provider.sent.length}`, deduplicated: false } };
        },
      );
      return { output: { applied: report.applied, rejected: report.rejected } };
    },
    ...(withLookup
      ? {
          async lookup(ctx: ToolContext) {
            const hit = provider.sent.find((s) => s.key === ctx.idempotencyKey);
            return hit === undefined ? { found: false as const } : { found: true as const, output: { sent: hit.to }, receipt: { via: 'lookup' } };
          },
        }
      : {}),
  });
}

describe('batch tools on a real server', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let worker: Worker;
  let workerRun: Promise<void>;
  const provider: Provider = { sent: [], loseAnswerOf: null, dropRequestOf: null, started: [], holdUntilCancelled: null };
  let n = 0;
  /** The fence's clock runs this far ahead of the system's: raised to pass a claim's deadline without waiting for it. */
  let skewMs = 0;
  const writes = { writeGroup: 0, createIfAbsent: 0, compareAndSwap: 0 };

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-batch-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (name === 'writeGroup' || name === 'createIfAbsent' || name === 'compareAndSwap') writes[name] += 1;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'batch-items-test',
      workflowsPath: require.resolve('../fixtures/batch-workflows'),
      activities: createToolActivities({
        store: counted,
        tools: [
          notifyTool('notify_lookup', provider, true),
          notifyTool('notify_plain', provider, false),
          notifyTool('notify_held', provider, true, 20_000),
          notifyTool('notify_by_key', provider, false, 5_000, true),
          notifyTool('notify_by_key_held', provider, false, 20_000, true),
          // The provider remembers a key 10 call deadlines (+ 1 ms): a group may claim at most 10 items.
          notifyTool('notify_by_key_short', provider, false, 5_000, true, 50_001),
        ],
        reconcileMarginMs: 0,
        clock: () => new Date(Date.now() + skewMs),
      }),
    });
    workerRun = worker.run();
  });

  afterAll(async () => {
    worker?.shutdown();
    await workerRun;
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    provider.sent.length = 0;
    provider.started.length = 0;
    provider.loseAnswerOf = null;
    provider.dropRequestOf = null;
    provider.holdUntilCancelled = null;
    writes.writeGroup = writes.createIfAbsent = writes.compareAndSwap = 0;
  });

  /** One attempt of the call in workflow `workflowId` (the same id and run chain each time: the same call). */
  async function attempt(workflowId: string, toolName: string) {
    const input: FencedToolInput = { tenant: TENANT, callId: 'call-1', runChainId: `chain-${workflowId}`, toolName, input: { recipients: RECIPIENTS } };
    return env.client.workflow.execute(callToolOnce, { taskQueue: 'batch-items-test', workflowId, args: [input] });
  }

  const sentTo = (to: string) => provider.sent.filter((s) => s.to === to).length;

  test('100 items are applied once each, in order, under distinct stable keys; a second attempt delivers them all from the store', async () => {
    const wf = `batch-${++n}`;
    const first = await attempt(wf, 'notify_lookup');
    expect(first).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100, rejected: 0 } }, source: 'executed' } });
    // One write per item (its claim together with the previous item's result) and one for the last result; the call's own claim and result.
    expect(writes).toEqual({ writeGroup: 101, createIfAbsent: 1, compareAndSwap: 1 });
    expect(provider.sent.map((s) => s.to)).toEqual(RECIPIENTS);
    const keys = provider.sent.map((s) => s.key);
    expect(new Set(keys).size).toBe(100);
    expect(keys.every((k) => /^ttci-[0-9a-f]{64}$/.test(k))).toBe(true);
    expect(keys).not.toContain((first as { result: { idempotencyKey: string } }).result.idempotencyKey);
    const again = await attempt(wf, 'notify_lookup');
    expect(again).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100 } } } });
    expect(provider.sent).toHaveLength(100);
  });

  test('the answer of item 20 is lost after its effect: the next attempt settles item 20 by lookup before item 21 starts, and every item is applied once', async () => {
    const wf = `batch-${++n}`;
    provider.loseAnswerOf = 'user-20';
    const first = await attempt(wf, 'notify_lookup');
    expect(first).toMatchObject({ failure: { type: 'RECONCILE_PENDING' } });
    expect(provider.started.at(-1)).toBe('user-20');
    skewMs += 5_001; // past item 20's claim deadline (5 s, margin 0)
    provider.started.length = 0;
    const second = await attempt(wf, 'notify_lookup');
    expect(second).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100 } } } });
    // Item 20 was settled by lookup, not sent again; the second attempt started at item 21.
    expect(provider.started[0]).toBe('user-21');
    for (const to of RECIPIENTS) expect(sentTo(to)).toBe(1);
  });

  test('without lookup or key dedupe, item 20 pauses for a person with the item named; items 21-100 wait; resolved absent, it runs again under a new key and the batch resumes', async () => {
    const wf = `batch-${++n}`;
    provider.dropRequestOf = 'user-20';
    const first = await attempt(wf, 'notify_plain');
    expect(first).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN', nonRetryable: true } });
    expect(provider.sent.map((s) => s.to)).toEqual(RECIPIENTS.slice(0, 19));
    // The pause carries the item: a later attempt (before the person decides) pauses on it again and starts nothing.
    skewMs += 5_001; // past item 20's claim deadline
    const paused = await attempt(wf, 'notify_plain');
    expect(paused).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN' } });
    expect(provider.sent).toHaveLength(19);
    const item = await failureItem(wf);
    expect(item).toMatchObject({ key: 'user-20', index: 19, generation: 1 });
    // A person proves item 20 absent.
    const resolved = await env.client.workflow.execute('resolveOnce', {
      taskQueue: 'batch-items-test',
      workflowId: wf,
      args: [
        {
          tenant: TENANT,
          callId: 'call-1',
          runChainId: `chain-${wf}`,
          toolName: 'notify_plain',
          input: { recipients: RECIPIENTS },
          resolution: 'absent',
          reason: 'provider log shows no message to user-20',
          item: { key: 'user-20', generation: 1 },
        },
      ],
    });
    expect(resolved).toMatchObject({ outcome: { ok: false, error: { type: 'RESOLVED_ABSENT' } } });
    const resumed = await attempt(wf, 'notify_plain');
    expect(resumed).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100 } } } });
    for (const to of RECIPIENTS) expect(sentTo(to)).toBe(1);
    const key20 = provider.sent.find((s) => s.to === 'user-20')!.key;
    expect(key20).not.toBe(item.idempotencyKey);
  });

  test('a provider that deduplicates by key: items are claimed 100 to a write; after the answer of item 20 is lost, the next attempt repeats items 20-100 with their keys at once, each applied once', async () => {
    const wf = `batch-${++n}`;
    const clean = await attempt(`${wf}-clean`, 'notify_by_key');
    expect(clean).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100 } } } });
    // The claims of the 100 items in one write, their results in another.
    expect(writes).toEqual({ writeGroup: 2, createIfAbsent: 1, compareAndSwap: 1 });
    provider.sent.length = 0;
    provider.loseAnswerOf = 'user-20';
    const first = await attempt(wf, 'notify_by_key');
    expect(first).toMatchObject({ failure: { type: 'RECONCILE_PENDING' } });
    expect(provider.started.at(-1)).toBe('user-20');
    const second = await attempt(wf, 'notify_by_key');
    expect(second).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100 } } } });
    for (const to of RECIPIENTS) expect(sentTo(to)).toBe(1);
  });

  test('a provider that remembers a key for 10 call deadlines: a group claims at most 10 items, so an item claimed last in its group is still repeated with its key at once after the answer of item 20 is lost', async () => {
    const wf = `batch-${++n}`;
    const clean = await attempt(`${wf}-clean`, 'notify_by_key_short');
    expect(clean).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100 } } } });
    // Item k of a group is claimed until (k + 1) × callDeadlineMs: 10 items of 5 s settle inside 50,001 ms.
    expect(writes.writeGroup).toBe(11);
    provider.sent.length = 0;
    provider.loseAnswerOf = 'user-20';
    const first = await attempt(wf, 'notify_by_key_short');
    expect(first).toMatchObject({ failure: { type: 'RECONCILE_PENDING' } });
    const second = await attempt(wf, 'notify_by_key_short');
    expect(second).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100 } } } });
    for (const to of RECIPIENTS) expect(sentTo(to)).toBe(1);
  });

  it.each([
    ['after item 19', 'user-19', 19],
    ['after item 20', 'user-20', 20],
  ])('cancellation %s: the batch stops at the next item boundary and reports exactly what was applied', async (_when, held, appliedCount) => {
    const wf = `batch-${++n}`;
    provider.holdUntilCancelled = held;
    const input: FencedToolInput = { tenant: TENANT, callId: 'call-1', runChainId: `chain-${wf}`, toolName: 'notify_held', input: { recipients: RECIPIENTS } };
    const handle = await env.client.workflow.start('batchUntilCancelled', { taskQueue: 'batch-items-test', workflowId: wf, args: [input] });
    while (!provider.started.includes(held)) await new Promise((r) => setTimeout(r, 20));
    // What `ttc show` prints: the batch's progress from the fence's heartbeat details.
    let progress = await batchProgressOf(await handle.describe(), env.client.options.loadedDataConverter);
    while (progress[0]?.current !== held) {
      await new Promise((r) => setTimeout(r, 100));
      progress = await batchProgressOf(await handle.describe(), env.client.options.loadedDataConverter);
    }
    expect(progress).toEqual([{ callId: 'call-1', activityType: 'runFencedTool', attempt: 1, total: 100, settled: appliedCount - 1, applied: appliedCount - 1, current: held }]);
    await handle.cancel();
    const { cancelled } = (await handle.result()) as { cancelled: { batch: BatchCancellationReport } };
    expect(cancelled.batch).toEqual({
      total: 100,
      applied: { count: appliedCount, keys: RECIPIENTS.slice(0, appliedCount) },
      notApplied: { count: 100 - appliedCount, keys: RECIPIENTS.slice(appliedCount) },
      unknown: { count: 0, keys: [] },
      truncated: false,
    });
    expect(provider.sent.map((s) => s.to)).toEqual(RECIPIENTS.slice(0, appliedCount));
  });

  test('a cancelled batch that claimed a group of items closes the claimed items it never started as not applied, so no claim is left for a person', async () => {
    const wf = `batch-${++n}`;
    provider.holdUntilCancelled = 'user-20';
    const input: FencedToolInput = { tenant: TENANT, callId: 'call-1', runChainId: `chain-${wf}`, toolName: 'notify_by_key_held', input: { recipients: RECIPIENTS } };
    const handle = await env.client.workflow.start('batchUntilCancelled', { taskQueue: 'batch-items-test', workflowId: wf, args: [input] });
    while (!provider.started.includes('user-20')) await new Promise((r) => setTimeout(r, 20));
    await handle.cancel();
    const { cancelled } = (await handle.result()) as { cancelled: { batch: BatchCancellationReport } };
    expect(cancelled.batch).toMatchObject({ applied: { count: 20 }, notApplied: { count: 80 }, unknown: { count: 0 } });
    // The items' checkpoints (the call's own claim stays, as for any cancelled call).
    const open = (await store.listByStatus(['executing', 'uncertain'], { limit: 10_000 })).filter(
      (r) => r.binding.callId.startsWith('["ttc/item/1"') && r.binding.callId.includes(`chain-${wf}`),
    );
    expect(open).toEqual([]);
    expect(provider.sent.map((s) => s.to)).toEqual(RECIPIENTS.slice(0, 20));
  });

  /** The item named by the last failure of workflow `workflowId`'s activity. */
  async function failureItem(workflowId: string): Promise<{ key: string; index: number; generation: number; idempotencyKey: string }> {
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const failed = history.events!.find((e) => e.activityTaskFailedEventAttributes)!.activityTaskFailedEventAttributes!;
    const details = await env.client.options.loadedDataConverter.payloadConverter.fromPayload<{ item: { key: string; index: number; generation: number; idempotencyKey: string } }>(
      failed.failure!.applicationFailureInfo!.details!.payloads![0]!,
    );
    return details.item;
  }
});
