/**
 * Runs the crash scenarios: for each store, one shared stack (dev server, provider, store),
 * then every scenario N times, each repetition on its own task queue with its own workers.
 * Repetitions of a scenario may run side by side (`concurrency`), except for scenarios that
 * disturb the shared stack, which run alone.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Repetition } from './repetition';
import type { RunOutcome, Scenario } from './scenario';
import { BATCH_AND_SAGA_SCENARIOS, SCENARIOS } from './scenarios';
import { startCrashStack, type StoreKind } from './stack';
import { buildWorkflowBundle } from './workflow-bundle';

/** Options of {@link runCrashSuite}. */
export interface CrashSuiteOptions {
  /** Repetitions per scenario and store. */
  readonly runs: number;
  /** Repetitions per store for some scenarios instead of `runs`, by scenario id. */
  readonly runsFor?: Readonly<Record<string, number>>;
  readonly stores: readonly StoreKind[];
  /** Scenario ids. @default all */
  readonly scenarios?: readonly string[];
  /** Repetitions run side by side (non-exclusive scenarios). @default 2 */
  readonly concurrency?: number;
  /** Run the stores' suites at the same time (each store has its own stack, so exclusive scenarios stay alone on theirs). @default false */
  readonly parallelStores?: boolean;
  /** Work folder (databases, worker logs of failed repetitions). @default `.data/crash-<time>`; removed when everything passed. */
  readonly workDir?: string;
  readonly log?: (line: string) => void;
}

/** One repetition's outcome. */
export interface RepetitionOutcome extends RunOutcome {
  readonly index: number;
  readonly durationMs: number;
}

/** All repetitions of one scenario on one store. */
export interface ScenarioResult {
  readonly scenario: Scenario;
  readonly store: StoreKind;
  readonly outcomes: readonly RepetitionOutcome[];
}

/** What {@link runCrashSuite} returns. */
export interface CrashSuiteResult {
  readonly runs: number;
  readonly runsFor: Readonly<Record<string, number>>;
  readonly stores: readonly StoreKind[];
  readonly concurrency: number;
  readonly parallelStores: boolean;
  readonly results: readonly ScenarioResult[];
  /** Duplicates the provider itself reports over everything it applied, per store (must be 0). */
  readonly providerDuplicates: Readonly<Partial<Record<StoreKind, number>>>;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly passed: boolean;
  readonly workDir: string;
}

/** Groups of scenarios a `--scenarios` list may name instead of their ids. */
export const SCENARIO_GROUPS: Readonly<Record<string, readonly Scenario[]>> = { 'batch-and-saga': BATCH_AND_SAGA_SCENARIOS };

/** Picks scenarios by id or group name ({@link SCENARIO_GROUPS}). @throws Error naming an unknown id. */
export function selectScenarios(ids?: readonly string[]): Scenario[] {
  if (ids === undefined || ids.length === 0) return [...SCENARIOS];
  return ids.flatMap((id) => {
    const group = SCENARIO_GROUPS[id];
    if (group !== undefined) return [...group];
    const scenario = SCENARIOS.find((s) => s.id === id);
    if (scenario === undefined)
      throw new Error(`unknown scenario ${JSON.stringify(id)} (known: ${SCENARIOS.map((s) => s.id).join(', ')}; groups: ${Object.keys(SCENARIO_GROUPS).join(', ')})`);
    return [scenario];
  });
}

/** Runs the suite. Never throws for a failed expectation: look at `passed`. */
export async function runCrashSuite(options: CrashSuiteOptions): Promise<CrashSuiteResult> {
  const log = options.log ?? ((line: string) => console.log(line));
  const scenarios = selectScenarios(options.scenarios);
  const startedAt = new Date();
  const workDir = resolve(options.workDir ?? join('.data', `crash-${startedAt.toISOString().replace(/[:.]/g, '-')}`));
  const providerDuplicates: Partial<Record<StoreKind, number>> = {};
  mkdirSync(workDir, { recursive: true });
  const workflowBundle = await buildWorkflowBundle(workDir);
  const runStore = async (kind: StoreKind): Promise<ScenarioResult[]> => {
    const results: ScenarioResult[] = [];
    const stack = await startCrashStack(kind, join(workDir, kind), workflowBundle, log);
    try {
      for (const scenario of scenarios) {
        const concurrency = scenario.exclusive ? 1 : Math.max(1, options.concurrency ?? 2);
        const outcomes = await runRepetitions(options.runsFor?.[scenario.id] ?? options.runs, concurrency, async (index) => {
          const rep = new Repetition(stack, scenario.id, index);
          const started = Date.now();
          let outcome: RunOutcome;
          try {
            outcome = await scenario.run(rep);
          } catch (error) {
            outcome = {
              effectsApplied: 0,
              duplicates: 0,
              resultsLost: 0,
              paused: false,
              unknownNotPaused: false,
              recoveryMs: null,
              failures: [`the repetition threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`],
            };
          } finally {
            await rep.cleanup().catch(() => undefined);
          }
          const durationMs = Date.now() - started;
          const status = outcome.failures.length === 0 ? 'ok' : 'FAILED';
          log(
            `${kind} ${scenario.id} #${index}: ${status} in ${durationMs} ms (effects ${outcome.effectsApplied}, duplicates ${outcome.duplicates}, lost ${outcome.resultsLost}, paused ${outcome.paused}, recovery ${outcome.recoveryMs ?? '-'} ms)${outcome.note ? `; ${outcome.note}` : ''}`,
          );
          if (outcome.failures.length > 0) {
            for (const failure of outcome.failures) log(`  - ${failure}`);
            const file = rep.path('worker.log');
            writeFileSync(file, rep.lines.join('\n'));
            log(`  worker output: ${file}`);
          }
          return { ...outcome, index, durationMs };
        });
        results.push({ scenario, store: kind, outcomes });
      }
      providerDuplicates[kind] = (await stack.provider.client.effects()).duplicates.length;
    } finally {
      await stack.close();
    }
    return results;
  };
  const perStore = options.parallelStores
    ? await Promise.all(options.stores.map(runStore))
    : await options.stores.reduce<Promise<ScenarioResult[][]>>(async (done, kind) => [...(await done), await runStore(kind)], Promise.resolve([]));
  const results = perStore.flat();
  const passed =
    results.every((r) => r.outcomes.every((o) => o.failures.length === 0 && o.duplicates === 0 && o.resultsLost === 0 && !o.unknownNotPaused)) &&
    Object.values(providerDuplicates).every((n) => n === 0);
  if (passed) rmSync(workDir, { recursive: true, force: true });
  return {
    runs: options.runs,
    runsFor: options.runsFor ?? {},
    stores: options.stores,
    concurrency: options.concurrency ?? 2,
    parallelStores: options.parallelStores ?? false,
    results,
    providerDuplicates,
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    passed,
    workDir,
  };
}

/** Runs `count` repetitions, at most `concurrency` at a time, and returns their outcomes in index order. */
async function runRepetitions<T>(count: number, concurrency: number, run: (index: number) => Promise<T>): Promise<T[]> {
  const outcomes: T[] = new Array<T>(count);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      outcomes[index] = await run(index + 1);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return outcomes;
}
