/**
 * An insert after a dedupe key's window takes the key over from a settled holder
 * (docs/protocol.md#business-keys), also when the PostgreSQL store settles a lost INSERT by
 * sending it again: the re-sent insert meets the expired holder, and the store releases the key
 * and inserts instead of answering with the holder.
 */
import { completeAndDeliver, createClaimed } from '../../src/checkpoint/compose';
import type { Binding } from '../../src/checkpoint/types';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { pgStatements, statementName } from '../../src/stores/pg-statements';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { PgRelay } from '../helpers/pg-relay';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

const fp = `sha256:${'a'.repeat(64)}`;
const bind = (callId: string): Binding => ({ namespace: 'default/acme', callId, toolName: 'charge_order', toolRevision: 'v1', inputFingerprint: fp });
const KEY = `business1-${'b'.repeat(64)}`;

describe('PostgreSQL: a dedupe key whose window ended, and a lost insert', () => {
  let db: TestDatabase;
  let relay: PgRelay;
  let store: CheckpointStore | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    relay = await PgRelay.to(db.url);
  });
  afterAll(async () => {
    await store?.close().catch(() => undefined);
    await relay?.stop();
    await db?.drop();
  });

  async function holderExpired(s: CheckpointStore, callId: string, key: string): Promise<void> {
    const t0 = new Date(Date.now() - 120_000).toISOString();
    const claimed = createClaimed(bind(callId), { attemptId: 'a1', at: t0, deadlineAt: t0 });
    const done = completeAndDeliver(claimed, { attemptId: 'a1', deliveryId: 'd1', at: t0, result: { ok: true, output: { charge: 'ch-1' }, receipt: null } }).next;
    const r = await s.createIfAbsent(done, { dedupeKey: key, dedupeUntil: new Date(Date.now() - 60_000).toISOString() });
    expect(r.created).toBe(true);
  }

  function claim(callId: string) {
    const now = new Date().toISOString();
    return createClaimed(bind(callId), { attemptId: `a-${callId}`, at: now, deadlineAt: new Date(Date.now() + 60_000).toISOString() });
  }

  test('control: without a fault the insert takes the expired key over', async () => {
    store = await openCheckpointStore(relay.through(db.url), { poolSize: 2, connectTimeoutMs: 3_000 });
    await holderExpired(store, 'holder-0', `${KEY.slice(0, -1)}0`);
    const r = await store.createIfAbsent(claim('taker-0'), { dedupeKey: `${KEY.slice(0, -1)}0`, dedupeUntil: new Date(Date.now() + 60_000).toISOString() });
    expect([r.created, r.record.binding.callId]).toEqual([true, 'taker-0']);
  }, 30_000);

  test('the first INSERT is lost before the server saw it: the re-sent insert still takes the expired key over', async () => {
    await holderExpired(store!, 'holder-1', KEY);
    const insertName = Buffer.from(statementName(pgStatements('public').INSERT));
    let inserts = 0;
    relay.inspect = (chunk) => (chunk.includes(insertName) && ++inserts === 1 ? 'kill' : 'forward');
    const r = await store!.createIfAbsent(claim('taker-1'), { dedupeKey: KEY, dedupeUntil: new Date(Date.now() + 60_000).toISOString() });
    relay.inspect = () => 'forward';
    expect(inserts).toBeGreaterThanOrEqual(2);
    expect([r.created, r.record.binding.callId]).toEqual([true, 'taker-1']);
  }, 30_000);
});
