import { printLine, terminalSafe } from './terminal-safe';

/**
 * Prints rows as an aligned plain-text table. Every cell (and the header) is escaped for the
 * terminal first (see `terminal-safe.ts`): cells carry model, tool and provider text.
 */
export function printTable(header: readonly string[], rows: readonly (readonly (string | number)[])[], write: (line: string) => void = printLine): void {
  const cells = [header, ...rows].map((r) => r.map((c) => terminalSafe(String(c))));
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string =>
    r
      .map((c, i) => (typeof rows[0]?.[i] === 'number' ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  write(line(cells[0]!));
  write(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of cells.slice(1)) write(line(r));
}

/** `CODE: reason`, without repeating the code when the reason already starts with it. */
export function withCode(code: string | null, reason: string | null): string {
  if (!code) return reason ?? '';
  if (!reason) return code;
  return reason.startsWith(`${code}:`) ? reason : `${code}: ${reason}`;
}
