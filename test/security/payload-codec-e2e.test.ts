/**
 * End to end on a real Temporal dev server: an agent run (scripted model, the example tools against
 * the demo provider) on a worker and a client that use the payload codec. Temporal history read raw
 * (a client without the codec) holds only ciphertext: the tool's receipt, the ticket id and the
 * workflow input appear nowhere, the tool name only as its activity type, and the one plaintext
 * payload is agentWorkflow's patch id (see test/helpers/raw-history; this worker has no
 * ToolCheckpointPlugin, whose `_ttc-call` headers would be plaintext too); the run result and the
 * status query reach only the client with the codec. The codec server decodes a raw history payload
 * over HTTP, and the Temporal CLI prints the decoded result through `--codec-endpoint`.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connectClient, scriptedRunInput, startAgentRun, type ConnectedClient } from '../../src/client';
import { codecFromEnv } from '../../src/codec/codec-config';
import { startCodecServer, type RunningCodecServer } from '../../src/codec/codec-server';
import { payloadsToJson } from '../../src/codec/json-payloads';
import { PAYLOAD_CODEC_FORMAT_METADATA, PAYLOAD_CODEC_NAMESPACE_BOUND_FORMAT } from '../../src/codec/payload-codec';
import { resolveConfig, type Config } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { temporalCliPath } from '../../src/dev/temporal-binaries';
import { ScriptedModel } from '../../src/model/scripted-model';
import { parseTranscriptJson } from '../../src/model/transcript';
import { createAgentWorker, type AgentWorker } from '../../src/worker';
import { runStatusQuery } from '../../src/workflows/agent/messages';
import type { AgentWorkflowResult } from '../../src/workflows/agent/types';
import { createDemoTools } from '../../examples/demo-tools';
import { payloadsIn } from '../helpers/raw-history';
import { startProvider, type RunningProvider } from '../../examples/provider/start-provider';
import { installQuietTemporalRuntime } from '../helpers/temporal';
import { runCli, type CliOutput } from '../helpers/cli';
import { CONVERSATION_BRANCHES_PATCH, LONG_RUNS_PATCH, rawHistoryView, RESET_SAFE_CALLS_PATCH, stripPlaintextLabels, TOOL_ACTIVITY_TYPES_PATCH } from '../helpers/raw-history';

installQuietTemporalRuntime();
jest.setTimeout(240_000);

const TRANSCRIPT_FILE = join(__dirname, '../../examples/transcripts/anthropic-ticket.json');
/** Text of the run's input (the ticket the model opens), which Temporal must not see either. */
const INPUT_TEXT = 'Card payment failed for order 48213';

