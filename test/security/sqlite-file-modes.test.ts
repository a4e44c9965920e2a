/**
 * The SQLite store's files hold every tool result, receipt and key: the database file and its
 * `-wal` and `-shm` are readable and writable by their owner only (0600), whatever the umask; an
 * existing file the process's user owns that others could read is tightened when the store opens.
 * Real SQLite files through the store's own open path.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { createCheckpoint } from '../../src/checkpoint/record';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { makeBinding } from '../conformance/store-conformance';

jest.setTimeout(120_000);

const dirs: string[] = [];
const savedUmask = process.umask();
afterEach(() => process.umask(savedUmask));
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A fresh directory (0700, made before any umask under test is set). */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ttc-sqlite-modes-'));
  dirs.push(dir);
  return dir;
}

const modeOf = (file: string) => statSync(file).mode & 0o777;
const storeFiles = (file: string) => [file, `${file}-wal`, `${file}-shm`];

/** Opens the store at `file` and writes one checkpoint (so the WAL and shared-memory files exist). */
async function openAndWrite(file: string, callId: string): Promise<CheckpointStore> {
  const store = await openCheckpointStore(`sqlite:${file}`);
  await store.createIfAbsent(createCheckpoint(makeBinding(callId), { createdAt: '2030-01-01T00:00:00.000Z' }));
  return store;
}

describe('SQLite store file modes', () => {
  it('a new store file, its -wal and its -shm are created 0600 under umask 022', async () => {
    const file = join(tempDir(), 'checkpoints.db');
    process.umask(0o022);
    const store = await openAndWrite(file, 'call-new-file');
    try {
      expect(storeFiles(file).map((f) => [f, existsSync(f) ? modeOf(f).toString(8) : 'absent'])).toEqual(storeFiles(file).map((f) => [f, '600']));
    } finally {
      await store.close();
    }
  });

  it('an existing store file, -wal and -shm this user owns with mode 0644 are tightened to 0600 when the store opens, with their rows kept', async () => {
    const file = join(tempDir(), 'checkpoints.db');
    process.umask(0o022);
    await (await openAndWrite(file, 'call-before-upgrade')).close();
    // Another connection keeps the WAL and shared-memory files in place while the store opens.
    const other = new Database(file, { timeout: 10_000 });
    try {
      other.pragma('journal_mode = WAL');
      other.prepare('SELECT count(*) FROM ttc_checkpoints').get();
      for (const f of storeFiles(file)) chmodSync(f, 0o644);
      expect(storeFiles(file).map(modeOf)).toEqual([0o644, 0o644, 0o644]);

      const store = await openCheckpointStore(`sqlite:${file}`);
      try {
        expect(storeFiles(file).map((f) => modeOf(f).toString(8))).toEqual(['600', '600', '600']);
        expect((await store.getByCall('tenant-a', 'call-before-upgrade'))?.binding.callId).toBe('call-before-upgrade');
      } finally {
        await store.close();
      }
    } finally {
      other.close();
    }
  });

  it('under any umask, a new store file and its -wal and -shm are exactly 0600 (property)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 0o777 }), async (umask) => {
        const dir = tempDir();
        const file = join(dir, `checkpoints-${(run += 1)}.db`);
        process.umask(umask);
        let store: CheckpointStore | undefined;
        try {
          store = await openAndWrite(file, `call-umask-${umask.toString(8)}`);
          expect(storeFiles(file).map((f) => modeOf(f).toString(8))).toEqual(['600', '600', '600']);
        } finally {
          process.umask(savedUmask);
          await store?.close();
        }
      }),
      { numRuns: 20 },
    );
  });
});
