// Long runs (patch `ttc-long-runs`) end to end on a real dev server with the real activities and a
// real SQLite store: a 300-turn run whose tool returns 60 KiB each time completes, continues as
// new, and keeps the history bytes per turn flat (the conversation and the outputs stay in the side
// store); the model reads the whole conversation back by reference every turn.
import { temporal } from '@temporalio/proto';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import type { ModelAdapter } from '../../src/model/model-adapter';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { agentWorkflow, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import type { LocalTestEnv } from '../helpers/temporal';
import { startRealAgentEnv, type RealAgentEnv } from '../helpers/real-agent-env';

const TURNS = 300;
const PAGE_BYTES = 60 * 1024;

/** Page n of the fake wiki: 60 KiB of text that names its page. */
function page(n: number): string {
  const head = `page ${n}: `;
  return head + 'x'.repeat(PAGE_BYTES - head.length);
}

/**
 * A model that asks for page n in turn n and stops after TURNS turns, checking every turn that
 * the conversation it was handed is whole: the prompt, then an assistant message and the full
 * 60 KiB tool result for each earlier turn, in order.
 */
class PagingModel implements ModelAdapter {
  readonly name = 'paging';
  readonly problems: string[] = [];
  lastConversationBytes = 0;

  async turn(input: ModelTurnInput): Promise<ModelTurnResult> {
    const messages = input.messages ?? [];
    const n = input.turn;
    if (messages.length !== 1 + 2 * n) this.problems.push(`turn ${n}: ${messages.length} messages, expected ${1 + 2 * n}`);
    const last = messages[messages.length - 1];
    if (n > 0 && !(last?.role === 'tool' && typeof last.content === 'object' && last.content !== null && (last.content as { text?: string }).text === page(n - 1))) {
      this.problems.push(`turn ${n}: the last message is not page ${n - 1} in full`);
    }
    if (n === TURNS) this.lastConversationBytes = Buffer.byteLength(JSON.stringify(messages));
    if (n >= TURNS) return { stopReason: 'end_turn', text: `read ${TURNS} pages`, toolCalls: [] };
    return { stopReason: 'tool_use', text: `reading page ${n}`, toolCalls: [{ callId: `call_${n}`, toolName: 'fetch_page', input: { page: n } }] };
  }
}

interface RunFigures {
  readonly runId: string;
  readonly events: number;
  /** Protobuf bytes of every event of the run. */
  readonly bytes: number;
  readonly turns: number;
  /** Bytes of the events between the first (started) and the last (continued as new / completed): what the turns add. */
  readonly turnBytes: number;
  readonly firstEventBytes: number;
  readonly lastEventBytes: number;
  readonly largestEventBytes: number;
}

describe('long runs: 300 turns of 60 KiB results on a real server', () => {
  let real: RealAgentEnv;
  let env: LocalTestEnv;
  let store: CheckpointStore;
  let bundle: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    real = await startRealAgentEnv('ttc-long-runs-');
    ({ env, store, bundle } = real);
  }, 120_000);

  afterAll(() => real?.stop());

  /** Every run of the chain that ends in `lastRunId`, oldest first, with its history figures. */
  async function chainFigures(workflowId: string, lastRunId: string): Promise<RunFigures[]> {
    const runs: RunFigures[] = [];
    let runId: string | null | undefined = lastRunId;
    while (runId) {
      const history: temporal.api.history.v1.IHistory = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
      const events: temporal.api.history.v1.IHistoryEvent[] = history.events ?? [];
      const sizes = events.map((e) => temporal.api.history.v1.HistoryEvent.encode(temporal.api.history.v1.HistoryEvent.fromObject(e)).finish().length);
      const turns = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runModelTurn').length;
      const bytes = sizes.reduce((a, b) => a + b, 0);
      const [first, last] = [sizes[0]!, sizes[sizes.length - 1]!];
      runs.unshift({
        runId,
        events: events.length,
        bytes,
        turns,
        turnBytes: bytes - first - last,
        firstEventBytes: first,
        lastEventBytes: last,
        largestEventBytes: Math.max(...sizes),
      });
      runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    }
    return runs;
  }

  it('completes with continue-as-new; history bytes per turn stay flat and no event nears the 2 MB limit', async () => {
    const model = new PagingModel();
    const fetchPage = defineTool({
      name: 'fetch_page',
      revision: 'v1',
      input: z.object({ page: z.number().int() }).strict(),
      async execute(input) {
        return { output: { text: page(input.page) } };
      },
    });
    const taskQueue = `long-runs-${Date.now()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      maxConcurrentActivityTaskExecutions: 4,
      activities: { ...createToolActivities({ store, tools: [fetchPage] }), ...createModelActivities({ adapters: { paging: model }, store }) },
    });
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'paging',
      prompt: `Read pages 0 to ${TURNS - 1}.`,
      tools: ['fetch_page'],
      budget: { maxTurns: TURNS + 1, maxToolCalls: TURNS, deadlineMs: 3_600_000 },
      limits: { continueAsNewAfterEvents: 1_000 },
    };
    const workflowId = `long-run-${Date.now()}`;
    const { result, status, lastRunId } = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(agentWorkflow, { taskQueue, workflowId, args: [input] });
      const result = await handle.result();
      const described = await env.client.workflow.getHandle(workflowId).describe();
      return { result, status: await env.client.workflow.getHandle(workflowId).query(runStatusQuery), lastRunId: described.runId };
    });

    expect(model.problems).toEqual([]);
    expect(result).toEqual(expect.objectContaining({ status: 'completed', stoppedBecause: 'model-stopped', finalText: `read ${TURNS} pages`, turns: TURNS + 1 }));
    expect(result.continued!.continuations).toBeGreaterThanOrEqual(1);
    expect(result.calls.length + result.continued!.earlierCalls.ran).toBe(TURNS);
    expect(status.budget.toolCallsUsed).toBe(TURNS);
    expect(status.conversation!.bytes).toBeGreaterThan(TURNS * PAGE_BYTES);
    // Every output went by reference: nothing of 60 KiB is inline in the result.
    for (const call of result.calls) expect(call.outcome).toEqual(expect.objectContaining({ ok: true, outputRef: expect.objectContaining({ bytes: expect.any(Number) }) }));

    const runs = await chainFigures(workflowId, lastRunId);
    const perTurn = runs.map((r) => r.turnBytes / r.turns);
    const lines = runs.map(
      (r, i) => `| ${i + 1} | ${r.turns} | ${r.events} | ${r.bytes} | ${Math.round(r.turnBytes / r.turns)} | ${r.firstEventBytes} | ${r.lastEventBytes} | ${r.largestEventBytes} |`,
    );
    process.stdout.write(
      `long run: ${TURNS} turns × ${PAGE_BYTES} bytes, ${runs.length} runs (${result.continued!.continuations} continue-as-new); conversation ${status.conversation!.bytes} bytes in the store, the last turn read back ${model.lastConversationBytes} bytes\n` +
        `| run | turns | events | history bytes | bytes per turn | first event | last event | largest event |\n|---|---|---|---|---|---|---|---|\n${lines.join('\n')}\n`,
    );
    expect(runs.length).toBe(result.continued!.continuations + 1);
    expect(runs.reduce((a, r) => a + r.turns, 0)).toBe(TURNS + 1);
    // Flat: a turn adds the same bytes within 10 %, whatever the run's place in the chain.
    expect(Math.max(...perTurn) / Math.min(...perTurn)).toBeLessThan(1.1);
    // What a run starts from and ends with stays small (the call ids used so far grow it by a few bytes per call).
    expect(Math.max(...runs.map((r) => r.firstEventBytes))).toBeLessThan(8 * 1024);
    // Far below Temporal's 2 MB payload limit, and no event carries an output.
    expect(Math.max(...runs.map((r) => r.largestEventBytes))).toBeLessThan(PAGE_BYTES);
  }, 600_000);
});
