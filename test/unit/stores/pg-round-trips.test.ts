/**
 * Round trips per store call on PostgreSQL (docs/protocol.md#cost: one round trip per single
 * conditional statement, no BEGIN/COMMIT around it; pipelining where `pg` allows). A loopback
 * TCP relay between the store and a real server counts round trips: a round trip starts each
 * time the client sends after the server last sent (pipelined messages in one flight count
 * once). Measured on a warm pooled connection (poolSize 1), so connection set-up is not counted.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimExecution } from '../../../src/checkpoint/transitions';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres';
import { makeBinding } from '../../conformance/store-conformance';

const AT = '2030-01-01T00:00:00.000Z';

/** A relay to `target`'s host and port that counts the client's flights and keeps what the client sent. */
async function relay(target: string): Promise<{ url: string; roundTrips(): number; sent(): Buffer; reset(): void; close(): Promise<void> }> {
  const upstream = new URL(target);
  let trips = 0;
  let sent: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    let serverSpoke = true;
    const db = connect(Number(upstream.port || 5432), upstream.hostname);
    sockets.add(client).add(db);
    client.on('data', (chunk) => {
      if (serverSpoke) trips += 1;
      serverSpoke = false;
      sent.push(chunk);
      db.write(chunk);
    });
    db.on('data', (chunk) => {
      serverSpoke = true;
      client.write(chunk);
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
  const port = (server.address() as { port: number }).port;
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    roundTrips: () => trips,
    sent: () => Buffer.concat(sent),
    reset() {
      trips = 0;
      sent = [];
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The frontend message types in `bytes` (after start-up: a type byte and an int32 length each), e.g. 'PBDES'. */
function messageTypes(bytes: Buffer): string {
  let types = '';
  for (let at = 0; at < bytes.length; at += 1 + bytes.readInt32BE(at + 1)) types += String.fromCharCode(bytes[at]!);
  return types;
}

describe('PostgreSQL store round trips per call', () => {
  let db: TestDatabase;
  let counter: Awaited<ReturnType<typeof relay>>;
  let store: CheckpointStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    counter = await relay(db.url);
    store = await openCheckpointStore(counter.url, { poolSize: 1 });
  });
  afterAll(async () => {
    await store?.close();
    await counter?.close();
    await db?.drop();
  });

  /** The round trips `call` makes. */
  async function trips(call: () => Promise<unknown>): Promise<number> {
    counter.reset();
    await call();
    return counter.roundTrips();
  }

  test('the hot statements are prepared once per connection: a repeated get or compare-and-swap sends Bind/Describe/Execute/Sync only, no Parse', async () => {
    const binding = makeBinding();
    const fresh = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: AT }))).record;
    await store.get(binding);
    counter.reset();
    await store.get(binding);
    const get = messageTypes(counter.sent());
    const next = claimExecution(fresh, { attemptId: 'a1', at: AT }).next;
    await store.compareAndSwap(0, next, fresh);
    const claimed = (await store.createIfAbsent(createCheckpoint(makeBinding(), { createdAt: AT }))).record;
    counter.reset();
    await store.compareAndSwap(0, claimExecution(claimed, { attemptId: 'a2', at: AT }).next, claimed);
    const cas = messageTypes(counter.sent());

    expect([get, cas]).toEqual(['BDES', 'BDES']);
  });

  test('one round trip for create-if-absent (new; an existing record takes a second, reading it), compare-and-swap (with and without expected), get, getByCall, and each prune statement; two for a conversation-log write (BEGIN pipelined with its statement, then COMMIT)', async () => {
    const binding = makeBinding();
    const record = createCheckpoint(binding, { createdAt: AT });
    const measured: Record<string, number> = {};
    let fresh = record;
    measured['createIfAbsent (new)'] = await trips(async () => {
      fresh = (await store.createIfAbsent(record)).record;
    });
    measured['createIfAbsent (existing)'] = await trips(() => store.createIfAbsent(record));
    const claim = claimExecution(fresh, { attemptId: 'a1', at: AT });
    measured['compareAndSwap (expected)'] = await trips(() => store.compareAndSwap(0, claim.next, fresh));
    const other = (await store.createIfAbsent(createCheckpoint(makeBinding(), { createdAt: AT }))).record;
    measured['compareAndSwap'] = await trips(() => store.compareAndSwap(0, claimExecution(other, { attemptId: 'a2', at: AT }).next));
    measured['get'] = await trips(() => store.get(binding));
    measured['getByCall'] = await trips(() => store.getByCall(binding.namespace, binding.callId));
    measured['putConversationEntries (new)'] = await trips(() =>
      store.putConversationEntries('log-1', [
        { key: 'm/0', value: 'hello' },
        { key: 'm/1', value: 'world' },
      ]),
    );
    measured['putConversationEntries (again)'] = await trips(() => store.putConversationEntries('log-1', [{ key: 'm/0', value: 'hello' }]));
    measured['getConversationEntries'] = await trips(() => store.getConversationEntries('log-1', ['m/0', 'm/1']));
    // No delivered record: one SELECT of a page of candidates; with conversationsOlderThan, one more statement.
    measured['prune'] = await trips(() => store.prune({ olderThan: AT }));
    measured['prune (with conversations)'] = await trips(() => store.prune({ olderThan: AT, conversationsOlderThan: AT }));

    expect(measured).toEqual({
      'createIfAbsent (new)': 1,
      'createIfAbsent (existing)': 2,
      'compareAndSwap (expected)': 1,
      compareAndSwap: 1,
      get: 1,
      getByCall: 1,
      'putConversationEntries (new)': 2,
      'putConversationEntries (again)': 2,
      getConversationEntries: 1,
      prune: 1,
      'prune (with conversations)': 2,
    });
  });
});
