/**
 * Report rows from a crash suite's log, for a run that was stopped (or is still going) before it
 * wrote its report: every finished repetition prints one line
 * `<store> <scenario> #<n>: ok|FAILED in <ms> ms (effects E, duplicates D, lost L, paused P, recovery R ms)`.
 *
 *   tsx crash/log-rows.ts <log file> [run label]
 *
 * Prints the report's summary rows (docs/crash-report.md: scenario, store, run, runs, passed,
 * effects applied, duplicates, results lost, runs paused, unknown not paused, recovery p50 and
 * max), one per scenario and store with at least one finished repetition, in log order.
 * *Unknown not paused* is not in the line: a repetition where it happened also FAILED, so the
 * column reads `0` when every repetition passed and `?` otherwise.
 */
import { readFileSync } from 'node:fs';

const LINE = /^(\S+) (\S+) #(\d+): (ok|FAILED) in (\d+) ms \(effects (\d+), duplicates (\d+), lost (\d+), paused (true|false), recovery (\S+) ms\)/;

interface Rep {
  readonly ok: boolean;
  readonly effects: number;
  readonly duplicates: number;
  readonly lost: number;
  readonly paused: boolean;
  readonly recoveryMs: number | null;
}

/** Summary rows of `log` (see the header), as Markdown table lines. */
export function logRows(log: string, label: string): string[] {
  const groups = new Map<string, Rep[]>();
  for (const line of log.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const key = `${m[2]} | ${m[1]}`;
    if (!groups.has(key)) groups.set(key, []);
    groups
      .get(key)!
      .push({ ok: m[4] === 'ok', effects: Number(m[6]), duplicates: Number(m[7]), lost: Number(m[8]), paused: m[9] === 'true', recoveryMs: m[10] === '-' ? null : Number(m[10]) });
  }
  return [...groups].map(([key, reps]) => {
    const recoveries = reps
      .map((r) => r.recoveryMs)
      .filter((ms): ms is number => ms !== null)
      .sort((a, b) => a - b);
    const sum = (f: (r: Rep) => number) => reps.reduce((a, r) => a + f(r), 0);
    const passed = reps.filter((r) => r.ok).length;
    const p50 = recoveries.length === 0 ? '–' : recoveries[Math.ceil(recoveries.length / 2) - 1];
    const max = recoveries.length === 0 ? '–' : recoveries[recoveries.length - 1];
    return `| ${key} | ${label} | ${reps.length} | ${passed} | ${sum((r) => r.effects)} | ${sum((r) => r.duplicates)} | ${sum((r) => r.lost)} | ${reps.filter((r) => r.paused).length} | ${passed === reps.length ? 0 : '?'} | ${p50} | ${max} |`;
  });
}

if (require.main === module) {
  const [file, label = 'C'] = process.argv.slice(2);
  if (!file) throw new Error('usage: tsx crash/log-rows.ts <log file> [run label]');
  console.log(logRows(readFileSync(file, 'utf8'), label).join('\n'));
}
