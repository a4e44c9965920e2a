/**
 * Adversarial (batch tools): cancellation of a batch call while an item is in flight.
 * The issue: "Cancellation reports items applied, not applied, and unknown". The item in flight
 * is not aborted (its outcome stays known when it can be): an item that retries a transient error
 * finishes its retries and counts as applied; the report is exact.
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { CancelledFailure } from '@temporalio/common';
import { z } from 'zod';
import { defineTool, ToolError, type ToolContext, type ToolSuccess } from '../../src/activities';
import type { BatchCancellationReport } from '../../src/activities/contract/batch-items';
import { Gate, Harness, Provider, waitFor } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

const RECIPIENTS = ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'];

interface Script {
  /** Recipient whose send waits for the gate (the test cancels meanwhile). */
  holdAt: string;
  gate: Gate;
  reached: boolean;
  /** What the held send then does. */
  then: 'transient-then-ok' | 'reject' | 'unknown';
  transientLeft: number;
}

function batchTool(provider: Provider, script: Script) {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    batch: true,
    callDeadlineMs: 5_000,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      const report = await ctx.forEachItem!(
        RECIPIENTS,
        (to) => to,
        async (to, item): Promise<ToolSuccess> => {
          if (to === script.holdAt) {
            script.reached = true;
            await script.gate.wait();
            if (script.then === 'transient-then-ok' && script.transientLeft > 0) {
              script.transientLeft -= 1;
              throw new ToolError('transient', `503 from the provider sending to ${to}`);
            }
            if (script.then === 'reject') throw new ToolError('rejected', `${to} unsubscribed`);
            if (script.then === 'unknown') {
              provider.apply(item.idempotencyKey);
              throw new ToolError('unknown-outcome', `connection reset after sending to ${to}`);
            }
          }
          provider.apply(item.idempotencyKey);
          return { output: { sent: to } };
        },
      );
      return { output: { applied: report.applied } };
    },
  });
}

async function cancelAtHeldItem(script: Script): Promise<{ raw: unknown; provider: Provider }> {
  const provider = new Provider();
  const call = h.newCall();
  const env = h.env(call, 1);
  const pending = h.run(h.activities([batchTool(provider, script)]), call, 1, env);
  await waitFor(() => script.reached);
  env.cancel('CANCELLED');
  script.gate.open();
  const out = await pending;
  return { raw: 'raw' in out ? out.raw : out, provider };
}

const reportOf = (raw: unknown): BatchCancellationReport | undefined =>
  raw instanceof CancelledFailure ? (raw.details[0] as { batch?: BatchCancellationReport } | undefined)?.batch : undefined;

test('cancelled while item 3 retries a transient error: the retries finish, item 3 is applied, the report says 3 applied / 3 not applied / 0 unknown', async () => {
  const script: Script = { holdAt: 'u3', gate: new Gate(), reached: false, then: 'transient-then-ok', transientLeft: 2 };
  const { raw, provider } = await cancelAtHeldItem(script);
  expect(provider.total()).toBe(3);
  expect(reportOf(raw)).toEqual({
    total: 6,
    applied: { count: 3, keys: ['u1', 'u2', 'u3'] },
    notApplied: { count: 3, keys: ['u4', 'u5', 'u6'] },
    unknown: { count: 0, keys: [] },
    truncated: false,
  });
});

test('cancelled while item 3 is refused for good: item 3 counts as not applied', async () => {
  const script: Script = { holdAt: 'u3', gate: new Gate(), reached: false, then: 'reject', transientLeft: 0 };
  const { raw, provider } = await cancelAtHeldItem(script);
  expect(provider.total()).toBe(2);
  expect(reportOf(raw)).toMatchObject({ applied: { count: 2, keys: ['u1', 'u2'] }, notApplied: { count: 4, keys: ['u3', 'u4', 'u5', 'u6'] }, unknown: { count: 0 } });
});

test('cancelled while item 3 is in flight and its answer is lost: never reported as not applied; the attempt pauses on item 3 (OUTCOME_UNKNOWN naming it)', async () => {
  const script: Script = { holdAt: 'u3', gate: new Gate(), reached: false, then: 'unknown', transientLeft: 0 };
  const { raw, provider } = await cancelAtHeldItem(script);
  expect(provider.total()).toBe(3);
  const report = reportOf(raw);
  if (report !== undefined) {
    expect(report.notApplied.keys).not.toContain('u3');
    expect(report.unknown.keys).toContain('u3');
  } else {
    expect(raw).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN', nonRetryable: true, message: expect.stringContaining('"u3"') } });
  }
});
