// Long runs (patch `ttc-long-runs`) in the workflow (time-skipping server, stub activities): the
// calls of one turn run concurrently and reach the model in its order; model answers as they really
// arrive (cut off, refused, paused, reused ids); large outputs and the conversation stay out of
// history; continue-as-new carries budgets, state version, call identity and the conversation.
import { Context } from '@temporalio/activity';
import type { FencedToolInput } from '../../src/activities/contract/contract';
import type { JsonValue } from '../../src/checkpoint/types';
import type { ModelTurnResult } from '../../src/model/types';
import { approveCallUpdate, cancelRunSignal, resolveOutcomeUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentToolResult } from '../../src/workflows/agent/activity-types';
import {
  activitiesOf,
  baseInput,
  call,
  callStatuses,
  deferred,
  endTurn,
  fakeTools,
  okResult,
  outcomeUnknown,
  scriptedModel,
  toolTurn,
  useAgentTestEnv,
  waitForStatus,
  currentPauseId,
} from '../helpers/agent-harness';
import { conversationFake } from '../helpers/conversation-fake';

const harness = useAgentTestEnv();
const withRun = harness.withRun.bind(harness);

/** Concurrent runs: every call of the turn at once (the default). */
const concurrentInput = (overrides: Parameters<typeof baseInput>[0] = {}) => baseInput({ toolConcurrency: undefined, ...overrides });