describe('the payload codec on a real Temporal server', () => {
  const codecEnv = { TTC_PAYLOAD_CODEC_KEY: `hex:${randomBytes(32).toString('hex')}`, TTC_PAYLOAD_CODEC_KEY_ID: 'e2e-1' };
  const codec = codecFromEnv(codecEnv)!;
  let dir: string;
  let server: DevServer;
  let provider: RunningProvider;
  let config: Config;
  let worker: AgentWorker;
  let running: Promise<void>;
  let withCodec: ConnectedClient;
  let raw: ConnectedClient;
  let workflowId: string;
  let result: AgentWorkflowResult;
  let receipt: { ticketId: string; receipt: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-codec-e2e-'));
    [server, provider] = await Promise.all([startDevServer(), startProvider({ dbFile: join(dir, 'provider.db'), stderr: 'ignore' })]);
    config = resolveConfig(
      {},
      {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_NAMESPACE: server.namespace,
        TEMPORAL_TASK_QUEUE: 'codec-e2e',
        TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}`,
        TTC_SHUTDOWN_GRACE_TIME: '40s',
      },
    );
    const transcript = parseTranscriptJson(readFileSync(TRANSCRIPT_FILE, 'utf8'), TRANSCRIPT_FILE);
    worker = await createAgentWorker({ config, tools: createDemoTools(provider.url), models: [new ScriptedModel({ transcripts: [transcript] })], payloadCodec: codec });
    running = worker.run();
    withCodec = await connectClient(config, { payloadCodec: codec });
    raw = await connectClient(config, { payloadCodec: null });
    workflowId = `codec-e2e-${Date.now()}`;
    const handle = await startAgentRun(withCodec.client, config, scriptedRunInput(config, JSON.parse(readFileSync(TRANSCRIPT_FILE, 'utf8'))), workflowId);
    result = await handle.result();
    receipt = result.calls[0]!.receipt as { ticketId: string; receipt: string };
  });

  afterAll(async () => {
    await Promise.allSettled([withCodec?.close(), raw?.close()]);
    worker?.worker.shutdown();
    await running?.catch(() => undefined);
    await provider?.stop();
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  it('the client with the codec gets the run result with the tool receipt, and the status query', async () => {
    expect([result.status, result.calls.map((c) => [c.toolName, c.status, c.source])]).toEqual(['completed', [['create_ticket', 'completed', 'executed']]]);
    expect(receipt.ticketId).toMatch(/^T-\d{6}$/);
    expect(receipt.receipt).toMatch(/^rcpt_[0-9a-f]{24}$/);
    const status = await withCodec.client.workflow.getHandle(workflowId).query(runStatusQuery);
    expect(JSON.stringify(status)).toContain(receipt.receipt);
  });

  it('history read raw holds only binary/encrypted payloads: no receipt, ticket id, run input or JSON anywhere but the labels Temporal reads', async () => {
    const history = await raw.client.workflow.getHandle(workflowId).fetchHistory();
    // Plaintext by design: the tool name as the activity type, and the patch id of agentWorkflow's
    // per-tool activity types (its core_patch marker and TemporalChangeVersion, written past the codec).
    const { history: rest, bytes, labels } = rawHistoryView(history);
    expect(labels.activityTypes).toEqual(['runModelTurn', 'create_ticket', 'runModelTurn']);
    expect(new Set(labels.patchIds)).toEqual(new Set([LONG_RUNS_PATCH, TOOL_ACTIVITY_TYPES_PATCH, CONVERSATION_BRANCHES_PATCH, RESET_SAFE_CALLS_PATCH]));
    // The run's search attributes, set at its start (it never waited for a person): a boolean, no call ids.
    expect([labels.needsPerson, labels.waitingCalls.flat()]).toEqual([[false], []]);
    for (const text of [receipt.receipt, receipt.ticketId, INPUT_TEXT, 'create_ticket', 'json/plain']) expect([text, bytes.includes(Buffer.from(text))]).toEqual([text, false]);
    // The tool activity's summary ("create_ticket call <callId>") is a payload the codec encrypts.
    const toolScheduled = rest.events!.find((e) => e.activityTaskScheduledEventAttributes && e.userMetadata?.summary);
    expect(toolScheduled?.userMetadata?.summary).toBeTruthy();
    const payloads = payloadsIn(rest);
    // Workflow input, model turn and tool activity inputs and results, the tool summary, the run result.
    expect(payloads.length).toBeGreaterThanOrEqual(7);
    for (const payload of payloads) {
      expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe('binary/encrypted');
      expect(Buffer.from(payload.metadata!['encryption-key-id']!).toString()).toBe('e2e-1');
    }
  });

  it('a client without the codec cannot read the result or the status query', async () => {
    const handle = raw.client.workflow.getHandle(workflowId);
    await expect(handle.result()).rejects.toThrow(/binary\/encrypted/);
    await expect(handle.query(runStatusQuery)).rejects.toThrow(/binary\/encrypted/);
  });

  it('`ttc show --json` reads the run through the codec when TTC_PAYLOAD_CODEC_KEY is set, and cannot without it', async () => {
    const ttc = (env: NodeJS.ProcessEnv): Promise<CliOutput> => runCli(['show', workflowId, '--json'], env);
    const base: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace };
    for (const name of ['TTC_PAYLOAD_CODEC_KEY', 'TTC_PAYLOAD_CODEC_KEY_ID', 'TTC_PAYLOAD_CODEC_KEYS']) delete base[name];
    const [decoded, undecoded] = await Promise.all([ttc({ ...base, ...codecEnv }), ttc(base)]);
    expect([decoded.code, decoded.stderr]).toEqual([0, '']);
    expect(decoded.stdout).toContain(receipt.receipt);
    expect(undecoded.code).toBe(1);
    expect(undecoded.stdout).not.toContain(receipt.receipt);
    expect(undecoded.stderr).toMatch(/binary\/encrypted/);
  });

  describe('with the codec server', () => {
    let codecServer: RunningCodecServer;
    beforeAll(async () => {
      codecServer = await startCodecServer({ codec, port: 0, namespace: server.namespace });
    });
    afterAll(async () => codecServer?.close());

    it('POST /decode turns the raw run result from history into the JSON result', async () => {
      const history = await raw.client.workflow.getHandle(workflowId).fetchHistory();
      const completed = history.events!.find((e) => e.workflowExecutionCompletedEventAttributes)!.workflowExecutionCompletedEventAttributes!;
      const response = await fetch(`${codecServer.url}/decode`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Namespace': server.namespace },
        body: JSON.stringify(payloadsToJson(completed.result!.payloads!)),
      });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
      expect(Buffer.from(body.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('json/plain');
      const decoded = JSON.parse(Buffer.from(body.payloads[0]!.data, 'base64').toString('utf8')) as AgentWorkflowResult;
      expect(decoded.calls[0]!.receipt).toEqual(receipt);
    });

    it("the run's payloads are bound to its namespace: each carries the namespace-bound format marker and does not decrypt as another namespace's", async () => {
      const history = await raw.client.workflow.getHandle(workflowId).fetchHistory();
      const completed = history.events!.find((e) => e.workflowExecutionCompletedEventAttributes)!.workflowExecutionCompletedEventAttributes!;
      const [payload] = completed.result!.payloads!;
      expect(Buffer.from(payload!.metadata![PAYLOAD_CODEC_FORMAT_METADATA]!).toString()).toBe(PAYLOAD_CODEC_NAMESPACE_BOUND_FORMAT);
      await expect(codec.forNamespace(`${server.namespace}-other`).decode([payload!])).rejects.toMatchObject({
        code: 'DECRYPTION_FAILED',
        details: { reason: 'authentication-failed' },
      });
      await expect(codec.forNamespace(server.namespace).decode([payload!])).resolves.toHaveLength(1);
    });

    it('`temporal workflow show --codec-endpoint` prints the history decoded (the receipt readable); without it every payload stays encrypted', async () => {
      const show = async (extra: string[]): Promise<{ encodings: string[]; texts: string[] }> => {
        const { stdout } = await promisify(execFile)(
          temporalCliPath(),
          ['workflow', 'show', '--workflow-id', workflowId, '--address', server.address, '--namespace', server.namespace, '--output', 'json', ...extra],
          { maxBuffer: 16 * 1024 * 1024 },
        );
        // The CLI prints payloads as protobuf JSON: metadata values and data in base64.
        const history: unknown = JSON.parse(stdout);
        // The patch marker and TemporalChangeVersion stay json/plain either way (see test/helpers/raw-history).
        expect(new Set(stripPlaintextLabels(history).patchIds)).toEqual(new Set([LONG_RUNS_PATCH, TOOL_ACTIVITY_TYPES_PATCH, CONVERSATION_BRANCHES_PATCH, RESET_SAFE_CALLS_PATCH]));
        const payloads = jsonPayloadsIn(history);
        return {
          encodings: payloads.map((p) => Buffer.from(p.metadata.encoding ?? '', 'base64').toString()),
          texts: payloads.map((p) => Buffer.from(p.data, 'base64').toString('utf8')),
        };
      };
      const decoded = await show(['--codec-endpoint', codecServer.url]);
      expect(decoded.encodings.length).toBeGreaterThanOrEqual(6);
      expect(new Set(decoded.encodings)).toEqual(new Set(['json/plain']));
      expect(decoded.texts.some((t) => t.includes(receipt.receipt))).toBe(true);
      expect(decoded.texts.some((t) => t.includes(INPUT_TEXT))).toBe(true);
      expect(decoded.texts.some((t) => t.includes('create_ticket call '))).toBe(true);
      const undecoded = await show([]);
      expect(new Set(undecoded.encodings)).toEqual(new Set(['binary/encrypted']));
      expect(undecoded.texts.some((t) => t.includes(receipt.receipt) || t.includes(INPUT_TEXT) || t.includes('create_ticket'))).toBe(false);
    });
  });
});

/** Every payload in protobuf JSON (an object with a base64 `data` string and a `metadata` object). */
function jsonPayloadsIn(value: unknown, found: { metadata: Record<string, string>; data: string }[] = []): { metadata: Record<string, string>; data: string }[] {
  if (value === null || typeof value !== 'object') return found;
  if (Array.isArray(value)) {
    for (const item of value) jsonPayloadsIn(item, found);
    return found;
  }
  const record = value as Record<string, unknown>;
  if (typeof record.data === 'string' && typeof record.metadata === 'object' && record.metadata !== null) {
    found.push(record as { metadata: Record<string, string>; data: string });
    return found;
  }
  for (const key of Object.keys(record)) jsonPayloadsIn(record[key], found);
  return found;
}
