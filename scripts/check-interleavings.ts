/**
 * The full run of the interleaving explorer: `npm run check:interleavings -- --runs N
 * [--seed S] [--keep-going] [--only <violation kind>]`. Runs N schedules of the property in
 * `test/property/interleavings/property.ts` and prints the figures (docs/crash-report.md,
 * "Interleaving explorer"). On a violation it stops, shrinks it and prints the seed, the path and
 * the shrunk schedule's trace; with `--keep-going` it counts every violating schedule instead and
 * prints the first few; `--only duplicate-effect` (repeatable) fails and shrinks on that kind only.
 *
 * With `--batch` it explores the batch call instead (`test/property/interleavings/batch-property.ts`):
 * overlapping attempts of one `batch: true` call over 3–8 items; `--only` then takes a batch rule
 * (duplicate-item-effect, item-out-of-order, attempt-end, …).
 *
 * Exit code: 0 when every invariant held, 1 on a violation, 2 on bad arguments.
 */
import fc from 'fast-check';
import { describeViolation, Figures, interleavingProperty, InterleavingViolation } from '../test/property/interleavings/property';
import { VIOLATION_KINDS, type ScheduleReport, type ViolationKind } from '../test/property/interleavings/explore';
import { BATCH_VIOLATION_KINDS, type BatchScheduleReport, type BatchViolationKind } from '../test/property/interleavings/batch-explore';
import type { BatchScenario } from '../test/property/interleavings/batch-scenario';
import { BatchFigures, batchInterleavingProperty, BatchInterleavingViolation, describeBatchViolation } from '../test/property/interleavings/batch-property';

interface Args {
  only: string[] | undefined;
  batch: boolean;
  runs: number;
  seed: number | undefined;
  keepGoing: boolean;
  progressEvery: number;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { only: undefined, batch: false, runs: 100_000, seed: undefined, keepGoing: false, progressEvery: 5_000 };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = (): number => {
      const raw = argv[++i];
      const n = Number(raw);
      if (raw === undefined || !Number.isSafeInteger(n)) usage(`${flag} needs an integer, got ${JSON.stringify(raw)}`);
      return n;
    };
    if (flag === '--runs') args.runs = value();
    else if (flag === '--seed') args.seed = value();
    else if (flag === '--progress') args.progressEvery = value();
    else if (flag === '--keep-going') args.keepGoing = true;
    else if (flag === '--batch') args.batch = true;
    else if (flag === '--only') (args.only ??= []).push(argv[++i] ?? '');
    else usage(`unknown argument ${JSON.stringify(flag)}`);
  }
  if (args.runs < 1) usage('--runs must be at least 1');
  const kinds: readonly string[] = args.batch ? BATCH_VIOLATION_KINDS : VIOLATION_KINDS;
  for (const kind of args.only ?? [])
    if (!kinds.includes(kind)) usage(`--only needs one of ${kinds.join(', ')}${args.batch ? ' (with --batch)' : ''}, got ${JSON.stringify(kind)}`);
  return args;
}

