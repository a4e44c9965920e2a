/**
 * A store wrapper that counts what a benchmark's store calls do (bench:overhead): durable writes,
 * the revision steps they carried, operations, and wall time per method.
 */
import type { CheckpointRecord } from '../src/protocol';
import type { CheckpointStore } from '../src/stores/checkpoint-store';

/** What the counting wrapper saw. */
export interface Counter {
  /** Store operations that wrote durably (insert that created, compare-and-swap that won, conversation append). */
  writes: number;
  /** Revision steps those writes carried (a composed compare-and-swap of +3 is 3). */
  transitions: number;
  /** Store operations of any kind (reads included). */
  operations: number;
  /** Wall time spent inside store calls, ms (reads included). */
  storeMs: number;
  /** Per store method: calls and ms (the profile of where store time goes). */
  byMethod: Map<string, { calls: number; ms: number }>;
}
export const zero = (): Counter => ({ writes: 0, transitions: 0, operations: 0, storeMs: 0, byMethod: new Map() });

/**
 * Wraps every method of `store` (a Proxy, so methods added later are timed too) and counts
 * durable writes: `createIfAbsent` that created (one insert, however many steps the inserted
 * record carries: `createClaimed` inserts create + claim, revision 1), `compareAndSwap` that
 * returned true (one conditional UPDATE, whatever `next.revision - expectedRevision` is), and
 * `putConversationEntries` with entries. `counter()` is read at every call, so the caller can
 * swap counters between phases. `delayMs`: wait this long before each call, outside the timing.
 */
export function countingStore(store: CheckpointStore, counter: () => Counter, delayMs = 0): CheckpointStore {
  return new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (prop === 'close') return method.bind(target);
      return async (...args: unknown[]) => {
        if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
        const c = counter();
        const started = performance.now();
        try {
          const result = await method.apply(target, args);
          if (prop === 'createIfAbsent' && (result as { created: boolean }).created) {
            c.writes += 1;
            c.transitions += 1 + (result as { record: CheckpointRecord }).record.revision;
          } else if (prop === 'compareAndSwap' && result === true) {
            c.writes += 1;
            c.transitions += (args[1] as CheckpointRecord).revision - (args[0] as number);
          } else if (prop === 'putConversationEntries' && (args[1] as unknown[]).length > 0) {
            c.writes += 1;
          }
          return result;
        } finally {
          const ms = performance.now() - started;
          c.operations += 1;
          c.storeMs += ms;
          const m = c.byMethod.get(String(prop)) ?? { calls: 0, ms: 0 };
          m.calls += 1;
          m.ms += ms;
          c.byMethod.set(String(prop), m);
        }
      };
    },
  });
}
