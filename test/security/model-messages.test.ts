/**
 * Nothing internal reaches the model. On a real Temporal dev server, with the
 * real Anthropic SDK adapter talking to a loopback server (so the test reads the request bodies
 * the model vendor would receive), a store that cannot be reached (a SQLite file at a
 * recognisable path; a PostgreSQL server with recognisable user and database names, stopped)
 * and a tool the worker does not have: the model's next turn carries a short typed error and
 * none of the path, user, host, database, driver text or the worker's tool names, while the run's
 * status (what `ttc show` prints) keeps the detail for operators.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError, type ToolDefinition } from '../../src/activities';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { AnthropicModel } from '../../src/model/anthropic-model';
import type { ToolSpecs } from '../../src/model/tool-specs';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { agentWorkflow, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput, AgentWorkflowResult, RunStatusView } from '../../src/workflows/agent/types';
import { LoopbackLlm, ok, type RecordedRequest } from '../helpers/loopback-llm';
import { startPostgres, withClient, withDatabase, type PostgresServer } from '../helpers/postgres';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(180_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
const API_KEY = 'sk-loopback-item4';
const PG_USER = 'ttc_ledger_operator';
const PG_DB = 'ttc_ledger_vault_db';

const transferInput = z.object({ account: z.string(), amount: z.number().int() });
const SPECS: ToolSpecs = {
  transfer: {
    description: 'Move money.',
    inputSchema: { type: 'object', properties: { account: { type: 'string' }, amount: { type: 'integer' } }, required: ['account', 'amount'] },
  },
  ghost_tool: { description: 'Offered by the run, missing on the worker.', inputSchema: { type: 'object', properties: {} } },
};

function transferTool(): ToolDefinition<z.infer<typeof transferInput>> {
  return defineTool({
    name: 'transfer',
    revision: '1',
    input: transferInput,
    async execute(args) {
      if (args.account === 'A-FROZEN') throw new ToolError('rejected', 'account A-FROZEN is frozen; ask the customer to call the bank');
      return { output: { moved: args.amount } };
    },
  });
}

/** A tool only the worker knows: its name must never reach the model. */
const adminTool = defineTool({
  name: 'internal_admin_reset_ledger',
  revision: '1',
  input: z.object({}),
  async execute() {
    return { output: {} };
  },
});

