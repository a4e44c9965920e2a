/**
 * The SQLite store's group commit on its worker thread: writes queued while a
 * commit is in flight join the next transaction; a failing statement fails only its own write;
 * a failed COMMIT is settled by re-read or reported STORE_OUTCOME_UNKNOWN; close() lets pending
 * work finish and ends the thread.
 *
 * To put several writes in one group for sure, a "plug" write first waits for a lock held by
 * another connection (the thread is then busy in its busy wait); everything issued meanwhile
 * queues and, once the lock is released, commits as the next group.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { fingerprintInput } from '../../../src/checkpoint/digest';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimExecution } from '../../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../../../src/checkpoint/types';
import { checkpointKey } from '../../../src/stores/checkpoint-key';
import type { SqliteCommitFault } from '../../../src/stores/sqlite-protocol';
import { SqliteCheckpointStore } from '../../../src/stores/sqlite-store';
import type { SqliteThread } from '../../../src/stores/sqlite-thread';

const AT = '2030-01-01T00:00:00.000Z';

/**
 * Every worker thread the store starts, with whether it has exited: the store's own thread is
 * observed through its `Worker` object (an OS thread count also moves with Node's own threads).
 */
const startedThreads: { exited: boolean }[] = [];
jest.mock('node:worker_threads', () => {
  const actual = jest.requireActual<typeof import('node:worker_threads')>('node:worker_threads');
  class ObservedWorker extends actual.Worker {
    constructor(...args: ConstructorParameters<typeof actual.Worker>) {
      super(...args);
      const started = { exited: false };
      startedThreads.push(started);
      this.once('exit', () => (started.exited = true));
    }
  }
  return { ...actual, Worker: ObservedWorker };
});

let dir: string;
let file: string;
let store: SqliteCheckpointStore;
let other: Database.Database;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-sqlite-group-'));
  file = join(dir, 'checkpoints.db');
  store = await SqliteCheckpointStore.open(file, { busyTimeoutMs: 20_000 });
  other = new Database(file);
});

afterEach(async () => {
  if (other.inTransaction) other.exec('ROLLBACK');
  other.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function binding(callId: string): Binding {
  return { namespace: 'group', callId, toolName: 'create_ticket', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }) };
}

function fresh(callId: string): CheckpointRecord {
  return createCheckpoint(binding(callId), { createdAt: AT });
}

function thread(): SqliteThread {
  return (store as unknown as { thread: SqliteThread }).thread;
}

function rowCount(): number {
  return (other.prepare('SELECT count(*) AS n FROM ttc_checkpoints').get() as { n: number }).n;
}

/** Settles a promise into its value or its error code. */
async function outcome(promise: Promise<unknown>): Promise<unknown> {
  try {
    return { value: await promise };
  } catch (error) {
    if (isCheckpointError(error)) return { code: error.code, message: error.message, details: error.details };
    throw error;
  }
}

/**
 * Runs `issue` while the store's thread is busy with a plug write waiting for `other`'s lock,
 * then releases the lock: everything `issue` sent commits as the one group after the plug's.
 */
async function asOneGroup<T>(issue: () => Promise<T>): Promise<T> {
  other.exec('BEGIN IMMEDIATE');
  const plug = store.createIfAbsent(fresh(`plug-${Math.random()}`));
  // Let the thread pick the plug up and start waiting for the lock.
  await new Promise((resolve) => setTimeout(resolve, 250));
  const issued = issue();
  await new Promise((resolve) => setTimeout(resolve, 50));
  other.exec('COMMIT');
  await plug;
  return issued;
}

