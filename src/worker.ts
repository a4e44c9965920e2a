/**
 * Runs one worker of the fleet (docs/protocol.md#client-and-fleet): the agent workflow, the model
 * turn activity and the fenced tool activities on one task queue, against one shared store.
 * Any number of these processes may run side by side. SIGTERM/SIGINT shut down gracefully
 * within the configured grace time, which must cover the longest tool deadline (checked at start).
 */
import type { PayloadCodec } from '@temporalio/common';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { CheckpointError, isCheckpointError } from './checkpoint/errors';
import type { Config } from './config';
import { temporalConnectionOptions } from './config';
import { codecFromEnv } from './codec/codec-config';
import { codecDataConverter } from './codec/data-converter';
import { assertWorkflowBundleEncodesFailures } from './codec/workflow-bundle';
import { temporalUnavailable } from './client';
import { createToolActivities, DEFAULT_CALL_DEADLINE_MS, type ToolDefinition } from './activities';
import { createModelActivities } from './activities/agent/model-turn';
import { resolvePins, type WorkerPins } from './activities/fence/pins';
import type { ModelAdapter } from './model/model-adapter';
import { maskUrl, openCheckpointStore } from './stores/open-checkpoint-store';
import { openStoreWhenReady } from './stores/store-startup';
import type { CheckpointStore } from './stores/checkpoint-store';
import { storeOptions } from './store-options';

/** What a worker runs. */
export interface AgentWorkerOptions {
  readonly config: Config;
  readonly tools: readonly ToolDefinition<any>[];
  readonly models: readonly ModelAdapter[];
  /** Worker identity shown in Temporal. @default `<pid>@<host>` (the SDK's) */
  readonly identity?: string;
  /** Activities this worker runs at once. @default the SDK's (100) */
  readonly maxConcurrentActivityTaskExecutions?: number;
  /**
   * The Temporal payload codec (see `src/codec`); null for none. Every worker and client of the
   * namespace must use the same codec keys. @default `codecFromEnv(process.env)` (TTC_PAYLOAD_CODEC_KEY…)
   */
  readonly payloadCodec?: PayloadCodec | null;
  /**
   * Where the worker says that it waits for a PostgreSQL store that cannot be reached yet (one
   * line per try, see `config.store.startupWaitMs`). @default the Temporal runtime's logger, at WARN
   */
  readonly log?: (message: string) => void;
}

/** A created, not yet running worker, with what it must close. */
export interface AgentWorker {
  readonly worker: Worker;
  readonly store: CheckpointStore;
  /** Runs until shutdown; then closes the store and the connection. */
  run(): Promise<void>;
}

/** A tool's `callDeadlineMs` when it declares none (the fence's default, 30,000 ms). */
export const DEFAULT_TOOL_CALL_DEADLINE_MS = DEFAULT_CALL_DEADLINE_MS;
/** How much longer than the longest tool deadline the shutdown grace time must be. */
export const SHUTDOWN_GRACE_MARGIN_MS = 5_000;

/**
 * Checks that the worker's shutdown grace time lets every running tool call finish: on SIGTERM a
 * call still running when the grace time ends loses its worker mid-request, and its outcome is
 * unknown (the run pauses for a person). The rule: grace ≥ the longest tool `callDeadlineMs`
 * (default 30,000 ms) + {@link SHUTDOWN_GRACE_MARGIN_MS}.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG naming TTC_SHUTDOWN_GRACE_TIME with the figures:
 *   the grace time, the tool with the longest deadline and that deadline.
 */
