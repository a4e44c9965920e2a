/**
 * CI's short crash-window proof (issue 5, SPEC §5): the crash harness in crash/ with N = 3
 * repetitions per scenario on both stores: a real Temporal dev server, real `ttc worker`
 * processes SIGKILLed at the named crash points, the demo provider, SQLite and PostgreSQL.
 * The full run (N ≥ 20) is `npm run crashtest`; its report is docs/crash-report.md.
 */
import { reportRow } from '../../crash/report';
import { SCENARIOS } from '../../crash/scenarios';
import { STORE_KINDS } from '../../crash/stack';
import { runCrashSuite, type CrashSuiteResult } from '../../crash/suite';

const RUNS = Number(process.env.TTC_CRASHTEST_RUNS ?? 3);

jest.setTimeout(20 * 60_000);

describe(`crash windows with real processes and SIGKILL (N = ${RUNS} per scenario, ${STORE_KINDS.join(' and ')})`, () => {
  let suite: CrashSuiteResult;
  const lines: string[] = [];

  beforeAll(async () => {
    suite = await runCrashSuite({ runs: RUNS, stores: STORE_KINDS, concurrency: 2, parallelStores: true, log: (line) => lines.push(line) });
  });

  afterAll(() => {
    if (suite !== undefined && !suite.passed) console.log(lines.join('\n'));
  });

  const cases = STORE_KINDS.flatMap((store) => SCENARIOS.map((scenario) => ({ store, scenario })));
  it.each(cases)('$scenario.id on $store: $scenario.expected', ({ store, scenario }) => {
    const result = suite.results.find((r) => r.store === store && r.scenario.id === scenario.id)!;
    const row = reportRow(result);
    expect(result.outcomes.flatMap((o) => o.failures.map((f) => `run ${o.index}: ${f.split('\n')[0]}`))).toEqual([]);
    expect({ runs: row.runs, duplicates: row.duplicates, resultsLost: row.resultsLost, unknownNotPaused: row.unknownNotPaused }).toEqual({ runs: RUNS, duplicates: 0, resultsLost: 0, unknownNotPaused: 0 });
  });

  it('the provider reports no effect applied twice over everything the suite did', () => {
    expect(suite.providerDuplicates).toEqual(Object.fromEntries(STORE_KINDS.map((s) => [s, 0])));
    expect(suite.passed).toBe(true);
  });
});
