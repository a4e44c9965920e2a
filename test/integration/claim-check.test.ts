/**
 * The claim check with a real SQLite store: large tool outputs leave the tool
 * activities as `OutputRef`s into the run chain's conversation log, the model-turn activity
 * writes the conversation there and reads it back whole (the adapter sees every byte), retried
 * turns are idempotent and a different message at a logged index is refused. The activities run
 * directly in a mock activity context, and once through a real Temporal worker.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolDefinition } from '../../src/activities';
import type { Delivered, FencedToolInput, FencedToolResult, OutputRef } from '../../src/activities/contract/contract';
import { conversationLogId, outputRefFor } from '../../src/activities/agent/conversation-log';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import { receiptOf } from '../../src/cli/show';
import type { JsonValue } from '../../src/checkpoint/types';
import type { ModelAdapter } from '../../src/model/model-adapter';
import type { ConversationMessage, LoggedMessage, ModelTurnInput } from '../../src/model/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { FlakyStore } from '../helpers/flaky-store';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { toolThenTurn } from '../fixtures/claim-check-workflows';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const TENANT = 'acme';
const QUIET = new DefaultLogger('ERROR');
const KIB = 1_024;
/** A 200 KiB output (its JSON text is a little longer). */
const REPORT = { report: 'r'.repeat(200 * KIB) };
const INLINE_MAX = 2_048;

const bigReport = defineTool({
  name: 'big_report',
  revision: 'v1',
  input: z.object({}).strict(),
  async execute() {
    return { output: REPORT, receipt: { reportId: 'R-1' } };
  },
});
const smallNote = defineTool({
  name: 'small_note',
  revision: 'v1',
  input: z.object({}).strict(),
  async execute() {
    return { output: { note: 'ok' }, receipt: null };
  },
});
/** Returns 2 MiB: over the store's default 64 KiB result bound, with a small receipt. */
const hugeExport = defineTool({
  name: 'huge_export',
  revision: 'v1',
  input: z.object({ receiptKiB: z.number().default(0) }).strict(),
  async execute(input) {
    const receipt: JsonValue = input.receiptKiB === 0 ? { exportId: 'E-7' } : { exportId: 'E-8', pad: 'p'.repeat(input.receiptKiB * KIB) };
    return { output: { rows: 'x'.repeat(2 * KIB * KIB) }, receipt };
  },
});
const TOOLS: ToolDefinition<any>[] = [bigReport, smallNote, hugeExport];

