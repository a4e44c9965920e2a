/**
 * A reset never repeats an effect, end to end (docs/deploying.md#resetting-a-run): one dev server,
 * the demo provider, one real `ttc worker` process, a run started with `ttc start` from a recorded
 * transcript, then `temporal workflow reset` to the first workflow task, twice. Each reset run asks
 * the scripted model again and gets the same `create_ticket` call, under its own call id; the
 * provider creates the ticket once, and each reset run reports the call answered from the first
 * run's checkpoint.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startProvider, type RunningProvider } from '../../examples/provider/start-provider';
import { spawnWorker, type WorkerProcess } from '../../src/dev/worker-process';
import type { AgentWorkflowResult } from '../../src/workflows/agent/types';
import { runCli } from '../helpers/cli';
import { resetWithCli } from '../helpers/workflow-reset';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

const TRANSCRIPT = join(__dirname, '../../examples/transcripts/anthropic-ticket.json');
const CALL_ID = 'toolu_01VbK3nXq8RtZp6LwYc2JhDf';
const TASK_QUEUE = 'resets-e2e';

let dir: string;
let env: LocalTestEnv;
let provider: RunningProvider;
let worker: WorkerProcess;
let cliEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-resets-e2e-'));
  [env, provider] = await Promise.all([createLocalEnv(), startProvider({ dbFile: join(dir, 'provider.db'), stderr: 'ignore' })]);
  cliEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: env.devServer.address,
    TEMPORAL_NAMESPACE: env.devServer.namespace,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}`,
    TTC_PROVIDER_URL: provider.url,
  };
  for (const name of ['TTC_PAYLOAD_CODEC_KEY', 'TTC_PAYLOAD_CODEC_KEYS', 'TTC_TENANTS', 'TTC_TOOLS', 'TTC_REQUIRE_APPROVAL', 'TTC_APPROVAL_GRANT_KEYS', 'TEMPORAL_PROFILE'])
    delete cliEnv[name];
  worker = await spawnWorker({ env: cliEnv, identity: 'resets-worker' });
});

afterAll(async () => {
  await worker?.kill();
  await provider?.stop();
  await env?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `temporal workflow reset` of run `runId` to its first workflow task, as an operator types it; the reset run's id. */
async function resetToFirstTask(workflowId: string, runId: string): Promise<string> {
  return resetWithCli(env.devServer, env.client, workflowId, runId, 'first');
}

test('`temporal workflow reset` of a finished run, twice: the ticket is created once, each reset run is answered from the store', async () => {
  const workflowId = `reset-e2e-${Date.now()}`;
  const started = await runCli(['start', TRANSCRIPT, '--workflow-id', workflowId], cliEnv);
  expect(started.code).toBe(0);
  const first = env.client.workflow.getHandle(workflowId);
  const firstResult: AgentWorkflowResult = await first.result();
  const firstRunId = (await first.describe()).runId;
  expect(firstResult.status).toBe('completed');
  expect(firstResult.calls.map((c) => [c.callId, c.source])).toEqual([[CALL_ID, 'executed']]);
  const key = firstResult.calls[0]!.idempotencyKey!;

  let runId = firstRunId;
  for (const _ of [1, 2]) {
    runId = await resetToFirstTask(workflowId, runId);
    const result: AgentWorkflowResult = await env.client.workflow.getHandle(workflowId, runId).result();
    expect(result.status).toBe('completed');
    expect(result.calls.map((c) => [c.callId, c.modelCallId, c.source, c.idempotencyKey])).toEqual([[`${CALL_ID}@${runId}`, CALL_ID, 'store', key]]);
    expect(result.calls[0]!.appliedByRun).toEqual({ runId: firstRunId, callId: CALL_ID });
    expect(result.calls[0]!.outcome).toEqual(firstResult.calls[0]!.outcome);
  }
  const effects = await provider.client.effects();
  expect(effects.byIdempotencyKey[key]).toBe(1);
});
