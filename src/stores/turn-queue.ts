/**
 * Settles a store's answers a few per event-loop turn (docs/protocol.md#cost: store work never
 * blocks the worker's event loop for long). Answers that arrive together (one SQLite commit group,
 * or many PostgreSQL connections readable in one poll) would otherwise resume every waiting call
 * back to back in one turn, and hold the loop for all of their continuations; here each turn runs
 * at most {@link ANSWERS_PER_TURN} of them, and timers, heartbeats and other I/O run in between.
 */
import * as timers from 'node:timers';

/** `setImmediate` as it was when this module loaded: fake timers a test installs later (jest's) cannot stall a store. */
export const setImmediateAtLoad = timers.setImmediate;

/**
 * Answers settled per event-loop iteration, per store (each store has its own queue). Four bound
 * an iteration to four calls' continuations while the first calls' next requests go out as later
 * answers still wait. Measured at 16 concurrent fresh calls on PostgreSQL (a slow 2-core VM, event-loop
 * delay p99): the store alone 13–14 → 6–8 ms, the fence alone 17–35 → 9–15 ms; on SQLite the
 * fence alone about 4.5 → 3 ms (bench:overhead's event-loop section).
 */
export const ANSWERS_PER_TURN = 4;

/**
 * A FIFO of settle callbacks, run in the check phase of the event loop, at most
 * {@link ANSWERS_PER_TURN} per loop iteration: between two runs of the timers phase no more than
 * that many run (per queue; `flush` runs all at once).
 */
export class TurnQueue {
  private queue: (() => void)[] = [];
  private next = 0;
  private scheduled = false;

  /** Queues `settle` behind everything queued before it; it runs in this or a later iteration's check phase. */
  push(settle: () => void): void {
    this.queue.push(settle);
    if (!this.scheduled) this.schedule();
  }

  /** Resolves in the turn this queue reaches it: `await queue.turn()` after an answer arrives. */
  turn(): Promise<void> {
    return new Promise<void>((resolve) => this.push(resolve));
  }

  /** Runs everything queued now, in order (a store that stopped settles what it received at once). */
  flush(): void {
    this.run(Number.POSITIVE_INFINITY);
  }

  private schedule(): void {
    this.scheduled = true;
    setImmediateAtLoad(() => {
      this.scheduled = false;
      this.run(ANSWERS_PER_TURN);
    });
  }

  /** Runs up to `count` callbacks; should one throw, what is left still runs in a later iteration. */
  private run(count: number): void {
    try {
      // `next` moves before each call and the bound is read each time, so a callback that pushes
      // again, or flushes, leaves this loop at the right place.
      for (let ran = 0; ran < count && this.next < this.queue.length; ran += 1) this.queue[this.next++]!();
    } finally {
      if (this.next === this.queue.length) {
        this.queue = [];
        this.next = 0;
      } else if (!this.scheduled) {
        this.schedule();
      }
    }
  }
}
