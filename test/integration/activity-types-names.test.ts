/**
 * Names of the tool activities: each tool is registered as an activity of its own
 * name, so a tool may not take a name the agent's own activities use; the run input's per-tool
 * activity options must name tools the run offers. No server: the registration object and the
 * input check are what a worker and a run get.
 */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { createToolActivities, defineTool, toolCallActivities } from '../../src/activities';
import { isToolCallActivityType, RESERVED_ACTIVITY_NAMES, type FencedToolInput, type FencedToolResult } from '../../src/activities/contract/contract';
import { CheckpointError } from '../../src/checkpoint/errors';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { activityOptionsFor, toolActivityOptions, validateAgentWorkflowInput, windDownActivityOptions } from '../../src/workflows/agent/input';
import { DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS } from '../../src/activities/contract/contract';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';

const tool = (name: string) => ({ name, revision: 'v1', input: z.object({}).strict(), execute: async () => ({ output: null }) });
const unusedStore = {} as CheckpointStore;

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
}

describe('tool activity names', () => {
  it.each(RESERVED_ACTIVITY_NAMES)("defineTool and createToolActivities refuse a tool named %s (its activity would replace the agent's own)", (name) => {
    for (const error of [thrown(() => defineTool(tool(name))), thrown(() => createToolActivities({ store: unusedStore, tools: [tool(name)] }))]) {
      expect(error).toBeInstanceOf(CheckpointError);
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'toolName', actual: name, reason: 'reserved-activity-name' } });
    }
    expect(thrown(() => toolCallActivities([name], async () => ({}) as FencedToolResult))).toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it("createToolActivities registers one activity per tool, named after it, next to the fence's own activities", () => {
    const acts = createToolActivities({ store: unusedStore, tools: [tool('create_ticket'), tool('send_email')] });
    expect(Object.keys(acts).sort()).toEqual(['compensateToolCall', 'create_ticket', 'default', 'describeToolCall', 'resolveToolCall', 'runFencedTool', 'send_email']);
    expect(acts.create_ticket!.name).toBe('create_ticket');
  });

  it("a tool's activity runs the fenced attempt with the tool name from its activity type, whatever the input says", async () => {
    const seen: FencedToolInput[] = [];
    const acts = toolCallActivities(['send_email', '__proto__'], async (input) => {
      seen.push(input);
      return {} as FencedToolResult;
    });
    await acts.send_email!({ tenant: 'acme', callId: 'c1', input: {} });
    await acts.send_email!({ tenant: 'acme', callId: 'c2', input: {}, toolName: 'refund' });
    expect(seen.map((i) => [i.callId, i.toolName])).toEqual([
      ['c1', 'send_email'],
      ['c2', 'send_email'],
    ]);
    expect(Object.keys(acts)).toEqual(['send_email', '__proto__']);
    expect(Object.getPrototypeOf(acts)).toBe(Object.prototype);
  });

  it("isToolCallActivityType tells a tool call (its own type, or runFencedTool before patch ttc-tool-activity-types) from the agent's other activities", () => {
    expect(['send_email', 'runFencedTool', 'runModelTurn', 'describeToolCall', 'resolveToolCall', '', null].map(isToolCallActivityType)).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('agentWorkflow input: tool names and per-tool activity options', () => {
  const base: AgentWorkflowInput = {
    tenant: 'acme',
    model: 'scripted',
    prompt: 'hi',
    tools: ['create_ticket', 'send_email'],
    budget: { maxTurns: 1, maxToolCalls: 1, deadlineMs: 1_000 },
  };
  const refusal = (input: AgentWorkflowInput) => {
    const error = thrown(() => validateAgentWorkflowInput(input));
    expect(error).toBeInstanceOf(ApplicationFailure);
    return error as ApplicationFailure;
  };

  it("refuses a run offering a tool named like one of the agent's activities", () => {
    expect(refusal({ ...base, tools: ['create_ticket', 'runModelTurn'] })).toMatchObject({ type: 'INVALID_ARGUMENT', nonRetryable: true, details: [{ field: 'tools[1]' }] });
  });

  it('refuses per-tool options for a tool the run does not offer, and bad values in them, naming the field', () => {
    expect(refusal({ ...base, activityOptions: { perTool: { refund: {} } } }).details).toEqual([{ field: 'activityOptions.perTool.refund' }]);
    expect(refusal({ ...base, activityOptions: { perTool: { send_email: { retry: { maximumAttempts: -1 } } } } }).details).toEqual([
      { field: 'activityOptions.perTool.send_email.retry.maximumAttempts' },
    ]);
    expect(() => validateAgentWorkflowInput({ ...base, activityOptions: { perTool: { send_email: { startToCloseTimeoutMs: 5_000 } } } })).not.toThrow();
  });

  it("a tool's options go over the run's field by field, retry too; other tools keep the run's", () => {
    const opts = {
      startToCloseTimeoutMs: 60_000,
      heartbeatTimeoutMs: 5_000,
      retry: { maximumAttempts: 1, initialIntervalMs: 1_000 },
      perTool: { send_email: { startToCloseTimeoutMs: 10_000, retry: { maximumAttempts: 5 } } },
    };
    expect(toolActivityOptions(opts, 'send_email')).toMatchObject({
      startToCloseTimeoutMs: 10_000,
      heartbeatTimeoutMs: 5_000,
      retry: { maximumAttempts: 5, initialIntervalMs: 1_000 },
    });
    expect(toolActivityOptions(opts, 'create_ticket')).toBe(opts);
    expect(toolActivityOptions(undefined, 'create_ticket')).toBeUndefined();
  });

  it('tool and compensation activities get a 10 s heartbeat timeout unless the options set one or null; the model turn gets none', () => {
    expect(activityOptionsFor('tool', 600_000, undefined).heartbeatTimeout).toBe(DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS);
    expect(activityOptionsFor('tool', 600_000, { startToCloseTimeoutMs: 5_000 }).heartbeatTimeout).toBe(10_000);
    expect(activityOptionsFor('tool', 4_000, undefined).heartbeatTimeout).toBe(4_000);
    expect(activityOptionsFor('tool', 600_000, { heartbeatTimeoutMs: 2_000 }).heartbeatTimeout).toBe(2_000);
    expect(activityOptionsFor('tool', 600_000, { heartbeatTimeoutMs: null }).heartbeatTimeout).toBeUndefined();
    expect(activityOptionsFor('model', 600_000, undefined).heartbeatTimeout).toBeUndefined();
    expect(windDownActivityOptions('compensate', undefined).heartbeatTimeout).toBe(10_000);
    expect(windDownActivityOptions('compensate', { heartbeatTimeoutMs: null }).heartbeatTimeout).toBeUndefined();
    expect(
      activityOptionsFor('tool', 600_000, toolActivityOptions({ heartbeatTimeoutMs: 3_000, perTool: { send_email: { heartbeatTimeoutMs: null } } }, 'send_email')).heartbeatTimeout,
    ).toBeUndefined();
    expect(() => validateAgentWorkflowInput({ ...base, activityOptions: { heartbeatTimeoutMs: null } })).not.toThrow();
    expect(() => validateAgentWorkflowInput({ ...base, activityOptions: { heartbeatTimeoutMs: 0 } })).toThrow(/heartbeatTimeoutMs must be a positive integer or null for none/);
  });

  it('refuses activityOptions or a retry that is not an object as INVALID_ARGUMENT naming the field, not a TypeError', () => {
    for (const [activityOptions, field] of [
      [null, 'activityOptions'],
      [[], 'activityOptions'],
      [{ retry: null }, 'activityOptions.retry'],
      [{ perTool: { send_email: { retry: 5 } } }, 'activityOptions.perTool.send_email.retry'],
    ] as const) {
      let thrown: unknown;
      try {
        validateAgentWorkflowInput({ ...base, activityOptions: activityOptions as never });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ type: 'INVALID_ARGUMENT', message: expect.stringContaining(`input ${field} must be an object`) });
    }
  });

  it('maximumAttempts 0 (unlimited) reaches Temporal as no limit, never as 0 (which the SDK refuses, failing the workflow task)', () => {
    expect(activityOptionsFor('tool', 10_000, { retry: { maximumAttempts: 0, initialIntervalMs: 100 } }).retry).toEqual({ initialInterval: 100 });
  });
});