function usage(problem: string): never {
  process.stderr.write(
    `check:interleavings: ${problem}\nusage: npm run check:interleavings -- [--batch] --runs N [--seed S] [--keep-going] [--only <violation kind>]… [--progress N]\n`,
  );
  process.exit(2);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const seed = args.seed ?? (Date.now() ^ (Math.random() * 0x100000000)) | 0;
  if (args.batch) return batchMain(args, seed);
  const figures = new Figures();
  const violating: ScheduleReport[] = [];
  process.stdout.write(`check:interleavings: ${args.runs} schedules, seed ${seed}${args.keepGoing ? ', keep going' : ''}\n`);
  const onReport = (report: ScheduleReport): void => {
    figures.add(report);
    if (report.violations.length > 0) violating.push(report);
    if (figures.schedules % args.progressEvery === 0) {
      process.stdout.write(`  ${figures.schedules} schedules, ${((Date.now() - figures.startedAt) / 1000).toFixed(0)} s, violations so far ${violating.length}\n`);
    }
  };
  const details = await fc.check(interleavingProperty({ onReport, failOnViolation: !args.keepGoing, only: args.only as ViolationKind[] | undefined }), {
    numRuns: args.runs,
    seed,
  });
  const only = (args.only ?? []).map((k) => ` --only ${k}`).join('');
  process.stdout.write(`\ncommand: npm run check:interleavings -- --runs ${args.runs} --seed ${seed}${args.keepGoing ? ' --keep-going' : ''}${only}\n${figures.format()}\n`);
  if (details.failed) {
    const shrunk = details.errorInstance instanceof InterleavingViolation ? details.errorInstance.report : undefined;
    process.stdout.write(`\nVIOLATION after ${details.numRuns} schedules (seed ${details.seed}, path "${details.counterexamplePath ?? ''}", ${details.numShrinks} shrinks)\n`);
    process.stdout.write(`replay: fc.check(property, { seed: ${details.seed}, path: "${details.counterexamplePath ?? ''}", endOnFailure: true })\n`);
    if (shrunk !== undefined) process.stdout.write(`${describeViolation(shrunk)}\n`);
    process.stdout.write(`\ncounterexample (scenario, scheduler):\n${fc.stringify(details.counterexample)}\n`);
    if (shrunk === undefined) process.stdout.write(`${String(details.errorInstance)}\n`);
    process.exit(1);
  }
  if (violating.length > 0) {
    process.stdout.write(`\n${violating.length} violating schedules; the first ${Math.min(3, violating.length)}:\n`);
    for (const r of violating.slice(0, 3)) process.stdout.write(`\n${describeViolation(r)}\n`);
    process.exit(1);
  }
  process.exit(0);
}

/** The batch explorer's full run (`--batch`): the same flow over `batchInterleavingProperty`. */
async function batchMain(args: Args, seed: number): Promise<void> {
  const figures = new BatchFigures();
  const violating: BatchScheduleReport[] = [];
  process.stdout.write(`check:interleavings --batch: ${args.runs} schedules, seed ${seed}${args.keepGoing ? ', keep going' : ''}\n`);
  const onReport = (report: BatchScheduleReport, scenario: BatchScenario): void => {
    figures.add(report, scenario);
    if (report.violations.length > 0) violating.push(report);
    if (figures.schedules % args.progressEvery === 0) {
      process.stdout.write(`  ${figures.schedules} schedules, ${((Date.now() - figures.startedAt) / 1000).toFixed(0)} s, violations so far ${violating.length}\n`);
    }
  };
  const details = await fc.check(batchInterleavingProperty({ onReport, failOnViolation: !args.keepGoing, only: args.only as BatchViolationKind[] | undefined }), {
    numRuns: args.runs,
    seed,
  });
  const only = (args.only ?? []).map((k) => ` --only ${k}`).join('');
  process.stdout.write(
    `\ncommand: npm run check:interleavings -- --batch --runs ${args.runs} --seed ${seed}${args.keepGoing ? ' --keep-going' : ''}${only}\n${figures.format()}\n`,
  );
  if (details.failed) {
    const shrunk = details.errorInstance instanceof BatchInterleavingViolation ? details.errorInstance.report : undefined;
    process.stdout.write(`\nVIOLATION after ${details.numRuns} schedules (seed ${details.seed}, path "${details.counterexamplePath ?? ''}", ${details.numShrinks} shrinks)\n`);
    if (shrunk !== undefined) process.stdout.write(`${describeBatchViolation(shrunk)}\n`);
    process.stdout.write(`\ncounterexample (scenario, scheduler):\n${fc.stringify(details.counterexample)}\n`);
    if (shrunk === undefined) process.stdout.write(`${String(details.errorInstance)}\n`);
    process.exit(1);
  }
  if (violating.length > 0) {
    process.stdout.write(`\n${violating.length} violating schedules; the first ${Math.min(3, violating.length)}:\n`);
    for (const r of violating.slice(0, 3)) process.stdout.write(`\n${describeBatchViolation(r)}\n`);
    process.exit(1);
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`check:interleavings: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