describe('agentWorkflow: the calls of one turn run concurrently', () => {
  it('three 1 s tools overlap (the turn takes about 1 s, not 3 s); results reach the model in its order', async () => {
    const spans: Record<string, { start: number; end: number }> = {};
    const model = scriptedModel([toolTurn('three lookups', call('a', 'lookup', { q: 1 }), call('b', 'lookup', { q: 2 }), call('c', 'lookup', { q: 3 })), endTurn('done')]);
    // a finishes last, c first: completion order is the reverse of the model's order.
    const delays: Record<string, number> = { a: 1_200, b: 1_000, c: 800 };
    const tools = fakeTools(async (input) => {
      const start = Date.now();
      await new Promise((r) => setTimeout(r, delays[input.callId]));
      spans[input.callId] = { start, end: Date.now() };
      return undefined;
    });
    const result = await withRun(activitiesOf(model, tools), concurrentInput(), (handle) => handle.result());

    expect(result.status).toBe('completed');
    const starts = Object.values(spans).map((s) => s.start);
    const ends = Object.values(spans).map((s) => s.end);
    // Every call started before any finished: they ran at the same time.
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends));
    const turnMs = Math.max(...ends) - Math.min(...starts);
    process.stdout.write(`three tools of 1.2 s / 1.0 s / 0.8 s in one turn took ${turnMs} ms (one at a time: 3000 ms)\n`);
    const toolMessages = model.requests[1]!.messages!.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.role === 'tool' && m.callId)).toEqual(['a', 'b', 'c']);
  }, 30_000);

  it('toolConcurrency bounds how many run at once', async () => {
    let running = 0;
    let most = 0;
    const model = scriptedModel([toolTurn('four', call('a', 'lookup'), call('b', 'lookup'), call('c', 'lookup'), call('d', 'lookup')), endTurn('done')]);
    const tools = fakeTools(async () => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 300));
      running -= 1;
      return undefined;
    });
    const result = await withRun(activitiesOf(model, tools), concurrentInput({ toolConcurrency: 2 }), (handle) => handle.result());
    expect(result.status).toBe('completed');
    expect(most).toBe(2);
    expect(tools.runs.map((r) => r.callId).sort()).toEqual(['a', 'b', 'c', 'd']);
  }, 30_000);

  it('the budget counts every call: calls past maxToolCalls do not start', async () => {
    const model = scriptedModel([toolTurn('three', call('a', 'lookup'), call('b', 'lookup'), call('c', 'lookup'))]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), concurrentInput({ budget: { maxTurns: 5, maxToolCalls: 2, deadlineMs: 3_600_000 } }), (handle) => handle.result());
    expect(result.status).toBe('budget-exhausted');
    expect(result.stoppedBecause).toBe('max-tool-calls');
    expect(tools.runs.map((r) => r.callId).sort()).toEqual(['a', 'b']);
    expect(callStatuses(result.calls)).toEqual({ a: 'completed', b: 'completed', c: 'not-run' });
  });

  it('an approval releases only its call: the other calls of the turn run meanwhile', async () => {
    const model = scriptedModel([toolTurn('mixed', call('r1', 'refund', { amount: 5 }), call('l1', 'lookup'), call('r2', 'refund', { amount: 7 })), endTurn('done')]);
    const tools = fakeTools();
    const input = concurrentInput({ approvalRequired: { refund: { expiresAfterMs: 3_600_000 } } });
    const result = await withRun(activitiesOf(model, tools), input, async (handle) => {
      const s = await waitForStatus(handle, (st) => st.calls.some((c) => c.callId === 'l1' && c.status === 'completed'));
      // The lookup ran while both refunds wait; nothing of theirs ran.
      expect(tools.runs.map((r) => r.callId)).toEqual(['l1']);
      expect(callStatuses(s.calls)).toEqual({ r1: 'awaiting-approval', l1: 'completed', r2: 'awaiting-approval' });
      const r2 = s.pendingCalls.find((c) => c.callId === 'r2')!;
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r2', intentDigest: r2.intentDigest!, stateVersion: s.stateVersion }] });
      const after = await waitForStatus(handle, (st) => st.calls.some((c) => c.callId === 'r2' && c.status === 'completed'));
      expect(callStatuses(after.calls)).toEqual({ r1: 'awaiting-approval', l1: 'completed', r2: 'completed' });
      const r1 = after.pendingCalls.find((c) => c.callId === 'r1')!;
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: r1.intentDigest!, stateVersion: after.stateVersion }] });
      return handle.result();
    });
    expect(result.status).toBe('completed');
    expect(tools.runs.map((r) => r.callId)).toEqual(['l1', 'r2', 'r1']);
    expect(model.requests[1]!.messages!.filter((m) => m.role === 'tool').map((m) => m.role === 'tool' && m.callId)).toEqual(['r1', 'l1', 'r2']);
  });

  it('an unknown outcome does not hold the other calls up; the run pauses on it once they settled, and resolve goes on', async () => {
    const model = scriptedModel([toolTurn('three', call('a', 'lookup'), call('e1', 'send_email'), call('c', 'lookup')), endTurn('done')]);
    const tools = fakeTools(async (input) => {
      if (input.callId === 'e1') throw outcomeUnknown();
      await new Promise((r) => setTimeout(r, 200));
      return undefined;
    });
    const result = await withRun(activitiesOf(model, tools), concurrentInput(), async (handle) => {
      const s = await waitForStatus(handle, (st) => st.phase === 'paused');
      expect(s.paused?.callId).toBe('e1');
      expect(callStatuses(s.calls)).toEqual({ a: 'completed', e1: 'paused', c: 'completed' });
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'applied', result: { messageId: 'm-1' }, reason: 'seen in the outbox' }],
      });
      return handle.result();
    });
    expect(result.status).toBe('completed');
    expect(callStatuses(result.calls)).toEqual({ a: 'completed', e1: 'resolved-applied', c: 'completed' });
    expect(model.requests[1]!.messages!.filter((m) => m.role === 'tool').map((m) => m.role === 'tool' && m.callId)).toEqual(['a', 'e1', 'c']);
  });

  it('a cancel reaches every running call; the result says which may have run', async () => {
    const started = { a: deferred(), b: deferred() };
    const model = scriptedModel([toolTurn('two slow', call('a', 'lookup'), call('b', 'lookup'))]);
    const tools = fakeTools(async (input) => {
      started[input.callId as 'a' | 'b'].resolve();
      const ctx = Context.current();
      for (;;) {
        await ctx.sleep(100);
        ctx.heartbeat();
      }
    });
    const result = await withRun(activitiesOf(model, tools), concurrentInput({ activityOptions: { heartbeatTimeoutMs: 1_000 } }), async (handle) => {
      await Promise.all([started.a.promise, started.b.promise]);
      await handle.signal(cancelRunSignal, { reason: 'user hung up' });
      return handle.result();
    });
    expect(result.status).toBe('cancelled');
    expect(callStatuses(result.calls)).toEqual({ a: 'unknown', b: 'unknown' });
    expect(result.summary.unknown).toEqual(['a', 'b']);
  }, 30_000);
});

