/**
 * The interleaving explorer (`test/property/interleavings`) drives the fence through virtual
 * time with fast-check's scheduler and a real SQLite store. By default it opens `sqlite::memory:`,
 * which runs the store's executor on the calling thread; a file store runs it on a worker thread,
 * so every store call completes in a message from another thread. The explorer drains real
 * store calls before each scheduling decision, so the same seed must give the same schedule
 * either way: this runs sampled schedules on both and compares the whole reports (traces,
 * effects, outcomes, virtual times; only the random UUIDs in attempt ids differ).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { runSchedule } from '../../property/interleavings/explore';
import { scenarioArbitrary } from '../../property/interleavings/scenario';

const SCHEDULES = 24;
const SEED = 20_261_201;

jest.setTimeout(300_000);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-explorer-thread-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A report with its random ids (attempt ids hold a UUID) masked: everything else must be equal. */
function masked(report: unknown): unknown {
  return JSON.parse(JSON.stringify(report).replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>'));
}

/** The same scenarios and schedulers for each call (same seed: equal scenarios, schedulers making the same picks). */
function sample(): Array<[Parameters<typeof runSchedule>[0], fc.Scheduler]> {
  return fc.sample(fc.tuple(scenarioArbitrary, fc.scheduler()), { seed: SEED, numRuns: SCHEDULES });
}

test(`${SCHEDULES} sampled schedules give the same reports with the store on a worker thread (file) as on the calling thread (:memory:)`, async () => {
  const inline = sample();
  const threaded = sample();
  let storeCalls = 0;
  for (let i = 0; i < SCHEDULES; i += 1) {
    const [scenario, scheduler] = inline[i]!;
    const [sameScenario, sameScheduler] = threaded[i]!;
    const onThisThread = await runSchedule(scenario, scheduler);
    const onWorkerThread = await runSchedule(sameScenario, sameScheduler, { storeUrl: `sqlite:${join(dir, `schedule-${i}.db`)}` });

    expect(masked(onWorkerThread)).toEqual(masked(onThisThread));
    expect(onWorkerThread.violations).toEqual([]);
    storeCalls += onWorkerThread.storeCalls;
  }
  // The schedules did reach the store (not a vacuous comparison).
  expect(storeCalls).toBeGreaterThan(SCHEDULES * 3);
});
