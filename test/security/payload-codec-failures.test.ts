/**
 * Failures: with the payload codec on, the text of a failure (its message and
 * stack trace) is encrypted in Temporal history like every payload. Temporal's default failure
 * converter keeps both in plaintext, so a tool's or a provider's error text (an unknown outcome's
 * reason, a model provider's refusal) would reach Temporal readable even though every payload is
 * encrypted.
 *
 * On a real Temporal dev server, two workers with the codec: one bundles the workflows at start,
 * the other runs a prebuilt bundle (TTC_WORKFLOW_BUNDLE, built with `buildAgentWorkflowBundle`).
 * On each: a tool that fails with a provider's error text after its request may have been sent
 * (OUTCOME_UNKNOWN: the activity fails and the run pauses), and a model that fails with a
 * provider's refusal text (MODEL_REJECTED: the activity fails and the run fails with it). The
 * history read raw (a client without the codec) holds neither text anywhere, every failure reads
 * "Encoded failure" and every payload is encrypted; the client with the codec reads both texts
 * (status query, the run's failure, `ttc show --json`). The tool name is plaintext only as the
 * tool's activity type (each tool is its own activity type), with agentWorkflow's patch id
 * (test/helpers/raw-history): both are stripped before the search.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { defineTool } from '../../src/activities';
import { CheckpointError } from '../../src/checkpoint/errors';
import { connectClient, type ConnectedClient } from '../../src/client';
import { codecFromEnv } from '../../src/codec/codec-config';
import { buildAgentWorkflowBundle } from '../../src/codec/workflow-bundle';
import { resolveConfig, type Config } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import type { ModelAdapter } from '../../src/model/model-adapter';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { createAgentWorker, type AgentWorker } from '../../src/worker';
import { cancelRunSignal, runStatusQuery } from '../../src/workflows/agent/messages';
import type { AgentWorkflowInput, RunStatusView } from '../../src/workflows/agent/types';
import { installQuietTemporalRuntime } from '../helpers/temporal';
import { runCli } from '../helpers/cli';
import { CONVERSATION_BRANCHES_PATCH, LONG_RUNS_PATCH, rawHistoryView, RESET_SAFE_CALLS_PATCH, TOOL_ACTIVITY_TYPES_PATCH, type PlaintextLabels } from '../helpers/raw-history';

installQuietTemporalRuntime();
jest.setTimeout(300_000);

/** A provider's error text for a tool call whose request may have been applied. */
const TOOL_ERROR_TEXT = 'ACME-SECRET-ERROR-TEXT card 4242 declined by upstream';
/** A model provider's refusal text. */
const MODEL_ERROR_TEXT = 'ACME-SECRET-MODEL-TEXT prompt flagged for account 77';
/** The tool's name (plaintext only as its activity type) and the model call's input, which are tool data too. */
const TOOL_NAME = 'charge_card_secret';
const TOOL_INPUT_TEXT = 'ACME-SECRET-INPUT-TEXT';
/** Text in a run's input that the workflow's own input check quotes in its failure. */
const WORKFLOW_ERROR_TEXT = 'ACME-SECRET-WORKFLOW-TEXT';

/** Turn 0 calls the tool (or fails with the provider's text when `modelOptions.fail`); later turns end. */
const leakyModel: ModelAdapter = {
  name: 'leaky',
  async turn(input: ModelTurnInput): Promise<ModelTurnResult> {
    if ((input.modelOptions as { fail?: boolean } | undefined)?.fail === true)
      throw new CheckpointError('MODEL_REJECTED', `the model provider refused the request: ${MODEL_ERROR_TEXT}`, { provider: 'leaky', providerMessage: MODEL_ERROR_TEXT });
    if (input.turn > 0) return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
    return { stopReason: 'tool_use', text: 'charging', toolCalls: [{ callId: 'call-1', toolName: TOOL_NAME, input: { note: TOOL_INPUT_TEXT } }] };
  },
};

/** Fails like an HTTP client whose request may have been applied (no `kind`: an unknown outcome). */
const leakyTool = defineTool({
  name: TOOL_NAME,
  revision: '1',
  input: z.object({ note: z.string() }),
  async execute() {
    throw new Error(`upstream answered 502 after the request was sent: ${TOOL_ERROR_TEXT}`);
  },
});

function runInput(fail: boolean): AgentWorkflowInput {
  return {
    tenant: 'demo',
    model: 'leaky',
    modelOptions: { fail },
    prompt: 'Charge the card.',
    tools: [TOOL_NAME],
    budget: { maxTurns: 4, maxToolCalls: 4, deadlineMs: 10 * 60_000 },
    activityOptions: { retry: { initialIntervalMs: 100, maximumIntervalMs: 200, maximumAttempts: 2 } },
  };
}

