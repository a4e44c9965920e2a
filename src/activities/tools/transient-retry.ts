/**
 * In-attempt retry of transient tool failures (docs/protocol.md#the-fenced-attempt: transient
 * errors are retried with backoff and jitter, honouring Retry-After, within per-call and total
 * deadlines, always with the same key). The fenced activity calls the tool again *inside the
 * same attempt and claim*, so the idempotency key and the fence stay the same; the caller supplies
 * the tool call.
 *
 * Delays: exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"), except that a provider's `Retry-After` is taken as the next delay exactly.
 */
import { LongTimer } from './long-timer';

/** Backoff of transient retries inside one attempt. Every duration in ms. */
export interface TransientRetryPolicy {
  /** Cap of the first retry's delay. */
  readonly initialIntervalMs: number;
  /** Cap of any jittered delay. */
  readonly maximumIntervalMs: number;
  /** Calls in all, the first included (1 = no retry). */
  readonly maximumAttempts: number;
}

/** @default 200 ms initial, 5,000 ms maximum, 5 calls. */
export const DEFAULT_TRANSIENT_RETRY: TransientRetryPolicy = { initialIntervalMs: 200, maximumIntervalMs: 5_000, maximumAttempts: 5 };

/**
 * The delay before retry number `retry` (1 for the first retry), in ms: `retryAfterMs` when the
 * provider sent one (never shortened, never jittered), else full jitter:
 * `random() × min(maximumIntervalMs, initialIntervalMs × 2^(retry − 1))`, rounded down.
 *
 * Pure: reads no clock; `random` returns a number in [0, 1).
 */
export function nextRetryDelayMs(retry: number, policy: TransientRetryPolicy, retryAfterMs: number | undefined, random: () => number = Math.random): number {
  if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > 0) return Math.ceil(retryAfterMs);
  const cap = Math.min(policy.maximumIntervalMs, policy.initialIntervalMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * cap);
}

/** Options of {@link retryTransient}. */
export interface RetryTransientOptions {
  readonly policy: TransientRetryPolicy;
  /** No retry is started whose delay would end at or after this time (ms since the epoch). */
  readonly deadlineAt: number;
  /** True for an error that proves nothing was applied and may pass (the tool's `kind` is `transient`). */
  isTransient(error: unknown): boolean;
  /** Aborting stops further retries (the last error is thrown). */
  readonly signal?: AbortSignal;
  /** Called before each retry with its number and delay (for heartbeats and logs). */
  onRetry?(retry: number, delayMs: number, error: unknown): void;
  /** @default Date.now */
  readonly now?: () => number;
  /** @default Math.random */
  readonly random?: () => number;
}

/**
 * Calls `work` until it succeeds; retries an error only while it is transient, calls remain,
 * the next delay ends before the deadline and `signal` is not aborted; a retry whose delay ended
 * at or after the deadline (the process stalled) is not started. The error's
 * `retryAfterMs` (a number of ms, as the provider clients set it) is the next delay.
 *
 * @returns what `work` returned.
 * @throws the last error `work` threw, unchanged.
 */
export async function retryTransient<T>(work: () => Promise<T>, options: RetryTransientOptions): Promise<T> {
  const now = options.now ?? Date.now;
  for (let call = 1; ; call += 1) {
    try {
      return await work();
    } catch (error) {
      if (!options.isTransient(error) || call >= options.policy.maximumAttempts || options.signal?.aborted) throw error;
      const retryAfter = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
      const delayMs = nextRetryDelayMs(call, options.policy, typeof retryAfter === 'number' ? retryAfter : undefined, options.random);
      if (now() + delayMs >= options.deadlineAt) throw error;
      options.onRetry?.(call, delayMs, error);
      if (!(await sleep(delayMs, options.signal))) throw error;
      // A sleep can end late (a stalled process, a busy event loop): no request starts at or after
      // the deadline, when another attempt may take the claim over
      // (docs/protocol.md#overlapping-attempts).
      if (now() >= options.deadlineAt || options.signal?.aborted) throw error;
    }
  }
}

/** Resolves true after `ms` (any length: see `./long-timer`), or false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = (): void => {
      timer.clear();
      resolve(false);
    };
    const timer = new LongTimer(Date.now() + ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