describe('group commit on the worker thread', () => {
  test('writes issued over many event-loop turns while a commit is in flight all join the next transaction, each settled after it', async () => {
    const before = store.stats();

    const results = await asOneGroup(async () => {
      const writes: Array<Promise<unknown>> = [];
      for (let i = 0; i < 10; i += 1) {
        writes.push(store.createIfAbsent(fresh(`turn-${i}`)));
        await new Promise((resolve) => setImmediate(resolve));
      }
      return Promise.all(writes);
    });

    expect(results.map((r) => (r as { created: boolean }).created)).toEqual(Array(10).fill(true));
    // The plug's transaction, then one for all ten.
    expect(store.stats()).toEqual({ commits: before.commits + 2, writes: before.writes + 11, requests: before.requests + 11 });
    expect(rowCount()).toBe(11);
  });

  test('the writes of one event-loop turn are sent together and commit in one transaction', async () => {
    const before = store.stats();
    await Promise.all(Array.from({ length: 16 }, (_, i) => store.createIfAbsent(fresh(`burst-${i}`))));
    expect(store.stats()).toEqual({ commits: before.commits + 1, writes: before.writes + 16, requests: before.requests + 16 });
  });

  test('a statement that fails fails only its own write (STORE_UNAVAILABLE, nothing of it written); the others of its group commit', async () => {
    other.exec(`CREATE TRIGGER refuse_one BEFORE INSERT ON ttc_checkpoints WHEN NEW.call_id = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`);

    const results = await asOneGroup(async () => Promise.all(['ok-1', 'refused', 'ok-2'].map((id) => outcome(store.createIfAbsent(fresh(id))))));

    expect(results[0]).toMatchObject({ value: { created: true } });
    expect(results[1]).toMatchObject({ code: 'STORE_UNAVAILABLE', details: { driverCode: 'SQLITE_CONSTRAINT_TRIGGER' } });
    expect((results[1] as { message: string }).message).toContain('nothing was written');
    expect(results[2]).toMatchObject({ value: { created: true } });
    expect(await store.get(binding('refused'))).toBeNull();
    expect(await store.get(binding('ok-2'))).not.toBeNull();
  });

  test('a statement that rolls the whole transaction back fails every write of its group; nothing of the group is written', async () => {
    other.exec(`CREATE TRIGGER roll_back_all BEFORE INSERT ON ttc_checkpoints WHEN NEW.call_id = 'doom' BEGIN SELECT RAISE(ROLLBACK, 'rolled back by a test trigger'); END`);

    const results = await asOneGroup(async () => Promise.all(['first', 'doom', 'last'].map((id) => outcome(store.createIfAbsent(fresh(id))))));

    expect(results.map((r) => (r as { code: string }).code)).toEqual(['STORE_UNAVAILABLE', 'STORE_UNAVAILABLE', 'STORE_UNAVAILABLE']);
    expect(await store.get(binding('first'))).toBeNull();
    expect(await store.get(binding('last'))).toBeNull();
    // The store goes on working.
    expect((await store.createIfAbsent(fresh('after'))).created).toBe(true);
  });
});

