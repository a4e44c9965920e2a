/**
 * Each tool is its own activity type: one activity per tool, registered under the
 * tool's name, so a run's history, the Temporal UI and `temporal workflow show` read as the
 * agent's actions (`create_ticket`, `send_email`, …) and a workflow can give each tool its own
 * timeouts and retry policy. Each is one fenced attempt, exactly `runFencedTool` with the tool
 * name taken from the activity type. Node side (registered on the worker).
 */
import { CheckpointError } from '../../checkpoint/errors';
import { isReservedActivityName, RESERVED_ACTIVITY_NAMES, type Delivered, type FencedToolInput, type FencedToolResult, type ToolCallInput } from '../contract/contract';

/**
 * A tool's own activity: one fenced attempt of a call of that tool. With `input.resultByReference`
 * (agent runs with patch `ttc-long-runs`) a large output comes back by reference ({@link
 * Delivered}); without it the outcome is the stored one.
 */
export type ToolCallActivity = (input: ToolCallInput) => Promise<Delivered<FencedToolResult>>;

/**
 * One activity per tool name, each `(input) => runFencedTool({ ...input, toolName })`: the
 * activity type names the tool, a `toolName` in the input is overridden.
 *
 * @param toolNames the names of the worker's tools (already checked by `defineTool`)
 * @param runFencedTool the fenced attempt every tool activity runs
 * @returns an object with one own property per tool name (safe for any name, `__proto__` too)
 * @throws {@link CheckpointError} INVALID_ARGUMENT (details.reason `reserved-activity-name`) when a
 *   name is one of {@link RESERVED_ACTIVITY_NAMES}: the activity would replace the agent's own.
 */
export function toolCallActivities(toolNames: Iterable<string>, runFencedTool: (input: FencedToolInput) => Promise<Delivered<FencedToolResult>>): Record<string, ToolCallActivity> {
  const activities: Record<string, ToolCallActivity> = {};
  for (const toolName of toolNames) {
    if (isReservedActivityName(toolName)) {
      throw new CheckpointError(
        'INVALID_ARGUMENT',
        `tool name ${JSON.stringify(toolName)} is reserved for the agent's own activity of that name (reserved: ${RESERVED_ACTIVITY_NAMES.join(', ')})`,
        { field: 'toolName', actual: toolName, reason: 'reserved-activity-name' },
      );
    }
    const activity: ToolCallActivity = (input) => runFencedTool({ ...(typeof input === 'object' && input !== null ? input : {}), toolName } as FencedToolInput);
    Object.defineProperty(activity, 'name', { value: toolName });
    Object.defineProperty(activities, toolName, { value: activity, enumerable: true, writable: false, configurable: true });
  }
  return activities;
}
