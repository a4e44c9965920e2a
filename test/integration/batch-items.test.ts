/**
 * Batch tools (issue 14, `ctx.forEachItem`) on a real Temporal dev server with a real SQLite
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
import type { FencedToolInput } from '../../src/activities/contract';
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
}

function notifyTool(name: string, provider: Provider, withLookup: boolean) {
  return defineTool({
    name,
    revision: 'v1',
    batch: true,
    callDeadlineMs: 300,
    input: z.object({ recipients: z.array(z.string()).min(1) }).strict(),
    async execute(input, ctx) {
      const report = await ctx.forEachItem!(input.recipients, (to) => to, async (to, item) => {
        provider.started.push(to);
        if (provider.dropRequestOf === to) {
          provider.dropRequestOf = null;
          throw new ToolError('unknown-outcome', `connection reset sending to ${to}`);
        }
        provider.sent.push({ to, key: item.idempotencyKey });
        if (provider.loseAnswerOf === to) {
          provider.loseAnswerOf = null;
          throw new ToolError('unknown-outcome', `connection reset after sending to ${to}`);
        }
        return { output: { sent: to }, receipt: { messageId: `m-${provider.sent.length}` } };
      });
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
  const provider: Provider = { sent: [], loseAnswerOf: null, dropRequestOf: null, started: [] };
  let n = 0;

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-batch-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'batch-items-test',
      workflowsPath: require.resolve('../fixtures/batch-workflows'),
      activities: createToolActivities({ store, tools: [notifyTool('notify_lookup', provider, true), notifyTool('notify_plain', provider, false)], reconcileMarginMs: 0 }),
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
    await new Promise((r) => setTimeout(r, 400)); // past item 20's claim deadline (300 ms, margin 0)
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
    await new Promise((r) => setTimeout(r, 400));
    const paused = await attempt(wf, 'notify_plain');
    expect(paused).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN' } });
    expect(provider.sent).toHaveLength(19);
    const item = await failureItem(wf);
    expect(item).toMatchObject({ key: 'user-20', index: 19, generation: 1 });
    // A person proves item 20 absent.
    const resolved = await env.client.workflow.execute('resolveOnce', { taskQueue: 'batch-items-test', workflowId: wf, args: [{ tenant: TENANT, callId: 'call-1', runChainId: `chain-${wf}`, toolName: 'notify_plain', input: { recipients: RECIPIENTS }, resolution: 'absent', reason: 'provider log shows no message to user-20', item: { key: 'user-20', generation: 1 } }] });
    expect(resolved).toMatchObject({ outcome: { ok: false, error: { type: 'RESOLVED_ABSENT' } } });
    const resumed = await attempt(wf, 'notify_plain');
    expect(resumed).toMatchObject({ result: { outcome: { ok: true, output: { applied: 100 } } } });
    for (const to of RECIPIENTS) expect(sentTo(to)).toBe(1);
    const key20 = provider.sent.find((s) => s.to === 'user-20')!.key;
    expect(key20).not.toBe(item.idempotencyKey);
  });

  /** The item named by the last failure of workflow `workflowId`'s activity. */
  async function failureItem(workflowId: string): Promise<{ key: string; index: number; generation: number; idempotencyKey: string }> {
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const failed = history.events!.find((e) => e.activityTaskFailedEventAttributes)!.activityTaskFailedEventAttributes!;
    const details = await env.client.options.loadedDataConverter.payloadConverter.fromPayload<{ item: { key: string; index: number; generation: number; idempotencyKey: string } }>(failed.failure!.applicationFailureInfo!.details!.payloads![0]!);
    return details.item;
  }
});