describe('a failed COMMIT', () => {
  /** A ready record in the store, and a claim computed from it. */
  async function claimable(callId: string): Promise<{ ready: CheckpointRecord; claim: ReturnType<typeof claimExecution> }> {
    const ready = (await store.createIfAbsent(fresh(callId))).record;
    return { ready, claim: claimExecution(ready, { attemptId: 'a1', at: AT }) };
  }

  async function groupWithFault(fault: SqliteCommitFault, issue: () => Array<Promise<unknown>>): Promise<unknown[]> {
    return asOneGroup(async () => {
      const injected = thread().injectCommitFault(fault);
      const results = Promise.all(issue().map(outcome));
      await injected;
      return results;
    });
  }

  test('before it ran (the transaction still open): rolled back, every write that changed something is STORE_UNAVAILABLE, a lost compare-and-swap still answers false', async () => {
    const { ready, claim } = await claimable('open-1');
    const moved = await claimable('open-3');
    expect(await store.compareAndSwap(0, moved.claim.next, moved.ready)).toBe(true);
    const late = claimExecution(moved.ready, { attemptId: 'late', at: AT });
    const before = store.stats();

    const [created, swapped, stale] = await groupWithFault('open', () => [
      store.createIfAbsent(fresh('open-2')),
      store.compareAndSwap(0, claim.next, ready),
      store.compareAndSwap(0, late.next),
    ]);

    expect(created).toMatchObject({ code: 'STORE_UNAVAILABLE', details: { driverCode: 'SQLITE_IOERR' } });
    expect((created as { message: string }).message).toContain('rolled back');
    expect(swapped).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(stale).toEqual({ value: false });
    expect(await store.get(binding('open-2'))).toBeNull();
    expect(await store.get(binding('open-1'))).toEqual(ready);
    expect(store.stats().commits).toBe(before.commits + 1); // the plug's only
  });

  test('reported failed although it committed: the re-read finds the bodies written, every write answers as it ran', async () => {
    const { ready, claim } = await claimable('committed-1');
    const before = store.stats();

    const [created, swapped] = await groupWithFault('committed', () => [store.createIfAbsent(fresh('committed-2')), store.compareAndSwap(0, claim.next, ready)]);

    expect(created).toMatchObject({ value: { created: true } });
    expect(swapped).toEqual({ value: true });
    expect(await store.get(binding('committed-1'))).toEqual(claim.next);
    expect(await store.get(binding('committed-2'))).not.toBeNull();
    expect(store.stats()).toMatchObject({ commits: before.commits + 2, writes: before.writes + 3 });
  });

  test('reported failed after a rollback, and a re-read proves it: the row still holds the old revision; STORE_UNAVAILABLE, nothing written', async () => {
    const { ready, claim } = await claimable('rolled-1');

    const [swapped] = await groupWithFault('rolled-back', () => [store.compareAndSwap(0, claim.next, ready)]);

    expect(swapped).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect((swapped as { message: string }).message).toContain('did not commit');
    expect(await store.get(binding('rolled-1'))).toEqual(ready);
  });

  test('reported failed after a rollback, and the re-read cannot tell (an insert whose row is absent): STORE_OUTCOME_UNKNOWN', async () => {
    const [created] = await groupWithFault('rolled-back', () => [store.createIfAbsent(fresh('unknown-1'))]);

    expect(created).toMatchObject({ code: 'STORE_OUTCOME_UNKNOWN', details: { driverCode: 'SQLITE_IOERR' } });
    expect(other.prepare('SELECT count(*) AS n FROM ttc_checkpoints WHERE key = ?').get(checkpointKey(binding('unknown-1')))).toEqual({ n: 0 });
  });
});

describe('close', () => {
  test('lets pending writes finish, ends the worker thread, is idempotent; later calls are STORE_UNAVAILABLE (closed)', async () => {
    const before = startedThreads.length;
    const second = await SqliteCheckpointStore.open(join(dir, 'second.db'));
    const own = startedThreads.slice(before);
    expect(own).toEqual([{ exited: false }]);

    const pending = Array.from({ length: 8 }, (_, i) => second.createIfAbsent(fresh(`pending-${i}`)));
    const closed = second.close();
    expect(second.close()).toBe(second.close());

    expect((await Promise.all(pending)).every((r) => r.created)).toBe(true);
    await closed;
    await second.close();
    expect(own).toEqual([{ exited: true }]);
    expect(await outcome(second.get(binding('pending-0')))).toMatchObject({ code: 'STORE_UNAVAILABLE', details: { reason: 'closed' } });
    const db = new Database(join(dir, 'second.db'), { readonly: true });
    expect(db.prepare('SELECT count(*) AS n FROM ttc_checkpoints').get()).toEqual({ n: 8 });
    db.close();
  });
});

describe(':memory: runs the same executor on the calling thread', () => {
  test('group commit of one turn, stats, close', async () => {
    const memory = await SqliteCheckpointStore.open(':memory:');
    await Promise.all(Array.from({ length: 16 }, (_, i) => memory.createIfAbsent(fresh(`m-${i}`))));
    expect(memory.stats()).toEqual({ commits: 1, writes: 16, requests: 16 });
    expect(await memory.settings()).toMatchObject({ journalMode: 'memory', synchronous: 2, userVersion: 4 });
    await memory.close();
  });
});
