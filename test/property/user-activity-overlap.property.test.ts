/**
 * docs/protocol.md#overlapping-attempts for a user's activity fenced by the plugin: the activity may
 * ignore the abort signal (an unmodified activity does), so the fence cannot end it at the call
 * deadline. Attempts of one call overlap (Temporal starts attempt n+1 when attempt n outlived its
 * start-to-close timeout, and attempt n still runs in its worker): whatever the activity's
 * duration, the call deadline, and when the later attempts start, the effect is applied once and
 * every attempt that returns a result returns the same one (attempts retry every retryable
 * failure, as Temporal's retry policy does). Real SQLite store, the real fence
 * interceptor (MockActivityEnvironment), real timers.
 *
 * The one-effect promise holds while the holder's claim renewals land before its deadline plus the
 * margin (src/activities/fence/claim-renewal.ts); at these millisecond deadlines a loaded machine
 * that deschedules this process for 100 ms would break that premise, not the fence. So the fence
 * reads a stall-free clock (test/helpers/stall-free-clock.ts): real time that stands still while
 * the process is descheduled.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type WorkerOptions } from '@temporalio/worker';
import fc from 'fast-check';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import type { LookupResult, ToolContext } from '../../src/activities';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { stallFreeClock } from '../helpers/stall-free-clock';

jest.setTimeout(180_000);

/** The fence's RECONCILE_PENDING answers are expected here: only errors are logged. */
const QUIET = new DefaultLogger('ERROR');

interface Effect {
  readonly key: string | undefined;
  readonly id: string;
}

/** One call of a slow activity that ignores every signal, with later attempts starting at the given offsets. */
interface Scenario {
  readonly durationMs: number;
  readonly callDeadlineMs: number;
  readonly marginMs: number;
  /** Gaps between attempt starts, ms (attempt 1 at 0). */
  readonly gapsMs: readonly number[];
}

/** The plugin's activity interceptors, as Worker.create would apply them. */
function interceptorsOf(plugin: ToolCheckpointPlugin): NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']> {
  return plugin.configureWorker({ taskQueue: 'overlap' } as WorkerOptions).interceptors?.activity ?? [];
}

/**
 * Runs `scenario` as call `callId`: attempt 1 starts the activity; each later attempt starts after
 * its gap and, like Temporal's retry policy, tries again every 50 ms after
 * a retryable failure (RECONCILE_PENDING, ...). @returns the effects applied and the results returned.
 */
async function run(store: CheckpointStore, callId: string, scenario: Scenario): Promise<{ effects: Effect[]; results: unknown[]; failures: string[] }> {
  const effects: Effect[] = [];
  const lookup = async (ctx: ToolContext): Promise<LookupResult> => {
    const effect = effects.find((e) => e.key === ctx.idempotencyKey);
    return effect === undefined ? { found: false } : { found: true, output: { chargeId: effect.id } };
  };
  const fenceClock = stallFreeClock();
  const plugin = new ToolCheckpointPlugin({
    store,
    clock: fenceClock.clock,
    reconcileMarginMs: scenario.marginMs,
    fence: { chargeCard: { revision: 'v1', callDeadlineMs: scenario.callDeadlineMs, lookup } },
  });
  const chargeCard = async (): Promise<{ chargeId: string }> => {
    await sleep(scenario.durationMs); // ignores fencedCallContext().signal and cancellation, as an unmodified activity does
    const effect = { key: fencedCallContext()?.idempotencyKey, id: `ch-${effects.length + 1}` };
    effects.push(effect);
    return { chargeId: effect.id };
  };
  const info = { activityType: 'chargeCard', activityId: '1', workflowExecution: { workflowId: `wf-${callId}`, runId: `run-${callId}` } };
  const results: unknown[] = [];
  const failures: string[] = [];
  const attempt = async (n: number): Promise<void> => {
    for (let tries = 0; tries < 400; tries += 1) {
      try {
        results.push(await new MockActivityEnvironment({ ...info, attempt: n + tries * 100 }, { interceptors: interceptorsOf(plugin), logger: QUIET }).run(chargeCard));
        return;
      } catch (error) {
        const { type, nonRetryable } = error as { type?: string; nonRetryable?: boolean };
        // Temporal retries every retryable failure (RECONCILE_PENDING while the holder runs; STORE_OUTCOME_UNKNOWN when
        // attempts delivering at the same instant keep taking the delivery claim from each other).
        if (nonRetryable !== false) {
          failures.push(`attempt ${n}: ${type ?? ''} ${(error as Error).message}`);
          return;
        }
        await sleep(50);
      }
    }
    failures.push(`attempt ${n}: no result after 400 tries`);
  };
  const attempts: Promise<void>[] = [attempt(1)];
  for (const [index, gap] of scenario.gapsMs.entries()) {
    await sleep(gap);
    attempts.push(attempt(index + 2));
  }
  await Promise.all(attempts);
  fenceClock.stop();
  return { effects, results, failures };
}

describe('a fenced user activity that ignores the abort signal, with overlapping attempts (docs/protocol.md#overlapping-attempts)', () => {
  let dir: string;
  let store: CheckpointStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-overlap-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an activity running 6 call deadlines: the attempts that start meanwhile wait, one effect, every attempt returns its result', async () => {
    const { effects, results, failures } = await run(store, 'named', { durationMs: 600, callDeadlineMs: 100, marginMs: 20, gapsMs: [150, 150, 150] });
    expect(failures).toEqual([]);
    expect(effects).toHaveLength(1);
    expect(results).toEqual([{ chargeId: 'ch-1' }, { chargeId: 'ch-1' }, { chargeId: 'ch-1' }, { chargeId: 'ch-1' }]);
    const record = await store.getByCall('default/default', callBindingId({ runChainId: 'run-named', workflowId: 'wf-named', callId: 'activity-1' }));
    expect(record?.status).toBe('delivered');
    // The holder kept its claim: nobody took it over.
    expect(record?.execution?.previousAttemptId).toBeNull();
  });

  it('property: whatever the duration, deadline and attempt starts, the effect is applied once and all results agree', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          durationMs: fc.integer({ min: 0, max: 500 }),
          callDeadlineMs: fc.integer({ min: 50, max: 200 }),
          marginMs: fc.integer({ min: 20, max: 60 }),
          gapsMs: fc.array(fc.integer({ min: 0, max: 250 }), { minLength: 1, maxLength: 4 }),
        }),
        async (scenario) => {
          n += 1;
          const { effects, results, failures } = await run(store, `prop-${n}`, scenario);
          expect(failures).toEqual([]);
          expect(effects).toHaveLength(1);
          expect(results).toHaveLength(scenario.gapsMs.length + 1);
          for (const result of results) expect(result).toEqual({ chargeId: effects[0]!.id });
        },
      ),
      { numRuns: 25 },
    );
  });
});
