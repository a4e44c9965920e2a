/**
 * CI's short crash proof (docs/protocol.md#crash-windows, and the overlap, deploy and outage rules
 * from docs/protocol.md#overlapping-attempts on): the crash harness in crash/ on both stores: a
 * real Temporal dev server, real `ttc worker` processes SIGKILLed at the named crash points, cut
 * off from Temporal or replaced by another deploy, the demo provider, SQLite and PostgreSQL; also
 * the batch tool's 100 notifications (SIGKILL after item 20, cancellation after item 19 / 20) and
 * the order saga's compensations (crash/scenarios/batch.ts, compensation.ts; about 60 s more per
 * store, the stores side by side). N = 1 repetition per scenario (TTC_CRASHTEST_RUNS for the crash
 * windows', TTC_CRASHTEST_BETWEEN_ATTEMPTS_RUNS for the overlap, deploy and outage scenarios',
 * TTC_CRASHTEST_BATCH_AND_SAGA_RUNS for the batch and saga scenarios): every window is crossed on
 * both stores on every change, in about 5 minutes; at N = 3 this suite took 10 of CI's minutes,
 * more than its budget. The full run (N = 20) is `npm run crashtest`; its report is
 * docs/crash-report.md.
 */
import { reportRow } from '../../crash/report';
import { BATCH_AND_SAGA_SCENARIOS, SCENARIOS, BETWEEN_ATTEMPTS_SCENARIOS } from '../../crash/scenarios';
import { STORE_KINDS } from '../../crash/stack';
import { runCrashSuite, type CrashSuiteResult } from '../../crash/suite';

const RUNS = Number(process.env.TTC_CRASHTEST_RUNS ?? 1);
const BETWEEN_ATTEMPTS_RUNS = Number(process.env.TTC_CRASHTEST_BETWEEN_ATTEMPTS_RUNS ?? 1);
const BATCH_AND_SAGA_RUNS = Number(process.env.TTC_CRASHTEST_BATCH_AND_SAGA_RUNS ?? 1);
const RUNS_FOR: Record<string, number> = Object.fromEntries([
  ...BETWEEN_ATTEMPTS_SCENARIOS.map((s) => [s.id, BETWEEN_ATTEMPTS_RUNS]),
  ...BATCH_AND_SAGA_SCENARIOS.map((s) => [s.id, BATCH_AND_SAGA_RUNS]),
]);

jest.setTimeout(20 * 60_000);

describe(`crash windows with real processes and SIGKILL (N = ${RUNS} per crash-window scenario, ${BETWEEN_ATTEMPTS_RUNS} per overlap, deploy and outage scenario, ${BATCH_AND_SAGA_RUNS} per batch and saga scenario, ${STORE_KINDS.join(' and ')})`, () => {
  let suite: CrashSuiteResult;
  const lines: string[] = [];

  beforeAll(async () => {
    suite = await runCrashSuite({ runs: RUNS, runsFor: RUNS_FOR, stores: STORE_KINDS, concurrency: 2, parallelStores: true, log: (line) => lines.push(line) });
  });

  afterAll(() => {
    if (suite !== undefined && !suite.passed) console.log(lines.join('\n'));
  });

  const cases = STORE_KINDS.flatMap((store) => SCENARIOS.map((scenario) => ({ store, scenario })));
  it.each(cases)('$scenario.id on $store: $scenario.expected', ({ store, scenario }) => {
    const result = suite.results.find((r) => r.store === store && r.scenario.id === scenario.id)!;
    const row = reportRow(result);
    expect(result.outcomes.flatMap((o) => o.failures.map((f) => `run ${o.index}: ${f.split('\n')[0]}`))).toEqual([]);
    expect({ runs: row.runs, duplicates: row.duplicates, resultsLost: row.resultsLost, unknownNotPaused: row.unknownNotPaused }).toEqual({
      runs: RUNS_FOR[scenario.id] ?? RUNS,
      duplicates: 0,
      resultsLost: 0,
      unknownNotPaused: 0,
    });
  });

  it('the provider reports no effect applied twice over everything the suite did', () => {
    expect(suite.providerDuplicates).toEqual(Object.fromEntries(STORE_KINDS.map((s) => [s, 0])));
    expect(suite.passed).toBe(true);
  });
});
