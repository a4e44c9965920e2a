/**
 * Renewal of a running claim (docs/protocol.md#overlapping-attempts): while a user's activity runs
 * under the fence, its holder keeps declaring a later deadline, so another attempt does not take
 * the claim over while the activity may still apply its effect. Temporal cannot stop an
 * activity that ignores cancellation, and a promise cannot be cancelled: the claim therefore
 * lasts as long as the activity runs and its worker can reach the store, not a fixed time.
 *
 * What renewal cannot cover: a worker that stays alive but cannot reach the store for longer
 * than one call deadline plus `reconcileMarginMs`. Its claim then lapses and another attempt may
 * take it over; the holder aborts the call's signal (`fencedCallContext().signal`) when its
 * declared deadline passes unrenewed, which stops an activity that passes the signal on.
 */
import { isCheckpointError } from '../../checkpoint/errors';
import { renewExecution } from '../../checkpoint/transitions';
import type { CheckpointRecord } from '../../checkpoint/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import { deadlineAfter } from './fence-deps';
import { LongTimer, MAX_TIMER_MS } from '../tools/long-timer';

/** What a {@link ClaimRenewal} needs of its attempt. */
export interface ClaimRenewalOptions {
  readonly store: CheckpointStore;
  /** The record as this attempt's claim left it (status `executing` under `attemptId`). */
  readonly claimed: CheckpointRecord;
  readonly attemptId: string;
  /** How far each renewal moves the deadline past its own time, ms (the tool's `callDeadlineMs`). */
  readonly deadlineMs: number;
  /** Now, never earlier than the record's `updatedAt`, ISO-8601 UTC (the fence's transition clock). */
  now(record: CheckpointRecord): string;
  /** The fence's clock, ms since the epoch. */
  nowMs(): number;
  /**
   * The latest deadline a renewal may declare, ms since the epoch; at that time the signal aborts
   * and renewal ends. A same-key repeat sets it so that its request settles while the provider
   * remembers the key (docs/protocol.md#key-lifetime).
   */
  readonly deadlineLimitMs?: number;
}

/**
 * Renews a claim every third of its deadline until {@link stop}. When the claim is lost (another
 * attempt or a person changed the record), {@link signal} aborts and renewal ends; the attempt's
 * result is then refused by the fence (FENCE_CONFLICT). When its deadline passes without a
 * renewal (the store did not answer), {@link signal} aborts too, but renewal goes on: the claim
 * cannot be taken over before that deadline plus the margin, and a renewal that lands before
 * then keeps it (a takeover in between makes the renewal's compare-and-swap lose: a real loss).
 */
export class ClaimRenewal {
  private readonly lost = new AbortController();
  /** Set on a real loss of the claim (not on a lapse): renewal ends. */
  private gone = false;
  private latest: CheckpointRecord;
  private timer: NodeJS.Timeout | undefined;
  private limitTimer: LongTimer | undefined;
  private inFlight: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly options: ClaimRenewalOptions) {
    this.latest = options.claimed;
  }

  /** Aborted once this attempt no longer holds a live claim (lost, or its deadline passed unrenewed). */
  get signal(): AbortSignal {
    return this.lost.signal;
  }

  /** Starts renewing: every `deadlineMs / 3` (at least 10 ms, at most 2^31−1 ms, the longest timer Node honours). */
  start(): void {
    const everyMs = Math.min(MAX_TIMER_MS, Math.max(10, Math.floor(this.options.deadlineMs / 3)));
    this.timer = setInterval(() => {
      this.inFlight = this.inFlight.then(() => this.renew());
    }, everyMs);
    this.timer.unref?.();
    const limit = this.options.deadlineLimitMs;
    if (limit !== undefined) {
      this.limitTimer = new LongTimer(
        limit,
        () => {
          this.gone = true;
          this.abort(`the claim may not be renewed past ${new Date(limit).toISOString()}, when the provider may forget the call's key`);
        },
        () => this.options.nowMs(),
        true,
      );
    }
  }

  /** Stops renewing and waits for a renewal in flight. @returns the latest record this attempt wrote or read. */
  async stop(): Promise<CheckpointRecord> {
    this.stopped = true;
    clearInterval(this.timer);
    this.limitTimer?.clear();
    await this.inFlight;
    return this.latest;
  }

  private async renew(): Promise<void> {
    if (this.stopped || this.gone) return;
    const { store, attemptId, deadlineMs } = this.options;
    try {
      for (let round = 0; round < 4 && !this.stopped; round += 1) {
        const from = this.latest;
        if (from.status !== 'executing' || from.execution?.attemptId !== attemptId)
          return this.lose(`the claim is now ${from.status} under ${from.execution?.attemptId ?? 'nobody'}`);
        const at = this.options.now(from);
        const limit = this.options.deadlineLimitMs;
        const ms = limit === undefined ? deadlineMs : Math.min(deadlineMs, limit - Date.parse(at));
        if (ms <= 0) return this.lose(`the claim may not be renewed past ${new Date(limit!).toISOString()}`);
        const next = renewExecution(from, { attemptId, at, deadlineAt: deadlineAfter(at, ms) });
        if (await store.compareAndSwap(next.expectedRevision, next.next, from)) {
          this.latest = next.next;
          return;
        }
        const current = await store.get(from.binding);
        if (current === null) return this.lose('the checkpoint disappeared');
        this.latest = current;
      }
    } catch (error) {
      if (isCheckpointError(error, 'FENCE_CONFLICT') || isCheckpointError(error, 'INVALID_TRANSITION')) return this.lose(error.message);
      // The store did not answer: try again at the next tick, unless the declared deadline has passed.
    }
    this.loseIfLapsed();
  }

  private loseIfLapsed(): void {
    const deadlineAt = this.latest.execution?.deadlineAt;
    if (deadlineAt !== null && deadlineAt !== undefined && this.options.nowMs() >= Date.parse(deadlineAt)) {
      this.abort(`the claim's deadline ${deadlineAt} passed without a renewal (the store did not answer); renewal goes on`);
    }
  }

  private lose(reason: string): void {
    this.gone = true;
    this.abort(`the fence no longer holds this call: ${reason}`);
  }

  private abort(reason: string): void {
    if (!this.lost.signal.aborted) this.lost.abort(new Error(reason));
  }
}
