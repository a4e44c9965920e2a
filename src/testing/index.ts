/**
 * `temporal-tool-checkpoint/testing`: helpers for testing fenced tools in your own jest suite.
 * Node only; the one entry that uses `@temporalio/testing`, an optional peer (install it as a dev
 * dependency): `runCrashAndRetry` and `createTimeSkippingEnv` throw INVALID_CONFIG without it.
 */
export { createTempSqliteStore } from './temp-store';
export type { TempCheckpointStore } from './temp-store';
export { runCrashAndRetry } from './crash-and-retry';
export type { AttemptOutcome, CrashAndRetryOptions, CrashAndRetryReport } from './crash-and-retry';
export { createTimeSkippingEnv, TEST_SERVER_PATH_ENV, timeSkippingClock } from './time-skipping';
export { FENCE_POINTS } from '../activities/fence/crash-points';
export type { FencePoint } from '../activities/fence/crash-points';
