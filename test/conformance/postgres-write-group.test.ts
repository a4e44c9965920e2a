/**
 * PostgreSQL `writeGroup` when its connection is lost (with the fail-closed rule of
 * docs/protocol.md#side-stores rule): a TCP relay between the store and a real server loses the
 * group's connection before or after its COMMIT was sent. Before: the server rolls the transaction
 * back, so the call is STORE_UNAVAILABLE and nothing is stored. After (the server still commits):
 * the group is sent again and settled by the rows' bodies, never reported as nothing written.
 */
import { createCheckpoint } from '../../src/checkpoint/record';
import { claimExecution } from '../../src/checkpoint/transitions';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { checkpointKey } from '../../src/stores/checkpoint-key';
import type { CheckpointStore, GroupWrite } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { PgRelay } from '../helpers/pg-relay';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { expectCode, makeBinding } from './store-conformance';

const AT = '2030-01-01T00:00:00.000Z';
const COMMIT = Buffer.from('COMMIT');
const INSERT = Buffer.from('INSERT INTO');

let db: TestDatabase;
let relay: PgRelay;
let store: CheckpointStore;
let direct: CheckpointStore;

beforeAll(async () => {
  db = await createTestDatabase();
  relay = await PgRelay.to(db.url);
  store = await openCheckpointStore(relay.through(db.url), { poolSize: 2, connectTimeoutMs: 3_000 });
  direct = await openCheckpointStore(db.url, { poolSize: 1 });
});

afterAll(async () => {
  await store?.close().catch(() => undefined);
  await direct?.close().catch(() => undefined);
  await relay?.stop();
  await db?.drop();
});

/** A group of one fresh create and one claim of a ready record, with what each writes. */
async function group(): Promise<{ writes: GroupWrite[]; fresh: CheckpointRecord; claimed: CheckpointRecord }> {
  const fresh = createCheckpoint(makeBinding(), { createdAt: AT });
  const ready = (await store.createIfAbsent(createCheckpoint(makeBinding(), { createdAt: AT }))).record;
  const claim = claimExecution(ready, { attemptId: 'a1', at: AT });
  return {
    writes: [
      { kind: 'create', record: fresh },
      { kind: 'cas', expectedRevision: 0, next: claim.next, expected: ready },
    ],
    fresh,
    claimed: claim.next,
  };
}

test('the connection is lost before COMMIT is sent: STORE_UNAVAILABLE, and nothing of the group is stored', async () => {
  const { writes, fresh, claimed } = await group();
  let lost = 0;
  relay.inspect = (chunk) => (chunk.includes(INSERT) && ++lost === 1 ? 'kill' : 'forward');

  const error = await expectCode(store.writeGroup(writes), 'STORE_UNAVAILABLE');
  relay.inspect = () => 'forward';

  expect(lost).toBe(1);
  expect(error.message).toContain('before COMMIT');
  expect(await direct.getMany([fresh.binding, claimed.binding])).toEqual([null, expect.objectContaining({ status: 'ready', revision: 0 })]);
});

test('every COMMIT of the group (and of its re-sends) is lost: STORE_OUTCOME_UNKNOWN naming the group, never STORE_UNAVAILABLE', async () => {
  const { writes, fresh } = await group();
  relay.inspect = (chunk) => (chunk.includes(COMMIT) ? 'kill' : 'forward');

  const error = await expectCode(store.writeGroup(writes), 'STORE_OUTCOME_UNKNOWN');
  relay.inspect = () => 'forward';

  expect(error.details).toMatchObject({ writes: 2 });
  expect((error.details.keys as string[])[0]).toBe(checkpointKey(fresh.binding));
});

test('the connection is lost after COMMIT was sent and the server committed: the group is sent again and settled by the stored bodies (the claim won; the create is found)', async () => {
  const { writes, fresh, claimed } = await group();
  let commits = 0;
  relay.inspect = (chunk) => (chunk.includes(COMMIT) && ++commits === 1 ? 'cut-after' : 'forward');

  const results = await store.writeGroup(writes);
  relay.inspect = () => 'forward';

  expect(commits).toBe(2);
  expect(results).toEqual([
    { kind: 'create', created: false, record: fresh },
    { kind: 'cas', swapped: true },
  ]);
  expect(await direct.getMany([fresh.binding, claimed.binding])).toEqual([fresh, claimed]);
});
