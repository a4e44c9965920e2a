/**
 * A clock for the fence (the plugin's and createToolActivities' `clock` option) in tests whose
 * attempts, renewals and deadlines all run in this one process at millisecond scale: real time,
 * except that it advances at most {@link MAX_STEP_MS} between two readings or 1 ms ticks. A stall
 * of this process (CPU starvation on a loaded machine, a GC pause) then moves no deadline past
 * anyone: every attempt and renewal sees the same stalls. Without stalls it is real time.
 */

/** The most the clock advances between two readings or ticks, ms. */
export const MAX_STEP_MS = 5;

/** A stall-free clock; `stop()` ends its 1 ms ticks (they do not keep the process alive). */
export function stallFreeClock(): { readonly clock: () => Date; stop(): void } {
  let now = Date.now();
  let last = performance.now();
  const advance = (): number => {
    const real = performance.now();
    now += Math.min(real - last, MAX_STEP_MS);
    last = real;
    return now;
  };
  const tick = setInterval(advance, 1);
  tick.unref();
  return { clock: () => new Date(Math.floor(advance())), stop: () => clearInterval(tick) };
}
