/**
 * The time-skipping test environment for a user's jest suite, offline when a test server binary
 * is at hand: `TEMPORAL_TEST_SERVER_PATH` names an existing `temporal-test-server`; without it
 * the SDK downloads one (internet needed once). `timeSkippingClock` is the fence clock for a worker
 * on that server.
 */
import { Context } from '@temporalio/activity';
import { TestWorkflowEnvironment } from '@temporalio/testing';

/** The environment variable naming an existing time-skipping test server binary. */
export const TEST_SERVER_PATH_ENV = 'TEMPORAL_TEST_SERVER_PATH';

/** Starts `TestWorkflowEnvironment.createTimeSkipping()` on the binary `TEMPORAL_TEST_SERVER_PATH` names, if set. */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = process.env[TEST_SERVER_PATH_ENV]?.trim();
  return TestWorkflowEnvironment.createTimeSkipping(path ? { server: { executable: { type: 'existing-path', path } } } : {});
}

/** Per activity attempt: how far the test server's clock was ahead of this process's when the attempt first read the time. */
const aheadBy = new WeakMap<Context, number>();

/**
 * The fence clock for a worker on the time-skipping test server: give it to the plugin
 * (`new ToolCheckpointPlugin({ store, clock: timeSkippingClock, fence })`) or to
 * `createToolActivities`. The fence waits for an unfinished claim's settle time (its call
 * deadline plus `reconcileMarginMs`, 35 s by default) before it reconciles it; on the system
 * clock a test would wait those seconds while the server skips every retry backoff, and Temporal
 * would run thousands of attempts meanwhile. This clock reads the server's time instead: inside
 * an activity attempt it runs from the attempt's scheduled time
 * (`info.currentAttemptScheduledTimestampMs`, skipped time included), never behind the system
 * clock; outside an activity it is the system clock. A lost answer then costs a few attempts (the
 * retry after the settle time comes at it, skipped). For tests only: in production the fence must
 * not trust the server's clock over its own.
 */
export function timeSkippingClock(): Date {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return new Date();
  }
  let ahead = aheadBy.get(context);
  if (ahead === undefined) {
    ahead = Math.max(0, context.info.currentAttemptScheduledTimestampMs - Date.now());
    aheadBy.set(context, ahead);
  }
  return new Date(Date.now() + ahead);
}