export function assertShutdownGraceCoversTools(shutdownGraceMs: number, tools: readonly Pick<ToolDefinition<any>, 'name' | 'callDeadlineMs'>[]): void {
  let longest: { name: string; callDeadlineMs: number } | null = null;
  for (const tool of tools) {
    const callDeadlineMs = tool.callDeadlineMs ?? DEFAULT_TOOL_CALL_DEADLINE_MS;
    if (longest === null || callDeadlineMs > longest.callDeadlineMs) longest = { name: tool.name, callDeadlineMs };
  }
  if (longest === null) return;
  const needed = longest.callDeadlineMs + SHUTDOWN_GRACE_MARGIN_MS;
  if (shutdownGraceMs >= needed) return;
  throw new CheckpointError(
    'INVALID_CONFIG',
    `TTC_SHUTDOWN_GRACE_TIME (${shutdownGraceMs} ms) is shorter than the longest tool deadline plus ${SHUTDOWN_GRACE_MARGIN_MS} ms: tool ${JSON.stringify(longest.name)} has callDeadlineMs ${longest.callDeadlineMs} ms, so the grace time must be at least ${needed} ms; on SIGTERM a call still running when the grace time ends has an unknown outcome and pauses its run. Raise TTC_SHUTDOWN_GRACE_TIME or shorten the tool's callDeadlineMs`,
    { field: 'TTC_SHUTDOWN_GRACE_TIME', shutdownGraceMs, toolName: longest.name, callDeadlineMs: longest.callDeadlineMs, marginMs: SHUTDOWN_GRACE_MARGIN_MS, requiredMs: needed },
  );
}

/**
 * Connects to Temporal and the store and creates the worker.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG when the shutdown grace time does not cover the
 *   longest tool deadline (see {@link assertShutdownGraceCoversTools}; checked before connecting),
 *   when the pins name tools the worker does not register (see {@link assertWorkerPinsMatchTools};
 *   checked before connecting),
 *   or when the payload codec is on and the prebuilt workflow bundle (TTC_WORKFLOW_BUNDLE) was
 *   built without its failure converter (see `assertWorkflowBundleEncodesFailures`);
 *   INVALID_ARGUMENT / INVALID_CONFIG from the store at once; STORE_UNAVAILABLE once a
 *   PostgreSQL store stayed unreachable for `config.store.startupWaitMs`; the SDK's connection errors when
 *   Temporal is unreachable.
 */
