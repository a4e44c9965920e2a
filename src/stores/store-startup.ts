/**
 * Opening the store when a worker starts, while PostgreSQL may still be coming up (a restart,
 * a failover, a fleet started before its database): a worker that exited at the first refused
 * connection would crash-loop under a supervisor and be lost without one. The store is opened
 * again with backoff, each try logged, for at most a bounded total wait; a configuration error
 * (a bad URL, a refused login, an unknown database, INVALID_CONFIG, an untrusted owner, a schema
 * migrated by newer code) ends the wait at once, since waiting cannot fix it.
 */
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import type { CheckpointStore } from './checkpoint-store';

/** How long and how often {@link openStoreWhenReady} tries again. */
export interface StoreStartupWait {
  /** Longest total wait for the store, ms; 0 tries once. */
  readonly maxWaitMs: number;
  /** Delay before the second try, ms; doubles per try. @default 500 */
  readonly initialIntervalMs?: number;
  /** Longest delay between two tries, ms. @default 10,000 */
  readonly maximumIntervalMs?: number;
  /** Called before each wait with a sentence naming the try, the error and the next delay. @default nothing logged */
  readonly log?: (message: string) => void;
  /** Monotonic time, ms. @default performance.now() */
  readonly now?: () => number;
  /** Waits `ms`. @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Default total wait of `ttc worker` for its store (`TTC_STORE_STARTUP_WAIT`): 120,000 ms. */
export const DEFAULT_STORE_STARTUP_WAIT_MS = 120_000;

/**
 * SQLSTATEs and errnos of a store that answered and refused this configuration: waiting cannot
 * change them. Class 28 (invalid authorization, invalid password), `3D000` (no such database),
 * `3F000` (no such schema), `42501` (insufficient privilege), `ENOTFOUND` (no such host).
 */
const CONFIGURATION_CODES: readonly RegExp[] = [/^28/, /^3D000$/, /^3F000$/, /^42501$/, /^ENOTFOUND$/];

/**
 * Whether `error`, thrown by opening a PostgreSQL store, may go away by itself: STORE_UNAVAILABLE
 * whose driver code is not a configuration refusal (a refused or timed-out connection, `57P03`
 * "the database system is starting up", `53300` too many connections, a lost connection, ...).
 * Every other error (INVALID_ARGUMENT, INVALID_CONFIG, UNSUPPORTED_SCHEMA, a refused login) is final.
 */
export function isStoreStartingUp(error: unknown): boolean {
  if (!isCheckpointError(error, 'STORE_UNAVAILABLE')) return false;
  if (error.details.pooler !== undefined && /startup parameter/.test(String(error.details.pooler))) return false;
  const code = error.details.driverCode;
  return !(typeof code === 'string' && CONFIGURATION_CODES.some((pattern) => pattern.test(code)));
}

/**
 * Opens the store with `open`, trying again with backoff while it is starting up
 * ({@link isStoreStartingUp}) and the total wait stays within `wait.maxWaitMs`.
 *
 * @param where the store's URL with any password masked, for the log lines.
 * @returns the open store.
 * @throws the first error that is not a store starting up, at once; the last error once the
 *   next try would end after `wait.maxWaitMs`, as {@link CheckpointError} STORE_UNAVAILABLE
 *   whose message says how long and how often it was tried (the last error as `cause`).
 */
export async function openStoreWhenReady(open: () => Promise<CheckpointStore>, where: string, wait: StoreStartupWait): Promise<CheckpointStore> {
  const now = wait.now ?? (() => performance.now());
  const sleep = wait.sleep ?? ((ms: number) => new Promise<void>((done) => setTimeout(done, ms)));
  const maximumIntervalMs = wait.maximumIntervalMs ?? 10_000;
  const startedAt = now();
  let intervalMs = wait.initialIntervalMs ?? 500;
  for (let tries = 1; ; tries += 1) {
    try {
      return await open();
    } catch (error) {
      if (!isStoreStartingUp(error)) throw error;
      const waitedMs = now() - startedAt;
      const delayMs = Math.min(intervalMs, maximumIntervalMs);
      const message = (error as CheckpointError).message;
      if (waitedMs + delayMs > wait.maxWaitMs) {
        if (tries === 1) throw error;
        throw new CheckpointError(
          'STORE_UNAVAILABLE',
          `store ${where} did not become available within ${wait.maxWaitMs} ms (TTC_STORE_STARTUP_WAIT; ${tries} tries): ${message}`,
          { ...(error as CheckpointError).details, tries, waitedMs: Math.round(waitedMs) },
          { cause: error },
        );
      }
      wait.log?.(`store ${where} is not available yet (try ${tries}, ${Math.round(waitedMs)} of at most ${wait.maxWaitMs} ms waited): ${message}; trying again in ${delayMs} ms`);
      await sleep(delayMs);
      intervalMs = delayMs * 2;
    }
  }
}
