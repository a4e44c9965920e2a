/**
 * Attacks on the SQLite store settling a batch's answers a few per event-loop turn
 * (`ANSWERS_PER_TURN`, src/stores/turn-queue.ts), with real stores (files in a temp dir, and
 * `:memory:`, whose executor runs inline): order and completeness when continuations send new
 * requests while earlier answers are still queued, close() while answers are queued, the worker
 * thread stopping between two settling turns, failed writes settled in a later turn, the process
 * exiting by itself, and one answer message larger than a spread argument list.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Worker as NodeWorker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { fingerprintInput } from '../../../src/checkpoint/digest';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimExecution } from '../../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../../../src/checkpoint/types';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import type { SqliteThread } from '../../../src/stores/sqlite-thread';
import { ANSWERS_PER_TURN } from '../../../src/stores/turn-queue';

/** Every worker thread the stores start, newest last. */
const workers: NodeWorker[] = [];
jest.mock('node:worker_threads', () => {
  const actual = jest.requireActual<typeof import('node:worker_threads')>('node:worker_threads');
  class ObservedWorker extends actual.Worker {
    constructor(...args: ConstructorParameters<typeof actual.Worker>) {
      super(...args);
      workers.push(this);
    }
  }
  return { ...actual, Worker: ObservedWorker };
});

const AT = '2030-01-01T00:00:00.000Z';
const ROOT = resolve(__dirname, '../../..');
const run = promisify(execFile);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-sqlite-settle-attack-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const fileUrl = (): string => `sqlite:${join(dir, `attack-${++files}.db`)}`;
const pathOf = (url: string): string => url.slice('sqlite:'.length);

function binding(callId: string): Binding {
  return { namespace: 'settle', callId, toolName: 'create_ticket', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }) };
}
function fresh(callId: string): CheckpointRecord {
  return createCheckpoint(binding(callId), { createdAt: AT });
}
function threadOf(store: CheckpointStore): SqliteThread {
  return (store as unknown as { thread: SqliteThread }).thread;
}
/** A promise's value, or its CheckpointError code. */
async function outcome<T>(promise: Promise<T>): Promise<{ value: T } | { code: string; details?: unknown }> {
  try {
    return { value: await promise };
  } catch (error) {
    if (isCheckpointError(error)) return { code: error.code, details: error.details };
    throw error;
  }
}
const turn = (): Promise<void> => new Promise((done) => setImmediate(done));
const rowCount = (path: string): number => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM ttc_checkpoints').get() as { n: number }).n;
  } finally {
    db.close();
  }
};

