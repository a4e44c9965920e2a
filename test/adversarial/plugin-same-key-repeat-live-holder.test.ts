/**
 * Adversarial (docs/protocol.md#key-lifetime, #overlapping-attempts): a same-key repeat of a fenced
 * user activity whose holder is still running.
 *
 * The same-key rule counts the holder's settle time (its claim's `deadlineAt` + margin) as the
 * latest its request can land. That holds for a tool, which the fence aborts at its deadline; a
 * user's activity fenced by the plugin may ignore the abort signal (an unmodified activity does),
 * so its holder renews the claim instead and its request may land at any time while it runs
 * (src/activities/fence/claim-renewal.ts). A later attempt that finds the renewed claim inside
 * the key's retention takes it over at once and repeats the call with the same key; the holder's
 * renewal then loses, its signal aborts, and the activity, which ignores it, sends its request
 * later, after the key the repeat used first has expired: the provider applies the effect twice.
 *
 * The repeat's own request is bounded the same way (its settle time, now + `callDeadlineMs` +
 * margin), and is no bound either for a user activity: its renewals keep its claim while it runs.
 * So a renewing holder is repeated only after its settle time, and the repeat's claim is renewed
 * only until the provider may forget the key: then its signal aborts, and an activity that returns
 * later pauses the call (OUTCOME_UNKNOWN) instead of delivering a result that may be a second
 * effect.
 *
 * Here: `chargeCard` with `dedupesByKey: true, keyRetentionMs: 1000`, `callDeadlineMs: 100`,
 * margin 20; a provider that remembers a key for 1000 ms after its first use. Attempt 1's
 * activity is slow (1300 ms before it sends); attempt 2 starts 150 ms later (Temporal's
 * start-to-close timeout, as in test/property/user-activity-overlap.property.test.ts) and its
 * activity sends at once. Real SQLite store, the real fence interceptor (MockActivityEnvironment),
 * real timers read through a stall-free clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type WorkerOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { stallFreeClock } from '../helpers/stall-free-clock';

jest.setTimeout(60_000);
const QUIET = new DefaultLogger('ERROR');

/**
 * `chargeCard` sending to a provider that deduplicates by key for `retentionMs` after a key's first
 * use; its `slow`-th invocation waits 1300 ms before it sends (ignoring every signal, or stopping when
 * the fenced call's signal aborts with `honoursSignal`). `effects`
 * lists what the provider applied; the fence and the provider read `fenceClock`.
 */
function slowActivity(
  retentionMs: number,
  slow: number,
  honoursSignal = false,
): { fenceClock: ReturnType<typeof stallFreeClock>; effects: string[]; chargeCard: () => Promise<{ chargeId: string }> } {
  const fenceClock = stallFreeClock();
  const nowMs = (): number => fenceClock.clock().getTime();
  const firstUse = new Map<string, { at: number; chargeId: string }>();
  const effects: string[] = [];
  const provider = (key: string): string => {
    const seen = firstUse.get(key);
    if (seen !== undefined && nowMs() < seen.at + retentionMs) return seen.chargeId;
    const chargeId = `ch-${effects.length + 1}`;
    effects.push(chargeId);
    firstUse.set(key, { at: nowMs(), chargeId });
    return chargeId;
  };
  let invocations = 0;
  const chargeCard = async (): Promise<{ chargeId: string }> => {
    const key = fencedCallContext()!.idempotencyKey;
    invocations += 1;
    if (invocations === slow) {
      // 1300 ms of the fence's clock (which a stalled process does not advance), so the key's expiry is the same under load.
      const until = nowMs() + 1_300;
      const options = honoursSignal ? { signal: fencedCallContext()!.signal } : undefined;
      while (nowMs() < until) await sleep(10, undefined, options);
    }
    return { chargeId: provider(key) };
  };
  return { fenceClock, effects, chargeCard };
}

