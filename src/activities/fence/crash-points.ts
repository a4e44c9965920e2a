/**
 * Test-only crash injection for the crash-window proof (docs/protocol.md#crash-windows). Does
 * nothing unless the worker process was started with `TTC_CRASH_AT=<point>[:<toolName>][#<n>]`;
 * then the process kills itself with SIGKILL the n-th time (default: the first time) it reaches
 * that point, for that tool if one is named. Examples: `after-effect`, `after-claim:send_email`,
 * `after-effect:create_ticket#2` (the second create_ticket effect this process applies). The count
 * is per process: every worker started with the variable crashes on its own n-th hit.
 */

/**
 * The named crash windows of docs/protocol.md#crash-windows, in the order an attempt passes them.
 * Since the two-write fresh call (docs/protocol.md#cost) a fresh call writes its claim with its
 * insert (`before-claim` comes before that insert) and its result with its delivery in one
 * compare-and-swap, so `after-result-stored`, `after-delivery-claimed` and
 * `after-delivery-completed` follow that one write (the record is `delivered`); a stored result
 * delivered again passes the last two after its one redelivery write.
 */
export const CRASH_POINTS = ['before-claim', 'after-claim', 'after-effect', 'after-result-stored', 'after-delivery-claimed', 'after-delivery-completed'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

/**
 * The points of an attempt where the fence awaits `hooks.step` (test-only: the interleaving
 * explorer schedules attempts there, and a step that never resolves models a worker killed at
 * that point): the crash windows plus `before-execute`, after the fence was re-checked and right
 * before the tool is called.
 */
export const FENCE_POINTS = ['before-claim', 'after-claim', 'before-execute', 'after-effect', 'after-result-stored', 'after-delivery-claimed', 'after-delivery-completed'] as const;
export type FencePoint = (typeof FENCE_POINTS)[number];

const armed = parseCrashAt(process.env.TTC_CRASH_AT ?? '');
let hits = 0;

/** Kills this process with SIGKILL when `point` (and `toolName`, if named) is armed and this is its n-th hit. */
export function crashPoint(point: CrashPoint, toolName: string): void {
  if (armed === null || armed.point !== point || (armed.toolName !== undefined && armed.toolName !== toolName)) return;
  hits += 1;
  if (hits !== armed.occurrence) return;
  process.stderr.write(`TTC_CRASH_AT: killing worker ${process.pid} at ${point} (${toolName}, hit ${hits})\n`);
  process.kill(process.pid, 'SIGKILL');
}

/** Formats a `TTC_CRASH_AT` value: `<point>[:<toolName>][#<n>]` (n omitted when 1). */
export function formatCrashAt(at: { readonly point: CrashPoint; readonly toolName?: string; readonly occurrence?: number }): string {
  return `${at.point}${at.toolName === undefined ? '' : `:${at.toolName}`}${at.occurrence === undefined || at.occurrence === 1 ? '' : `#${at.occurrence}`}`;
}

function parseCrashAt(value: string): { point: string; toolName: string | undefined; occurrence: number } | null {
  if (value === '') return null;
  const [target = '', count] = value.split('#');
  const [point = '', toolName] = target.split(':');
  const occurrence = count === undefined ? 1 : Number(count);
  if (!Number.isSafeInteger(occurrence) || occurrence < 1) throw new Error(`TTC_CRASH_AT=${value}: the occurrence after # must be a positive integer`);
  return { point, toolName: toolName || undefined, occurrence };
}