describe.each([
  ['a file store (worker thread)', fileUrl],
  ['a :memory: store (inline executor)', () => 'sqlite::memory:'],
])('%s', (_, url) => {
  let store: CheckpointStore;
  beforeEach(async () => {
    store = await openCheckpointStore(url());
  });
  afterEach(async () => {
    await store.close();
  });

  test('the answers of one batch settle in the order the requests were sent', async () => {
    const order: number[] = [];
    await Promise.all(Array.from({ length: 5 * ANSWERS_PER_TURN + 3 }, (_, i) => store.get(binding(`absent-${i}`)).then(() => order.push(i))));
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  test('reads and writes sent in one turn (two answer messages) all settle with their values', async () => {
    const ids = Array.from({ length: 3 * ANSWERS_PER_TURN + 1 }, (_, i) => `mixed-${i}`);
    const [created, read] = await Promise.all([Promise.all(ids.map((id) => store.createIfAbsent(fresh(id)))), Promise.all(ids.map((id) => store.get(binding(id))))]);
    expect(created.map((c) => c.created)).toEqual(ids.map(() => true));
    // Reads of a batch run before its writes.
    expect(read).toEqual(ids.map(() => null));
    expect(await store.getMany(ids.map(binding))).toEqual(created.map((c) => c.record));
  });

  test('property: concurrent calls whose continuations send new requests while earlier answers are still queued all finish with the right values', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.nat(3), { minLength: 4, maxLength: 4 }), { minLength: 1, maxLength: 3 * ANSWERS_PER_TURN + 2 }), async (callers) => {
        round += 1;
        const finished = await Promise.all(
          callers.map(async (pauses, i) => {
            const pause = async (step: number): Promise<void> => {
              for (let t = 0; t < pauses[step]!; t += 1) await turn();
            };
            const id = `chain-${round}-${i}`;
            const created = await store.createIfAbsent(fresh(id));
            expect(created.created).toBe(true);
            await pause(0);
            expect(await store.get(binding(id))).toEqual(created.record);
            await pause(1);
            const claim = claimExecution(created.record, { attemptId: `a${i}`, at: AT });
            expect(await store.compareAndSwap(0, claim.next, created.record)).toBe(true);
            await pause(2);
            expect(await store.compareAndSwap(0, claim.next, created.record)).toBe(false);
            await pause(3);
            expect(await store.getByCall('settle', id)).toEqual(claim.next);
            return id;
          }),
        );
        expect(finished).toHaveLength(callers.length);
      }),
      { numRuns: 25 },
    );
  }, 60_000);

  test('close() called while answers are queued resolves only after every one of them settled; a continuation sending after close began fails STORE_UNAVAILABLE (closed), it does not hang', async () => {
    const count = 4 * ANSWERS_PER_TURN;
    let settled = 0;
    let closing: Promise<void> | null = null;
    let settledWhenClosed = -1;
    const late: Array<Promise<unknown>> = [];
    const reads = Array.from({ length: count }, (_, i) =>
      store.get(binding(`close-${i}`)).then(() => {
        settled += 1;
        if (closing === null) closing = store.close().then(() => void (settledWhenClosed = settled));
        else late.push(outcome(store.get(binding(`after-close-${i}`))));
      }),
    );
    await Promise.all(reads);
    await closing;
    expect(settledWhenClosed).toBe(count);
    expect(await Promise.all(late)).toEqual(
      Array.from({ length: count - 1 }, () => expect.objectContaining({ code: 'STORE_UNAVAILABLE', details: expect.objectContaining({ reason: 'closed' }) })),
    );
  });

  test('a group rolled back (COMMIT failed before it ran) rejects every write STORE_UNAVAILABLE, also those settled in later turns', async () => {
    const ids = Array.from({ length: 3 * ANSWERS_PER_TURN }, (_, i) => `fail-${i}`);
    await threadOf(store).injectCommitFault('open');
    const rolledBack = await Promise.all(ids.map((id) => outcome(store.createIfAbsent(fresh(id)))));
    expect(rolledBack).toEqual(ids.map(() => expect.objectContaining({ code: 'STORE_UNAVAILABLE' })));
    // The store goes on working: every write of the next group answers created.
    const created = await Promise.all(ids.map((id) => outcome(store.createIfAbsent(fresh(id)))));
    expect(created).toEqual(ids.map(() => ({ value: expect.objectContaining({ created: true }) })));
  });
});

test('a file store: a statement failing alone in the last turn of settling rejects STORE_UNAVAILABLE, the others of the group are created', async () => {
  const url = fileUrl();
  const store = await openCheckpointStore(url);
  try {
    const other = new Database(pathOf(url));
    other.exec(`CREATE TRIGGER refuse BEFORE INSERT ON ttc_checkpoints WHEN NEW.call_id LIKE 'refused-%' BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`);
    other.close();
    const ids = Array.from({ length: 3 * ANSWERS_PER_TURN }, (_, i) => (i === 9 || i === 11 ? `refused-${i}` : `ok-${i}`));
    const results = await Promise.all(ids.map((id) => outcome(store.createIfAbsent(fresh(id)))));
    ids.forEach((id, i) => {
      if (id.startsWith('refused')) expect(results[i]).toMatchObject({ code: 'STORE_UNAVAILABLE', details: { driverCode: 'SQLITE_CONSTRAINT_TRIGGER' } });
      else expect(results[i]).toMatchObject({ value: { created: true } });
    });
    expect(rowCount(pathOf(url))).toBe(10);
  } finally {
    await store.close();
  }
});

