/**
 * Rule (README "Approvals a person provably gave": on a signed worker a call of a requireApproval
 * tool runs only with a valid grant; docs/protocol.md#approval-grants "Compensations ... run when its
 * run stops, under the original call's record, without a grant"): one applied, approved call gives
 * at most ONE grant-less run of its compensation, and a further run needs a person's proof that the
 * previous generation applied nothing. The worker takes `compensationGeneration` from workflow input
 * unchecked (src/activities/fence/compensation-call.ts compensationGeneration), so workflow code runs
 * a requireApproval compensation tool once per generation, up to 1,000,000 times, with no grant.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { SECRET, harness } from './harness';

jest.setTimeout(60_000);

describe('signed mode: a compensation that is a requireApproval tool', () => {
  let dir: string;
  let store: CheckpointStore;
  const h = harness({ store: () => store, wf: () => 'wf-comp', chain: () => 'chain-comp' });
  const charges: string[] = [];
  const payouts: string[] = [];
  const payout = defineTool({
    name: 'payout',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    async execute(input) {
      payouts.push(`${input.orderId}:${input.amountCents}`);
      return { output: { paid: input.amountCents } };
    },
  });
  const charge = defineTool({
    name: 'refund', // the harness signs grants for tool 'refund'
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    compensation: { tool: 'payout', input: (applied) => applied.args },
    async execute(input) {
      charges.push(`${input.orderId}:${input.amountCents}`);
      return { output: { charged: input.amountCents } };
    },
  });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-scratch-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'c.db')}`);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('generations 1..4 of the compensation, none after a proof of absence: the payout runs at most once', async () => {
    const acts = createToolActivities({
      store,
      tools: [charge, payout],
      requireApproval: ['refund', 'payout'],
      approvalGrantKeys: [{ keyId: 'ops', hmacSecret: SECRET }],
    });
    const args = { orderId: 'o-c', amountCents: 900 };
    const grant = await h.grantFor('toolu_c', args, { a: acts });
    expect(h.brief(await h.run(acts, h.input('toolu_c', args, { approvalGrant: grant })))).toEqual({ source: 'executed', ok: true });
    const outcomes: unknown[] = [];
    for (const compensationGeneration of [1, 2, 3, 4]) {
      try {
        const r = (await h.env().run(acts.compensateToolCall, { ...h.input('toolu_c', args), role: 'compensation', compensationGeneration })) as any;
        outcomes.push(r.result?.source);
      } catch (error) {
        outcomes.push((error as { type?: string }).type);
      }
    }
    console.log('compensation generations:', outcomes, 'payouts:', payouts);
    expect(charges).toEqual(['o-c:900']);
    expect(payouts.length).toBeLessThanOrEqual(1);
  });
});
