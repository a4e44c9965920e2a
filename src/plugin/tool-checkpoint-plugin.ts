/**
 * `ToolCheckpointPlugin`: the fence as a Temporal worker plugin (docs/protocol.md#worker-plugin).
 *
 *   const worker = await Worker.create({ ..., plugins: [new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } })] });
 *
 * Order: register observability plugins (`OpenTelemetryPlugin`) before this one, agent frameworks
 * after. The first plugin's activity interceptor is the outermost, so OTel's `RunActivity` span
 * then wraps the fence: its checkpoint decisions, the activity's one execution and a retry that
 * returns the stored result. Registered after this plugin, OTel sees only the attempts that call
 * the activity (a stored result is returned before OTel's interceptor runs: no span).
 * Prebuilt workflow bundles: pass the same plugin to `bundleWorkflowCode({ plugins })`; Temporal
 * adds workflow interceptor modules only when bundling. Without it the `_ttc-call` header is
 * missing and the fence falls back to `activity-<activityId>` within the run (see `./call-identity`).
 */
import { SimplePlugin } from '@temporalio/plugin';
import type { WorkerOptions } from '@temporalio/worker';
import { createToolActivities } from '../activities';
import type { FencedToolInput, FencedToolResult } from '../activities/contract/contract';
import { DESCRIBE_FENCED_CALL_ACTIVITY } from './contract/approval-contract';
import { describeFencedCallActivity } from './approval-activity';
import { splitApprovalPins } from './approval-pins';
import { toolPinsAfterFence } from './fence-pins';
import { refuseActivityCollisions } from './activity-collisions';
import { ToolFenceInboundInterceptor, type FenceDeps } from './fence-interceptor';
import { schedulingDefaultsQuery } from './contract/scheduling-defaults';
import {
  DEFAULT_PLUGIN_TENANT,
  resolveFenceSettings,
  resolveHeartbeatTimeoutMs,
  resolveFencedActivities,
  validatePluginOptions,
  type ToolCheckpointPluginOptions,
} from './options';

/** The plugin's name, in Temporal's `organization.PluginName` form. */
export const TOOL_CHECKPOINT_PLUGIN_NAME = 'temporal-tool-checkpoint.ToolCheckpointPlugin';

/**
 * Fences activities: each `tools` entry is registered as an activity named by the tool (input
 * `FencedToolInput`, result `FencedToolResult`, as `runFencedTool`), and each `fence` entry (an
 * activity the worker already has, from the user or another plugin) is fenced where it runs, by
 * an activity inbound interceptor. Construction validates the options and does no I/O.
 *
 * @experimental while `@temporalio/plugin` is.
 * @throws {@link CheckpointError} INVALID_ARGUMENT for bad options (see `./options`), or pins the
 *   `fence` entries or `tenant` fall outside (see `./fence-pins`).
 */
export class ToolCheckpointPlugin extends SimplePlugin {
  /** The options as given (`options` is `SimplePlugin`'s). */
  readonly checkpointOptions: ToolCheckpointPluginOptions;

  constructor(options: ToolCheckpointPluginOptions) {
    validatePluginOptions(options);
    const fenced = resolveFencedActivities(options);
    const approvalPins = splitApprovalPins(options, fenced.keys());
    const pinnedTools = toolPinsAfterFence(options, fenced.keys());
    const deps: FenceDeps = {
      store: options.store,
      fenced,
      tenant: options.tenant ?? DEFAULT_PLUGIN_TENANT,
      maxPayloadBytes: options.maxPayloadBytes,
      clock: options.clock,
      reconcileMarginMs: options.reconcileMarginMs,
      hooks: options.hooks,
      approvalPins: approvalPins.fenced,
      approvalGrantKeys: options.approvalGrantKeys,
      ...resolveFenceSettings(options),
      ...(options.idempotencyKeySecret === undefined ? {} : { idempotencyKeySecret: Buffer.from(options.idempotencyKeySecret) }),
    };
    super({
      name: TOOL_CHECKPOINT_PLUGIN_NAME,
      ...((options.tools ?? []).length > 0 || fenced.size > 0
        ? { activities: { ...toolActivities({ ...options, pinnedTools, requireApproval: approvalPins.tools }), ...describeActivity(deps) } }
        : {}),
      workerInterceptors: {
        activity: [(ctx) => ({ inbound: new ToolFenceInboundInterceptor(ctx, deps) })],
        workflowModules: [workflowInterceptorModule(options, [...fenced.keys(), ...(options.tools ?? []).map((tool) => tool.name)])],
      },
    });
    this.checkpointOptions = options;
  }

  /** Adds the fence to the worker; refuses a worker activity named like one this plugin registers (see `./activity-collisions`). */
  override configureWorker(options: WorkerOptions): WorkerOptions {
    refuseActivityCollisions(options.activities, this.options.activities);
    return super.configureWorker(options);
  }
}

/**
 * The plugin's workflow interceptor module, with the scheduling defaults of the activities it
 * fences in its query (`./contract/scheduling-defaults`).
 */
function workflowInterceptorModule(options: ToolCheckpointPluginOptions, fencedTypes: readonly string[]): string {
  const module = require.resolve('../workflows/fenced/workflow-interceptors');
  const heartbeatTimeoutMs = resolveHeartbeatTimeoutMs(options);
  if (heartbeatTimeoutMs === null || fencedTypes.length === 0) return module;
  return `${module}${schedulingDefaultsQuery({ fencedTypes: [...fencedTypes].sort(), heartbeatTimeoutMs })}`;
}

/** With fenced activity types: `describeFencedCall`, which gives a workflow a call's intent digest to show a person (`fencedCallDescriber`). */
function describeActivity(deps: FenceDeps): Record<string, ReturnType<typeof describeFencedCallActivity>> {
  return deps.fenced.size > 0 ? { [DESCRIBE_FENCED_CALL_ACTIVITY]: describeFencedCallActivity(deps) } : {};
}

/** One activity per tool, named by the tool: `runFencedTool` with the tool name fixed. */
function toolActivities(options: ToolCheckpointPluginOptions): Record<string, (input: FencedToolInput) => Promise<FencedToolResult>> {
  const { fence: _fence, tenant: _tenant, tools = [], ...rest } = options;
  if (tools.length === 0) return {};
  const activities = createToolActivities({ ...rest, tools });
  return Object.fromEntries(tools.map((tool) => [tool.name, (input: FencedToolInput) => activities.runFencedTool({ ...input, toolName: tool.name })]));
}
