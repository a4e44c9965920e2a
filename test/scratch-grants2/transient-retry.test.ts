/**
 * Rule (docs/protocol.md#nothing-applied, "STORE_UNAVAILABLE: nothing was written, the next attempt
 * reconciles"): a transient store failure must not turn an approved call into a permanent refusal.
 * A STORE_UNAVAILABLE on the claim insert (after the grant-use record was written) leaves a grant-use
 * record naming the call and no checkpoint; the retry is refused APPROVAL_REQUIRED grant-used, the
 * refusal is stored as the call's result, and even a fresh grant ("a person approves again") only
 * re-delivers that refusal.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { FlakyStore } from '../helpers/flaky-store';
import { harness } from './harness';

jest.setTimeout(60_000);

describe('grant + transient store failure before the claim', () => {
  let dir: string;
  let store: CheckpointStore;
  let seq = 0;
  const h = harness({ store: () => store, wf: () => `wf-t-${seq}`, chain: () => `chain-t-${seq}` });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-scratch-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'c.db')}`);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    seq += 1;
    h.applied.length = 0;
  });

  test('STORE_UNAVAILABLE on the claim insert: the retry with the same grant runs the call', async () => {
    const args = { orderId: 'o-1', amountCents: 500 };
    const grant = await h.grantFor('toolu_1', args);
    const flaky = new FlakyStore(store);
    let creates = 0;
    // Fail the 2nd createIfAbsent of the attempt (the claim; the 1st is the grant-use record).
    flaky.failWhen = (op) => op === 'createIfAbsent' && ++creates === 2;
    const first = await h.run(h.acts({ store: flaky }), h.input('toolu_1', args, { approvalGrant: grant }), 1);
    expect(h.brief(first)).toEqual({ type: 'STORE_UNAVAILABLE', reason: undefined });
    // The store is back; Temporal retries the activity (attempt 2) with the same input.
    const retry = await h.run(h.acts(), h.input('toolu_1', args, { approvalGrant: grant }), 2);
    expect(h.brief(retry)).toEqual({ source: 'executed', ok: true });
    expect(h.applied).toEqual(['o-1:500']);
  });

  test('…and per the docs "a person approves again": a fresh grant for the same call then runs it', async () => {
    const args = { orderId: 'o-2', amountCents: 700 };
    const grant = await h.grantFor('toolu_2', args);
    const flaky = new FlakyStore(store);
    let creates = 0;
    flaky.failWhen = (op) => op === 'createIfAbsent' && ++creates === 2;
    await h.run(h.acts({ store: flaky }), h.input('toolu_2', args, { approvalGrant: grant }), 1);
    const retry = await h.run(h.acts(), h.input('toolu_2', args, { approvalGrant: grant }), 2);
    const again = await h.run(h.acts(), h.input('toolu_2', args, { approvalGrant: await h.grantFor('toolu_2', args) }), 3);
    // Report what happened, then assert the documented behaviour.
    console.log('retry with the same grant:', h.brief(retry), '\nfresh grant:', h.brief(again), 'result' in again ? JSON.stringify(again.result.outcome) : '');
    expect(h.brief(again)).toEqual({ source: 'executed', ok: true });
    expect(h.applied).toEqual(['o-2:700']);
  });
});
