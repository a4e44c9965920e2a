/**
 * A timer for any delay. Node fires a `setTimeout` longer than 2^31−1 ms (about 24.8 days) after
 * 1 ms, so a far time is reached by re-arming at most that long each time.
 */

/** The longest delay `setTimeout` honours (2^31−1 ms). */
export const MAX_TIMER_MS = 2_147_483_647;

/** Calls `fire` once at `atMs` (ms since the epoch on `nowMs`'s clock), never early; {@link clear} stops it. */
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
    this.arm();
  }

  /** Stops the timer; idempotent. */
  clear(): void {
    this.cleared = true;
    if (this.handle !== undefined) clearTimeout(this.handle);
  }

  private arm(): void {
    if (this.cleared) return;
    const inMs = this.atMs - this.nowMs();
    this.handle = inMs > MAX_TIMER_MS ? setTimeout(() => this.arm(), MAX_TIMER_MS) : setTimeout(this.fire, Math.max(0, inMs));
    if (this.unref) this.handle.unref?.();
  }
}
