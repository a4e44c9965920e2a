/**
 * Adversarial (batch tools): a person's resolution of a paused batch item
 * (`resolveToolCall` with `item`). Guards: the wrong generation and an item that has no
 * checkpoint are refused with nothing written; resolving twice is idempotent (the first answer
 * stays); an item already settled is not reopened; resolved on a worker with a new tool revision
 * (a deploy between the pause and the person), the answer names the key the item was sent under,
 * not one derived from the new revision that no request carried.
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { defineTool, ToolError, type ToolContext, type ToolSuccess } from '../../src/activities';
import type { ResolveToolCallInput, ResolveToolCallResult } from '../../src/activities/contract/contract';
import { Harness, Provider, UNREACHED_DEADLINE_MS, type Call } from './harness';

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
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      const report = await ctx.forEachItem!(
        RECIPIENTS,
        (to) => to,
        async (to, item): Promise<ToolSuccess> => {
          provider.apply(item.idempotencyKey);
          if (lose.of === to) {
            lose.of = null;
            throw new ToolError('unknown-outcome', `connection reset after sending to ${to}`);
          }
          return { output: { sent: to } };
        },
      );
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

test('wrong generation, unknown item: refused, nothing stored; resolving twice keeps the first answer; the batch then resumes without sending u2 again', async () => {
  const provider = new Provider();
  const { call } = await pausedOnU2(provider);
  const acts = h.activities([batchTool(provider, 'v1', { of: null })]);
  expect(await resolve(acts, call, { item: { key: 'u2', generation: 2 } })).toEqual({ failure: 'INVALID_ARGUMENT' });
  expect(await resolve(acts, call, { item: { key: 'u9', generation: 1 } })).toEqual({ failure: 'INVALID_ARGUMENT' });
  const applied = { ok: true as const, output: { sent: 'u2' }, receipt: null };
  expect(await resolve(acts, call, { item: { key: 'u2', generation: 1 }, result: applied })).toMatchObject({ outcome: applied });
  // A second, contradicting resolution (absent) does not reopen the item.
  expect(await resolve(acts, call, { item: { key: 'u2', generation: 1 }, resolution: 'absent' })).toMatchObject({ outcome: applied });
  // An item that was never paused (u1, applied) is not reopened either.
  expect(await resolve(acts, call, { item: { key: 'u1', generation: 1 }, resolution: 'absent' })).toMatchObject({ outcome: { ok: true, output: { sent: 'u1' } } });
  expect(await h.run(acts, call, 2)).toMatchObject({ result: { outcome: { ok: true, output: { applied: 4 } } } });
  expect(provider.total()).toBe(4);
  expect(Math.max(...provider.effects.values())).toBe(1);
});

test('resolved on a worker with a new tool revision: the answer names the key u2 was sent under', async () => {
  const provider = new Provider();
  const { call, key } = await pausedOnU2(provider);
  const v2 = h.activities([batchTool(provider, 'v2', { of: null })]);
  const answer = await resolve(v2, call, { item: { key: 'u2', generation: 1 }, result: { ok: true, output: { sent: 'u2' }, receipt: null } });
  expect(answer).toMatchObject({ toolRevision: 'v1', idempotencyKey: key });
});

// Found by a review of batch tools (a reproduction with real activities): `absent` was accepted for an
// item whose holder was still sending (executing, 60 s before its deadline); the next attempt then
// applied the item again under generation 2's key while the holder's request was in flight.
test('absent is refused while the item may still be sent by its holder (executing before its settle time): RECONCILE_PENDING, nothing stored, one effect', async () => {
  const provider = new Provider();
  let holding!: () => void;
  const held = new Promise<void>((done) => (holding = done));
  let release!: () => void;
  const released = new Promise<void>((done) => (release = done));
  const tool = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    batch: true,
    callDeadlineMs: 60_000,
    input: z.object({ title: z.string() }).strict(),
    async execute(_input, ctx: ToolContext): Promise<ToolSuccess> {
      const report = await ctx.forEachItem!(
        ['u1'],
        (to) => to,
        async (to, item): Promise<ToolSuccess> => {
          holding();
          await released;
          provider.apply(item.idempotencyKey);
          return { output: { sent: to } };
        },
      );
      return { output: { applied: report.applied } };
    },
  });
  const acts = h.activities([tool]);
  const call = h.newCall();
  const first = h.run(acts, call, 1);
  await held;
  expect(await resolve(acts, call, { item: { key: 'u1', generation: 1 }, resolution: 'absent' })).toEqual({ failure: 'RECONCILE_PENDING' });
  release();
  expect(await first).toMatchObject({ result: { outcome: { ok: true, output: { applied: 1 } } } });
  expect(provider.total()).toBe(1);
});
