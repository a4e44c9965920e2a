/**
 * As an operator meets it: a real Temporal dev server, a real SQLite store, a
 * worker with the real activities, and the `ttc show`, `show --json`, `pending` and `resolve`
 * commands spawned as a user runs them, against a run whose model-chosen call id and tool name,
 * a schema message quoting a model-chosen key, and a tool's error text carry ESC, CSI, C1, bidi
 * overrides and isolates, LRM/RLM and line separators. No raw control or bidi character may
 * reach stdout or stderr; the values are shown escaped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { agentWorkflow, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput, RunStatusView } from '../../src/workflows/agent/types';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { runCli, type CliOutput } from '../helpers/cli';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

const TASK_QUEUE = 'terminal-escapes';
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

/** Independent oracle: characters that must never reach a terminal raw (line breaks between lines are fine). */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;
const EVIL = '\u001b[2J\u001b]0;pwned\u0007\u009b31m\u202egnp.exe\u2066x\u2069\u200e\u200f\u2028\u0085';
/** The paused call's id: the activity refuses C0/C1 controls in call ids, not bidi characters or separators. */
const BIDI = '\u202egnp.exe\u2066x\u2069\u200e\u200f\u2028\u2029';
const CALL_ID = `call-${BIDI}`;
const TOOL_NAME = `evil${EVIL}`;
const KEY = `key${EVIL}`;
const TOOL_ERROR = `provider said ${EVIL}`;

function unsafeCharsIn(text: string): string[] {
  return [...text.replace(/\r?\n/g, '')].filter((c) => UNSAFE.test(c)).map((c) => `U+${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}

/** The model: turn 0 asks for an unknown tool, a call with a model-chosen key, and a call whose tool fails with hostile text. */
async function runModelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
  if (input.turn > 0) return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
  return {
    stopReason: 'tool_use',
    text: 'three calls',
    toolCalls: [
      { callId: `u-${EVIL}`, toolName: TOOL_NAME, input: {} },
      { callId: 's-1', toolName: 'strict_tool', input: { [KEY]: 1 } },
      { callId: CALL_ID, toolName: 'explode', input: {} },
    ],
  };
}

describe('the command line escapes model, tool and provider text', () => {
  let env: LocalTestEnv;
  let dir: string;
  let storeUrl: string;
  let store: CheckpointStore;
  let bundle: WorkflowBundleWithSourceMap;
  let worker: Worker;
  let running: Promise<void>;
  let workflowId: string;
  let pauseId: string;

  const cli = (...args: string[]): Promise<CliOutput> =>
    runCli(args, {
      ...process.env,
      TEMPORAL_ADDRESS: env.devServer.address,
      TEMPORAL_NAMESPACE: env.devServer.namespace,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      TTC_STORE_URL: storeUrl,
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-terminal-'));
    storeUrl = `sqlite:${join(dir, 'checkpoints.db')}`;
    [env, bundle, store] = await Promise.all([
      createLocalEnv(),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
      openCheckpointStore(storeUrl),
    ]);
    const tools = [
      defineTool({ name: 'strict_tool', revision: 'v1', input: z.object({ title: z.string() }).strict(), execute: async () => ({ output: 'never' }) }),
      defineTool({
        name: 'explode',
        revision: 'v1',
        input: z.object({}),
        execute: async () => {
          throw new Error(TOOL_ERROR); // no `kind`: an unknown outcome; no lookup, so the run pauses for a person
        },
      }),
    ];
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: TASK_QUEUE,
      workflowBundle: bundle,
      activities: { ...createToolActivities({ store, tools }), runModelTurn },
    });
    running = worker.run();
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'scripted',
      prompt: 'go',
      tools: [TOOL_NAME, 'strict_tool', 'explode'],
      budget: { maxTurns: 4, maxToolCalls: 8, deadlineMs: 600_000 },
      activityOptions: { retry: { initialIntervalMs: 100, maximumAttempts: 2 } },
    };
    const handle = await env.client.workflow.start(agentWorkflow, { taskQueue: TASK_QUEUE, workflowId: `terminal-${Date.now()}`, args: [input] });
    workflowId = handle.workflowId;
    let status: RunStatusView;
    const until = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 250));
      status = await handle.query(runStatusQuery);
    } while (status.phase !== 'paused' && Date.now() < until);
    expect(status.phase).toBe('paused');
    expect(status.paused?.callId).toBe(CALL_ID);
    pauseId = status.paused!.pauseId;
  });

  afterAll(async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running?.catch(() => undefined);
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('show prints the call ids, tool names, schema messages and tool errors escaped', async () => {
    const out = await cli('show', workflowId);
    expect(out.code).toBe(0);
    expect(unsafeCharsIn(out.stdout)).toEqual([]);
    expect(unsafeCharsIn(out.stderr)).toEqual([]);
    expect(out.stdout).toContain('u-\\u001b[2J\\u001b]0;pwned\\u0007\\u009b31m\\u202egnp.exe\\u2066x\\u2069\\u200e\\u200f\\u2028\\u0085');
    expect(out.stdout).toContain('call-\\u202egnp.exe\\u2066x\\u2069\\u200e\\u200f\\u2028\\u2029');
    expect(out.stdout).toContain('evil\\u001b[2J');
    expect(out.stdout).toContain('key\\u001b[2J');
    expect(out.stdout).toContain('provider said \\u001b[2J');
  });

  it('show --json escapes C1 and bidi characters and stays JSON that parses back to the raw values', async () => {
    const out = await cli('show', workflowId, '--json');
    expect(out.code).toBe(0);
    expect(unsafeCharsIn(out.stdout)).toEqual([]);
    expect(out.stdout).toContain('\\u009b31m\\u202egnp.exe\\u2066x\\u2069\\u200e\\u200f\\u2028\\u0085');
    const parsed = JSON.parse(out.stdout) as RunStatusView;
    expect(parsed.paused?.callId).toBe(CALL_ID);
    expect(parsed.calls.map((c) => c.toolName)).toContain(TOOL_NAME);
  });

  it('pending prints the store record and the paused call escaped', async () => {
    const out = await cli('pending');
    expect(out.code).toBe(0);
    expect(unsafeCharsIn(out.stdout)).toEqual([]);
    expect(unsafeCharsIn(out.stderr)).toEqual([]);
    expect(out.stdout).toContain('call-\\u202egnp.exe');
    expect(out.stdout).toContain('provider said \\u001b[2J');
  });

  it('resolve prints the refusal naming the paused call, and the resolution, escaped', async () => {
    const refused = await cli('resolve', workflowId, 'not-this-one', '--absent', '--reason', 'x');
    expect(refused.code).toBe(1);
    expect(unsafeCharsIn(refused.stderr)).toEqual([]);
    expect(refused.stderr).toContain('paused on call-\\u202egnp.exe');
    const resolved = await cli('resolve', workflowId, CALL_ID, '--abandon', '--reason', `operator ${EVIL}`, '--pause', pauseId);
    expect(resolved.code).toBe(0);
    expect(unsafeCharsIn(resolved.stdout)).toEqual([]);
    expect(resolved.stdout).toContain('resolved call-\\u202egnp.exe');
  });
});
