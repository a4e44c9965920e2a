/**
 * Races on one grant (SQLite and PostgreSQL): many overlapping attempts of one call, and many calls
 * presenting one grant, apply the effect at most once. (Expected to hold.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { harness } from './harness';

jest.setTimeout(120_000);

describe.each(['sqlite', 'postgres'])('%s', (kind) => {
  let dir: string;
  let db: TestDatabase | undefined;
  let store: CheckpointStore;
  let seq = 0;
  const h = harness({ store: () => store, wf: () => `wf-r-${seq}`, chain: () => `chain-r-${seq}` });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-scratch-'));
    if (kind === 'sqlite') store = await openCheckpointStore(`sqlite:${join(dir, 'c.db')}`);
    else {
      db = await createTestDatabase();
      store = await openCheckpointStore(db.url);
    }
  });
  afterAll(async () => {
    await store.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    seq += 1;
    h.applied.length = 0;
  });

  test('16 overlapping attempts of one call with its grant: applied once', async () => {
    for (let round = 0; round < 5; round += 1) {
      seq += 1;
      const args = { orderId: `o-${seq}`, amountCents: 100 };
      const grant = await h.grantFor('toolu_x', args);
      const outs = await Promise.all(Array.from({ length: 16 }, (_, i) => h.run(h.acts(), h.input('toolu_x', args, { approvalGrant: grant }), 1 + (i % 4))));
      expect(h.applied.filter((a) => a === `o-${seq}:100`).length).toBeLessThanOrEqual(1);
      // Every attempt that says nothing applied must be right about it.
      const saysNothing = outs.filter((o) => 'failure' in o && /nothing ran/.test(o.failure.message)).length;
      if (h.applied.includes(`o-${seq}:100`)) expect([saysNothing, outs.map(h.brief)]).toEqual([0, expect.anything()]);
    }
  });

  test('one grant presented by two calls (its own and one whose claims it does not name): only its own call runs', async () => {
    const args = { orderId: `o-two-${seq}`, amountCents: 100 };
    const grant = await h.grantFor('toolu_a', args);
    const outs = await Promise.all([h.run(h.acts(), h.input('toolu_a', args, { approvalGrant: grant })), h.run(h.acts(), h.input('toolu_b', args, { approvalGrant: grant }))]);
    expect(outs.map(h.brief)[1]).toEqual({ type: 'APPROVAL_MISMATCH', reason: 'claims' });
    expect(h.applied.length).toBe(1);
  });
});
