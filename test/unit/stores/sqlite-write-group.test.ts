/**
 * The SQLite store's `writeGroup`: a group of item writes is one request to the worker
 * thread and commits in one transaction (one fsync), and a failed COMMIT is settled by re-reading
 * the rows the group changed, as for single writes (see `sqlite-group-commit.test.ts`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fingerprintInput } from '../../../src/checkpoint/digest';
import { isCheckpointError } from '../../../src/checkpoint/errors';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimExecution } from '../../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../../../src/checkpoint/types';
import type { GroupWrite } from '../../../src/stores/checkpoint-store';
import { SqliteCheckpointStore } from '../../../src/stores/sqlite-store';
import type { SqliteThread } from '../../../src/stores/sqlite-thread';

const AT = '2030-01-01T00:00:00.000Z';

let dir: string;
let store: SqliteCheckpointStore;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-sqlite-write-group-'));
  store = await SqliteCheckpointStore.open(join(dir, 'checkpoints.db'));
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function binding(callId: string): Binding {
  return { namespace: 'items', callId, toolName: 'send_notification', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }) };
}

function fresh(callId: string): CheckpointRecord {
  return createCheckpoint(binding(callId), { createdAt: AT });
}

function thread(): SqliteThread {
  return (store as unknown as { thread: SqliteThread }).thread;
}

/** Creates `n` ready records and returns the writes that claim them. */
async function claims(prefix: string, n: number): Promise<{ writes: GroupWrite[]; next: CheckpointRecord[] }> {
  const created = await store.writeGroup(Array.from({ length: n }, (_, i) => ({ kind: 'create', record: fresh(`${prefix}-${i}`) })));
  const ready = created.map((r) => (r.kind === 'create' ? r.record : null)!);
  const transitions = ready.map((r) => claimExecution(r, { attemptId: 'a1', at: AT }));
  return { writes: transitions.map((t, i) => ({ kind: 'cas', expectedRevision: t.expectedRevision, next: t.next, expected: ready[i]! })), next: transitions.map((t) => t.next) };
}

test('100 creates and then 100 claims are two transactions (two fsyncs), not 200', async () => {
  const before = store.stats();

  const { writes, next } = await claims('one-commit', 100);
  const swapped = await store.writeGroup(writes);

  expect(swapped.every((r) => r.kind === 'cas' && r.swapped)).toBe(true);
  expect(store.stats()).toEqual({ commits: before.commits + 2, writes: before.writes + 2, requests: before.requests + 2 });
  expect(await store.getMany(next.map((r) => r.binding))).toEqual(next);
});

test('a COMMIT reported failed although it committed: the re-read finds the group stored and it answers as it ran', async () => {
  const { writes, next } = await claims('committed', 3);
  const extra = fresh('committed-new');

  const injected = thread().injectCommitFault('committed');
  const results = await store.writeGroup([...writes, { kind: 'create', record: extra }]);
  await injected;

  expect(results).toEqual([
    { kind: 'cas', swapped: true },
    { kind: 'cas', swapped: true },
    { kind: 'cas', swapped: true },
    { kind: 'create', created: true, record: extra },
  ]);
  expect(await store.getMany([...next.map((r) => r.binding), extra.binding])).toEqual([...next, extra]);
});

test('a COMMIT reported failed after a rollback, and the re-read proves it: STORE_UNAVAILABLE, nothing of the group written', async () => {
  const { writes } = await claims('rolled', 3);
  const ready = writes.map((w) => (w.kind === 'cas' ? w.expected : null)!);

  const injected = thread().injectCommitFault('rolled-back');
  const error = await store.writeGroup([...writes, { kind: 'create', record: fresh('rolled-new') }]).catch((e: unknown) => e);
  await injected;

  expect(isCheckpointError(error, 'STORE_UNAVAILABLE')).toBe(true);
  expect((error as Error).message).toContain('did not commit');
  expect(await store.getMany([...ready.map((r) => r.binding), binding('rolled-new')])).toEqual([...ready, null]);
});
