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
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createCheckpoint } from '../../../src/checkpoint/record';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import { ANSWERS_PER_TURN } from '../../../src/stores/turn-queue';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres';
import { makeBinding } from '../../conformance/store-conformance';

const AT = '2030-01-01T00:00:00.000Z';
const CALLS = 12;

/** A relay to `target` that, while held, keeps what the server sends per connection; release() writes it all in one callback. */
async function holdingRelay(target: string): Promise<{ url: string; hold(): void; heldConnections(): number; release(): void; close(): Promise<void> }> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  let held: Map<Socket, Buffer[]> | null = null;
  const server: Server = createServer((client) => {
    const db = connect(Number(upstream.port || 5432), upstream.hostname);
    sockets.add(client).add(db);
    client.on('data', (chunk) => db.write(chunk));
    db.on('data', (chunk) => {
      if (held === null) return void client.write(chunk);
      held.set(client, [...(held.get(client) ?? []), chunk]);
    });
    for (const [a, b] of [
      [client, db],
      [db, client],
    ] as const) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    hold: () => void (held = new Map()),
    heldConnections: () => held?.size ?? 0,
    release() {
      const answers = held ?? new Map<Socket, Buffer[]>();
      held = null;
      for (const [client, chunks] of answers) client.write(Buffer.concat(chunks));
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Counts the firings of a 1 ms timer (a heartbeat): two continuations that see the same count ran
 * with no timers phase between them. `busy` makes each continuation hold the loop past the timer's
 * due time, so the timer fires at every chance it gets.
 */
function heartbeat(): { readonly beats: () => number; stop(): void } {
  let beats = 0;
  let beating = true;
  const beat = (): void => {
    beats += 1;
    if (beating) setTimeout(beat, 1);
  };
  setTimeout(beat, 1);
  return { beats: () => beats, stop: () => (beating = false) };
}

function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

/** Sends `calls` with the relay holding their answers, releases them all at once, and returns the heartbeat count each continuation saw. */
async function answeredTogether(calls: () => Promise<unknown>[]): Promise<number[]> {
  relay.hold();
  const timer = heartbeat();
  const seen = calls().map((p) =>
    p.then(() => {
      busy(3);
      return timer.beats();
    }),
  );
  while (relay.heldConnections() < CALLS) await new Promise((resolve) => setTimeout(resolve, 5));
  relay.release();
  const beats = await Promise.all(seen);
  timer.stop();
  return beats;
}

function mostPerBeat(beats: readonly number[]): number {
  const perBeat = new Map<number, number>();
  for (const b of beats) perBeat.set(b, (perBeat.get(b) ?? 0) + 1);
  return Math.max(...perBeat.values());
}

let db: TestDatabase;
let relay: Awaited<ReturnType<typeof holdingRelay>>;
let store: CheckpointStore;
beforeAll(async () => {
  db = await createTestDatabase();
  relay = await holdingRelay(db.url);
  store = await openCheckpointStore(relay.url, { poolSize: CALLS });
});
afterAll(async () => {
  await store?.close();
  await relay?.close();
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
  expect(mostPerBeat(beats)).toBeLessThanOrEqual(ANSWERS_PER_TURN);
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
  expect(mostPerBeat(beats)).toBeLessThanOrEqual(ANSWERS_PER_TURN);
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
