/**
 * The in-process stack the soak and profile benches run on: a Temporal dev server, a SQLite store
 * in a temporary folder, one agent worker and a client on the same task queue. `stop` tears it
 * all down (worker first, so its running activities finish).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { resolveConfig, type Config } from '../src/config';
import { startDevServer } from '../src/dev/dev-server';
import { createAgentWorker, type AgentWorkerOptions } from '../src/worker';

/** A running bench stack. */
export interface BenchStack {
  readonly env: NodeJS.ProcessEnv;
  readonly config: Config;
  readonly client: Client;
  stop(): Promise<void>;
}

/**
 * Starts the stack on task queue `taskQueue`; `worker` gets the stack's environment and returns
 * the agent worker's tools and models.
 */
export async function startBenchStack(taskQueue: string, worker: (env: NodeJS.ProcessEnv) => Pick<AgentWorkerOptions, 'tools' | 'models'>): Promise<BenchStack> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = mkdtempSync(join(tmpdir(), `ttc-bench-${taskQueue}-`));
  const server = await startDevServer();
  const env = { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}` };
  const config = resolveConfig({}, env);
  const agent = await createAgentWorker({ config, ...worker(env) });
  const running = agent.run();
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  return {
    env,
    config,
    client,
    async stop() {
      agent.worker.shutdown();
      await running;
      await client.connection.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