/** A model that records the messages it was handed and answers `end_turn`. */
function recordingModel(): ModelAdapter & { seen: ModelTurnInput[] } {
  const seen: ModelTurnInput[] = [];
  return {
    name: 'recording',
    seen,
    async turn(input) {
      seen.push(input);
      return { stopReason: 'end_turn', text: `read ${input.messages?.length ?? 0} messages`, toolCalls: [] };
    },
  };
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => new Error('expected a failure'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

describe('claim check with a real SQLite store (activities called directly)', () => {
  let dir: string;
  let store: CheckpointStore;
  let counter = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-claim-check-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh workflow (its own conversation log) and the mock activity context of its activities. */
  function run() {
    counter += 1;
    const workflowId = `wf-claim-${counter}`;
    const runChainId = `chain-${counter}`;
    const env = (attempt = 1) => new MockActivityEnvironment({ attempt, workflowExecution: { workflowId, runId: runChainId }, heartbeatTimeoutMs: 60_000 }, { logger: QUIET });
    const logId = conversationLogId({ namespace: 'default', tenant: TENANT, workflowId, runChainId });
    const call = (callId: string, toolName: string, extra: Partial<FencedToolInput> = {}): FencedToolInput => ({
      tenant: TENANT,
      callId,
      runChainId,
      toolName,
      input: {},
      resultByReference: { inlineMaxBytes: INLINE_MAX },
      ...extra,
    });
    return { workflowId, runChainId, env, logId, call };
  }

  function conversation(runChainId: string, ref: OutputRef, logged = 0, append?: LoggedMessage[]): ModelTurnInput {
    return {
      tenant: TENANT,
      model: 'recording',
      turn: 1,
      tools: ['big_report'],
      conversation: {
        runChainId,
        logged,
        append: append ?? [
          { role: 'user', text: 'make the report' },
          { role: 'assistant', text: '', toolCalls: [{ callId: 'toolu_1', toolName: 'big_report', input: {} }] },
          { role: 'tool', callId: 'toolu_1', toolName: 'big_report', contentRef: ref, isError: false },
        ],
      },
    };
  }

  test("a 200 KiB output with resultByReference { inlineMaxBytes: 2048 } comes back as an OutputRef (runFencedTool and the tool's own activity); the receipt stays inline", async () => {
    const r = run();
    const tools = createToolActivities({ store, tools: TOOLS, maxPayloadBytes: 1024 * KIB });

    const viaFence = (await r.env().run(tools.runFencedTool, r.call('toolu_1', 'big_report'))) as Delivered<FencedToolResult>;
    const ownActivity = tools.big_report as (input: Omit<FencedToolInput, 'toolName'>) => Promise<Delivered<FencedToolResult>>;
    const viaOwn = (await r.env().run(ownActivity, r.call('toolu_2', 'big_report'))) as Delivered<FencedToolResult>;

    expect(viaFence.outcome).toEqual({ ok: true, outputRef: outputRefFor('r/toolu_1', REPORT), receipt: { reportId: 'R-1' } });
    expect(viaOwn.outcome).toEqual({ ok: true, outputRef: outputRefFor('r/toolu_2', REPORT), receipt: { reportId: 'R-1' } });
    expect(viaFence.outcome.ok && 'outputRef' in viaFence.outcome && viaFence.outcome.outputRef.bytes).toBeGreaterThan(200 * KIB);
    expect(JSON.stringify(viaFence).length).toBeLessThan(2 * KIB);
    expect(await store.getConversationEntries(r.logId, ['r/toolu_1', 'r/toolu_2'])).toEqual([REPORT, REPORT]);
    // A retried attempt redelivers the stored result by reference again (same entry, idempotent).
    expect(((await r.env(2).run(tools.runFencedTool, r.call('toolu_1', 'big_report'))) as Delivered<FencedToolResult>).outcome).toEqual(viaFence.outcome);
  });

  test('small outputs, and every output without resultByReference (older runs, the plugin), stay inline', async () => {
    const r = run();
    const tools = createToolActivities({ store, tools: TOOLS, maxPayloadBytes: 1024 * KIB });

    const small = (await r.env().run(tools.runFencedTool, r.call('toolu_1', 'small_note'))) as FencedToolResult;
    const { resultByReference: _, ...plain } = r.call('toolu_2', 'big_report');
    const inline = (await r.env().run(tools.runFencedTool, plain)) as FencedToolResult;

    expect(small.outcome).toEqual({ ok: true, output: { note: 'ok' }, receipt: null });
    expect(inline.outcome).toEqual({ ok: true, output: REPORT, receipt: { reportId: 'R-1' } });
    await expect(store.getConversationEntries(r.logId, ['r/toolu_2'])).rejects.toMatchObject({ code: 'CONVERSATION_ENTRY_MISSING' });
  });

  test('inlineMaxBytes must be a positive integer: INVALID_ARGUMENT, nothing runs', async () => {
    const r = run();
    const tools = createToolActivities({ store, tools: TOOLS });
    for (const bad of [0, -1, 1.5, '2048']) {
      const failure = await failureOf(r.env().run(tools.runFencedTool, r.call(`toolu_bad_${String(bad)}`, 'small_note', { resultByReference: { inlineMaxBytes: bad as number } })));
      expect(failure.type).toBe('INVALID_ARGUMENT');
      expect(failure.message).toContain('resultByReference.inlineMaxBytes');
    }
  });

  test('the model-turn activity writes the conversation, resolves the reference and hands the adapter the full 200 KiB output; a retried turn is idempotent; the next turn appends', async () => {
    const r = run();
    const tools = createToolActivities({ store, tools: TOOLS, maxPayloadBytes: 1024 * KIB });
    const delivered = (await r.env().run(tools.runFencedTool, r.call('toolu_1', 'big_report'))) as Delivered<FencedToolResult>;
    const ref = (delivered.outcome as { outputRef: OutputRef }).outputRef;
    const model = recordingModel();
    const { runModelTurn } = createModelActivities({ adapters: { recording: model }, store });

    const first = await r.env().run(runModelTurn, conversation(r.runChainId, ref));
    const retried = await r.env(2).run(runModelTurn, conversation(r.runChainId, ref));

    const expected: ConversationMessage[] = [
      { role: 'user', text: 'make the report' },
      { role: 'assistant', text: '', toolCalls: [{ callId: 'toolu_1', toolName: 'big_report', input: {} }] },
      { role: 'tool', callId: 'toolu_1', toolName: 'big_report', content: REPORT, isError: false },
    ];
    expect(first).toEqual({ stopReason: 'end_turn', text: 'read 3 messages', toolCalls: [] });
    expect(retried).toEqual(first);
    expect(model.seen).toHaveLength(2);
    for (const seen of model.seen) {
      expect(seen.messages).toEqual(expected);
      expect(seen.conversation).toBeUndefined();
      expect((seen.messages![2] as unknown as { content: { report: string } }).content.report.length).toBe(200 * KIB);
    }

    await r.env().run(
      runModelTurn,
      conversation(r.runChainId, ref, 3, [
        { role: 'assistant', text: 'done', toolCalls: [] },
        { role: 'user', text: 'thanks' },
      ]),
    );
    expect(model.seen[2]!.messages).toEqual([...expected, { role: 'assistant', text: 'done', toolCalls: [] }, { role: 'user', text: 'thanks' }]);
  });

  test('a different message at a logged index is CONVERSATION_CONFLICT (non-retryable); the model is not called and the log keeps the first', async () => {
    const r = run();
    const model = recordingModel();
    const { runModelTurn } = createModelActivities({ adapters: { recording: model }, store });
    const first: LoggedMessage[] = [{ role: 'user', text: 'first' }];
    await r.env().run(runModelTurn, conversation(r.runChainId, outputRefFor('r/none', null), 0, first));

    const failure = await failureOf(r.env().run(runModelTurn, conversation(r.runChainId, outputRefFor('r/none', null), 0, [{ role: 'user', text: 'second' }])));

    expect(failure.type).toBe('CONVERSATION_CONFLICT');
    expect(failure.nonRetryable).toBe(true);
    expect(model.seen).toHaveLength(1);
    expect(await store.getConversationEntries(r.logId, ['m/000000000'])).toEqual([{ role: 'user', text: 'first' }]);
  });

  test('a reference whose entry differs from it, or is missing, or a logged count beyond the log, fails non-retryably; another workflow cannot read the log', async () => {
    const r = run();
    const tools = createToolActivities({ store, tools: TOOLS, maxPayloadBytes: 1024 * KIB });
    const delivered = (await r.env().run(tools.runFencedTool, r.call('toolu_1', 'big_report'))) as Delivered<FencedToolResult>;
    const ref = (delivered.outcome as { outputRef: OutputRef }).outputRef;
    const model = recordingModel();
    const { runModelTurn } = createModelActivities({ adapters: { recording: model }, store });

    const forgedDigest = await failureOf(r.env().run(runModelTurn, conversation(r.runChainId, { ...ref, digest: `sha256:${'0'.repeat(64)}` })));
    const r2 = run();
    const missing = await failureOf(r2.env().run(runModelTurn, conversation(r2.runChainId, ref)));
    const beyond = await failureOf(r.env().run(runModelTurn, conversation(r.runChainId, ref, 10, [])));
    // Same run chain id, another workflow id: its own (empty) log, never this one.
    const other = new MockActivityEnvironment({ workflowExecution: { workflowId: 'someone-else', runId: r.runChainId } }, { logger: QUIET });
    const foreign = await failureOf(
      other.run(runModelTurn, conversation(r.runChainId, ref, 0, [{ role: 'tool', callId: 'toolu_1', toolName: 'big_report', contentRef: ref, isError: false }])),
    );

    expect([forgedDigest, missing, beyond, foreign].map((f) => [f.type, f.nonRetryable])).toEqual([
      ['CONVERSATION_CONFLICT', true],
      ['CONVERSATION_ENTRY_MISSING', true],
      ['CONVERSATION_ENTRY_MISSING', true],
      ['CONVERSATION_ENTRY_MISSING', true],
    ]);
    expect(model.seen).toHaveLength(0);
  });

  test('both or neither of messages and conversation is INVALID_ARGUMENT; a conversation without a store is INVALID_CONFIG; the store down is retryable STORE_UNAVAILABLE', async () => {
    const r = run();
    const model = recordingModel();
    const withStore = createModelActivities({ adapters: { recording: model }, store });
    const noStore = createModelActivities({ adapters: { recording: model } });
    const flaky = new FlakyStore(store);
    flaky.down = true;
    const down = createModelActivities({ adapters: { recording: model }, store: flaky });
    const turn = conversation(r.runChainId, outputRefFor('r/none', null), 0, [{ role: 'user', text: 'hi' }]);

    const both = await failureOf(r.env().run(withStore.runModelTurn, { ...turn, messages: [{ role: 'user', text: 'hi' }] } as ModelTurnInput));
    const neither = await failureOf(r.env().run(withStore.runModelTurn, { ...turn, conversation: undefined } as ModelTurnInput));
    const unconfigured = await failureOf(r.env().run(noStore.runModelTurn, turn));
    const unavailable = await failureOf(r.env().run(down.runModelTurn, turn));

    expect([both, neither, unconfigured, unavailable].map((f) => [f.type, f.nonRetryable])).toEqual([
      ['INVALID_ARGUMENT', true],
      ['INVALID_ARGUMENT', true],
      ['INVALID_CONFIG', true],
      ['STORE_UNAVAILABLE', false],
    ]);
    expect(model.seen).toHaveLength(0);
    // Inline messages (runs without patch `ttc-long-runs`) still work without a store.
    expect(await r.env().run(noStore.runModelTurn, { ...turn, conversation: undefined, messages: [{ role: 'user', text: 'hi' }] } as ModelTurnInput)).toMatchObject({
      text: 'read 1 messages',
    });
  });

  test('the store failing while the output is handed over by reference is RECONCILE_PENDING (retryable, never "nothing applied"); the next attempt delivers the stored result without running the tool again', async () => {
    const r = run();
    let runs = 0;
    const counted = defineTool({
      ...bigReport,
      name: 'counted_report',
      async execute() {
        runs += 1;
        return { output: REPORT, receipt: { reportId: 'R-2' } };
      },
    });
    const flaky = new FlakyStore(store);
    flaky.failWhen = (op) => op === 'putConversationEntries';
    const failing = createToolActivities({ store: flaky, tools: [counted], maxPayloadBytes: 1024 * KIB });
    const healthy = createToolActivities({ store, tools: [counted], maxPayloadBytes: 1024 * KIB });

    const failure = await failureOf(r.env().run(failing.runFencedTool, r.call('toolu_1', 'counted_report')));
    const retried = (await r.env(2).run(healthy.runFencedTool, r.call('toolu_1', 'counted_report'))) as Delivered<FencedToolResult>;

    expect([failure.type, failure.nonRetryable]).toEqual(['RECONCILE_PENDING', false]);
    expect(retried.source).toBe('store');
    expect(retried.outcome).toEqual({ ok: true, outputRef: outputRefFor('r/toolu_1', REPORT), receipt: { reportId: 'R-2' } });
    expect(runs).toBe(1);
  });

  test('a result too large even for the store keeps its small receipt in the stored error (and ttc show reads it); a receipt over 4 KiB is not kept, and the message says so', async () => {
    const r = run();
    const tools = createToolActivities({ store, tools: TOOLS });

    const small = (await r.env().run(tools.runFencedTool, r.call('toolu_1', 'huge_export'))) as Delivered<FencedToolResult>;
    const big = (await r.env().run(tools.runFencedTool, r.call('toolu_2', 'huge_export', { input: { receiptKiB: 5 } }))) as Delivered<FencedToolResult>;

    expect(small.outcome).toEqual({
      ok: false,
      error: { type: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('the tool ran, but its result cannot be stored'), receipt: { exportId: 'E-7' } },
    });
    expect(receiptOf({ receipt: null, outcome: small.outcome })).toEqual({ exportId: 'E-7' });
    expect(big.outcome).toEqual({ ok: false, error: { type: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('so it is not kept') } });
    expect(receiptOf({ receipt: null, outcome: big.outcome })).toBeNull();
    // Redelivered from the store as stored (receipt included).
    expect(((await r.env(2).run(tools.runFencedTool, r.call('toolu_1', 'huge_export'))) as Delivered<FencedToolResult>).outcome).toEqual(small.outcome);
  });
});

describe('claim check through a real Temporal worker', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  let worker: Worker;
  let workerRun: Promise<void>;
  const model = recordingModel();

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-claim-check-worker-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'claim-check-test',
      workflowsPath: require.resolve('../fixtures/claim-check-workflows'),
      activities: { ...createToolActivities({ store, tools: TOOLS, maxPayloadBytes: 1024 * KIB }), ...createModelActivities({ adapters: { recording: model }, store }) },
    });
    workerRun = worker.run();
  });

  afterAll(async () => {
    worker?.shutdown();
    await workerRun;
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the 200 KiB output never enters history: the tool returns a reference, the model turn reads the whole output from the store', async () => {
    const workflowId = `wf-claim-worker-${Date.now()}`;
    const handle = await env.client.workflow.start(toolThenTurn, {
      workflowId,
      taskQueue: 'claim-check-test',
      args: [{ tenant: TENANT, toolName: 'big_report', model: 'recording', inlineMaxBytes: INLINE_MAX }],
    });
    const result = await handle.result();

    expect(result.tool.outcome).toEqual({ ok: true, outputRef: outputRefFor('r/toolu_1', REPORT), receipt: { reportId: 'R-1' } });
    expect(result.turn.text).toBe('read 3 messages');
    const tool = model.seen.at(-1)!.messages![2] as { content: JsonValue };
    expect(tool.content).toEqual(REPORT);
    const history = await handle.fetchHistory();
    const historyBytes = Buffer.byteLength(JSON.stringify(history), 'utf8');
    expect(historyBytes).toBeLessThan(64 * KIB);
  });
});
