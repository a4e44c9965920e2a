/**
 * The activities the agent workflow calls, as types only. Workflow code must never import the
 * activity implementations (they use Node, drivers and crypto); the worker registers them.
 *
 * @see SPEC §4 "Agent workflow"
 */
import type {
  DescribeToolCallInput,
  FencedToolInput,
  FencedToolResult,
  ResolveToolCallInput,
  ResolveToolCallResult,
  ToolCallDescription,
} from '../activities/contract';
import type { ModelTurnInput, ModelTurnResult } from '../model/types';

/**
 * The activity interface `agentWorkflow` proxies. A worker running `agentWorkflow` must register
 * all four names.
 * - `runModelTurn`: one model turn (`src/activities/model-turn.ts`).
 * - `runFencedTool`: one fenced tool call (`src/activities/fenced-tool.ts`); fails with an
 *   `ApplicationFailure` whose `type` is a `CheckpointErrorCode`.
 * - `describeToolCall`: tool revision, intent digest and idempotency key of a call, without
 *   writing or running anything (used for approvals).
 * - `resolveToolCall`: store a person's "applied" result under the original fence and deliver it.
 */
export type ToolActivities = {
  runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult>;
  runFencedTool(input: FencedToolInput): Promise<FencedToolResult>;
  describeToolCall(input: DescribeToolCallInput): Promise<ToolCallDescription>;
  resolveToolCall(input: ResolveToolCallInput): Promise<ResolveToolCallResult>;
};
