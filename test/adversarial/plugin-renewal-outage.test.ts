/**
 * Adversarial (overlap): claim renewal must survive a short store outage.
 *
 * README ("Slow activities are waited for, not run twice"): "The one case renewal cannot cover is
 * a live worker that cannot reach the store for longer than [callDeadlineMs + reconcileMarginMs]".
 * `ClaimRenewal` however gives up FOR GOOD the first time a renewal tick fails after the declared
 * deadline (`loseIfLapsed` aborts, and `renew()` returns at once once aborted). So an outage of
 * about one `callDeadlineMs` (2/3 of it is enough when it covers the right ticks), far shorter
 * than `callDeadlineMs + reconcileMarginMs`, ends renewal although the store is back long before
 * anyone may take the claim over. The activity (which ignores the signal, as an unmodified one
 * does) keeps running; an overlapping attempt takes the claim over at deadline + margin, its
 * lookup finds nothing yet, and it runs the activity again: TWO effects.
 *
 * Here: callDeadlineMs 300, reconcileMarginMs 2,000; the holder's worker cannot reach the store
 * from t = 50 for at least 400 ms, and until the holder has seen its deadline pass unrenewed (its
 * signal aborted: the moment the defect gave up); the activity takes 3 s from its start, and at
 * least until the outage ended, and ignores its signal; an overlapping attempt (another worker,
 * store reachable) starts 50 ms after the outage and retries on RECONCILE_PENDING. The outage
 * (about 400 ms) is far below callDeadlineMs + margin (2,300 ms), and the holder could renew
 * again once it ended.
 *
 * Real SQLite store, the real fence interceptor (MockActivityEnvironment), real timers. Both
 * fences read a stall-free clock (test/helpers/stall-free-clock.ts), and so does the activity's
 * duration: at a 300 ms deadline a loaded machine that deschedules this process would otherwise
 * let the holder's claim lapse before it calls the activity at all (the fence then rightly
 * refuses to call it), which is not the outage this test is about.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type WorkerOptions } from '@temporalio/worker';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import type { LookupResult, ToolContext } from '../../src/activities';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { FlakyStore, waitFor } from '../helpers/flaky-store';
import { stallFreeClock } from '../helpers/stall-free-clock';

jest.setTimeout(60_000);
const QUIET = new DefaultLogger('ERROR');

function interceptorsOf(plugin: ToolCheckpointPlugin): NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']> {
  return plugin.configureWorker({ taskQueue: 'renewal' } as WorkerOptions).interceptors?.activity ?? [];
}

describe('claim renewal across a store outage shorter than callDeadlineMs + reconcileMarginMs', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv-renewal-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a 400 ms outage of the holder (deadline 300 ms, margin 2 s) does not let an overlapping attempt run the activity again', async () => {
    const effects: Array<{ key: string | undefined; id: string }> = [];
    const lookup = async (ctx: ToolContext): Promise<LookupResult> => {
      const effect = effects.find((e) => e.key === ctx.idempotencyKey);
      return effect === undefined ? { found: false } : { found: true, output: { chargeId: effect.id } };
    };
    const entry = { revision: 'v1', callDeadlineMs: 300, lookup };
    const holderStore = new FlakyStore(store);
    const fence = stallFreeClock();
    const now = (): number => fence.clock().getTime();
    const holderPlugin = new ToolCheckpointPlugin({ store: holderStore, clock: fence.clock, reconcileMarginMs: 2_000, fence: { chargeCard: entry } });
    const otherPlugin = new ToolCheckpointPlugin({ store, clock: fence.clock, reconcileMarginMs: 2_000, fence: { chargeCard: entry } });
    let holderRunning: () => void = () => undefined;
    const holderStarted = new Promise<void>((resolve) => (holderRunning = resolve));
    let outageEnded: () => void = () => undefined;
    const outageOver = new Promise<void>((resolve) => (outageEnded = resolve));
    let holderSignal: AbortSignal | undefined;
    const chargeCard = async (): Promise<{ chargeId: string }> => {
      const startedAt = now();
      holderSignal ??= fencedCallContext()?.signal;
      holderRunning();
      // A slow provider (3 s on the fence's clock, and past the outage); ignores fencedCallContext().signal, as an unmodified activity does.
      await outageOver;
      await waitFor(() => now() >= startedAt + 3_000, 60_000);
      const effect = { key: fencedCallContext()?.idempotencyKey, id: `ch-${effects.length + 1}` };
      effects.push(effect);
      return { chargeId: effect.id };
    };
    const info = { activityType: 'chargeCard', activityId: '1', workflowExecution: { workflowId: 'wf-renewal', runId: 'run-renewal' } };

    const holder = new MockActivityEnvironment({ ...info, attempt: 1 }, { interceptors: interceptorsOf(holderPlugin), logger: QUIET }).run(chargeCard).then(
      (value) => ({ value }),
      (error: Error & { type?: string }) => ({ error: `${error.type ?? ''} ${error.message}` }),
    );
    await holderStarted; // the holder is running the activity (its claim made and re-read) ...
    await sleep(50);
    holderStore.down = true; // ... when its worker loses the store ...
    await sleep(400);
    await waitFor(() => holderSignal?.aborted === true); // ... for 400 ms and until the holder saw its deadline pass unrenewed ...
    holderStore.down = false; // ... then reaches it again
    outageEnded();
    await sleep(50);

    // Temporal starts attempt 2 on another worker (attempt 1 outlived its start-to-close timeout) and retries it on RECONCILE_PENDING.
    const results: unknown[] = [];
    const failures: string[] = [];
    for (let tries = 0; tries < 1_000; tries += 1) {
      try {
        results.push(await new MockActivityEnvironment({ ...info, attempt: 2 + tries }, { interceptors: interceptorsOf(otherPlugin), logger: QUIET }).run(chargeCard));
        break;
      } catch (error) {
        const type = (error as { type?: string }).type;
        if (type !== 'RECONCILE_PENDING') {
          failures.push(`${type ?? ''} ${(error as Error).message}`);
          break;
        }
        await sleep(50);
      }
    }
    const first = await holder;
    fence.stop();

    expect(failures).toEqual([]);
    // The activity ran once: the holder renewed again once the store was back, the overlapping attempt waited and delivered its result.
    expect(effects).toHaveLength(1);
    expect(first).toEqual({ value: { chargeId: 'ch-1' } });
    expect(results).toEqual([{ chargeId: 'ch-1' }]);
  });
});
