/**
 * The time-skipping test environment for a user's jest suite, offline when a test server binary
 * is at hand: `TEMPORAL_TEST_SERVER_PATH` names an existing `temporal-test-server`; without it
 * the SDK downloads one (internet needed once).
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';

/** The environment variable naming an existing time-skipping test server binary. */
export const TEST_SERVER_PATH_ENV = 'TEMPORAL_TEST_SERVER_PATH';

/** Starts `TestWorkflowEnvironment.createTimeSkipping()` on the binary `TEMPORAL_TEST_SERVER_PATH` names, if set. */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = process.env[TEST_SERVER_PATH_ENV]?.trim();
  return TestWorkflowEnvironment.createTimeSkipping(path ? { server: { executable: { type: 'existing-path', path } } } : {});
}