describe('agentWorkflow: model answers as they really arrive', () => {
  const answer = (stopReason: ModelTurnResult['stopReason'], droppedToolCalls = 0): ModelTurnResult => ({ stopReason, text: 'partial', toolCalls: [], droppedToolCalls });

  it('a cut-off answer (max_tokens / length) ends the run incomplete / model-truncated; nothing of it runs', async () => {
    const model = scriptedModel([answer('max_tokens', 2)]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), baseInput(), (handle) => handle.result());
    expect(result).toEqual(expect.objectContaining({ status: 'incomplete', stoppedBecause: 'model-truncated', calls: [] }));
    expect(result.reason).toContain('2 tool calls of that answer did not run');
    expect(tools.runs).toEqual([]);
  });

  it('a refused or filtered answer ends the run incomplete / model-refused', async () => {
    const model = scriptedModel([answer('refusal', 1)]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), baseInput(), (handle) => handle.result());
    expect(result).toEqual(expect.objectContaining({ status: 'incomplete', stoppedBecause: 'model-refused' }));
    expect(tools.runs).toEqual([]);
  });

  it('a paused turn (Anthropic pause_turn) continues in the next turn from the conversation as it stands', async () => {
    const model = scriptedModel([answer('pause_turn'), endTurn('finished after the pause')]);
    const result = await withRun(activitiesOf(model, fakeTools()), baseInput(), (handle) => handle.result());
    expect(result).toEqual(expect.objectContaining({ status: 'completed', stoppedBecause: 'model-stopped', finalText: 'finished after the pause', turns: 2 }));
    expect(model.requests[1]!.messages).toEqual([
      { role: 'user', text: 'Please handle ticket 42.' },
      { role: 'assistant', text: 'partial', toolCalls: [] },
    ]);
  });

  it('ids reused across turns (ollama_0 each turn) get a checkpoint per turn and unique ids in history', async () => {
    const model = scriptedModel([
      toolTurn('first', call('ollama_0', 'lookup', { q: 1 })),
      toolTurn('second', call('ollama_0', 'lookup', { q: 2 })),
      toolTurn('third', call('ollama_0', 'lookup', { q: 3 }), call('ollama_0', 'lookup', { q: 4 })),
      endTurn('done'),
    ]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), baseInput(), (handle) => handle.result());
    expect(result.status).toBe('completed');
    expect(tools.runs.map((r) => [r.callId, r.input])).toEqual([
      ['ollama_0', { q: 1 }],
      ['ollama_0_t1', { q: 2 }],
      ['ollama_0_t2', { q: 3 }],
    ]);
    // A repeat within one turn is still refused, under an id of its own.
    expect(callStatuses(result.calls)).toEqual({ ollama_0: 'completed', ollama_0_t1: 'completed', ollama_0_t2: 'completed', ollama_0_t2_2: 'failed' });
    const history = model.requests[3]!.messages!;
    const assistantIds = history.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((c) => c.callId) : []));
    const toolIds = history.flatMap((m) => (m.role === 'tool' ? [m.callId] : []));
    expect(assistantIds).toEqual(['ollama_0', 'ollama_0_t1', 'ollama_0_t2', 'ollama_0_t2_2']);
    expect(toolIds).toEqual(assistantIds);
    expect(new Set(toolIds).size).toBe(toolIds.length);
  });

  it('a made-up tool name (multi_tool_use.parallel) fails as UNKNOWN_TOOL without unpacking; the rest of the turn runs', async () => {
    const model = scriptedModel([
      toolTurn('both', call('c1', 'multi_tool_use.parallel', { tool_uses: [{ recipient_name: 'functions.refund', parameters: { amount: 9 } }] }), call('c2', 'lookup')),
      endTurn('done'),
    ]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), baseInput(), (handle) => handle.result());
    expect(callStatuses(result.calls)).toEqual({ c1: 'failed', c2: 'completed' });
    expect(result.calls[0]!.errorType).toBe('UNKNOWN_TOOL');
    expect(tools.runs.map((r) => r.toolName)).toEqual(['lookup']);
  });
});