export async function createAgentWorker(options: AgentWorkerOptions): Promise<AgentWorker> {
  const { config } = options;
  assertShutdownGraceCoversTools(config.timeouts.shutdownGraceMs, options.tools);
  assertWorkerPinsMatchTools(config, options.tools);
  const dataConverter = codecDataConverter(options.payloadCodec === undefined ? codecFromEnv(process.env) : options.payloadCodec, config.temporal.namespace);
  // A prebuilt bundle carries its own failure converter: with the codec it must encode failure text.
  if (dataConverter !== undefined && config.worker.workflowBundlePath !== null) assertWorkflowBundleEncodesFailures(config.worker.workflowBundlePath);
  const store = await openStore(config, options.log ?? ((message) => Runtime.instance().logger.warn(message)));
  try {
    const connection = await NativeConnection.connect(temporalConnectionOptions(config.temporal)).catch((error: unknown) => {
      throw temporalUnavailable(config, error);
    });
    const worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...(dataConverter ? { dataConverter } : {}),
      ...(options.identity ? { identity: options.identity } : {}),
      ...(options.maxConcurrentActivityTaskExecutions ? { maxConcurrentActivityTaskExecutions: options.maxConcurrentActivityTaskExecutions } : {}),
      ...(config.worker.workflowBundlePath === null ? { workflowsPath: require.resolve('./workflows') } : { workflowBundle: { codePath: config.worker.workflowBundlePath } }),
      activities: {
        ...createToolActivities({
          store,
          tools: options.tools,
          maxPayloadBytes: config.payload.maxPayloadBytes,
          ...(config.keys.idempotencyKeySecret ? { idempotencyKeySecret: config.keys.idempotencyKeySecret } : {}),
          ...(config.keys.approvalGrantKeys ? { approvalGrantKeys: config.keys.approvalGrantKeys } : {}),
          ...workerPins(config),
          transientRetry: {
            initialIntervalMs: config.retry.initialIntervalMs,
            maximumIntervalMs: config.retry.maximumIntervalMs,
            maximumAttempts: Math.max(1, Math.min(config.retry.maximumAttempts, 5)),
          },
        }),
        ...createModelActivities({ adapters: Object.fromEntries(options.models.map((m) => [m.name, m])), store, ...workerPins(config) }),
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
 * The store of `config`. A PostgreSQL store that cannot be reached yet (restarting, failing over,
 * `57P03` starting up) is waited for, with backoff and a line to `log` per try, for at most
 * `config.store.startupWaitMs` (TTC_STORE_STARTUP_WAIT); a configuration error ends the wait at
 * once (see `openStoreWhenReady`). A SQLite store is opened once.
 */
function openStore(config: Config, log: (message: string) => void): Promise<CheckpointStore> {
  const open = (): Promise<CheckpointStore> => openCheckpointStore(config.store.url, storeOptions(config));
  if (config.store.url.startsWith('sqlite:')) return open();
  return openStoreWhenReady(open, maskUrl(config.store.url), { maxWaitMs: config.store.startupWaitMs, log });
}

/** The configuration variable of each worker pin option (named in INVALID_CONFIG errors). */
const PIN_VARIABLES: Readonly<Record<keyof WorkerPins, { variable: string; key: string }>> = {
  pinnedTenants: { variable: 'TTC_TENANTS', key: 'pins.tenants' },
  pinnedTools: { variable: 'TTC_TOOLS', key: 'pins.tools' },
  requireApproval: { variable: 'TTC_REQUIRE_APPROVAL', key: 'pins.requireApproval' },
};

/**
 * Checks the configured pins (TTC_TENANTS, TTC_TOOLS, TTC_REQUIRE_APPROVAL) against the tools
 * this worker registers, so that a misconfigured worker fails at start with a configuration
 * error naming the variable (the activities' own check, for direct API use, stays INVALID_ARGUMENT).
 *
 * @throws {@link CheckpointError} INVALID_CONFIG with `details.field` the variable: a pinned or
 *   approval-required tool this worker does not register, or any other pin the activities refuse.
 */
export function assertWorkerPinsMatchTools(config: Config, tools: readonly Pick<ToolDefinition<any>, 'name'>[]): void {
  const registered = tools.map((t) => t.name);
  const known = new Set(registered);
  const pins = workerPins(config);
  for (const option of ['pinnedTools', 'requireApproval'] as const) {
    const missing = (pins[option] ?? []).filter((name) => !known.has(name));
    if (missing.length === 0) continue;
    const { variable, key } = PIN_VARIABLES[option];
    throw new CheckpointError(
      'INVALID_CONFIG',
      `${variable} (or ${key} in temporal.config.ts) names ${missing.join(', ')}, which this worker does not register; it registers ${registered.length === 0 ? 'no tools' : registered.join(', ')}`,
      { field: variable, missing, registered },
    );
  }
  try {
    resolvePins(pins, registered);
  } catch (error) {
    if (!isCheckpointError(error, 'INVALID_ARGUMENT')) throw error;
    const pin = PIN_VARIABLES[error.details.field as keyof WorkerPins] as (typeof PIN_VARIABLES)[keyof WorkerPins] | undefined;
    const variable = pin?.variable ?? 'TTC_TOOLS';
    throw new CheckpointError('INVALID_CONFIG', `${variable} is refused by the worker: ${error.message.replace(/^INVALID_ARGUMENT: /, '')}`, { field: variable }, { cause: error });
  }
}

/**
 * The worker's pins from the configuration (TTC_TENANTS, TTC_TOOLS, TTC_REQUIRE_APPROVAL):
 * tenants and tools it serves, tools it runs only under an approved intent. Unset pins
 * are left out (not pinned).
 */
export function workerPins(config: Config): { pinnedTenants?: readonly string[]; pinnedTools?: readonly string[]; requireApproval?: readonly string[] } {
  const { tenants, tools, requireApproval } = config.pins;
  return {
    ...(tenants !== null ? { pinnedTenants: tenants } : {}),
    ...(tools !== null ? { pinnedTools: tools } : {}),
    ...(requireApproval.length > 0 ? { requireApproval } : {}),
  };
}

export { storeOptions } from './store-options';

/** @deprecated the same as {@link storeOptions} (it now carries more than keys). */
export const storeKeys = storeOptions;
