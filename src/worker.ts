/**
 * Runs one worker of the fleet (SPEC §4 "Client and fleet"): the agent workflow, the model
 * turn activity and the fenced tool activities on one task queue, against one shared store.
 * Any number of these processes may run side by side. SIGTERM/SIGINT shut down gracefully
 * within the configured grace time.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Config } from './config';
import { readTlsFiles } from './config';
import { temporalUnavailable } from './client';
import { createToolActivities, type ToolDefinition } from './activities';
import { createModelActivities } from './activities/model-turn';
import type { ModelAdapter } from './model/model-adapter';
import { openCheckpointStore } from './stores/open-checkpoint-store';
import type { CheckpointStore, CheckpointStoreOptions } from './stores/checkpoint-store';

/** What a worker runs. */
export interface AgentWorkerOptions {
  readonly config: Config;
  readonly tools: readonly ToolDefinition<any>[];
  readonly models: readonly ModelAdapter[];
  /** Worker identity shown in Temporal. @default `<pid>@<host>` (the SDK's) */
  readonly identity?: string;
  /** Activities this worker runs at once. @default the SDK's (100) */
  readonly maxConcurrentActivityTaskExecutions?: number;
}

/** A created, not yet running worker, with what it must close. */
export interface AgentWorker {
  readonly worker: Worker;
  readonly store: CheckpointStore;
  /** Runs until shutdown; then closes the store and the connection. */
  run(): Promise<void>;
}

/**
 * Connects to Temporal and the store and creates the worker.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT / STORE_UNAVAILABLE from the store; the SDK's
 *   connection errors when Temporal is unreachable.
 */
export async function createAgentWorker(options: AgentWorkerOptions): Promise<AgentWorker> {
  const { config } = options;
  const store = await openCheckpointStore(config.store.url, storeOptions(config));
  try {
    const connection = await NativeConnection.connect({ address: config.temporal.address, tls: readTlsFiles(config.temporal.tls) }).catch((error: unknown) => {
      throw temporalUnavailable(config, error);
    });
    const worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...(options.identity ? { identity: options.identity } : {}),
      ...(options.maxConcurrentActivityTaskExecutions ? { maxConcurrentActivityTaskExecutions: options.maxConcurrentActivityTaskExecutions } : {}),
      ...(config.worker.workflowBundlePath === null ? { workflowsPath: require.resolve('./workflows') } : { workflowBundle: { codePath: config.worker.workflowBundlePath } }),
      activities: {
        ...createToolActivities({
          store,
          tools: options.tools,
          maxPayloadBytes: config.payload.maxPayloadBytes,
          transientRetry: { initialIntervalMs: config.retry.initialIntervalMs, maximumIntervalMs: config.retry.maximumIntervalMs, maximumAttempts: Math.max(1, Math.min(config.retry.maximumAttempts, 5)) },
        }),
        ...createModelActivities({ adapters: Object.fromEntries(options.models.map((m) => [m.name, m])) }),
      },
      shutdownGraceTime: config.timeouts.shutdownGraceMs,
    });
    return {
      worker,
      store,
      async run() {
        try {
          await worker.run();
        } finally {
          await store.close();
          await connection.close();
        }
      },
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}

/**
 * Store options from the configuration: the current HMAC seal key and older ones by id, the
 * current payload encryption key and older ones by id (rotation: the current keys write, every
 * configured key reads), and the SQLite busy timeout.
 */
export function storeOptions(config: Config): CheckpointStoreOptions {
  const { keys } = config;
  return {
    ...(keys.hmacKey ? { hmacKey: keys.hmacKey, keyId: keys.hmacKeyId } : {}),
    ...(keys.hmacKey && Object.keys(keys.hmacKeys).length > 0 ? { hmacKeys: keys.hmacKeys } : {}),
    ...(keys.encryptionKey ? { encryptionKey: keys.encryptionKey, encryptionKeyId: keys.encryptionKeyId } : {}),
    ...(Object.keys(keys.encryptionKeys).length > 0 ? { encryptionKeys: keys.encryptionKeys } : {}),
    ...(config.store.url.startsWith('sqlite:') ? { busyTimeoutMs: config.store.sqliteBusyTimeoutMs } : {}),
  };
}

/** @deprecated the same as {@link storeOptions} (it now carries more than keys). */
export const storeKeys = storeOptions;