/** Tool stubs that honour `resultByReference` as the real activities do: a large output goes to `outputs`, the run gets an OutputRef. */
function byReferenceTools(output: (input: FencedToolInput) => JsonValue) {
  const outputs = new Map<string, JsonValue>();
  const base = fakeTools(async (input) => ({ ...okResult(input), outcome: { ok: true, output: output(input), receipt: { receiptId: `r-${input.callId}` } } }));
  const runFencedTool = async (input: FencedToolInput): Promise<AgentToolResult> => {
    const result = await base.runFencedTool(input);
    if (!result.outcome.ok) return result;
    const text = JSON.stringify(result.outcome.output);
    const limit = input.resultByReference?.inlineMaxBytes;
    if (limit === undefined || Buffer.byteLength(text) <= limit) return result;
    const key = `r/${input.callId}`;
    outputs.set(key, result.outcome.output);
    return { ...result, outcome: { ok: true, outputRef: { key, bytes: Buffer.byteLength(text), digest: 'sha256:stub' }, receipt: result.outcome.receipt } };
  };
  return { ...base, runFencedTool, outputs };
}

function historyBytes(history: { events?: unknown[] | null }): number {
  return Buffer.byteLength(JSON.stringify(history.events ?? []));
}

describe('agentWorkflow: large outputs and the conversation stay out of history', () => {
  it('a 100 KiB output reaches the model in full while history holds its reference', async () => {
    const big = 'x'.repeat(100 * 1024);
    const tools = byReferenceTools(() => ({ report: big }));
    const conversation = conversationFake(tools.outputs);
    const model = scriptedModel([toolTurn('fetch', call('f1', 'lookup')), endTurn('read it')]);
    const activities = {
      ...activitiesOf(model, tools),
      runModelTurn: async (input: Parameters<typeof model.runModelTurn>[0]) => model.runModelTurn({ ...input, messages: conversation.messagesOf(input), conversation: undefined }),
    };
    const { result, history } = await withRun(activities, baseInput(), async (handle) => ({ result: await handle.result(), history: await handle.fetchHistory() }));
    expect(result.status).toBe('completed');
    expect(result.calls[0]!.outcome).toEqual({
      ok: true,
      outputRef: { key: 'r/f1', bytes: Buffer.byteLength(JSON.stringify({ report: big })), digest: 'sha256:stub' },
      receipt: { receiptId: 'r-f1' },
    });
    expect(model.requests[1]!.messages).toContainEqual({ role: 'tool', callId: 'f1', toolName: 'lookup', content: { report: big }, isError: false });
    expect(historyBytes(history)).toBeLessThan(20 * 1024);
  });

  it('a conversation over its byte budget stops the run before the next model turn, with a named reason', async () => {
    const tools = byReferenceTools(() => ({ page: 'y'.repeat(40 * 1024) }));
    const conversation = conversationFake(tools.outputs);
    const model = scriptedModel([toolTurn('p1', call('p1', 'lookup')), toolTurn('p2', call('p2', 'lookup')), toolTurn('p3', call('p3', 'lookup')), endTurn('never')]);
    const activities = {
      ...activitiesOf(model, tools),
      runModelTurn: async (input: Parameters<typeof model.runModelTurn>[0]) => model.runModelTurn({ ...input, messages: conversation.messagesOf(input), conversation: undefined }),
    };
    const input = baseInput({ budget: { maxTurns: 10, maxToolCalls: 10, deadlineMs: 3_600_000, maxConversationBytes: 100 * 1024 } });
    const { result, status } = await withRun(activities, input, async (handle) => ({ result: await handle.result(), status: await handle.query(runStatusQuery) }));
    expect(result).toEqual(expect.objectContaining({ status: 'budget-exhausted', stoppedBecause: 'max-conversation-bytes' }));
    expect(result.reason).toMatch(/^the conversation holds \d+ bytes, over its budget of 102400 bytes; the next model turn was not taken$/);
    // Two pages fit, the third would not: the model was asked three times, not four.
    expect(model.requests).toHaveLength(3);
    expect(status.conversation).toEqual(expect.objectContaining({ byReference: true, maxBytes: 102_400 }));
    expect(status.conversation!.bytes).toBeGreaterThan(102_400);
  });
});