describe('failure text in Temporal history with the payload codec on', () => {
  const codecEnv = { TTC_PAYLOAD_CODEC_KEY: `hex:${randomBytes(32).toString('hex')}`, TTC_PAYLOAD_CODEC_KEY_ID: 'fail-1' };
  const codec = codecFromEnv(codecEnv)!;
  let dir: string;
  let server: DevServer;
  let withCodec: ConnectedClient;
  let raw: ConnectedClient;
  const workers: { worker: AgentWorker; running: Promise<void> }[] = [];
  const configs: Record<string, Config> = {};

  async function startWorker(taskQueue: string, extraEnv: NodeJS.ProcessEnv): Promise<void> {
    const config = resolveConfig(
      {},
      {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_NAMESPACE: server.namespace,
        TEMPORAL_TASK_QUEUE: taskQueue,
        TTC_STORE_URL: `sqlite:${join(dir, `${taskQueue}.db`)}`,
        TTC_SHUTDOWN_GRACE_TIME: '40s',
        ...extraEnv,
      },
    );
    configs[taskQueue] = config;
    const worker = await createAgentWorker({ config, tools: [leakyTool], models: [leakyModel], payloadCodec: codec });
    workers.push({ worker, running: worker.run() });
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-codec-failures-'));
    server = await startDevServer();
    const bundleFile = join(dir, 'workflow-bundle.js');
    writeFileSync(bundleFile, await buildAgentWorkflowBundle({ encodeFailures: true }));
    await startWorker('at-start', {});
    await startWorker('prebuilt', { TTC_WORKFLOW_BUNDLE: bundleFile });
    withCodec = await connectClient(configs['at-start']!, { payloadCodec: codec });
    raw = await connectClient(configs['at-start']!, { payloadCodec: null });
  });

  afterAll(async () => {
    await Promise.allSettled([withCodec?.close(), raw?.close()]);
    for (const { worker } of workers) worker.worker.shutdown();
    await Promise.allSettled(workers.map((w) => w.running));
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * The raw history of a run without its plaintext labels (activity types, agentWorkflow's patch
   * id: test/helpers/raw-history) as protobuf bytes, every failure and payload in it, and the labels.
   */
  async function rawHistory(workflowId: string): Promise<{ bytes: Buffer; failures: temporal.api.failure.v1.IFailure[]; payloads: Payload[]; labels: PlaintextLabels }> {
    const { history, bytes, labels } = rawHistoryView(await raw.client.workflow.getHandle(workflowId).fetchHistory());
    expect(labels.patchIds.filter((id) => ![TOOL_ACTIVITY_TYPES_PATCH, LONG_RUNS_PATCH, CONVERSATION_BRANCHES_PATCH, RESET_SAFE_CALLS_PATCH].includes(id))).toEqual([]);
    const failures: temporal.api.failure.v1.IFailure[] = [];
    const payloads: Payload[] = [];
    collect(history, failures, payloads);
    return { bytes, failures, payloads, labels };
  }

  function expectNoText(bytes: Buffer, texts: readonly string[]): void {
    for (const text of texts) expect([text, bytes.includes(Buffer.from(text))]).toEqual([text, false]);
  }

  function expectEncodedFailures(failures: readonly temporal.api.failure.v1.IFailure[], payloads: readonly Payload[]): void {
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) {
      expect([failure.message, failure.stackTrace ?? '']).toEqual(['Encoded failure', '']);
      expect(failure.encodedAttributes).toBeTruthy();
    }
    for (const payload of payloads) expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe('binary/encrypted');
  }

  for (const taskQueue of ['at-start', 'prebuilt']) {
    describe(`workflows ${taskQueue === 'at-start' ? 'bundled at worker start' : 'from a prebuilt bundle (TTC_WORKFLOW_BUNDLE)'}`, () => {
      it('items 7/8: a tool failing with provider text (OUTCOME_UNKNOWN pause): raw history holds neither the text nor the tool name outside its activity type; the status query with the codec shows the reason', async () => {
        const workflowId = `codec-fail-tool-${taskQueue}-${Date.now()}`;
        const handle = await withCodec.client.workflow.start('agentWorkflow', { taskQueue, workflowId, args: [runInput(false)] });
        let status: RunStatusView | null = null;
        for (let i = 0; i < 300 && status?.paused == null; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          status = await handle.query(runStatusQuery);
        }
        expect(status?.paused).toMatchObject({ toolName: TOOL_NAME, errorType: 'OUTCOME_UNKNOWN' });
        expect(status!.paused!.reason).toContain(TOOL_ERROR_TEXT);
        await handle.signal(cancelRunSignal, { reason: 'test over' });
        expect((await handle.result()).status).toBe('cancelled');

        const { bytes, failures, payloads, labels } = await rawHistory(workflowId);
        expect(labels.activityTypes).toContain(TOOL_NAME);
        expectNoText(bytes, [TOOL_ERROR_TEXT, 'ACME-SECRET', TOOL_NAME, 'upstream answered 502', 'json/plain']);
        expectEncodedFailures(failures, payloads);
      });

      it('items 7/8: a model failing with provider text fails the run: raw history holds no text; the client with the codec reads it in the run failure', async () => {
        const workflowId = `codec-fail-model-${taskQueue}-${Date.now()}`;
        const handle = await withCodec.client.workflow.start('agentWorkflow', { taskQueue, workflowId, args: [runInput(true)] });
        const failure = await handle.result().then(
          () => null,
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(WorkflowFailedError);
        expect(messageChain(failure)).toContain(MODEL_ERROR_TEXT);

        const { bytes, failures, payloads } = await rawHistory(workflowId);
        expectNoText(bytes, [MODEL_ERROR_TEXT, 'ACME-SECRET', 'the model provider refused', 'json/plain']);
        expectEncodedFailures(failures, payloads);
        // The client without the codec cannot read the failure text either.
        const rawFailure = await raw.client.workflow
          .getHandle(workflowId)
          .result()
          .then(
            () => null,
            (error: unknown) => error,
          );
        expect(messageChain(rawFailure)).not.toContain(MODEL_ERROR_TEXT);
      });

      it('items 7/8: a failure raised in workflow code (invalid run input naming its value) keeps the value out of raw history; the client with the codec reads it', async () => {
        const workflowId = `codec-fail-input-${taskQueue}-${Date.now()}`;
        const input = { ...runInput(false), prompt: { text: WORKFLOW_ERROR_TEXT } as unknown as string };
        const handle = await withCodec.client.workflow.start('agentWorkflow', { taskQueue, workflowId, args: [input] });
        const failure = await handle.result().then(
          () => null,
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(WorkflowFailedError);
        expect(messageChain(failure)).toContain(`INVALID_ARGUMENT: agentWorkflow input prompt must be a string, got {"text":"${WORKFLOW_ERROR_TEXT}"}`);

        const { bytes, failures, payloads } = await rawHistory(workflowId);
        // The input itself is an encrypted payload; the failure quoting it must be one too.
        expectNoText(bytes, [WORKFLOW_ERROR_TEXT, 'INVALID_ARGUMENT: agentWorkflow input', 'must be a string']);
        expectEncodedFailures(failures, payloads);
      });
    });
  }

  it('items 7/8: `ttc show --json` with TTC_PAYLOAD_CODEC_KEY reads the paused reason of a run on the prebuilt bundle', async () => {
    const workflowId = `codec-fail-show-${Date.now()}`;
    const handle = await withCodec.client.workflow.start('agentWorkflow', { taskQueue: 'prebuilt', workflowId, args: [runInput(false)] });
    let status: RunStatusView | null = null;
    for (let i = 0; i < 300 && status?.paused == null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await handle.query(runStatusQuery);
    }
    const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace, ...codecEnv };
    delete env.TTC_PAYLOAD_CODEC_KEYS;
    const shown = await runCli(['show', workflowId, '--json'], env);
    await handle.signal(cancelRunSignal, { reason: 'test over' });
    await handle.result();
    expect([shown.code, shown.stderr]).toEqual([0, '']);
    expect(shown.stdout).toContain(TOOL_ERROR_TEXT);
    expectNoText((await rawHistory(workflowId)).bytes, [TOOL_ERROR_TEXT]);
  });
});

/** Messages of an error and its causes, joined. */
function messageChain(error: unknown): string {
  const parts: string[] = [];
  for (let e = error as { message?: unknown; cause?: unknown } | undefined, i = 0; e && i < 10; e = e.cause as typeof e, i++) parts.push(String(e.message));
  return parts.join(' <- ');
}

/** Every Failure (a message with one of the `…FailureInfo` fields) and every Payload in a decoded protobuf message. */
function collect(value: unknown, failures: temporal.api.failure.v1.IFailure[], payloads: Payload[]): void {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return;
  if (Array.isArray(value)) {
    for (const item of value) collect(item, failures, payloads);
    return;
  }
  const record = value as Record<string, unknown>;
  if (record.data instanceof Uint8Array && typeof record.metadata === 'object' && record.metadata !== null) {
    payloads.push(record as Payload);
    return;
  }
  if (Object.keys(record).some((key) => key.endsWith('FailureInfo'))) failures.push(record as temporal.api.failure.v1.IFailure);
  for (const key of Object.keys(record)) collect(record[key], failures, payloads);
}
