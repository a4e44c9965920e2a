/**
 * The activities the agent workflow calls, as types only. Workflow code must never import the
 * activity implementations (they use Node, drivers and crypto); the worker registers them.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type {
  Delivered,
  DescribeToolCallInput,
  ToolCallInput,
  FencedToolInput,
  FencedToolResult,
  ResolveToolCallInput,
  ResolveToolCallResult,
  ToolCallDescription,
} from '../../activities/contract/contract';
import type { CompensateToolCallInput, CompensateToolCallResult } from '../../activities/contract/compensation-contract';
import type { ModelTurnInput, ModelTurnResult } from '../../model/types';

/**
 * The agent's own activities, which `agentWorkflow` proxies by these names. A worker running
 * `agentWorkflow` registers all four, plus one activity per tool ({@link ToolCallActivities};
 * `createToolActivities` registers both).
 * - `runModelTurn`: one model turn (`src/activities/agent/model-turn.ts`).
 * - `runFencedTool`: one fenced tool call (`src/activities/fence/fenced-tool.ts`) with the tool name in
 *   its input; fails with an `ApplicationFailure` whose `type` is a `CheckpointErrorCode`. Runs
 *   started before patch `ttc-tool-activity-types` schedule every tool call under this type; newer
 * runs schedule the
 *   tool's own activity.
 * - `describeToolCall`: tool revision, intent digest and idempotency key of a call, without
 *   writing or running anything (used for approvals).
 * - `resolveToolCall`: store a person's "applied" result under the original fence and deliver it.
 */
export type ToolActivities = {
  runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult>;
  runFencedTool(input: FencedToolInput): Promise<AgentToolResult>;
  describeToolCall(input: DescribeToolCallInput): Promise<ToolCallDescription>;
  resolveToolCall(input: ResolveToolCallInput): Promise<Delivered<ResolveToolCallResult>>;
};

/** A fenced tool call's result as an agent run receives it: a large output by reference when the input asked for it. */
export type AgentToolResult = Delivered<FencedToolResult>;

/**
 * The tools' own activities: activity type = tool name (`create_ticket`, `send_email`, …), input
 * the call without `toolName`; each runs one fenced attempt exactly as `runFencedTool` does.
 */
export type ToolCallActivities = Readonly<Record<string, (input: ToolCallInput) => Promise<AgentToolResult>>>;

/**
 * The compensation activity, proxied only by runs with a `compensateOn` policy (so a
 * worker without compensations still serves every other run):
 * - `compensateToolCall`: runs the compensation the original call's tool declares, fenced under
 *   its own binding and key; `{ declared: false }` when the tool declares none.
 */
export type CompensationActivities = {
  compensateToolCall(input: CompensateToolCallInput): Promise<CompensateToolCallResult>;
};
