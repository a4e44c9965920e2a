/**
 * The shared stack of one store's crash runs: a Temporal dev server on a persistent database
 * file (SIGKILLed and restarted on the same port by the server-restart scenario), the demo
 * provider with fault injection, the side store (a SQLite file, or a private PostgreSQL server
 * the store-outage scenario can stop), a harness-side handle on that store to inspect
 * checkpoints, and a Temporal client. Every repetition runs on its own task queue.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import Database from 'better-sqlite3';
import { connectClient } from '../src/client';
import { resolveConfig, type Config } from '../src/config';
import { startDevServer, type DevServer } from '../src/dev/dev-server';
import type { CheckpointStore } from '../src/stores/checkpoint-store';
import { openCheckpointStore } from '../src/stores/open-checkpoint-store';
import { startProvider, type RunningProvider } from '../examples/provider/start-provider';
import { createTestDatabase, startPostgres, type PostgresServer } from '../test/helpers/postgres';

export const STORE_KINDS = ['sqlite', 'postgres'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/**
 * Timeouts every crash worker and run uses: short, so recovery is quick. The configuration
 * wants a heartbeat timeout of at least twice the SQLite busy timeout (a SQLite writer waits
 * synchronously), and a shutdown grace time of at least the crash tools' call deadline (3 s, 5 s
 * in the zombie scenarios; crash/tools.ts) plus the fence's margin (5 s); workers are SIGKILLed, so it never delays a run.
 */
export const CRASH_TIMEOUTS = {
  TTC_TOOL_HEARTBEAT_TIMEOUT: '2s',
  TTC_SQLITE_BUSY_TIMEOUT: '1s',
  TTC_TOOL_START_TO_CLOSE_TIMEOUT: '30s',
  TTC_RETRY_INITIAL_INTERVAL: '200ms',
  TTC_RETRY_MAXIMUM_INTERVAL: '1s',
  TTC_RETRY_MAXIMUM_ATTEMPTS: '100',
  TTC_SHUTDOWN_GRACE_TIME: '15s',
} as const;

/** One store's stack. */
export interface CrashStack {
  readonly kind: StoreKind;
  readonly workDir: string;
  readonly storeUrl: string;
  readonly provider: RunningProvider;
  /** The harness's own handle on the side store (reads only). */
  readonly inspector: CheckpointStore;
  readonly client: Client;
  /** The current dev server (replaced by {@link restartServer}). */
  server(): DevServer;
  /** Worker environment for a task queue. */
  workerEnv(taskQueue: string): Record<string, string>;
  /** Configuration as a worker on `taskQueue` sees it (for run inputs). */
  config(taskQueue: string): Config;
  /** SIGKILLs the dev server; `restart()` starts it again on the same port and database file. */
  killServer(): Promise<{ killedAt: number; restart: () => Promise<void> }>;
  /** Makes the store unavailable (PostgreSQL stopped; SQLite held under an exclusive lock by another connection); resolves to `restore`. */
  breakStore(): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Starts the stack for `kind` under `workDir`; its workers load the prebuilt `workflowBundle`. */
export async function startCrashStack(kind: StoreKind, workDir: string, workflowBundle: string, log: (line: string) => void): Promise<CrashStack> {
  mkdirSync(workDir, { recursive: true });
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    const dbFile = join(workDir, 'temporal.db');
    let server = await startDevServer({ dbFile });
    cleanups.push(() => server.stop({ signal: 'SIGKILL' }));
    const provider = await startProvider({ dbFile: join(workDir, 'provider.db'), faults: true, stderr: 'ignore' });
    cleanups.push(() => provider.stop());
    let postgres: PostgresServer | null = null;
    let storeUrl: string;
    if (kind === 'postgres') {
      const pg = await startPostgres();
      postgres = pg;
      cleanups.push(() => pg.stop());
      storeUrl = (await createTestDatabase(pg.url)).url;
    } else {
      storeUrl = `sqlite:${join(workDir, 'checkpoints.db')}`;
    }
    const inspector = await openCheckpointStore(storeUrl);
    cleanups.push(() => inspector.close());
    const workerEnv = (taskQueue: string): Record<string, string> => ({
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      TTC_STORE_URL: storeUrl,
      TTC_PROVIDER_URL: provider.url,
      TTC_WORKFLOW_BUNDLE: workflowBundle,
      ...CRASH_TIMEOUTS,
    });
    const config = (taskQueue: string): Config => resolveConfig({}, { ...process.env, ...workerEnv(taskQueue) });
    const { client, close } = await connectClient(config('unused'));
    cleanups.push(close);
    log(`${kind}: dev server ${server.address}, provider ${provider.url}, store ${kind === 'postgres' ? storeUrl : storeUrl.slice('sqlite:'.length)}`);
    return {
      kind,
      workDir,
      storeUrl,
      provider,
      inspector,
      client,
      server: () => server,
      workerEnv,
      config,
      async killServer() {
        const port = server.port;
        await server.stop({ signal: 'SIGKILL' });
        const killedAt = Date.now();
        return {
          killedAt,
          restart: async () => {
            server = await startDevServer({ dbFile, port });
          },
        };
      },
      async breakStore() {
        if (postgres !== null) {
          const pg = postgres;
          await pg.halt();
          return () => pg.resume();
        }
        const locker = new Database(storeUrl.slice('sqlite:'.length), { timeout: 10_000 });
        locker.exec('BEGIN EXCLUSIVE');
        return async () => {
          locker.exec('ROLLBACK');
          locker.close();
        };
      },
      async close() {
        for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    throw error;
  }
}
