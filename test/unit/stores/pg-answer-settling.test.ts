/**
 * The PostgreSQL store settles answers a few per event-loop turn (`ANSWERS_PER_TURN`,
 * src/stores/turn-queue.ts): when many pooled connections become readable in one poll (16
 * concurrent calls answered together), the calls they resume do not all run in one turn, so
 * timers, heartbeats and other activities get the loop between them. A loopback relay between
 * the store and a real server holds the server's answers until every call's has arrived, then
 * writes them all in one callback: the next poll finds every connection readable at once.
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

/** Counts turns with a setImmediate chain: two continuations that see the same value ran with no turn between them. */
function turnCounter(): { readonly now: () => number; stop(): void } {
  let turn = 0;
  let running = true;
  const tick = (): void => {
    turn += 1;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  return { now: () => turn, stop: () => (running = false) };
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

test(`${CALLS} answers that arrive in one poll settle at most ${ANSWERS_PER_TURN} per turn, each with its own record`, async () => {
  const bindings = Array.from({ length: CALLS }, () => makeBinding());
  // Every connection of the pool opened and warm (prepared statements included) before the answers are held.
  await Promise.all(bindings.map((b) => store.createIfAbsent(createCheckpoint(b, { createdAt: AT }))));
  await Promise.all(bindings.map((b) => store.get(b)));

  relay.hold();
  const turns = turnCounter();
  const reads = bindings.map((b) => store.get(b).then((record) => ({ callId: record?.binding.callId, turn: turns.now() })));
  while (relay.heldConnections() < CALLS) await new Promise((resolve) => setTimeout(resolve, 5));
  relay.release();
  const seen = await Promise.all(reads);
  turns.stop();

  expect(seen.map((s) => s.callId)).toEqual(bindings.map((b) => b.callId));
  const perTurn = new Map<number, number>();
  for (const { turn } of seen) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
  expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(ANSWERS_PER_TURN);
});
