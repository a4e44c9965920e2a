/**
 * SQLite `prune` decodes candidates outside the write lock: decoding 500 rows
 * of 55 KB payloads takes about a second, and a writer in another process that waits for the
 * lock waits synchronously (blocking its heartbeats). Decode is a plain WAL read; the delete is
 * a short transaction by key, revision, status and exact body.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { fingerprintInput } from '../../../src/checkpoint/digest';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimDelivery, claimExecution, completeDelivery, completeExecution } from '../../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../../../src/checkpoint/types';
import { checkpointKey } from '../../../src/stores/checkpoint-key';
import type { RowCodec, StoredRow } from '../../../src/stores/row-codec';
import { SqliteCheckpointStore } from '../../../src/stores/sqlite-store';

const AT = '2030-01-01T00:00:00.000Z';
const LATER = '2031-01-01T00:00:00.000Z';

function binding(callId: string): Binding {
  return { namespace: 'tenant', callId, toolName: 'report', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }) };
}

async function deliver(store: SqliteCheckpointStore, b: Binding, payload: unknown): Promise<CheckpointRecord> {
  let record = (await store.createIfAbsent(createCheckpoint(b, { createdAt: AT }))).record;
  for (const step of [
    (r: CheckpointRecord) => claimExecution(r, { attemptId: 'a1', at: AT }),
    (r: CheckpointRecord) => completeExecution(r, { attemptId: 'a1', at: AT, result: payload }),
    (r: CheckpointRecord) => claimDelivery(r, { deliveryId: 'd1', at: AT }),
    (r: CheckpointRecord) => completeDelivery(r, { deliveryId: 'd1', at: AT }),
  ]) {
    const t = step(record);
    if (!(await store.compareAndSwap(t.expectedRevision, t.next, record))) throw new Error('CAS lost');
    record = t.next;
  }
  return record;
}

describe('SQLite prune decodes outside the write lock', () => {
  let dir: string;
  let file: string;
  let store: SqliteCheckpointStore;
  let other: Database.Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-prune-'));
    file = join(dir, 'checkpoints.db');
    store = await SqliteCheckpointStore.open(file);
    // Another process's connection that waits for no lock at all: any write lock held by prune makes it fail with SQLITE_BUSY.
    other = new Database(file, { timeout: 0 });
  });

  afterEach(async () => {
    other.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Whether the store holds the write lock now: the other connection (busy timeout 0) fails to
   * take it at once if so. (The store's connection lives on its worker thread; the lock is what
   * other processes see.)
   */
  function storeHoldsWriteLock(): boolean {
    try {
      other.exec('BEGIN IMMEDIATE');
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_BUSY') return true;
      throw error;
    }
    other.exec('ROLLBACK');
    return false;
  }

  /** Calls `during(row)` each time prune decodes a row (on the calling thread), with whether the store holds the write lock then. */
  function spyOnDecode(during: (row: StoredRow, storeLocked: boolean) => void): void {
    const internals = store as unknown as { codec: RowCodec };
    const decode = internals.codec.decode.bind(internals.codec);
    internals.codec.decode = (row: StoredRow) => {
      during(row, storeHoldsWriteLock());
      return decode(row);
    };
  }

  test('every decode runs outside a transaction, and another connection writes meanwhile without waiting (busy timeout 0)', async () => {
    const payload = { report: 'x'.repeat(55_000) };
    // More than one page (500 rows) of delivered rows with 55 KB payloads.
    const bindings = Array.from({ length: 600 }, (_, i) => binding(`call-${String(i).padStart(4, '0')}`));
    for (let i = 0; i < bindings.length; i += 150) await Promise.all(bindings.slice(i, i + 150).map((b) => deliver(store, b, payload)));
    const states: boolean[] = [];
    let otherWrites = 0;
    other.exec('CREATE TABLE other_writes (n INTEGER NOT NULL)');
    spyOnDecode((_row, storeLocked) => {
      states.push(storeLocked);
      if (states.length % 100 === 1) {
        other.exec('BEGIN IMMEDIATE');
        other.prepare('INSERT INTO other_writes (n) VALUES (?)').run(states.length);
        other.exec('COMMIT');
        otherWrites += 1;
      }
    });

    const deleted = await store.prune({ olderThan: LATER });

    expect(deleted).toBe(600);
    expect(states).toHaveLength(600);
    expect(states.filter((locked) => locked)).toEqual([]);
    expect(otherWrites).toBe(6);
    expect((other.prepare('SELECT count(*) AS n FROM ttc_checkpoints').get() as { n: number }).n).toBe(0);
  }, 120_000);

  test('a row changed or damaged by another connection after prune decoded it is not deleted', async () => {
    const bindings = ['a', 'b', 'c'].map(binding);
    for (const b of bindings) await deliver(store, b, { ok: true });
    const damagedKey = checkpointKey(bindings[1]!);
    spyOnDecode((row) => {
      // After prune decoded the first row (and so read the whole page), damage the second one; revision and status columns stay.
      if (row.key === checkpointKey(bindings[0]!)) other.prepare("UPDATE ttc_checkpoints SET body = body || ' ' WHERE key = ?").run(damagedKey);
    });

    const deleted = await store.prune({ olderThan: LATER });

    expect(deleted).toBe(2);
    const left = other.prepare('SELECT key, status, revision FROM ttc_checkpoints').all();
    expect(left).toEqual([{ key: damagedKey, status: 'delivered', revision: 4 }]);
    await expect(store.get(bindings[1]!)).rejects.toMatchObject({ code: 'INVALID_CHECKPOINT' });
  });
});
