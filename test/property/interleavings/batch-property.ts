/**
 * The batch interleaving property shared by the CI test
 * (`test/property/batch-interleavings.property.test.ts`) and the full run (`npm run
 * check:interleavings -- --batch --runs N [--seed S]`), and the figures both print.
 */
import fc from 'fast-check';
import { BATCH_VIOLATION_KINDS, runBatchSchedule, type BatchScheduleReport, type BatchViolationKind } from './batch-explore';
import { batchScenarioArbitrary, type BatchScenario } from './batch-scenario';

/** Totals over the schedules of a run. */
export class BatchFigures {
  schedules = 0;
  attempts = 0;
  overlapping = 0;
  maxConcurrent = 0;
  crashed = 0;
  timedOut = 0;
  effects = 0;
  deduplicatedRepeats = 0;
  itemsApplied = 0;
  itemsRefused = 0;
  itemsUnsettled = 0;
  readonly violations = Object.fromEntries(BATCH_VIOLATION_KINDS.map((k) => [k, 0])) as Record<BatchViolationKind, number>;
  readonly tools = new Map<string, number>();
  readonly finals = new Map<string, number>();
  readonly attemptEnds = new Map<string, number>();
  readonly startedAt = Date.now();

  add(report: BatchScheduleReport, scenario: BatchScenario): void {
    this.schedules += 1;
    this.attempts += report.attempts.length;
    const concurrent = Math.max(0, ...report.attempts.map((a) => a.liveAtStart + 1));
    if (concurrent > 1) this.overlapping += 1;
    this.maxConcurrent = Math.max(this.maxConcurrent, concurrent);
    this.crashed += report.attempts.filter((a) => a.crashedAt !== null).length;
    this.timedOut += report.attempts.filter((a) => a.timedOut).length;
    this.effects += report.effects;
    this.deduplicatedRepeats += report.deduplicatedRepeats;
    this.itemsApplied += report.itemsApplied;
    this.itemsRefused += report.itemsRefused;
    this.itemsUnsettled += report.itemsUnsettled;
    for (const v of report.violations) this.violations[v.kind] += 1;
    const { tool } = scenario;
    bump(
      this.tools,
      `${tool.lookup ? 'lookup' : ''}${tool.lookup && tool.dedupesByKey ? '+' : ''}${tool.dedupesByKey ? 'dedupe' : ''}${!tool.lookup && !tool.dedupesByKey ? 'neither' : ''} groupSize ${tool.groupSize ?? 'default'}`,
    );
    bump(this.finals, report.final ?? 'none (paused attempts left running)');
    for (const a of report.attempts)
      bump(
        this.attemptEnds,
        a.end === null
          ? a.crashedAt !== null
            ? 'worker died'
            : 'never ended'
          : a.end.ok
            ? `ok (${a.end.result.source})`
            : `${a.end.type}${a.callLevel === null ? '' : ` (${a.callLevel})`}`,
      );
  }

  /** True when every rule held in every schedule. */
  get clean(): boolean {
    return BATCH_VIOLATION_KINDS.every((k) => this.violations[k] === 0);
  }

  format(): string {
    const seconds = (Date.now() - this.startedAt) / 1000;
    return [
      `batch schedules run:           ${this.schedules}`,
      `attempts:                      ${this.attempts} (${this.timedOut} timed out and kept running, ${this.crashed} workers killed)`,
      `schedules with overlap:        ${this.overlapping} (attempts of the call running at once: up to ${this.maxConcurrent})`,
      `item effects:                  ${this.effects} (same-key repeats the provider deduplicated: ${this.deduplicatedRepeats})`,
      `items at the end:              ${this.itemsApplied} applied, ${this.itemsRefused} refused for good, ${this.itemsUnsettled} unsettled (paused or never reached)`,
      `violations:                    ${BATCH_VIOLATION_KINDS.map((k) => `${k} ${this.violations[k]}`).join(' / ')}`,
      `tools:                         ${formatMap(this.tools)}`,
      `what the run was told:         ${formatMap(this.finals)}`,
      `attempt ends:                  ${formatMap(this.attemptEnds)}`,
      `time taken:                    ${seconds.toFixed(1)} s (${((seconds * 1000) / Math.max(1, this.schedules)).toFixed(1)} ms per schedule)`,
    ].join('\n');
  }
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function formatMap(map: Map<string, number>): string {
  if (map.size === 0) return '-';
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}

/** A batch schedule that broke a rule; its message carries the violations and the trace. */
export class BatchInterleavingViolation extends Error {
  constructor(readonly report: BatchScheduleReport) {
    super(describeBatchViolation(report));
    this.name = 'BatchInterleavingViolation';
  }
}

export function describeBatchViolation(report: BatchScheduleReport): string {
  return [
    `${report.violations.length} batch rule violation(s):`,
    ...report.violations.map((v) => `  [${v.kind}] ${v.message}`),
    `final: ${report.final ?? 'none'}`,
    'trace:',
    ...report.trace.map((line) => `  ${line}`),
  ].join('\n');
}

/** Options of {@link batchInterleavingProperty}. */
export interface BatchPropertyOptions {
  /** Called with every schedule of the run proper (not the shrinking runs after a first violation). */
  readonly onReport?: (report: BatchScheduleReport, scenario: BatchScenario) => void;
  /** Throw on a violation (fast-check then shrinks it). @default true */
  readonly failOnViolation?: boolean;
  /** Only these kinds fail the property. @default every kind */
  readonly only?: readonly BatchViolationKind[];
}

/** The property: every schedule of every batch scenario keeps the batch's rules (`./batch-explore`). */
export function batchInterleavingProperty(options: BatchPropertyOptions = {}): fc.IAsyncPropertyWithHooks<[BatchScenario, fc.Scheduler]> {
  let shrinking = false;
  return fc.asyncProperty(batchScenarioArbitrary, fc.scheduler(), async (scenario, scheduler) => {
    const report = await runBatchSchedule(scenario, scheduler);
    if (!shrinking) options.onReport?.(report, scenario);
    const failing = options.only === undefined ? report.violations : report.violations.filter((v) => options.only!.includes(v.kind));
    if (failing.length > 0 && options.failOnViolation !== false) {
      shrinking = true;
      throw new BatchInterleavingViolation(report);
    }
  });
}
