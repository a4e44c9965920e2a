/**
 * The log output of `ttc worker`. The Temporal SDK's default logger writes
 * every entry to stderr raw: "Activity failed" carries the failure's stack, whose message quotes
 * tool and provider error text, and the workflow's warnings carry model-chosen call ids and tool
 * names, so an ESC, CSI or bidi override in them reached the operator's terminal and log viewer
 * as is. The worker command's logger formats the same way without colours and escapes every line
 * with `terminal-safe.ts`.
 */
import { formatWithOptions } from 'node:util';
import { DefaultLogger, type LogEntry, type LogLevel } from '@temporalio/worker';
import { terminalSafeLines, writeErrorLines } from './terminal-safe';

/**
 * One log entry as the SDK's default logger writes it (`<ISO time> [LEVEL] message meta`),
 * without colours, every unsafe character escaped (line feeds kept between lines).
 */
export function formatLogEntry(entry: LogEntry): string {
  const date = new Date(Number(entry.timestampNanos / 1_000_000n));
  const text =
    entry.meta === undefined
      ? `${date.toISOString()} [${entry.level}] ${entry.message}`
      : `${date.toISOString()} [${entry.level}] ${entry.message} ${formatWithOptions({ colors: false }, entry.meta)}`;
  return `${terminalSafeLines(text)}\n`;
}

/**
 * The logger `ttc worker` installs in the Temporal runtime: entries from `level` up, to stderr,
 * formatted by {@link formatLogEntry}.
 *
 * @param write where lines go. @default stderr
 */
export function createWorkerLogger(level: LogLevel = 'INFO', write: (text: string) => void = writeErrorLines): DefaultLogger {
  return new DefaultLogger(level, (entry) => write(formatLogEntry(entry)));
}
