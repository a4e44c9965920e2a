/**
 * Adversarial (compensation): the compensation of an applied call is a fenced call of
 * its own (its own checkpoint, a `ttcc-` key derived from the original's; lookup / same-key /
 * pause rules unchanged). Attacks:
 * - attempts of one compensation that start together (the workflow's retry and a stale attempt):
 *   one effect, the losers RECONCILE_PENDING, a later attempt delivers from the store;
 * - a compensation by a tool that is itself a batch tool (undo a batch of notifications by a batch
 *   of corrections), with overlapping attempts: every corrective item once, under keys that are
 *   neither the original items' keys nor the original call's;
 * - nothing to compensate: a call that never ran, or ran and was refused, is never compensated,
 *   and nothing is written for it.
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { defineTool, ToolError, type ToolContext, type ToolSuccess } from '../../src/activities';
import type { CompensateToolCallInput, CompensateToolCallResult } from '../../src/activities/contract/compensation-contract';
import type { AppliedEffect } from '../../src/activities/tools/compensation-declaration';
import { Gate, Harness, Provider, UNREACHED_DEADLINE_MS, waitFor, type Call } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());

const RECIPIENTS = ['u1', 'u2', 'u3', 'u4', 'u5'];

interface World {
  readonly sends: Provider;
  readonly corrections: Provider;
  readonly refunds: Provider;
  /** Correction of this recipient waits for the gate. */
  hold: { to: string; gate: Gate; reached: boolean } | null;
  /** The charge is refused (the call applies nothing). */
  refuseCharge: boolean;
  refundGate: Gate | null;
}

function tools(world: World) {
  const notify = (name: string, provider: Provider, compensation?: { tool: string; input(applied: AppliedEffect): { recipients: string[] } }) =>
    defineTool({
      name,
      revision: 'v1',
      batch: true,
      callDeadlineMs: UNREACHED_DEADLINE_MS,
      dedupesByKey: true,
      keyRetentionMs: 3_600_000,
      input: z.object({ recipients: z.array(z.string()) }).strict(),
      async execute(input, ctx: ToolContext): Promise<ToolSuccess> {
        const report = await ctx.forEachItem!(
          input.recipients,
          (to) => to,
          async (to, item): Promise<ToolSuccess> => {
            if (world.hold?.to === to && name === 'correct') {
              world.hold.reached = true;
              await world.hold.gate.wait();
            }
            if (!provider.effects.has(item.idempotencyKey)) provider.apply(item.idempotencyKey);
            return { output: { to } };
          },
        );
        return { output: { recipients: input.recipients, applied: report.applied } };
      },
      ...(compensation === undefined ? {} : { compensation }),
    });
  return [
    notify('notify', world.sends, { tool: 'correct', input: (applied) => ({ recipients: (applied.args as { recipients: string[] }).recipients }) }),
    notify('correct', world.corrections),
    defineTool({
      name: 'charge',
      revision: 'v1',
      callDeadlineMs: UNREACHED_DEADLINE_MS,
      input: z.object({ amount: z.number() }).strict(),
      async execute(input): Promise<ToolSuccess> {
        if (world.refuseCharge) throw new ToolError('rejected', 'card declined');
        return { output: { chargeId: `ch-${input.amount}` } };
      },
      compensation: {
        revision: 'refund-1',
        async execute(applied: AppliedEffect, ctx: ToolContext): Promise<ToolSuccess> {
          world.refunds.requests.push(ctx.idempotencyKey);
          await world.refundGate?.wait();
          world.refunds.apply(ctx.idempotencyKey);
          return { output: { refunded: (applied.output as { chargeId: string }).chargeId } };
        },
      },
    }),
  ];
}

const newWorld = (): World => ({ sends: new Provider(), corrections: new Provider(), refunds: new Provider(), hold: null, refuseCharge: false, refundGate: null });

/** Every checkpoint of `call`'s workflow (calls, items, compensations: nested call ids hold the workflow id escaped). */
async function recordsOf(call: Call): Promise<number> {
  const all = await h.store.listByStatus(['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'], { limit: 10_000 });
  return all.filter((r) => r.binding.callId.includes(call.workflowId)).length;
}

