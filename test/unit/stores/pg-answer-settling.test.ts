/**
 * The PostgreSQL store settles answers a few per event-loop turn (`ANSWERS_PER_TURN`,
 * src/stores/turn-queue.ts): when many pooled connections become readable in one poll (16
 * concurrent calls answered together), the calls they resume do not all run in one turn, so
 * timers, heartbeats and other activities get the loop between them. A loopback relay between
 * the store and a real server holds the server's answers until every call's has arrived, then
 * writes them all in one callback: the next poll finds every connection readable at once. A 1 ms
 * timer stands for the worker's heartbeats and other activities' timers. And the store does not
 * stall under a test's fake timers.
 */
import { createCheckpoint } from '../../../src/checkpoint/record';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import { ANSWERS_PER_TURN } from '../../../src/stores/turn-queue';
import { busy, mostPerCount, timerBeats } from '../../helpers/event-loop-turns';
import { PgRelay } from '../../helpers/pg-relay';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres';
import { makeBinding } from '../../conformance/store-conformance';

const AT = '2030-01-01T00:00:00.000Z';
const CALLS = 12;

/** Sends `calls` with the relay holding their answers, releases them all at once, and returns the heartbeat count each continuation saw. */
async function answeredTogether(calls: () => Promise<unknown>[]): Promise<number[]> {
  relay.holdAnswers();
  const timer = timerBeats();
  const seen = calls().map((p) =>
    p.then(() => {
      busy(3);
      return timer.beats();
    }),
  );
  while (relay.heldConnections() < CALLS) await new Promise((resolve) => setTimeout(resolve, 5));
  relay.releaseAnswers();
  const beats = await Promise.all(seen);
  timer.stop();
  return beats;
}

let db: TestDatabase;
let relay: PgRelay;
let store: CheckpointStore;
beforeAll(async () => {
  db = await createTestDatabase();
  relay = await PgRelay.to(db.url);
  store = await openCheckpointStore(relay.through(db.url), { poolSize: CALLS });
});
afterAll(async () => {
  await store?.close();
  await relay?.stop();
  await db?.drop();
});

/** Every connection of the pool opened and warm (prepared statements included): `CALLS` records created and read. */
async function warm(): Promise<ReturnType<typeof makeBinding>[]> {
  const bindings = Array.from({ length: CALLS }, () => makeBinding());
  await Promise.all(bindings.map((b) => store.createIfAbsent(createCheckpoint(b, { createdAt: AT }))));
  await Promise.all(bindings.map((b) => store.get(b)));
  return bindings;
}

test(`${CALLS} reads answered in one poll: at most ${ANSWERS_PER_TURN} continuations run between two firings of a 1 ms timer, each with its own record`, async () => {
  const bindings = await warm();
  const records: (string | undefined)[] = [];
  const beats = await answeredTogether(() => bindings.map((b, i) => store.get(b).then((r) => void (records[i] = r?.binding.callId))));
  expect(records).toEqual(bindings.map((b) => b.callId));
  expect(mostPerCount(beats)).toBeLessThanOrEqual(ANSWERS_PER_TURN);
});

test(`${CALLS} group writes answered in one poll: at most ${ANSWERS_PER_TURN} continuations between two firings of a 1 ms timer`, async () => {
  await warm();
  // The group statements prepared on every connection too.
  await Promise.all(Array.from({ length: CALLS }, () => store.writeGroup([{ kind: 'create', record: createCheckpoint(makeBinding(), { createdAt: AT }) }])));
  const fresh = Array.from({ length: CALLS }, () => createCheckpoint(makeBinding(), { createdAt: AT }));
  const results: boolean[] = [];
  const beats = await answeredTogether(() =>
    fresh.map((record, i) => store.writeGroup([{ kind: 'create', record }]).then(([r]) => void (results[i] = r?.kind === 'create' && r.created))),
  );
  expect(results).toEqual(fresh.map(() => true));
  expect(mostPerCount(beats)).toBeLessThanOrEqual(ANSWERS_PER_TURN);
});

test('the store keeps answering under fake timers: it does not wait on a setImmediate a test may fake', async () => {
  jest.useFakeTimers({ doNotFake: ['setTimeout', 'clearTimeout', 'nextTick', 'queueMicrotask'] });
  try {
    const found = await Promise.all(Array.from({ length: 2 * ANSWERS_PER_TURN + 1 }, () => store.get(makeBinding())));
    expect(found).toEqual(found.map(() => null));
  } finally {
    jest.useRealTimers();
  }
});
