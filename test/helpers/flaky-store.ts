/**
 * Test doubles for store outages, shared by the never-twice scenarios and the adversarial suite:
 * a store that fails like a database that went away (the real STORE_UNAVAILABLE CheckpointError),
 * and a polling wait.
 */
import { CheckpointError } from '../../src/checkpoint/errors';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

/** Polls `predicate` every 10 ms until it holds; throws after `timeoutMs` (ms). */
export async function waitFor(predicate: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await predicate()) return;
    await sleep(10);
  }
  throw new Error('condition never held');
}

/** A store wrapper that throws the real STORE_UNAVAILABLE on chosen operations. */
export class FlakyStore implements CheckpointStore {
  down = false;
  /** Called before each op; return true to fail it. */
  failWhen: ((op: string, args: unknown[]) => boolean) | null = null;
  readonly ops: string[] = [];

  constructor(private readonly inner: CheckpointStore) {}

  private check(op: string, args: unknown[]): void {
    this.ops.push(op);
    if (this.down || this.failWhen?.(op, args)) throw new CheckpointError('STORE_UNAVAILABLE', `the test took the store away at ${op}; nothing was written`, {});
  }
  async createIfAbsent(...args: Parameters<CheckpointStore['createIfAbsent']>) {
    this.check('createIfAbsent', args);
    return this.inner.createIfAbsent(...args);
  }
  async releaseDedupeKey(...args: Parameters<CheckpointStore['releaseDedupeKey']>) {
    this.check('releaseDedupeKey', args);
    return this.inner.releaseDedupeKey(...args);
  }
  async get(...args: Parameters<CheckpointStore['get']>) {
    this.check('get', args);
    return this.inner.get(...args);
  }
  async getByCall(...args: Parameters<CheckpointStore['getByCall']>) {
    this.check('getByCall', args);
    return this.inner.getByCall(...args);
  }
  async compareAndSwap(...args: Parameters<CheckpointStore['compareAndSwap']>) {
    this.check(`cas:${args[1].status}`, args);
    return this.inner.compareAndSwap(...args);
  }
  async getMany(...args: Parameters<CheckpointStore['getMany']>) {
    this.check('getMany', args);
    return this.inner.getMany(...args);
  }
  async writeGroup(...args: Parameters<CheckpointStore['writeGroup']>) {
    this.check('writeGroup', args);
    return this.inner.writeGroup(...args);
  }
  listByStatus(...args: Parameters<CheckpointStore['listByStatus']>) {
    return this.inner.listByStatus(...args);
  }
  listQuarantined(...args: Parameters<CheckpointStore['listQuarantined']>) {
    return this.inner.listQuarantined(...args);
  }
  prune(...args: Parameters<CheckpointStore['prune']>) {
    return this.inner.prune(...args);
  }
  async putConversationEntries(...args: Parameters<CheckpointStore['putConversationEntries']>) {
    this.check('putConversationEntries', args);
    return this.inner.putConversationEntries(...args);
  }
  async getConversationEntries(...args: Parameters<CheckpointStore['getConversationEntries']>) {
    this.check('getConversationEntries', args);
    return this.inner.getConversationEntries(...args);
  }
  async close(): Promise<void> {}
}