type Answer = CompensateToolCallResult | { failure: { type: string; nonRetryable: boolean } };

async function compensate(acts: ReturnType<Harness['activities']>, call: Call, attempt: number): Promise<Answer> {
  const input: CompensateToolCallInput = { ...call.input, role: 'compensation' };
  try {
    return await h.env(call, attempt).run(acts.compensateToolCall as (i: CompensateToolCallInput) => Promise<CompensateToolCallResult>, input);
  } catch (error) {
    if (error instanceof ApplicationFailure) return { failure: { type: String(error.type), nonRetryable: error.nonRetryable ?? false } };
    throw error;
  }
}

test('two attempts of one compensation at once (function, no lookup): one refund, the loser RECONCILE_PENDING; a later attempt delivers the refund from the store', async () => {
  const world = newWorld();
  world.refundGate = new Gate();
  const acts = h.activities(tools(world));
  const call = h.newCall({ toolName: 'charge', input: { amount: 30 } });
  expect(await h.run(acts, call, 1)).toMatchObject({ result: { outcome: { ok: true } } });
  const first = compensate(acts, call, 1);
  await waitFor(() => world.refunds.requests.length === 1);
  const second = await compensate(acts, call, 2);
  expect(second).toMatchObject({ failure: { type: 'RECONCILE_PENDING', nonRetryable: false } });
  world.refundGate.open();
  expect(await first).toMatchObject({ declared: true, result: { outcome: { ok: true }, source: 'executed', idempotencyKey: expect.stringMatching(/^ttcc-/) } });
  expect(await compensate(acts, call, 3)).toMatchObject({ declared: true, result: { outcome: { ok: true }, source: 'store' } });
  expect(world.refunds.total()).toBe(1);
});

test('a batch compensation (corrections for a batch of notifications), overlapping attempts: every correction once, under keys of its own', async () => {
  const world = newWorld();
  const acts = h.activities(tools(world));
  const call = h.newCall({ toolName: 'notify', input: { recipients: RECIPIENTS } });
  expect(await h.run(acts, call, 1)).toMatchObject({ result: { outcome: { ok: true, output: { applied: 5 } } } });
  world.hold = { to: 'u3', gate: new Gate(), reached: false };
  const slow = compensate(acts, call, 1);
  await waitFor(() => world.hold!.reached);
  world.hold.to = 'none';
  // The compensation is taken over at once by a later attempt while the first still sends u3's correction.
  const second = await compensate(acts, call, 2);
  world.hold.gate.open();
  const first = await slow;
  const answers = [first, second];
  expect(answers.some((a) => 'declared' in a && a.declared && a.result.outcome.ok)).toBe(true);
  expect(await compensate(acts, call, 3)).toMatchObject({ declared: true, result: { outcome: { ok: true, output: { applied: 5 } } } });
  expect(world.corrections.effects.size).toBe(5);
  expect(Math.max(...world.corrections.effects.values())).toBe(1);
  const originalKeys = new Set(world.sends.effects.keys());
  for (const key of world.corrections.effects.keys()) expect(originalKeys.has(key)).toBe(false);
});

test.each(['never ran', 'refused'] as const)('a call that %s is never compensated: NOTHING_TO_COMPENSATE, no refund, nothing written for the compensation', async (what) => {
  const world = newWorld();
  world.refuseCharge = what === 'refused';
  const acts = h.activities(tools(world));
  const call = h.newCall({ toolName: 'charge', input: { amount: 12 } });
  if (what === 'refused') expect(await h.run(acts, call, 1)).toMatchObject({ result: { outcome: { ok: false } } });
  const before = await recordsOf(call);
  expect(await compensate(acts, call, 1)).toMatchObject({ failure: { type: 'NOTHING_TO_COMPENSATE', nonRetryable: true } });
  expect(world.refunds.total()).toBe(0);
  expect(await recordsOf(call)).toBe(before);
});
