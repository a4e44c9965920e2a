/**
 * Adversarial (issue 14, batch tools): a deploy between an item's pause and a person's resolution
 * (the worker that resolves runs a new tool revision). The answer of `resolveToolCall` must name
 * the idempotency key the item was sent under (the person and `ttc show` reconcile with the
 * provider by it; resolveCall does this for a call with `keyOfRecord`), not a key derived from the
 * new revision that no request ever carried (SPEC §2 "the idempotency key … stable across
 * retries of the same logical call").
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { defineTool, ToolError, type ToolContext, type ToolSuccess } from '../../src/activities';
import type { ResolveToolCallInput, ResolveToolCallResult } from '../../src/activities/contract';
import { Harness, Provider, type Call } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

const RECIPIENTS = ['u1', 'u2', 'u3', 'u4'];

function batchTool(provider: Provider, revision: string, lose: { of: string | null }) {
  return defineTool({
    name: 'create_ticket',
    revision,
    batch: true,
    callDeadlineMs: 1_000,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      const report = await ctx.forEachItem!(RECIPIENTS, (to) => to, async (to, item): Promise<ToolSuccess> => {
        provider.apply(item.idempotencyKey);
        if (lose.of === to) {
          lose.of = null;
          throw new ToolError('unknown-outcome', `connection reset after sending to ${to}`);
        }
        return { output: { sent: to } };
      });
      return { output: { applied: report.applied } };
    },
  });
}

async function resolve(acts: ReturnType<Harness['activities']>, call: Call, extra: Partial<ResolveToolCallInput>): Promise<ResolveToolCallResult | { failure: string }> {
  const input = { ...call.input, resolution: 'applied', reason: 'provider log shows the message', ...extra } as ResolveToolCallInput;
  try {
    return await h.env(call, 1).run(acts.resolveToolCall as (i: ResolveToolCallInput) => Promise<ResolveToolCallResult>, input);
  } catch (error) {
    return { failure: error instanceof ApplicationFailure ? String(error.type) : String(error) };
  }
}

/** A call paused on item u2 (sent, answer lost; no lookup, no key dedupe). @returns the idempotency key u2 was sent under. */
async function pausedOnU2(provider: Provider): Promise<{ call: Call; key: string }> {
  const call = h.newCall();
  const out = await h.run(h.activities([batchTool(provider, 'v1', { of: 'u2' })]), call, 1);
  expect(out).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN', nonRetryable: true } });
  return { call, key: provider.requests[1]! };
}

test('resolved on a worker with a new tool revision: the answer names the key u2 was sent under', async () => {
  const provider = new Provider();
  const { call, key } = await pausedOnU2(provider);
  const v2 = h.activities([batchTool(provider, 'v2', { of: null })]);
  const answer = await resolve(v2, call, { item: { key: 'u2', generation: 1 }, result: { ok: true, output: { sent: 'u2' }, receipt: null } });
  expect(answer).toMatchObject({ toolRevision: 'v1', idempotencyKey: key });
});
