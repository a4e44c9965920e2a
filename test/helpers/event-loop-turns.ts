/**
 * Counting event-loop iterations in tests: whether two continuations ran with other callbacks
 * (a setImmediate chain) or a timers phase (a 1 ms timer, standing for heartbeats) between them.
 */

/** Counts callbacks of a setImmediate chain: a value seen by two continuations differs when the loop ran other callbacks between them. */
export function turnCounter(): { readonly now: () => number; stop(): void } {
  let turn = 0;
  let running = true;
  const tick = (): void => {
    turn += 1;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  return { now: () => turn, stop: () => (running = false) };
}

/** Counts the firings of a 1 ms timer: two continuations that see the same count ran with no timers phase between them. */
export function timerBeats(): { readonly beats: () => number; stop(): void } {
  let beats = 0;
  let beating = true;
  const beat = (): void => {
    beats += 1;
    if (beating) setTimeout(beat, 1);
  };
  setTimeout(beat, 1);
  return { beats: () => beats, stop: () => (beating = false) };
}

/** Holds the loop for `ms` (past a 1 ms timer's due time). */
export function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

/** The largest number of values seen equal: the most continuations that ran in one counted iteration. */
export function mostPerCount(counts: readonly number[]): number {
  const per = new Map<number, number>();
  for (const c of counts) per.set(c, (per.get(c) ?? 0) + 1);
  return Math.max(...per.values());
}
