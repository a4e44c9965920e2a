/**
 * The SQLite store's `stats()` counts what costs an fsync: a write transaction that changed a row.
 * A re-delivery's insert of an existing key and a lost compare-and-swap change nothing, append no
 * frame to the WAL (its bytes stay the same) and are not counted, so a benchmark's "fsyncs per
 * call" is true for runs that re-deliver.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fingerprintInput } from '../../../src/checkpoint/digest';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimExecution } from '../../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../../../src/checkpoint/types';
import { SqliteCheckpointStore } from '../../../src/stores/sqlite-store';

const AT = '2030-01-01T00:00:00.000Z';

let dir: string;
let file: string;
let store: SqliteCheckpointStore;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-sqlite-commit-counter-'));
  file = join(dir, 'checkpoints.db');
  store = await SqliteCheckpointStore.open(file);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function fresh(callId: string): CheckpointRecord {
  const binding: Binding = { namespace: 'counter', callId, toolName: 'send_email', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }) };
  return createCheckpoint(binding, { createdAt: AT });
}

/** The WAL's bytes, hashed: a transaction that appends a frame changes them. */
function walDigest(): string {
  return createHash('sha256')
    .update(readFileSync(`${file}-wal`))
    .digest('hex');
}

test('a fresh insert and a won compare-and-swap are one commit each; the WAL grows', async () => {
  const before = store.stats();
  const wal = walDigest();
  const record = fresh('c1');
  expect((await store.createIfAbsent(record)).created).toBe(true);
  const claim = claimExecution(record, { attemptId: 'a1', at: AT });
  expect(await store.compareAndSwap(claim.expectedRevision, claim.next, record)).toBe(true);
  expect(store.stats()).toEqual({ commits: before.commits + 2, writes: before.writes + 2, requests: before.requests + 2 });
  expect(walDigest()).not.toBe(wal);
});

test('a re-delivery (insert of an existing key) and a lost compare-and-swap change nothing: no commit counted, the WAL unchanged', async () => {
  const record = fresh('c2');
  await store.createIfAbsent(record);
  const claim = claimExecution(record, { attemptId: 'a1', at: AT });
  await store.compareAndSwap(claim.expectedRevision, claim.next, record);
  const before = store.stats();
  const wal = walDigest();

  expect((await store.createIfAbsent(fresh('c2'))).created).toBe(false);
  const stale = claimExecution(record, { attemptId: 'a2', at: AT });
  expect(await store.compareAndSwap(stale.expectedRevision, stale.next, record)).toBe(false);

  expect(store.stats()).toEqual({ ...before, requests: before.requests + 2 });
  expect(walDigest()).toBe(wal);
});