describe('a same-key repeat of a fenced user activity whose holder still runs', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv-live-holder-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the holder, which ignores the abort signal, sends after the key expired: still one effect', async () => {
    const retentionMs = 1_000;
    // Attempt 1's worker is slow (why Temporal started attempt 2); the activity ignores every signal.
    const { fenceClock, effects, chargeCard } = slowActivity(retentionMs, 1);
    const plugin = new ToolCheckpointPlugin({
      store,
      clock: fenceClock.clock,
      reconcileMarginMs: 20,
      fence: { chargeCard: { revision: 'v1', callDeadlineMs: 100, dedupesByKey: true, keyRetentionMs: retentionMs } },
    });
    const interceptors = plugin.configureWorker({ taskQueue: 'live-holder' } as WorkerOptions).interceptors?.activity ?? [];
    const info = { activityType: 'chargeCard', activityId: '1', workflowExecution: { workflowId: 'wf-live-holder', runId: 'run-live-holder' } };
    const outcome = (n: number): Promise<unknown> =>
      new MockActivityEnvironment({ ...info, attempt: n }, { interceptors, logger: QUIET }).run(chargeCard).then(
        (value) => value,
        (error: unknown) => `${(error as { type?: string }).type ?? ''} ${(error as Error).message}`,
      );

    const first = outcome(1);
    await sleep(150);
    // Attempt 2 retries every retryable failure (RECONCILE_PENDING while the holder runs), as Temporal's retry policy does.
    let second: unknown;
    for (let n = 2; n < 200; n += 1) {
      second = await outcome(n);
      if (typeof second !== 'string' || !second.startsWith('RECONCILE_PENDING')) break;
      await sleep(50);
    }
    await first;
    await sleep(100);
    fenceClock.stop();
    expect(effects).toEqual(['ch-1']);
  });

  /** Attempt 1 sends, then freezes before it stores the result; attempt 2, a same-key repeat, runs the slow activity. */
  async function repeatRunsLong(honoursSignal: boolean): Promise<{ effects: string[]; second: unknown; stored: string | undefined }> {
    const retentionMs = 1_000;
    const { fenceClock, effects, chargeCard } = slowActivity(retentionMs, 2, honoursSignal);
    const fence = { chargeCard: { revision: 'v1', callDeadlineMs: 100, dedupesByKey: true, keyRetentionMs: retentionMs } };
    const frozen = new ToolCheckpointPlugin({
      store,
      clock: fenceClock.clock,
      reconcileMarginMs: 20,
      fence,
      hooks: { step: (point) => (point === 'after-effect' ? new Promise<void>(() => undefined) : undefined) },
    });
    const plugin = new ToolCheckpointPlugin({ store, clock: fenceClock.clock, reconcileMarginMs: 20, fence });
    const interceptorsOf = (p: ToolCheckpointPlugin): NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']> =>
      p.configureWorker({ taskQueue: 'live-repeat' } as WorkerOptions).interceptors?.activity ?? [];
    const workflowId = `wf-live-repeat-${honoursSignal ? 'honours' : 'ignores'}`;
    const info = { activityType: 'chargeCard', activityId: '1', workflowExecution: { workflowId, runId: `${workflowId}-run` } };
    const outcome = (p: ToolCheckpointPlugin, n: number): Promise<unknown> =>
      new MockActivityEnvironment({ ...info, attempt: n }, { interceptors: interceptorsOf(p), logger: QUIET }).run(chargeCard).then(
        (value) => value,
        (error: unknown) => `${(error as { type?: string }).type ?? ''} ${(error as Error).message}`,
      );
    void outcome(frozen, 1);
    await sleep(50);
    expect(effects).toEqual(['ch-1']);
    let second: unknown;
    for (let n = 2; n < 200; n += 1) {
      second = await outcome(plugin, n);
      if (typeof second !== 'string' || !second.startsWith('RECONCILE_PENDING')) break;
      await sleep(50);
    }
    fenceClock.stop();
    const rows = await store.listByStatus(['delivered', 'completed', 'uncertain', 'executing'], { olderThan: new Date(Date.now() + 3_600_000).toISOString(), limit: 100 });
    const row = rows.find((r) => r.binding.callId.includes(`"${workflowId}"`));
    return { effects, second, stored: row?.status };
  }

  it("the repeat's own activity, honouring the signal, is stopped before the provider may forget the key: one effect, and the call pauses for a person", async () => {
    const { effects, second, stored } = await repeatRunsLong(true);
    expect(effects).toEqual(['ch-1']);
    expect(String(second)).toMatch(/^OUTCOME_UNKNOWN/);
    expect(stored).toBe('uncertain');
  });

  it("the repeat's own activity, ignoring the signal, returns after the provider may have forgotten the key: its result is not delivered as the call's, the call pauses for a person", async () => {
    const { effects, second, stored } = await repeatRunsLong(false);
    // Nothing stops an activity that ignores its signal: the provider, which forgot the key, applied it again.
    expect(effects).toEqual(['ch-1', 'ch-2']);
    expect(String(second)).toMatch(/^OUTCOME_UNKNOWN/);
    expect(stored).toBe('uncertain');
  });
});
