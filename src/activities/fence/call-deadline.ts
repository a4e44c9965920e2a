/**
 * The deadline of one `execute` call and the signal its tool receives (`ctx.signal`): aborted by
 * cancellation or at the deadline. The signal is made only when someone reads it (the tool, or
 * the transient-retry loop after a failure), so a call that never looks at its signal pays for a
 * timer and a promise only. It is one `AbortController` that the cancellation signal's listener
 * aborts, removed when the call ends: `AbortSignal.any` would cost a weak reference and a
 * finalizer per call, and keep the signal alive until it aborts.
 */
import { LongTimer } from '../tools/long-timer';

/** A call's deadline: `expired` rejects with {@link DEADLINE} when it passes; `signal` aborts then, or on cancellation. */
export class CallDeadline {
  /** Rejects with {@link DEADLINE} at the deadline; never resolves. */
  readonly expired: Promise<never>;
  private rejectExpired!: (reason: unknown) => void;
  private reason: Error | undefined;
  private endedFor: string | undefined;
  private controller: AbortController | undefined;
  /** Aborts `controller` with the cancellation's reason; removed when the call ends. */
  private readonly forwardCancellation = (): void => this.controller?.abort(this.cancellation.reason);
  private readonly timer: LongTimer | undefined;

  /**
   * @param cancellation the activity's cancellation signal.
   * @param inMs ms from now to the deadline; `undefined`: no deadline (a batch call: its items have theirs).
   * @param message the abort reason's message at the deadline.
   */
  constructor(
    private readonly cancellation: AbortSignal,
    inMs: number | undefined,
    private readonly message: string,
  ) {
    this.expired = new Promise<never>((_, reject) => {
      this.rejectExpired = reject;
    });
    this.expired.catch(() => undefined);
    this.timer = inMs === undefined ? undefined : new LongTimer(Date.now() + Math.max(0, inMs), () => this.expire());
  }

  /** True once the deadline passed. */
  get passed(): boolean {
    return this.reason !== undefined;
  }

  /** Aborted by cancellation or at the deadline (made on first read). */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      const reason = this.cancellation.aborted ? this.cancellation.reason : (this.reason ?? (this.endedFor === undefined ? undefined : callOver(this.endedFor)));
      if (reason !== undefined) this.controller.abort(reason);
      else this.cancellation.addEventListener('abort', this.forwardCancellation, { once: true });
    }
    return this.controller.signal;
  }

  /** The call is over: stops the timer, stops listening for cancellation, and aborts a signal that was read. */
  end(toolName: string): void {
    this.timer?.clear();
    this.endedFor = toolName;
    if (this.controller === undefined) return;
    this.cancellation.removeEventListener('abort', this.forwardCancellation);
    if (!this.controller.signal.aborted) this.controller.abort(callOver(toolName));
  }

  private expire(): void {
    this.reason = new Error(this.message);
    this.rejectExpired(DEADLINE);
    this.controller?.abort(this.reason);
  }
}

function callOver(toolName: string): Error {
  return new Error(`${toolName} call is over`);
}

/** What {@link CallDeadline.expired} rejects with. */
export const DEADLINE = Symbol('call deadline');
