/**
 * A timer for any delay. Node fires a `setTimeout` longer than 2^31−1 ms (about 24.8 days) after
 * 1 ms, so a far time is reached by re-arming at most that long each time.
 */

/** The longest delay `setTimeout` honours (2^31−1 ms). */
export const MAX_TIMER_MS = 2_147_483_647;

/** Calls `fire` once at `atMs` (ms since the epoch on `nowMs`'s clock), never before it on that clock; {@link clear} stops it. */
export class LongTimer {
  private handle: ReturnType<typeof setTimeout> | undefined;
  private cleared = false;

  /**
   * @param atMs when to fire, ms since the epoch on `nowMs`'s clock.
   * @param unref true: the timer does not keep the process alive.
   */
  constructor(
    private readonly atMs: number,
    private readonly fire: () => void,
    private readonly nowMs: () => number = Date.now,
    private readonly unref = false,
  ) {
    this.arm(true);
  }

  /** Stops the timer; idempotent. */
  clear(): void {
    this.cleared = true;
    if (this.handle !== undefined) clearTimeout(this.handle);
  }

  private arm(first: boolean): void {
    if (this.cleared) return;
    const inMs = this.atMs - this.nowMs();
    // Wait, and check again on waking: a timer may wake a millisecond early, or the clock may have
    // been set back. Due (or not a number) on waking: fire; at construction: on a later turn, never in the caller's.
    if (inMs > 0) this.handle = setTimeout(() => this.arm(false), Math.min(inMs, MAX_TIMER_MS));
    else if (first) this.handle = setTimeout(this.fire, 0);
    else return this.fire();
    if (this.unref) this.handle.unref?.();
  }
}
