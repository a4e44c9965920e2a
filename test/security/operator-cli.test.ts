/**
 * Operator-facing fixes to the security features, through the real `ttc` command line on
 * a real Temporal dev server, with a worker pinned to tenant `acme` that uses the payload codec:
 * a run refused by a pin says why (`start --wait` prints the cause chain down to `NOT_PINNED`,
 * `show` reports the close status and failure), and `show` / `pending` without the codec key
 * report a typed DECRYPTION_FAILED with a hint to set TTC_PAYLOAD_CODEC_KEY, never a key.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defineTool } from '../../src/activities';
import { connectClient, type ConnectedClient } from '../../src/client';
import { codecFromEnv } from '../../src/codec/codec-config';
import { resolveConfig, type Config } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import type { ModelAdapter } from '../../src/model/model-adapter';
import type { ModelTurnResult } from '../../src/model/types';
import { createAgentWorker, type AgentWorker } from '../../src/worker';
import { agentWorkflow, cancelRunSignal, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import { installQuietTemporalRuntime } from '../helpers/temporal';
import { runCli, type CliOutput } from '../helpers/cli';

installQuietTemporalRuntime();
jest.setTimeout(240_000);

const TRANSCRIPT_FILE = join(__dirname, '../../examples/transcripts/anthropic-ticket.json');
const TASK_QUEUE = 'operator-cli';
const KEY_HEX = randomBytes(32).toString('hex');
const codecEnv = { TTC_PAYLOAD_CODEC_KEY: `hex:${KEY_HEX}`, TTC_PAYLOAD_CODEC_KEY_ID: 'op-1' };

describe('operator-facing CLI fixes on a pinned worker with the payload codec', () => {
  let dir: string;
  let server: DevServer;
  let config: Config;
  let worker: AgentWorker;
  let running: Promise<void>;
  let client: ConnectedClient;

  /** The model: `modelOptions.script[turn]`, then the end. */
  const model: ModelAdapter = {
    name: 'scripted',
    async turn(input) {
      const script = (input.modelOptions as { script?: ModelTurnResult[] } | undefined)?.script ?? [];
      return script[input.turn] ?? { stopReason: 'end_turn', text: 'done', toolCalls: [] };
    },
  };
  const tools = ['create_ticket', 'refund'].map((name) =>
    defineTool({
      name,
      revision: 'v1',
      input: z.object({}).passthrough(),
      async execute() {
        return { output: { done: name } };
      },
    }),
  );

  /** Runs `ttc` with the dev server and store; with the codec key unless `withKey` is false. */
  const cli = (withKey: boolean, ...args: string[]): Promise<CliOutput> => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      TTC_STORE_URL: config.store.url,
      ...(withKey ? codecEnv : {}),
    };
    for (const name of ['TTC_PAYLOAD_CODEC_KEY', 'TTC_PAYLOAD_CODEC_KEY_ID', 'TTC_PAYLOAD_CODEC_KEYS', 'TTC_TENANTS', 'TTC_TOOLS', 'TTC_REQUIRE_APPROVAL'])
      if (!(withKey && name in codecEnv)) delete env[name];
    return runCli(args, env);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-operator-cli-'));
    server = await startDevServer();
    config = resolveConfig(
      {},
      {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_NAMESPACE: server.namespace,
        TEMPORAL_TASK_QUEUE: TASK_QUEUE,
        TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}`,
        TTC_TENANTS: 'acme',
      },
    );
    const codec = codecFromEnv(codecEnv)!;
    worker = await createAgentWorker({ config, tools, models: [model], payloadCodec: codec });
    running = worker.worker.run();
    client = await connectClient(config, { payloadCodec: codec });
  });

  afterAll(async () => {
    await client?.close();
    worker?.worker.shutdown();
    await running?.catch(() => undefined);
    await worker?.store.close();
    await server?.stop({ signal: 'SIGKILL' });
    rmSync(dir, { recursive: true, force: true });
  });

  it('`start --wait` of a run the pin refuses prints the cause chain down to NOT_PINNED; `show` reports FAILED with the failure', async () => {
    const started = await cli(true, 'start', TRANSCRIPT_FILE, '--tenant', 'globex', '--wait');
    expect(started.code).toBe(1);
    expect(started.stderr).toContain('WorkflowFailedError: Workflow execution failed; caused by');
    expect(started.stderr).toMatch(/NOT_PINNED: this worker does not serve tenant \\?"globex\\?"/);
    const workflowId = started.stdout.split('\n')[0]!.trim();

    const shown = await cli(true, 'show', workflowId);
    expect([shown.code, shown.stderr]).toEqual([0, '']);
    expect(shown.stdout).toMatch(/^closed: FAILED at \d{4}-\d\d-\d\dT[^:]+:\d\d:\d\d\.\d+Z: NOT_PINNED: this worker does not serve tenant "globex"/m);

    const json = await cli(true, 'show', workflowId, '--json');
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { tenant: string; execution: { status: string; closeTime: string | null; failure: { type: string; message: string } | null } };
    expect(parsed.tenant).toBe('globex');
    expect(parsed.execution.status).toBe('FAILED');
    expect(parsed.execution.closeTime).not.toBeNull();
    expect(parsed.execution.failure?.type).toBe('NOT_PINNED');
    expect(parsed.execution.failure?.message).toContain('does not serve tenant "globex"');
  });

  it('items 1/4: a running run shows RUNNING; without the codec key, `show` is DECRYPTION_FAILED with the hint and `pending` lists the run as encrypted with it; no key is printed', async () => {
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'scripted',
      modelOptions: { script: [{ stopReason: 'tool_use', text: 'refunding', toolCalls: [{ callId: 'r1', toolName: 'refund', input: {} }] }] } as never,
      prompt: 'refund it',
      tools: ['create_ticket', 'refund'],
      budget: { maxTurns: 3, maxToolCalls: 3, deadlineMs: 300_000 },
      approvalRequired: { refund: { expiresAfterMs: 120_000 } },
    } as AgentWorkflowInput;
    const handle = await client.client.workflow.start(agentWorkflow, { taskQueue: TASK_QUEUE, workflowId: `operator-approval-${Date.now()}`, args: [input] });
    try {
      for (let i = 0; i < 150 && (await handle.query(runStatusQuery)).phase !== 'awaiting-approval'; i++) await new Promise((r) => setTimeout(r, 200));

      const withKey = await cli(true, 'show', handle.workflowId, '--json');
      expect(withKey.code).toBe(0);
      expect((JSON.parse(withKey.stdout) as { execution: unknown }).execution).toEqual({ status: 'RUNNING', closeTime: null, failure: null });

      const hint = 'payloads are encrypted by the payload codec (binary/encrypted); set TTC_PAYLOAD_CODEC_KEY (and TTC_PAYLOAD_CODEC_KEYS) to read them';
      const [shown, pending] = await Promise.all([cli(false, 'show', handle.workflowId), cli(false, 'pending')]);
      expect(shown.code).toBe(1);
      expect(shown.stderr.trim()).toBe(`DECRYPTION_FAILED: cannot read run ${handle.workflowId}'s status: ${hint}`);
      expect(pending.code).toBe(0);
      expect(pending.stdout).toMatch(new RegExp(`temporal\\s+\\?\\s+encrypted\\s+${handle.workflowId}\\s+DECRYPTION_FAILED: cannot read its status: payloads are encrypted`));
      expect(pending.stdout).not.toContain('no-answer');
      for (const out of [shown, pending]) expect(`${out.stdout}${out.stderr}`).not.toContain(KEY_HEX);
    } finally {
      await handle.signal(cancelRunSignal, { reason: 'test over' });
      await handle.result().catch(() => undefined);
    }
  });
});
