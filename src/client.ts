/**
 * Starting and inspecting agent runs from a client (SPEC §4 "Client and fleet"). Every
 * connection value comes from the configuration.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { readTlsFiles, type Config } from './config';
import { parseTranscript } from './model/transcript';
import type { agentWorkflow } from './workflows';
import type { AgentWorkflowInput } from './workflows/types';

/** A connected Temporal client; close it when done. */
export interface ConnectedClient {
  readonly client: Client;
  close(): Promise<void>;
}

/** Connects a Temporal client to the configured address and namespace. */
export async function connectClient(config: Config): Promise<ConnectedClient> {
  const connection = await Connection.connect({ address: config.temporal.address, tls: readTlsFiles(config.temporal.tls) });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  return { client, close: () => connection.close() };
}

/**
 * Starts an agent run on the configured task queue.
 *
 * @param workflowId @default `agent-<random>`; reuse it only to address the same run.
 * @returns the workflow handle (its `workflowId` identifies the run).
 */
export async function startAgentRun(client: Client, config: Config, input: AgentWorkflowInput, workflowId?: string): Promise<WorkflowHandle<typeof agentWorkflow>> {
  return client.workflow.start<typeof agentWorkflow>('agentWorkflow', {
    taskQueue: config.temporal.taskQueue,
    workflowId: workflowId ?? `agent-${crypto.randomUUID()}`,
    args: [input],
  });
}

/**
 * Default run input for a transcript-driven (scripted) run: the transcript is validated here
 * and sent inline, the tools are those the transcript calls, activity options come from the
 * configuration.
 *
 * @throws {@link CheckpointError} INVALID_TRANSCRIPT for a malformed transcript.
 */
export function scriptedRunInput(config: Config, transcript: unknown, overrides: Partial<AgentWorkflowInput> = {}): AgentWorkflowInput {
  const parsed = parseTranscript(transcript, 'transcript');
  const tools = [...new Set(parsed.turns.flatMap((turn) => turn.toolCalls.map((call) => call.toolName)))];
  return {
    tenant: 'demo',
    model: 'scripted',
    modelOptions: { transcript: transcript as never },
    prompt: 'Handle the request in the transcript.',
    tools,
    budget: { maxTurns: 8, maxToolCalls: 16, deadlineMs: 10 * 60_000 },
    activityOptions: {
      startToCloseTimeoutMs: config.timeouts.toolStartToCloseMs,
      heartbeatTimeoutMs: config.timeouts.toolHeartbeatMs,
      retry: {
        initialIntervalMs: config.retry.initialIntervalMs,
        backoffCoefficient: config.retry.backoffCoefficient,
        maximumIntervalMs: config.retry.maximumIntervalMs,
        maximumAttempts: config.retry.maximumAttempts,
      },
    },
    ...overrides,
  };
}
