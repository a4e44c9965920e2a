/**
 * Heartbeats while the fence runs a user's activity (the worker plugin's fence,
 * docs/protocol.md#worker-plugin), and the fence's heartbeat interval.
 * With a heartbeat timeout, a worker that dies is noticed within that timeout instead of the
 * start-to-close timeout; so the fence heartbeats for the activity, whether or not the activity
 * heartbeats itself. The activity's heartbeat details stay its own: the fence re-sends the last
 * details the activity sent (at first, the previous attempt's), never details of its own.
 */
import { asyncLocalStorage, Context } from '@temporalio/activity';
import { MAX_TIMER_MS } from '../tools/long-timer';

/** The heartbeat interval for a heartbeat timeout of `timeoutMs`: a third of it, at least 200 ms, at most 2^31−1 ms (the longest timer Node honours). */
export function heartbeatIntervalMs(timeoutMs: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(200, Math.floor(timeoutMs / 3)));
}

/** The activity's heartbeat timeout in ms, or undefined when none applies (none set, 0, or a local activity): then nothing heartbeats. */
export function heartbeatTimeoutOf(ctx: Context): number | undefined {
  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  return timeoutMs === undefined || timeoutMs <= 0 || ctx.info.isLocal ? undefined : timeoutMs;
}

/**
 * Runs `work` (the user's activity) in a context whose `heartbeat` records the details it is given
 * and forwards them, and re-sends the last recorded details every {@link heartbeatIntervalMs} of
 * the activity's heartbeat timeout until `work` settles. Without a heartbeat timeout, or for a
 * local activity, `work` runs as it is.
 */
export async function withKeptHeartbeat<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timeoutMs = heartbeatTimeoutOf(ctx);
  if (timeoutMs === undefined) return work();
  let last: unknown = ctx.info.heartbeatDetails;
  const heartbeat = (details?: unknown): void => {
    last = details;
    ctx.heartbeat(details);
  };
  // Everything else (info, cancellation, client, logger, metric meter, sleep) is the activity's own context.
  const kept = Object.create(ctx, { heartbeat: { value: heartbeat, enumerable: true } }) as Context;
  const timer = setInterval(() => ctx.heartbeat(last), heartbeatIntervalMs(timeoutMs));
  try {
    return await asyncLocalStorage.run(kept, work);
  } finally {
    clearInterval(timer);
  }
}
