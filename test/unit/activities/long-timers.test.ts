/**
 * Timers past what `setTimeout` honours (2^31−1 ms, about 24.8 days): Node fires a longer delay
 * after 1 ms (jest's fake timers do the same), so a far call deadline, a far renewal limit or a
 * long renewal interval must re-arm rather than fire at once (src/activities/tools/long-timer.ts).
 */
import { ClaimRenewal } from '../../../src/activities/fence/claim-renewal';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createModelActivities } from '../../../src/activities/agent/model-turn';
import { retryTransient } from '../../../src/activities/tools/transient-retry';
import type { ModelAdapter } from '../../../src/model/model-adapter';
import { heartbeatIntervalMs } from '../../../src/activities/fence/kept-heartbeat';
import { LongTimer, MAX_TIMER_MS } from '../../../src/activities/tools/long-timer';
import { createClaimed } from '../../../src/checkpoint/compose';
import type { Binding } from '../../../src/checkpoint/types';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';

const binding: Binding = { namespace: 'default/acme', callId: 'c1', toolName: 'charge', toolRevision: 'v1', inputFingerprint: `sha256:${'c'.repeat(64)}` };

/** A store that counts renewals (compare-and-swap) and accepts each. */
function countingStore(): { store: CheckpointStore; renewals: () => number } {
  let renewals = 0;
  const store = {
    compareAndSwap: async () => {
      renewals += 1;
      return true;
    },
  } as unknown as CheckpointStore;
  return { store, renewals: () => renewals };
}

function renewal(store: CheckpointStore, deadlineMs: number, deadlineLimitMs?: number): ClaimRenewal {
  const at = new Date(Date.now()).toISOString();
  const claimed = createClaimed(binding, { attemptId: 'attempt-1', at, deadlineAt: new Date(Date.now() + Math.min(deadlineMs, 1e12)).toISOString() });
  return new ClaimRenewal({ store, claimed, attemptId: 'attempt-1', deadlineMs, deadlineLimitMs, now: () => new Date(Date.now()).toISOString(), nowMs: () => Date.now() });
}

describe('timers past 2^31−1 ms', () => {
  beforeEach(() => jest.useFakeTimers({ now: Date.UTC(2026, 0, 1) }));
  afterEach(() => jest.useRealTimers());

  it('a LongTimer 2^31 + 1,000 ms away fires then, not before', () => {
    let fired = 0;
    new LongTimer(Date.now() + MAX_TIMER_MS + 1_001, () => (fired += 1));
    jest.advanceTimersByTime(5);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(MAX_TIMER_MS + 1_000 - 5);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(1);
    expect(fired).toBe(1);
  });

  it('a cleared LongTimer never fires, also after a re-arm', () => {
    let fired = 0;
    const timer = new LongTimer(Date.now() + 2 * MAX_TIMER_MS, () => (fired += 1));
    jest.advanceTimersByTime(MAX_TIMER_MS + 10);
    timer.clear();
    jest.advanceTimersByTime(2 * MAX_TIMER_MS);
    expect(fired).toBe(0);
  });

  it("a claim's renewal limit 2^31 ms away does not abort the signal at once", async () => {
    const { store } = countingStore();
    const claim = renewal(store, 60_000, Date.now() + 2 ** 31);
    claim.start();
    jest.advanceTimersByTime(5);
    expect(claim.signal.aborted).toBe(false);
    await claim.stop();
  });

  it('a call deadline of 2^33 ms renews at most every 2^31−1 ms, not every millisecond', async () => {
    const { store, renewals } = countingStore();
    const claim = renewal(store, 2 ** 33);
    claim.start();
    await jest.advanceTimersByTimeAsync(100);
    expect(renewals()).toBe(0);
    await jest.advanceTimersByTimeAsync(MAX_TIMER_MS);
    expect(renewals()).toBe(1);
    await claim.stop();
  });
});

describe('the fence heartbeat interval', () => {
  it('is a third of the heartbeat timeout, at least 200 ms and at most 2^31−1 ms', () => {
    expect(heartbeatIntervalMs(30_000)).toBe(10_000);
    expect(heartbeatIntervalMs(100)).toBe(200);
    expect(heartbeatIntervalMs(2 ** 34)).toBe(MAX_TIMER_MS);
  });
});

describe('timers past 2^31−1 ms elsewhere in activities', () => {
  beforeEach(() => jest.useFakeTimers({ now: Date.UTC(2026, 0, 1) }));
  afterEach(() => jest.useRealTimers());

  it('a LongTimer does not fire before its time on its clock when that clock is set back', () => {
    let offsetMs = 0;
    let fired = 0;
    const at = Date.now() + 1_000;
    new LongTimer(
      at,
      () => (fired += 1),
      () => Date.now() + offsetMs,
    );
    jest.advanceTimersByTime(500);
    offsetMs = -3_600_000;
    jest.advanceTimersByTime(600);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(3_600_000);
    expect(fired).toBe(1);
  });

  it("a provider's Retry-After of 30 days is waited, not cut to 1 ms", async () => {
    let calls = 0;
    const retried = retryTransient(
      async () => {
        calls += 1;
        if (calls === 1) throw Object.assign(new Error('429'), { retryAfterMs: 30 * 86_400_000 });
        return 'ok';
      },
      { policy: { initialIntervalMs: 200, maximumIntervalMs: 5_000, maximumAttempts: 5 }, deadlineAt: Number.MAX_SAFE_INTEGER, isTransient: () => true },
    );
    await jest.advanceTimersByTimeAsync(10);
    expect(calls).toBe(1);
    await jest.advanceTimersByTimeAsync(30 * 86_400_000);
    await expect(retried).resolves.toBe('ok');
    expect(calls).toBe(2);
  });

  it('a model turn with a heartbeat timeout of 2^33 ms heartbeats once at its start, not every millisecond', async () => {
    let release!: () => void;
    const adapter = { turn: () => new Promise((resolve) => (release = () => resolve({ kind: 'final', text: 'x' }))) } as unknown as ModelAdapter;
    const { runModelTurn } = createModelActivities({ adapters: { a: adapter } } as never);
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 2 ** 33 } as never);
    let beats = 0;
    env.on('heartbeat', () => (beats += 1));
    const turn = env.run(runModelTurn as never, { model: 'a', turn: 0, messages: [{ role: 'user', text: 'go' }], tools: [] } as never);
    await jest.advanceTimersByTimeAsync(100);
    release();
    await (turn as Promise<unknown>).catch(() => undefined);
    expect(beats).toBe(1);
  });
});
