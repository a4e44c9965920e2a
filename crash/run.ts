/**
 * `npm run crashtest`: the crash-window proof (docs/protocol.md#crash-windows) with real processes.
 *
 *   npm run crashtest -- [--runs 20] [--stores sqlite,postgres] [--scenarios a,b] [--concurrency 2] [--parallel-stores] [--report docs/crash-report.md]
 *
 * `--scenarios` takes scenario ids or group names (`batch-and-saga`: the batch and saga scenarios).
 *
 * Writes the report and exits 1 when any repetition failed: a duplicate effect, a lost
 * result, an unknown outcome that did not pause, or any other broken expectation.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Command } from 'commander';
import { renderReport, summaryTable } from './report';
import { STORE_KINDS, type StoreKind } from './stack';
import { runCrashSuite } from './suite';

async function main(): Promise<void> {
  const opts = new Command('crashtest')
    .option('--runs <n>', 'repetitions per scenario and store', '20')
    .option('--stores <list>', 'stores to run against', STORE_KINDS.join(','))
    .option('--scenarios <list>', 'scenario ids or groups (batch-and-saga) (default: all)')
    .option('--concurrency <n>', 'repetitions side by side for scenarios that do not disturb the shared stack', '2')
    .option('--parallel-stores', 'run the stores at the same time (each has its own stack)')
    .option('--report <file>', 'where to write the Markdown report', 'docs/crash-report.md')
    .parse()
    .opts<{ runs: string; stores: string; scenarios?: string; concurrency: string; parallelStores?: boolean; report: string }>();
  const runs = positive(opts.runs, '--runs');
  const stores = opts.stores.split(',').map((s) => s.trim()) as StoreKind[];
  for (const s of stores) if (!STORE_KINDS.includes(s)) throw new Error(`--stores: unknown store ${JSON.stringify(s)} (known: ${STORE_KINDS.join(', ')})`);
  const suite = await runCrashSuite({
    runs,
    stores,
    scenarios: opts.scenarios?.split(',').map((s) => s.trim()),
    concurrency: positive(opts.concurrency, '--concurrency'),
    parallelStores: opts.parallelStores === true,
  });
  const file = resolve(opts.report);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, renderReport(suite, `npm run crashtest -- ${process.argv.slice(2).join(' ')}`.trim()));
  console.log(`\n${summaryTable(suite)}\n\n${suite.passed ? 'PASSED' : 'FAILED'}: report written to ${file}${suite.passed ? '' : `; work folder kept at ${suite.workDir}`}`);
  process.exitCode = suite.passed ? 0 : 1;
}

function positive(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
