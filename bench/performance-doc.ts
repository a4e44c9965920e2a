/**
 * `npm run bench:doc`: runs bench:fence-cost, bench:peers, bench:recovery, bench:store,
 * bench:overhead, bench:fleet and bench:profile one after the other with BENCH_MARKDOWN=1 and writes what each prints into docs/performance.md, between its markers
 * (`<!-- bench:store:start -->` … `<!-- bench:store:end -->`, and so on). The text around the
 * markers (what the columns mean, the reading of the targets) is kept; read it again after a run.
 *
 * Options (environment): PERF_BENCHES (default `fence-cost,peers,recovery,store,overhead,fleet,profile`), and every option of the
 * benchmarks themselves (BENCH_SECONDS, BENCH_CALLS, BENCH_ROUNDS, FLEET_RUNS, FLEET_STORES, …),
 * passed through. PERF_NOTE: a line written under each run (e.g. "the machine was shared").
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const DOC = resolve(__dirname, '../docs/performance.md');
const tsx = (file: string): string[] => [process.execPath, '--require', require.resolve('tsx/cjs'), resolve(__dirname, file)];
/** The command line of each benchmark (bench:profile needs node flags: its npm script). */
const BENCHES: Record<string, string[]> = {
  'fence-cost': tsx('fence-cost.ts'),
  peers: ['npm', 'run', '--silent', 'bench:peers'],
  recovery: tsx('plugin-recovery.ts'),
  store: tsx('store-bench.ts'),
  overhead: tsx('overhead-bench.ts'),
  fleet: tsx('fleet-bench.ts'),
  profile: ['npm', 'run', '--silent', 'bench:profile'],
};
const WANTED = (process.env.PERF_BENCHES ?? 'fence-cost,peers,recovery,store,overhead,fleet,profile').split(',').map((s) => s.trim());

function main(): void {
  for (const name of WANTED) {
    const argv = BENCHES[name];
    if (argv === undefined) throw new Error(`PERF_BENCHES: unknown benchmark ${name} (known: ${Object.keys(BENCHES).join(', ')})`);
    const begin = `<!-- bench:${name}:start -->`;
    const end = `<!-- bench:${name}:end -->`;
    if (!readFileSync(DOC, 'utf8').includes(begin)) throw new Error(`${DOC} has no ${begin} marker`);
    console.error(`bench:doc: running bench:${name} …`);
    const run = spawnSync(argv[0]!, argv.slice(1), {
      cwd: resolve(__dirname, '..'),
      env: { ...process.env, BENCH_MARKDOWN: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (run.status !== 0) throw new Error(`bench:${name} exited ${String(run.status ?? run.signal)}`);
    const note = process.env.PERF_NOTE ? `\n> ${process.env.PERF_NOTE}\n` : '';
    // Read again: an earlier step of this run wrote the file.
    const doc = readFileSync(DOC, 'utf8');
    const from = doc.indexOf(begin) + begin.length;
    const to = doc.indexOf(end);
    writeFileSync(DOC, `${doc.slice(0, from)}\n${note}${run.stdout.trim()}\n${doc.slice(to)}`);
    console.error(`bench:doc: bench:${name} written to ${DOC}`);
  }
}

main();
