/**
 * A checkpoint store in a temporary SQLite file, for a user's tests: one directory under the OS
 * temp dir per store, removed (with the file) by `close()`. A real store, so the compare-and-swap
 * and the codec behave as in production.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CheckpointStore, CheckpointStoreOptions } from '../stores/checkpoint-store';
import { openCheckpointStore } from '../stores/open-checkpoint-store';

/** A store in a temporary SQLite file, with the URL other processes (a worker under test) can open. */
export interface TempCheckpointStore {
  readonly store: CheckpointStore;
  /** `sqlite:<file>`: pass it to `openCheckpointStore` (or `TTC_STORE_URL`) in another process. */
  readonly url: string;
  /** The temporary directory holding the file. */
  readonly dir: string;
  /** Closes the store and deletes its directory. Idempotent. */
  close(): Promise<void>;
}

/**
 * Opens a checkpoint store in a new temporary SQLite file.
 *
 * @param options passed to `openCheckpointStore` (HMAC keys, payload encryption, busy timeout).
 * @throws {@link CheckpointError} from `openCheckpointStore` (e.g. STORE_UNAVAILABLE); the directory is removed first.
 */
export async function createTempSqliteStore(options: CheckpointStoreOptions = {}): Promise<TempCheckpointStore> {
  const dir = mkdtempSync(join(tmpdir(), 'ttc-test-store-'));
  const url = `sqlite:${join(dir, 'checkpoints.db')}`;
  let store: CheckpointStore;
  try {
    store = await openCheckpointStore(url, options);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let closed = false;
  return {
    store,
    url,
    dir,
    async close() {
      if (closed) return;
      closed = true;
      try {
        await store.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
