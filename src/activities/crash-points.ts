/**
 * Test-only crash injection for the crash-window proof (SPEC §5). Does nothing unless the
 * worker process was started with `TTC_CRASH_AT=<point>` (optionally `<point>:<toolName>`);
 * then the process kills itself with SIGKILL the first time it reaches that point.
 */

/** The named crash windows of SPEC §5, in the order an attempt passes them. */
export const CRASH_POINTS = ['before-claim', 'after-claim', 'after-effect', 'after-result-stored', 'after-delivery-claimed', 'after-delivery-completed'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

const [armedPoint, armedTool] = (process.env.TTC_CRASH_AT ?? '').split(':');

/** Kills this process with SIGKILL when `point` (and `toolName`, if named) is armed. */
export function crashPoint(point: CrashPoint, toolName: string): void {
  if (armedPoint !== point || (armedTool && armedTool !== toolName)) return;
  process.stderr.write(`TTC_CRASH_AT: killing worker ${process.pid} at ${point} (${toolName})\n`);
  process.kill(process.pid, 'SIGKILL');
}