test('the worker thread exits between two settling turns: every committed write still answers created, reads sent later fail STORE_UNAVAILABLE, a write sent meanwhile is unknown or provably not stored, nothing hangs', async () => {
  const url = fileUrl();
  const store = await openCheckpointStore(url);
  const worker = workers[workers.length - 1]!;
  let settledAtExit = -1;
  let settled = 0;
  worker.once('exit', () => (settledAtExit = settled));
  const count = 100 * ANSWERS_PER_TURN;
  const followUps: Array<Promise<{ value: unknown } | { code: string }>> = [];
  const sentMeanwhile: { write?: Promise<{ value: unknown } | { code: string }> } = {};
  const writes = Array.from({ length: count }, (_, i) =>
    outcome(
      store.createIfAbsent(fresh(`died-${i}`)).then((created) => {
        settled += 1;
        if (settled === 1) {
          // A write of this turn reaches the thread as it stops, then the thread is gone.
          sentMeanwhile.write = outcome(store.createIfAbsent(fresh('in-flight')));
          void worker.terminate();
          const until = Date.now() + 100;
          while (Date.now() < until) {
            // let the thread stop while this continuation holds the loop
          }
        } else {
          followUps.push(outcome(store.get(binding(`died-${i}`))));
        }
        return created;
      }),
    ),
  );
  const results = await Promise.all(writes);
  expect(settledAtExit).toBeGreaterThan(0);
  expect(settledAtExit).toBeLessThan(count); // the thread did exit between two settling turns
  expect(results).toEqual(Array.from({ length: count }, () => ({ value: expect.objectContaining({ created: true }) })));
  // The write sent in the first continuation: posted before the exit, its outcome is unknown; not
  // posted yet (the exit came first in the same poll phase), it fails STORE_UNAVAILABLE and is not stored.
  const sent = (await sentMeanwhile.write) as { code?: string };
  expect(['STORE_OUTCOME_UNKNOWN', 'STORE_UNAVAILABLE']).toContain(sent.code);
  // Reads never report an unknown outcome: before the exit they answer, after it they fail.
  for (const read of await Promise.all(followUps)) {
    if ('code' in read) expect(read.code).toBe('STORE_UNAVAILABLE');
    else expect(read.value).not.toBeNull();
  }
  await expect(store.get(binding('after'))).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  for (let i = 0; i < 10; i += 1) await turn(); // any settling turn scheduled before the exit runs harmlessly
  await store.close();
  const db = new Database(pathOf(url), { readonly: true });
  try {
    expect(db.prepare("SELECT count(*) AS n FROM ttc_checkpoints WHERE call_id LIKE 'died-%'").get()).toEqual({ n: count });
    const stored = (db.prepare("SELECT count(*) AS n FROM ttc_checkpoints WHERE call_id = 'in-flight'").get() as { n: number }).n;
    if (sent.code === 'STORE_UNAVAILABLE') expect(stored).toBe(0);
  } finally {
    db.close();
  }
}, 30_000);

test('a process with chained calls and no close exits by itself only after every answer settled and every follow-up ran', async () => {
  const file = join(dir, 'exit-chain.db');
  const script = `
    const { openCheckpointStore: open } = require(${JSON.stringify(join(ROOT, 'src/stores/open-checkpoint-store.ts'))});
    const { createCheckpoint } = require(${JSON.stringify(join(ROOT, 'src/checkpoint/record.ts'))});
    const binding = (i) => ({ namespace: 'exit', callId: 'c' + i, toolName: 't', toolRevision: '1', inputFingerprint: 'sha256:' + '0'.repeat(64) });
    open('sqlite:${file}').then((store) => {
      for (let i = 0; i < 40; i += 1)
        store.createIfAbsent(createCheckpoint(binding(i), { createdAt: '2030-01-01T00:00:00.000Z' }))
          .then(() => store.get(binding(i)))
          .then((r) => r && console.log('read'));
    });`;
  const { stdout } = await run(process.execPath, ['-r', 'tsx/cjs', '-e', script], { cwd: ROOT, timeout: 30_000 });
  expect(stdout.split('\n').filter((l) => l === 'read')).toHaveLength(40);
}, 40_000);

test('one answer message with more responses than a spread argument list holds settles them all (no RangeError on the calling thread)', async () => {
  const store = await openCheckpointStore(fileUrl());
  try {
    const count = 200_000;
    const thread = threadOf(store);
    const answers = await Promise.all(Array.from({ length: count }, (_, i) => thread.request<null>({ op: 'get', key: `ck1-absent-${i}` })));
    expect(answers.every((a) => a === null)).toBe(true);
  } finally {
    await store.close();
  }
}, 60_000);
