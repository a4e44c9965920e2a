/**
 * The interleaving property shared by the CI test (`test/property/interleavings.property.test.ts`)
 * and the full run (`npm run check:interleavings -- --runs N [--seed S]`), and the figures both
 * print.
 */
import fc from 'fast-check';
import { OUTCOME_KINDS, runSchedule, VIOLATION_KINDS, type OutcomeKind, type ScheduleReport, type ViolationKind } from './explore';
import { scenarioArbitrary, type Scenario } from './scenario';

/** Totals over the schedules of a run. */
export class Figures {
  schedules = 0;
  attempts = 0;
  overlapping = 0;
  timedOut = 0;
  crashed = 0;
  effects = 0;
  deduplicatedRepeats = 0;
  storeFaults = 0;
  knownResultsNotStored = 0;
  maxAttemptsInSchedule = 0;
  /** Most attempts of one call running at once. */
  maxConcurrent = 0;
  readonly violations = Object.fromEntries(VIOLATION_KINDS.map((k) => [k, 0])) as Record<ViolationKind, number>;
  readonly outcomes = Object.fromEntries(OUTCOME_KINDS.map((k) => [k, 0])) as Record<OutcomeKind, number>;
  readonly finalTypes = new Map<string, number>();
  readonly attemptEnds = new Map<string, number>();
  readonly resolutions = new Map<string, number>();
  readonly startedAt = Date.now();

  add(report: ScheduleReport): void {
    this.schedules += 1;
    const main = report.attempts.filter((a) => a.call === 'main');
    this.attempts += report.attempts.length;
    this.maxAttemptsInSchedule = Math.max(this.maxAttemptsInSchedule, main.length);
    const concurrent = Math.max(0, ...main.map((a) => a.liveAtStart + 1));
    if (concurrent > 1) this.overlapping += 1;
    this.maxConcurrent = Math.max(this.maxConcurrent, concurrent);
    this.timedOut += report.attempts.filter((a) => a.timedOut).length;
    this.crashed += report.attempts.filter((a) => a.crashedAt !== null).length;
    this.effects += report.effects;
    this.deduplicatedRepeats += report.deduplicatedRepeats;
    this.storeFaults += report.storeFaults;
    this.knownResultsNotStored += report.knownResultsNotStored;
    for (const v of report.violations) this.violations[v.kind] += 1;
    if (report.final !== null) {
      this.outcomes[report.final.kind] += 1;
      if (report.final.type !== null) bump(this.finalTypes, `${report.final.kind}: ${report.final.type}`);
    }
    for (const a of report.attempts)
      bump(this.attemptEnds, a.end === null ? (a.crashedAt !== null ? 'worker died' : 'never ended') : a.end.ok ? `ok (${a.end.result.source})` : a.end.type);
    if (report.resolution !== null) bump(this.resolutions, report.resolution);
  }

  /** True when every invariant held in every schedule. */
  get clean(): boolean {
    return VIOLATION_KINDS.every((k) => this.violations[k] === 0);
  }

  format(): string {
    const seconds = (Date.now() - this.startedAt) / 1000;
    const lines = [
      `schedules run:                 ${this.schedules}`,
      `attempts:                      ${this.attempts} (up to ${this.maxAttemptsInSchedule} of one call; ${this.timedOut} timed out and kept running or died, ${this.crashed} workers killed)`,
      `schedules with overlap:        ${this.overlapping} (attempts of one call running at once: up to ${this.maxConcurrent})`,
      `effects:                       ${this.effects} (same-key repeats the provider deduplicated: ${this.deduplicatedRepeats})`,
      `store faults injected:         ${this.storeFaults}`,
      `duplicates:                    ${this.violations['duplicate-effect']}`,
      `lost results:                  ${this.violations['lost-result']}`,
      `nothing-applied-with-claim:    ${this.violations['nothing-applied-with-claim']}`,
      `result not the stored one:     ${this.violations['result-not-stored-one']}`,
      `stored result changed:         ${this.violations['stored-result-changed']}`,
      `needless pauses:               ${this.violations['needless-pause']}`,
      `harness errors:                ${this.violations.harness}`,
      `outcomes by kind:              ${OUTCOME_KINDS.map((k) => `${k} ${this.outcomes[k]}`).join(' / ')}`,
      `final failure types:           ${formatMap(this.finalTypes)}`,
      `attempt ends:                  ${formatMap(this.attemptEnds)}`,
      `resolutions by a person:       ${formatMap(this.resolutions)}`,
      `answers not stored (paused):   ${this.knownResultsNotStored}`,
      `time taken:                    ${seconds.toFixed(1)} s (${((seconds * 1000) / Math.max(1, this.schedules)).toFixed(1)} ms per schedule)`,
    ];
    return lines.join('\n');
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

/** A schedule that broke an invariant; its message carries the violations and the trace. */
export class InterleavingViolation extends Error {
  constructor(readonly report: ScheduleReport) {
    super(describeViolation(report));
    this.name = 'InterleavingViolation';
  }
}

export function describeViolation(report: ScheduleReport): string {
  return [
    `${report.violations.length} invariant violation(s):`,
    ...report.violations.map((v) => `  [${v.kind}] ${v.message}`),
    `final: ${report.final === null ? 'none' : `${report.final.kind}${report.final.type === null ? '' : ` (${report.final.type})`}`}; resolution: ${report.resolution ?? 'none'}`,
    'trace:',
    ...report.trace.map((line) => `  ${line}`),
  ].join('\n');
}

/** Options of {@link interleavingProperty}. */
export interface PropertyOptions {
  /** Called with every schedule of the run proper (not the shrinking runs after a first violation). */
  readonly onReport?: (report: ScheduleReport, scenario: Scenario) => void;
  /** Throw on a violation (fast-check then shrinks it). @default true */
  readonly failOnViolation?: boolean;
  /** Only these kinds fail the property (to shrink one kind at a time). @default every kind */
  readonly only?: readonly ViolationKind[];
}

/**
 * The property: every schedule of every scenario keeps the invariants. Once a schedule fails,
 * fast-check only shrinks, so later schedules are not reported to `onReport`.
 */
export function interleavingProperty(options: PropertyOptions = {}): fc.IAsyncPropertyWithHooks<[Scenario, fc.Scheduler]> {
  let shrinking = false;
  return fc.asyncProperty(scenarioArbitrary, fc.scheduler(), async (scenario, scheduler) => {
    const report = await runSchedule(scenario, scheduler);
    if (!shrinking) options.onReport?.(report, scenario);
    const failing = options.only === undefined ? report.violations : report.violations.filter((v) => options.only!.includes(v.kind));
    if (failing.length > 0 && options.failOnViolation !== false) {
      shrinking = true;
      throw new InterleavingViolation(report);
    }
  });
}
