// What an end-to-end agent test runs on: a real dev server, a real SQLite store in a temporary
// directory and the bundled workflows (built once per file), stopped and removed by `stop()`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { createLocalEnv, type LocalTestEnv } from './temporal';

export interface RealAgentEnv {
  readonly env: LocalTestEnv;
  readonly store: CheckpointStore;
  readonly bundle: WorkflowBundleWithSourceMap;
  /** The temporary directory holding the store's file. */
  readonly dir: string;
  /** Closes the store, stops the server, removes the directory. */
  stop(): Promise<void>;
}

/** Starts the three at once; `prefix` names the temporary directory. */
export async function startRealAgentEnv(prefix: string): Promise<RealAgentEnv> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
  const [env, store, bundle] = await Promise.all([
    createLocalEnv(),
    openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quiet }),
  ]);
  return {
    env,
    store,
    bundle,
    dir,
    async stop() {
      await store.close();
      await env.teardown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
