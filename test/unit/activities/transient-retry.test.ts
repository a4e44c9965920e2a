// In-attempt retry of transient tool failures: full-jitter backoff, Retry-After as the next
// delay, the call deadline, the same request every time.
import fc from 'fast-check';
import { nextRetryDelayMs, retryTransient, type TransientRetryPolicy } from '../../../src/activities';

const POLICY: TransientRetryPolicy = { initialIntervalMs: 100, maximumIntervalMs: 1_000, maximumAttempts: 5 };

class Transient extends Error {
  readonly kind = 'transient';
  constructor(readonly retryAfterMs?: number) {
    super('transient');
  }
}

describe('nextRetryDelayMs', () => {
  it('is full jitter: random × min(maximum, initial × 2^(retry − 1))', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => nextRetryDelayMs(n, POLICY, undefined, () => 0.999999))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(nextRetryDelayMs(3, POLICY, undefined, () => 0)).toBe(0);
    expect(nextRetryDelayMs(3, POLICY, undefined, () => 0.5)).toBe(200);
  });

  it('takes Retry-After as the next delay exactly, neither jittered nor capped', () => {
    expect(nextRetryDelayMs(1, POLICY, 1_000, () => 0)).toBe(1_000);
    expect(nextRetryDelayMs(1, POLICY, 7_500, () => 0.9)).toBe(7_500);
    expect(nextRetryDelayMs(1, POLICY, 0, () => 0.5)).toBe(50);
  });
});

describe('retryTransient', () => {
  const isTransient = (e: unknown) => (e as { kind?: string }).kind === 'transient';

  it('retries transient failures until the call succeeds, waiting Retry-After before the next call', async () => {
    const calls: number[] = [];
    const result = await retryTransient(
      async () => {
        calls.push(Date.now());
        if (calls.length === 1) throw new Transient(150);
        return 'done';
      },
      { policy: POLICY, deadlineAt: Date.now() + 10_000, isTransient },
    );
    expect(result).toBe('done');
    expect(calls).toHaveLength(2);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(150);
  });

  it('does not retry a rejected or unknown-outcome failure', async () => {
    let n = 0;
    const rejected = Object.assign(new Error('422'), { kind: 'rejected' });
    await expect(
      retryTransient(
        async () => {
          n += 1;
          throw rejected;
        },
        { policy: POLICY, deadlineAt: Date.now() + 10_000, isTransient },
      ),
    ).rejects.toBe(rejected);
    expect(n).toBe(1);
  });

  it('stops after maximumAttempts calls and throws the last error', async () => {
    let n = 0;
    await expect(
      retryTransient(
        async () => {
          n += 1;
          throw new Transient();
        },
        { policy: { ...POLICY, initialIntervalMs: 1 }, deadlineAt: Date.now() + 10_000, isTransient },
      ),
    ).rejects.toBeInstanceOf(Transient);
    expect(n).toBe(5);
  });

  it('starts no retry whose Retry-After would end past the call deadline', async () => {
    let n = 0;
    const t0 = Date.now();
    await expect(
      retryTransient(
        async () => {
          n += 1;
          throw new Transient(5_000);
        },
        { policy: POLICY, deadlineAt: t0 + 1_000, isTransient },
      ),
    ).rejects.toBeInstanceOf(Transient);
    expect(n).toBe(1);
    expect(Date.now() - t0).toBeLessThan(500);
  });

  it('an abort during the backoff stops retrying', async () => {
    const controller = new AbortController();
    let n = 0;
    const done = retryTransient(
      async () => {
        n += 1;
        throw new Transient(5_000);
      },
      { policy: POLICY, deadlineAt: Date.now() + 60_000, isTransient, signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 50);
    await expect(done).rejects.toBeInstanceOf(Transient);
    expect(n).toBe(1);
  });

  // Found by the batch interleaving explorer under CPU load (a retry's real timer fired after
  // virtual time had passed the item's deadline): the sleep before a retry ended after the call
  // deadline and the retry was still sent; another attempt had taken the claim over and applied
  // the item, so it was applied twice.
  it('sends no retry whose backoff ended at or after the call deadline (the process stalled during the sleep)', async () => {
    let t = 1_000;
    let n = 0;
    const error = new Transient();
    await expect(
      retryTransient(
        async () => {
          n += 1;
          throw error;
        },
        {
          policy: { ...POLICY, initialIntervalMs: 1 },
          deadlineAt: 10_000,
          now: () => t,
          onRetry: () => (t = 38_085),
          isTransient,
        },
      ),
    ).rejects.toBe(error);
    expect(n).toBe(1);
  });

  it('property: whatever the backoff delays and however long each sleep stalls, every call starts before the deadline', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20_000 }),
        fc.array(fc.integer({ min: 0, max: 15_000 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 6 }),
        async (deadlineAt, stalls, failures) => {
          let t = 0;
          const starts: number[] = [];
          await retryTransient(
            async () => {
              starts.push(t);
              if (starts.length <= failures) throw new Transient();
              return 'ok';
            },
            {
              policy: { initialIntervalMs: 1, maximumIntervalMs: 2, maximumAttempts: 7 },
              deadlineAt,
              now: () => t,
              // The clock moves by the delay and by a stall while the retry sleeps.
              onRetry: (retry, delayMs) => (t += delayMs + stalls[(retry - 1) % stalls.length]!),
              isTransient,
            },
          ).catch((e: unknown) => expect(e).toBeInstanceOf(Transient));
          expect(starts.slice(1).filter((at) => at >= deadlineAt)).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });
});