/** An Anthropic Messages reply asking for one tool call. */
function toolUse(id: string, name: string, input: Record<string, unknown>): ReturnType<typeof ok> {
  return ok({
    id: `msg_${id}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-6',
    content: [{ type: 'tool_use', id, name, input }],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 10 },
  });
}
const endTurn = (): ReturnType<typeof ok> =>
  ok({
    id: 'msg_end',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-6',
    content: [{ type: 'text', text: 'done' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 2 },
  });

/** The tool_result blocks of a recorded Anthropic request, as the vendor receives them. */
function toolResults(request: RecordedRequest): Array<{ tool_use_id: string; content: string; is_error?: boolean }> {
  const body = request.body as { messages: Array<{ role: string; content: Array<{ type: string }> }> };
  return body.messages.flatMap((m) => m.content.filter((b) => b.type === 'tool_result')) as never;
}

describe('what reaches the model', () => {
  let env: LocalTestEnv;
  let bundle: WorkflowBundleWithSourceMap;
  let llm: LoopbackLlm;
  let dir: string;
  let pg: PostgresServer | undefined;
  const stores: CheckpointStore[] = [];
  let seq = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-item4-'));
    [env, bundle, llm] = await Promise.all([
      createLocalEnv(),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger }),
      LoopbackLlm.start({ apiKey: API_KEY }),
    ]);
  });

  afterAll(async () => {
    for (const store of stores) await store.close().catch(() => undefined);
    await llm?.close();
    await env?.teardown();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Runs one conversation on a worker with `tools` and `store`: the model asks for `name(input)`,
   * then ends. Returns the request the model vendor received for the second turn, the run's
   * status at its end (what `ttc show` prints) and its result.
   */
  async function converse(
    store: CheckpointStore,
    tools: readonly ToolDefinition<any>[],
    name: string,
    input: Record<string, unknown>,
  ): Promise<{ next: RecordedRequest; status: RunStatusView; result: AgentWorkflowResult }> {
    seq += 1;
    const taskQueue = `item4-${seq}-${Date.now()}`;
    const model = new AnthropicModel({ model: 'claude-sonnet-4-6', tools: SPECS, apiKey: API_KEY, baseURL: llm.anthropicBaseURL, maxRetries: 0 });
    // The conversation log lives in a healthy store: these tests break only the tools' store.
    const conversationStore = await openCheckpointStore(`sqlite:${join(dir, `conversation-${seq}.db`)}`);
    stores.push(conversationStore);
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities: { ...createToolActivities({ store, tools }), ...createModelActivities({ adapters: { anthropic: model }, store: conversationStore }) },
    });
    const before = llm.requestsFor('anthropic').length;
    llm.enqueue('anthropic', toolUse(`toolu_${seq}`, name, input), endTurn());
    const args: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'anthropic',
      prompt: 'move the money',
      tools: ['transfer', 'ghost_tool'],
      budget: { maxTurns: 3, maxToolCalls: 3, deadlineMs: 120_000 },
      // One attempt: the first attempt's STORE_UNAVAILABLE is the call's (nothing applied), shown to the model.
      activityOptions: { startToCloseTimeoutMs: 20_000, retry: { maximumAttempts: 1 } },
    };
    return worker.runUntil(async () => {
      const handle: WorkflowHandle<typeof agentWorkflow> = await env.client.workflow.start(agentWorkflow, { taskQueue, workflowId: `item4-${taskQueue}`, args: [args] });
      const result = await handle.result();
      const status = await handle.query(runStatusQuery);
      const requests = llm.requestsFor('anthropic').slice(before);
      expect(requests).toHaveLength(2);
      return { next: requests[1]!, status, result };
    });
  }

  /** Asserts the model's request carries one short typed error for the call and none of `secrets`. */
  function expectShortTypedError(next: RecordedRequest, type: string, secrets: readonly string[]): void {
    const results = toolResults(next);
    expect(results).toHaveLength(1);
    expect(results[0]!.is_error).toBe(true);
    const shown = JSON.parse(results[0]!.content) as { error: { type: string; message: string } };
    expect(shown.error.type).toBe(type);
    expect(shown.error.message.length).toBeLessThanOrEqual(300);
    const sent = JSON.stringify(next.body).toLowerCase();
    for (const secret of secrets) expect({ secret, found: sent.includes(secret.toLowerCase()) }).toEqual({ secret, found: false });
  }

  it('a SQLite store that cannot be used: the model gets a short STORE_UNAVAILABLE, no file path or driver text; the status keeps the path', async () => {
    const vault = join(dir, 'acme-ledger-vault');
    mkdirSync(vault);
    const path = join(vault, 'prod-checkpoints.db');
    const store = await openCheckpointStore(`sqlite:${path}`);
    await store.close(); // every call now fails STORE_UNAVAILABLE naming the file

    const { next, status, result } = await converse(store, [transferTool()], 'transfer', { account: 'A-1', amount: 5 });

    expect(result.calls).toEqual([expect.objectContaining({ status: 'failed', errorType: 'STORE_UNAVAILABLE' })]);
    expectShortTypedError(next, 'STORE_UNAVAILABLE', [path, vault, 'acme-ledger-vault', 'prod-checkpoints', 'sqlite', tmpdir()]);
    expect(status.calls[0]).toEqual(expect.objectContaining({ errorType: 'STORE_UNAVAILABLE', reason: expect.stringContaining(path) }));
  });

  it('a PostgreSQL store that went away: the model gets a short STORE_UNAVAILABLE, no user, host, database or driver text; the status keeps them', async () => {
    pg = await startPostgres();
    await withClient(pg.url, async (c) => {
      await c.query(`CREATE ROLE ${PG_USER} LOGIN SUPERUSER`);
      await c.query(`CREATE DATABASE ${PG_DB} OWNER ${PG_USER}`);
    });
    const url = withDatabase(pg.url, PG_DB).replace('postgres://postgres@', `postgres://${PG_USER}@`);
    const store = await openCheckpointStore(url, { connectTimeoutMs: 2_000 });
    stores.push(store);
    await pg.halt(); // the server is gone: connections are refused

    const { next, status, result } = await converse(store, [transferTool()], 'transfer', { account: 'A-1', amount: 5 });

    expect(result.calls).toEqual([expect.objectContaining({ status: 'failed', errorType: 'STORE_UNAVAILABLE' })]);
    expectShortTypedError(next, 'STORE_UNAVAILABLE', [PG_USER, PG_DB, `127.0.0.1:${pg.port}`, 'ECONNREFUSED', 'postgres', 'connect']);
    expect(status.calls[0]).toEqual(expect.objectContaining({ errorType: 'STORE_UNAVAILABLE', reason: expect.stringContaining(PG_DB) }));
    expect(status.calls[0]!.reason).toContain(PG_USER);
  });

  it("a tool the worker does not have: the model gets a short UNKNOWN_TOOL that lists none of the worker's tools; a tool's own rejection keeps its message", async () => {
    const store = await openCheckpointStore(`sqlite:${join(dir, 'ok.db')}`);
    stores.push(store);
    const tools = [transferTool(), adminTool];

    const unknown = await converse(store, tools, 'ghost_tool', {});
    expect(unknown.result.calls).toEqual([expect.objectContaining({ status: 'failed', errorType: 'UNKNOWN_TOOL' })]);
    expectShortTypedError(unknown.next, 'UNKNOWN_TOOL', ['internal_admin_reset_ledger']);
    expect(unknown.status.calls[0]!.reason).toContain('ghost_tool');

    // The tool author wrote this message for the model: it reaches the model as written.
    const rejected = await converse(store, tools, 'transfer', { account: 'A-FROZEN', amount: 5 });
    const [shown] = toolResults(rejected.next);
    expect(JSON.parse(shown!.content)).toEqual({ error: { type: 'BUSINESS_REJECTION', message: 'account A-FROZEN is frozen; ask the customer to call the bank' } });
  });
});
