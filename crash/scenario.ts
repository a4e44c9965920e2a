/**
 * What a crash scenario is and what one repetition of it reports. The suite runs every
 * scenario N times per store and the report aggregates these outcomes.
 */
import type { Repetition } from './repetition';

/** What one repetition observed. */
export interface RunOutcome {
  /** Effects the provider applied for this run's calls (all calls, counted at the provider). */
  readonly effectsApplied: number;
  /** Effects applied more than once (sum over calls of count − 1). */
  readonly duplicates: number;
  /** Calls whose result never reached the run, or reached it different from the stored bytes. */
  readonly resultsLost: number;
  /** Whether the run paused on an unknown outcome. */
  readonly paused: boolean;
  /** An outcome was unknown (no lookup, no key dedupe) but the run did not pause. */
  readonly unknownNotPaused: boolean;
  /** From the kill (or the disturbance) to the delivered result (or to the pause, where the run must pause), ms. */
  readonly recoveryMs: number | null;
  /** Every expectation that did not hold, as sentences. Empty when the repetition passed. */
  readonly failures: readonly string[];
  /** What else the repetition saw (attempts, failure types), for the log. */
  readonly note?: string;
}

/** One crash scenario. */
export interface Scenario {
  /** Short id used on the command line (`--scenarios`). */
  readonly id: string;
  /** The crash window and the tool, as the report shows it. */
  readonly title: string;
  /** How the crash is forced. */
  readonly forced: string;
  /** The expected result, as asserted. */
  readonly expected: string;
  /** What the recovery time is measured from and to, and what sets it (report text). @default the report's general rule */
  readonly recovery?: string;
  /** Disturbs shared infrastructure (the dev server, the store): never runs alongside another repetition. */
  readonly exclusive?: boolean;
  run(rep: Repetition): Promise<RunOutcome>;
}

/** Collects failed expectations of one repetition. */
export class Expectations {
  readonly failures: string[] = [];

  /** Records `message` unless `condition` holds. */
  check(condition: boolean, message: string): boolean {
    if (!condition) this.failures.push(message);
    return condition;
  }

  equal<T>(actual: T, expected: T, what: string): boolean {
    return this.check(JSON.stringify(actual) === JSON.stringify(expected), `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}
