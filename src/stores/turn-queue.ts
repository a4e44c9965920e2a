/**
 * Settles a store's answers a few per event-loop turn (docs/protocol.md#cost: store work never
 * blocks the worker's event loop for long). Answers that arrive together (one SQLite commit group,
 * or many PostgreSQL connections readable in one poll) would otherwise resume every waiting call
 * back to back in one turn, and hold the loop for all of their continuations; here each turn runs
 * at most {@link ANSWERS_PER_TURN} of them, and timers, heartbeats and other I/O run in between.
 */

/**
 * Answers settled per event-loop turn. Four bound a turn to four calls' continuations, while the
 * first calls' next requests go out as later answers are still settling (bench:overhead, the
 * store alone and the fence alone at 16 concurrent calls: their event-loop delay p99).
 */
export const ANSWERS_PER_TURN = 4;

/**
 * A FIFO of settle callbacks: each event-loop turn runs at most {@link ANSWERS_PER_TURN} of them
 * (the first ones at once, when they arrive), the rest in later turns (`setImmediate`), in order.
 */
export class TurnQueue {
  private queue: (() => void)[] = [];
  private next = 0;
  /** Callbacks run since the last turn's end; reset by the `setImmediate` that ends this turn. */
  private ranThisTurn = 0;
  private turnEnding = false;

  /** Runs `settle` now if this turn has room and nothing waits before it, else in a later turn. */
  push(settle: () => void): void {
    this.queue.push(settle);
    this.drain(ANSWERS_PER_TURN);
  }

  /** Resolves in the turn this queue reaches it: `await queue.turn()` after an answer arrives. */
  turn(): Promise<void> {
    return new Promise<void>((resolve) => this.push(resolve));
  }

  /** Runs everything queued now, in order (a store that stopped settles what it received at once). */
  flush(): void {
    this.drain(Number.POSITIVE_INFINITY);
  }

  private drain(limit: number): void {
    // `next` moves before each call, so a callback that pushes again continues from the right place.
    while (this.next < this.queue.length && this.ranThisTurn < limit) {
      this.ranThisTurn += 1;
      this.queue[this.next++]!();
    }
    if (this.next === this.queue.length) {
      this.queue = [];
      this.next = 0;
    }
    if (this.ranThisTurn > 0 && !this.turnEnding) {
      this.turnEnding = true;
      setImmediate(() => {
        this.turnEnding = false;
        this.ranThisTurn = 0;
        this.drain(ANSWERS_PER_TURN);
      });
    }
  }
}
