/**
 * Shared by the benchmarks: tables (plain text, or Markdown with BENCH_MARKDOWN=1 so a run can be
 * pasted into docs/performance.md as it is), percentiles, and the machine/commit header a
 * committed figure needs.
 */
import { execFileSync } from 'node:child_process';
import { cpus, freemem, totalmem, loadavg } from 'node:os';
import { printTable } from '../src/cli/table';

/** Whether tables print as Markdown (BENCH_MARKDOWN=1). */
export const MARKDOWN = process.env.BENCH_MARKDOWN === '1';

/** Prints a table: aligned plain text, or a Markdown pipe table with BENCH_MARKDOWN=1. Numbers align right. */
export function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): void {
  if (!MARKDOWN) {
    printTable(header, rows, (line) => console.log(line));
    return;
  }
  const cell = (c: string | number): string => String(c).replace(/\|/g, '\\|');
  console.log(`| ${header.map(cell).join(' | ')} |`);
  console.log(`|${header.map((_, i) => (typeof rows[0]?.[i] === 'number' ? ' ---: ' : ' --- ')).join('|')}|`);
  for (const r of rows) console.log(`| ${r.map(cell).join(' | ')} |`);
}

/** A heading line: `### text` in Markdown, else the text underlined. */
export function heading(text: string): void {
  console.log(MARKDOWN ? `\n### ${text}\n` : `\n${text}\n${'='.repeat(Math.min(text.length, 100))}`);
}

/** The q-quantile (0..1) of `xs` (nearest rank); NaN for none. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** The median: the middle value, or the mean of the two middle values of an even count (NaN when empty). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
export const mean = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length);

/** `n` with `digits` decimals, or '–' when not a finite number. */
export function fixed(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '–';
}

/** 'met' / 'NOT met' */
export const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '?';
  }
}

/** What a committed figure must say about where it came from: command, date, commit, machine, load, taken now. */
export function printRunHeader(command: string): void {
  printHeaderLines(runHeader(command));
}

/** The run header's lines (see {@link printRunHeader}) as of now: take them when a run starts, print them with its figures. */
export function runHeader(command: string): readonly string[] {
  const changed = git(['diff', 'HEAD', '--name-only', '--', 'src'])
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && l !== '?');
  const dirty = changed.length > 0;
  const lines = [
    `command: ${command}`,
    `date: ${new Date().toISOString()}`,
    `commit: ${git(['rev-parse', '--short', 'HEAD'])}${dirty ? ` plus uncommitted changes to ${changed.join(', ')}` : ''}`,
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM (${(freemem() / 2 ** 30).toFixed(0)} GiB free), ${process.platform} ${execSafe(['uname', '-r'])}, Node ${process.version}`,
    `load average at start (1/5/15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')}`,
  ];
  return lines;
}

/** Prints header lines taken by {@link runHeader}. */
export function printHeaderLines(lines: readonly string[]): void {
  for (const line of lines) console.log(MARKDOWN ? `- ${line}` : line);
}

function execSafe(argv: string[]): string {
  try {
    return execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}
