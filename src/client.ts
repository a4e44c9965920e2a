/**
 * Starting and inspecting agent runs from a client (docs/protocol.md#client-and-fleet). Every
 * connection value comes from the configuration.
 */
import { Client, Connection, WorkflowExecutionAlreadyStartedError, type WorkflowHandle } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { CheckpointError } from './checkpoint/errors';
import { codecFromEnv } from './codec/codec-config';
import { codecDataConverter } from './codec/data-converter';
import { temporalConnectionOptions, type Config } from './config';
import { parseTranscript } from './model/transcript';
import { hasRunSearchAttributes } from './visibility/namespace-search-attributes';
import type { agentWorkflow } from './workflows';
import { TTC_NEEDS_PERSON, TTC_WAITING_CALLS } from './workflows/agent/search-attributes';
import type { AgentWorkflowInput } from './workflows/agent/types';

/** A connected Temporal client; close it when done. */
export interface ConnectedClient {
  readonly client: Client;
  close(): Promise<void>;
}

/** Options of {@link connectClient}. */
export interface ConnectClientOptions {
  /**
   * The Temporal payload codec (see `src/codec`); null for none. Every worker and client of the
   * namespace must use the same codec keys. @default `codecFromEnv(process.env)` (TTC_PAYLOAD_CODEC_KEY…)
   */
  readonly payloadCodec?: PayloadCodec | null;
}

/**
 * Connects a Temporal client to the configured address and namespace, with the payload codec
 * when one is configured (payloads it sends are encrypted, payloads it reads are decrypted).
 *
 * @throws {@link CheckpointError} INVALID_CONFIG from the codec's environment variables or an
 *   unreadable TLS file (before connecting); TEMPORAL_UNAVAILABLE naming the address when it cannot connect.
 */
export async function connectClient(config: Config, options: ConnectClientOptions = {}): Promise<ConnectedClient> {
  const dataConverter = codecDataConverter(options.payloadCodec === undefined ? codecFromEnv(process.env) : options.payloadCodec, config.temporal.namespace);
  const connectionOptions = temporalConnectionOptions(config.temporal);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...connectionOptions, connectTimeout: 5_000 });
  } catch (error) {
    throw temporalUnavailable(config, error);
  }
  const client = new Client({ connection, namespace: config.temporal.namespace, ...(dataConverter ? { dataConverter } : {}) });
  return { client, close: () => connection.close() };
}

/** The typed error for a Temporal server that cannot be reached (TEMPORAL_UNAVAILABLE). */
export function temporalUnavailable(config: Config, cause: unknown): CheckpointError {
  const why = cause instanceof Error ? cause.message : String(cause);
  const { address, profile, tls } = config.temporal;
  const source = profile === null ? 'TEMPORAL_ADDRESS' : `TEMPORAL_ADDRESS or TOML profile "${profile.name}" in ${profile.file}`;
  return new CheckpointError(
    'TEMPORAL_UNAVAILABLE',
    `cannot reach the Temporal server at ${address} (${source}; TLS ${tls === null ? 'off' : 'on'}): ${why}; is a server running there (\`npx ttc dev\`, or \`temporal server start-dev\`)? (\`ttc pending --no-temporal\` and \`ttc resolve-in-store\` need only the store)`,
    { address },
    { cause },
  );
}

/** Options of {@link startAgentRun}. */
export interface StartAgentRunOptions {
  /**
   * Whether the run carries the `TtcNeedsPerson` / `TtcWaitingCalls` search attributes (and so
   * upserts them as calls wait for a person; see docs/visibility.md). `false` starts the run
   * without them. @default whether the namespace has both registered ({@link hasRunSearchAttributes},
   * asked once per client)
   */
  readonly searchAttributes?: boolean;
}

/**
 * Starts an agent run on the configured task queue. A workflow id is used once: starting a
 * second run with an id that already ran is refused, so a new run never picks up an old run's
 * checkpoints (or, after they were pruned, repeats their effects). On a namespace with the run
 * search attributes registered, the run starts with `TtcNeedsPerson = false`, `TtcWaitingCalls = []`,
 * which is what lets it upsert them (a run started without them never does: upserting an
 * unregistered attribute would fail its workflow task on every retry).
 *
 * @param workflowId @default `agent-<random>`.
 * @throws {@link CheckpointError} INVALID_ARGUMENT when the workflow id was used before.
 * @returns the workflow handle (its `workflowId` identifies the run).
 */
export async function startAgentRun(
  client: Client,
  config: Config,
  input: AgentWorkflowInput,
  workflowId?: string,
  options: StartAgentRunOptions = {},
): Promise<WorkflowHandle<typeof agentWorkflow>> {
  const id = workflowId ?? `agent-${crypto.randomUUID()}`;
  const withSearchAttributes = options.searchAttributes ?? (await hasRunSearchAttributes(client));
  try {
    return await client.workflow.start<typeof agentWorkflow>('agentWorkflow', {
      taskQueue: config.temporal.taskQueue,
      workflowId: id,
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      args: [input],
      ...(withSearchAttributes
        ? {
            typedSearchAttributes: [
              { key: TTC_NEEDS_PERSON, value: false },
              { key: TTC_WAITING_CALLS, value: [] },
            ],
          }
        : {}),
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) {
      throw new CheckpointError(
        'INVALID_ARGUMENT',
        `workflow id ${JSON.stringify(id)} was already used by another run; choose a new id`,
        { field: 'workflowId', actual: id },
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * Default run input for a transcript-driven (scripted) run: the transcript is validated here
 * and sent inline, the tools are those the transcript calls, activity options come from the
 * configuration.
 *
 * @throws {@link CheckpointError} INVALID_TRANSCRIPT for a malformed transcript.
 */
export function scriptedRunInput(config: Config, transcript: unknown, overrides: Partial<AgentWorkflowInput> = {}, source = 'transcript'): AgentWorkflowInput {
  const parsed = parseTranscript(transcript, source);
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
