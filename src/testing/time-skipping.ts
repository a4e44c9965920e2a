/**
 * The time-skipping test environment for a user's jest suite, offline when a test server binary
 * is at hand, found as the CLI finds it (src/dev/temporal-binaries.ts): `TEMPORAL_TEST_SERVER`
 * or `TEMPORAL_TEST_SERVER_PATH`, this repository's `.tools/bin` (inside the repository only),
 * then `temporal-test-server` on `PATH`; with none of them the SDK downloads one (internet needed
 * once). `timeSkippingClock` is the fence clock for a worker on that server.
 */
import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { TEMPORAL_TEST_SERVER_ENV, TEMPORAL_TEST_SERVER_PATH_ENV, TemporalBinaryNotFoundError, temporalTestServerPath } from '../dev/temporal-binaries';
import { assertPeersInstalled } from '../optional-peer';

/** The environment variable naming an existing time-skipping test server binary. */
export const TEST_SERVER_PATH_ENV = TEMPORAL_TEST_SERVER_PATH_ENV;

/**
 * Starts `TestWorkflowEnvironment.createTimeSkipping()` on the test server found as described
 * above, or on one the SDK downloads when none is found and no variable names one.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG when `@temporalio/testing` is not installed;
 *   TemporalBinaryNotFoundError when a variable names no executable file.
 */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  assertPeersInstalled(['@temporalio/testing'], 'createTimeSkippingEnv');
  const { TestWorkflowEnvironment: Env } = require('@temporalio/testing') as typeof import('@temporalio/testing');
  let path: string | undefined;
  try {
    path = temporalTestServerPath();
  } catch (error) {
    const named = [TEMPORAL_TEST_SERVER_ENV, TEMPORAL_TEST_SERVER_PATH_ENV].some((name) => (process.env[name] ?? '').trim() !== '');
    if (!(error instanceof TemporalBinaryNotFoundError) || named) throw error;
  }
  return Env.createTimeSkipping(path !== undefined ? { server: { executable: { type: 'existing-path', path } } } : {});
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
