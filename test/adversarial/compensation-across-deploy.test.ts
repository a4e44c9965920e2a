/**
 * Adversarial (compensation): a deploy in the middle of a compensation. The function
 * compensation's revision is part of its binding and key; a new revision must not turn a
 * compensation an earlier attempt claimed (or applied) into "run it again"
 * (docs/protocol.md#nothing-applied: a deploy between attempts does not change this).
 * - applied and stored under revision 1: the attempt on revision 2 delivers the stored refund;
 * - claimed under revision 1 by an attempt that died mid-request (no lookup): the attempt on
 *   revision 2 waits, then pauses (OUTCOME_UNKNOWN); the refund is never sent twice.
 *
 * Real activities in MockActivityEnvironment against a real SQLite store (the adversarial harness).
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { defineTool, type ToolContext, type ToolSuccess } from '../../src/activities';
import type { CompensateToolCallInput, CompensateToolCallResult } from '../../src/activities/contract/compensation-contract';
import type { AppliedEffect } from '../../src/activities/tools/compensation-declaration';
import { Harness, MARGIN_MS, Provider, UNREACHED_DEADLINE_MS, never, waitFor, type Call } from './harness';

jest.setTimeout(30_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

function charge(refunds: Provider, revision: string, hang: boolean) {
  return defineTool({
    name: 'charge',
    revision: 'v1',
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    input: z.object({ amount: z.number() }).strict(),
    async execute(input): Promise<ToolSuccess> {
      return { output: { chargeId: `ch-${input.amount}` } };
    },
    compensation: {
      revision,
      async execute(applied: AppliedEffect, ctx: ToolContext): Promise<ToolSuccess> {
        refunds.requests.push(ctx.idempotencyKey);
        refunds.apply(ctx.idempotencyKey);
        if (hang) await never(); // the worker dies here: the refund was sent, its result never stored
        return { output: { refunded: (applied.output as { chargeId: string }).chargeId } };
      },
    },
  });
}

async function compensate(
  acts: ReturnType<Harness['activities']>,
  call: Call,
  attempt: number,
): Promise<CompensateToolCallResult | { failure: { type: string; nonRetryable: boolean } }> {
  const input: CompensateToolCallInput = { ...call.input, role: 'compensation' };
  try {
    return await h.env(call, attempt).run(acts.compensateToolCall as (i: CompensateToolCallInput) => Promise<CompensateToolCallResult>, input);
  } catch (error) {
    if (error instanceof ApplicationFailure) return { failure: { type: String(error.type), nonRetryable: error.nonRetryable ?? false } };
    throw error;
  }
}

test('refund applied and stored under revision 1: the attempt on revision 2 delivers it, no second refund', async () => {
  const refunds = new Provider();
  const call = h.newCall({ toolName: 'charge', input: { amount: 7 } });
  const v1 = h.activities([charge(refunds, 'refund-1', false)]);
  expect(await h.run(v1, call, 1)).toMatchObject({ result: { outcome: { ok: true } } });
  expect(await compensate(v1, call, 1)).toMatchObject({ declared: true, result: { outcome: { ok: true } } });
  const v2 = h.activities([charge(refunds, 'refund-2', false)]);
  const again = await compensate(v2, call, 2);
  expect(refunds.total()).toBe(1);
  expect(again).toMatchObject({ declared: true, result: { outcome: { ok: true, output: { refunded: 'ch-7' } }, source: 'store' } });
});

test('refund sent under revision 1 by an attempt that died before storing it: on revision 2 the compensation waits, then pauses; never a second refund', async () => {
  const refunds = new Provider();
  const call = h.newCall({ toolName: 'charge', input: { amount: 9 } });
  const v1 = h.activities([charge(refunds, 'refund-1', true)]);
  expect(await h.run(v1, call, 1)).toMatchObject({ result: { outcome: { ok: true } } });
  void compensate(v1, call, 1);
  await waitFor(() => refunds.total() === 1);
  const v2 = h.activities([charge(refunds, 'refund-2', false)]);
  const early = await compensate(v2, call, 2);
  expect(early).toMatchObject({ failure: { type: 'RECONCILE_PENDING', nonRetryable: false } });
  h.offsetMs = UNREACHED_DEADLINE_MS + MARGIN_MS + 1_000; // past the dead attempt's settle time (its deadline is the tool's)
  const later = await compensate(v2, call, 3);
  expect(later).toMatchObject({ failure: { type: expect.stringMatching(/^(OUTCOME_UNKNOWN|BINDING_CONFLICT)$/), nonRetryable: true } });
  expect(refunds.total()).toBe(1);
});
