/**
 * Adversarial (continue-as-new carries call identity and intent generations), with the
 * real fence, a real SQLite store, the real model-turn activity and a real dev server:
 *
 * 1. A dedupeByIntent tool whose first call's outcome is unknown; a person proves it absent, the
 *    rerun (generation 1) applies the effect; the run continues as new; in the next run the model
 *    re-plans the same intent REUSING the first call's id (`e1`, as Ollama-style providers do).
 *    It must get a turn-scoped id and be answered from the rerun's checkpoint (no second effect,
 *    never the proven-absent generation); a later call with id `e1` and ANOTHER intent must run.
 * 2. A cancel sent while the chain hands over (continue-as-new after every turn) is never lost.
 */
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError } from '../../src/activities';
import { createModelActivities } from '../../src/activities/agent/model-turn';
import type { ModelAdapter } from '../../src/model/model-adapter';
import type { ModelTurnInput, ModelTurnResult } from '../../src/model/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { agentWorkflow, cancelRunSignal, resolveOutcomeUpdate, runStatusQuery } from '../../src/workflows';
import type { AgentWorkflowInput } from '../../src/workflows/agent/types';
import { waitForStatus, currentPauseId } from '../helpers/agent-harness';
import { installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { startRealAgentEnv, type RealAgentEnv } from '../helpers/real-agent-env';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(240_000);

class Script implements ModelAdapter {
  readonly name = 'script';
  readonly turns: ModelTurnInput[] = [];
  constructor(private readonly answer: (turn: number) => ModelTurnResult) {}
  async turn(input: ModelTurnInput): Promise<ModelTurnResult> {
    this.turns.push(input);
    return this.answer(input.turn);
  }
}

describe('continue-as-new keeps call identity and intent generations (real fence)', () => {
  let real: RealAgentEnv;
  let env: LocalTestEnv;
  let store: CheckpointStore;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    real = await startRealAgentEnv('ttc-adv-chain-');
    ({ env, store, bundle } = real);
  }, 120_000);
  afterAll(() => real?.stop());

  async function withWorker<T>(
    name: string,
    adapter: ModelAdapter,
    tools: Parameters<typeof createToolActivities>[0]['tools'],
    body: (taskQueue: string) => Promise<T>,
  ): Promise<T> {
    const taskQueue = `${name}-${Date.now()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities: { ...createToolActivities({ store, tools }), ...createModelActivities({ adapters: { script: adapter }, store }) },
    });
    return worker.runUntil(() => body(taskQueue));
  }

  it('absent + rerun, continue-as-new, then the model reuses the id for the same intent: answered from the rerun; another intent under that id runs', async () => {
    const effects: string[] = [];
    let first = true;
    const sendNote = defineTool({
      name: 'send_note',
      revision: 'v1',
      dedupeByIntent: true,
      input: z.object({ to: z.string(), body: z.string() }).strict(),
      async execute(input) {
        if (first) {
          first = false;
          throw new ToolError('unknown-outcome', 'send_note: connection reset after the request was sent');
        }
        effects.push(`${input.to}:${input.body}`);
        return { output: { sent: effects.length }, receipt: { noteId: `n-${effects.length}` } };
      },
    });
    const note = { to: 'ops', body: 'disk full' };
    const model = new Script((turn) => {
      if (turn === 0) return { stopReason: 'tool_use', text: 'send', toolCalls: [{ callId: 'e1', toolName: 'send_note', input: note }] };
      if (turn === 1) return { stopReason: 'tool_use', text: 'send again (re-planned)', toolCalls: [{ callId: 'e1', toolName: 'send_note', input: note }] };
      if (turn === 2) return { stopReason: 'tool_use', text: 'another note', toolCalls: [{ callId: 'e1', toolName: 'send_note', input: { to: 'ops', body: 'disk ok' } }] };
      return { stopReason: 'end_turn', text: 'done', toolCalls: [] };
    });
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'script',
      prompt: 'notify ops',
      tools: ['send_note'],
      budget: { maxTurns: 10, maxToolCalls: 10, deadlineMs: 600_000 },
      limits: { continueAsNewAfterEvents: 10 },
    };
    const result = await withWorker('adv-chain-dedupe', model, [sendNote], async (taskQueue) => {
      const handle = await env.client.workflow.start(agentWorkflow, { taskQueue, workflowId: `adv-chain-dedupe-${Date.now()}`, args: [input] });
      await waitForStatus(handle, (s) => s.phase === 'paused', 60_000);
      await handle.executeUpdate(resolveOutcomeUpdate, { args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'not in the outbox' }] });
      const result = await handle.result();
      const status = await handle.query(runStatusQuery);
      process.stdout.write(
        `effects ${JSON.stringify(effects)}; continuations ${status.continuations}; last run calls ${JSON.stringify(result.calls.map((c) => [c.callId, c.status, c.source]))}\n`,
      );
      return result;
    });
    expect(result.status).toBe('completed');
    expect(result.continued?.continuations ?? 0).toBeGreaterThanOrEqual(1);
    // One effect for "disk full" (the rerun), one for "disk ok"; never a second "disk full".
    expect(effects).toEqual(['ops:disk full', 'ops:disk ok']);
    // Each model turn after the first reads a conversation whose ids are unique.
    const last = model.turns[model.turns.length - 1]!.messages!;
    const ids = last.flatMap((m) => (m.role === 'assistant' ? m.toolCalls.map((c) => c.callId) : []));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a cancel sent while the chain continues as new after every turn is never lost', async () => {
    const lookup = defineTool({
      name: 'lookup',
      revision: 'v1',
      input: z.object({ i: z.number() }).strict(),
      async execute(input) {
        return { output: { i: input.i }, receipt: null };
      },
    });
    const model = new Script((turn) => ({ stopReason: 'tool_use', text: `turn ${turn}`, toolCalls: [{ callId: `c${turn}`, toolName: 'lookup', input: { i: turn } }] }));
    const input: AgentWorkflowInput = {
      tenant: 'acme',
      model: 'script',
      prompt: 'look things up forever',
      tools: ['lookup'],
      budget: { maxTurns: 10_000, maxToolCalls: 10_000, deadlineMs: 600_000 },
      limits: { continueAsNewAfterEvents: 10 },
    };
    const outcomes = await withWorker('adv-chain-cancel', model, [lookup], async (taskQueue) => {
      const results = [];
      for (let k = 0; k < 5; k += 1) {
        const handle = await env.client.workflow.start(agentWorkflow, { taskQueue, workflowId: `adv-chain-cancel-${k}-${Date.now()}`, args: [input] });
        // Let the chain hand over a few times, then cancel at an arbitrary moment.
        await new Promise((r) => setTimeout(r, 700 + k * 173));
        await handle.signal(cancelRunSignal, { reason: `stop ${k}` });
        const result = await Promise.race([handle.result(), new Promise<null>((r) => setTimeout(() => r(null), 30_000))]);
        if (result === null) await handle.terminate('adversarial test: the cancel was lost');
        results.push(result === null ? 'lost' : `${result.status}:${result.reason}:${result.continued?.continuations ?? 0}`);
      }
      return results;
    });
    process.stdout.write(`cancel outcomes: ${JSON.stringify(outcomes)}\n`);
    for (const [k, outcome] of outcomes.entries()) expect(outcome).toMatch(new RegExp(`^cancelled:stop ${k}:`));
  });
});
