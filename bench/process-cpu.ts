/**
 * CPU time of the processes a benchmark runs beside it, read from Linux's `/proc/<pid>/stat`
 * (utime + stime of the process and of its reaped children, in clock ticks of 10 ms on this
 * kernel: read over seconds of work, not single calls). Used by bench:overhead to account the
 * CPU of one call to every process on the machine: the worker's, the Temporal server's and
 * PostgreSQL's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** `getconf CLK_TCK` on Linux; fixed by the kernel's USER_HZ (100 on every mainstream build). */
const TICKS_PER_SECOND = 100;

/** utime, stime, cutime, cstime and ppid of one process, or null when it is gone. */
function stat(pid: number): { ppid: number; ms: number } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces: split after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, utime..cstime are fields 14..17.
  const ticks = [fields[11], fields[12], fields[13], fields[14]].reduce((sum, f) => sum + Number(f), 0);
  return { ppid: Number(fields[1]), ms: (ticks * 1000) / TICKS_PER_SECOND };
}

/** CPU ms used so far by `pid` and its reaped children. */
export function processCpuMs(pid: number): number {
  return stat(pid)?.ms ?? 0;
}

/**
 * CPU ms used so far by `pid` and every live child of it (a PostgreSQL postmaster and its
 * backends; a backend that exited is counted in the postmaster's reaped-children time).
 */
export function processTreeCpuMs(pid: number): number {
  let total = processCpuMs(pid);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = stat(Number(entry));
    if (s !== null && s.ppid === pid) total += s.ms;
  }
  return total;
}

/** The postmaster's pid of a PostgreSQL data directory (first line of `postmaster.pid`). */
export function postmasterPid(dataDir: string): number {
  return Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/** CPU ms every core of the machine has spent busy so far (`/proc/stat`'s first line: all but idle and iowait). */
export function machineBusyMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return ((fields.reduce((a, b) => a + b, 0) - idle) * 1000) / TICKS_PER_SECOND;
}
