// Continue-as-new on a real dev server (queries and updates racing a continue-as-new are only
// faithful there): the chain carries the conversation, budgets, the state version and call
// identity; approve, resolve and the status query keep working.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { approveCallUpdate, runStatusQuery } from '../../src/workflows';
import { runCli, type CliOutput } from '../helpers/cli';
import type { LocalTestEnv } from '../helpers/temporal';
import { activitiesOf, baseInput, call, endTurn, fakeTools, outcomeUnknown, scriptedModel, toolTurn, useAgentTestEnv, waitForStatus } from '../helpers/agent-harness';

const harness = useAgentTestEnv('dev');
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-can-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `ttc <args>` against this file's dev server, as a user would run it. */
function cli(...args: string[]): Promise<CliOutput> {
  const server = (harness.env as LocalTestEnv).devServer;
  return runCli(args, { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace, TTC_STORE_URL: `sqlite:${join(dir, 'checkpoints.db')}` });
}
const withRun = harness.withRun.bind(harness);
/** A call id without the run it was addressed in (`t1@<runId>` → `t1`). */
const withoutRun = (callId: string) => callId.replace(/@[0-9a-f-]{36}$/, '');

describe('agentWorkflow: continue-as-new', () => {
  const turns = (n: number) => [...Array.from({ length: n }, (_, i) => toolTurn(`turn ${i}`, call(`t${i}`, 'lookup', { i }))), endTurn('all done')];

  it('continues as new between turns, carrying the conversation, budgets, the state version and call identity', async () => {
    const model = scriptedModel(turns(8));
    const tools = fakeTools();
    const input = baseInput({ budget: { maxTurns: 20, maxToolCalls: 20, deadlineMs: 3_600_000 }, limits: { continueAsNewAfterEvents: 20 } });
    const { result, status } = await withRun(activitiesOf(model, tools), input, async (handle) => ({ result: await handle.result(), status: await handle.query(runStatusQuery) }));
    expect(result.status).toBe('completed');
    expect(result.turns).toBe(9);
    expect(result.continued!.continuations).toBeGreaterThanOrEqual(2);
    // Every call ran once; this run's calls plus the counted earlier ones are all eight.
    expect(tools.runs.map((r) => withoutRun(r.callId))).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7']);
    expect(result.calls.length + result.continued!.earlierCalls.ran).toBe(8);
    expect(status.budget.toolCallsUsed).toBe(8);
    expect(status.continuations).toBe(result.continued!.continuations);
    // The last turn saw the whole conversation: the prompt, 8 × (assistant + tool), in order.
    const last = model.requests[8]!.messages!;
    expect(last).toHaveLength(17);
    expect(last.filter((m) => m.role === 'tool').map((m) => m.role === 'tool' && m.callId)).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7']);
    // The chain shares one run chain id: the checkpoints of every run are the chain's.
    expect(new Set(tools.runs.map((r) => r.runChainId)).size).toBe(1);
  });

  it("continues as new when this run's call reports grow past continueAsNewAfterStateBytes, so the status and result stay small", async () => {
    const model = scriptedModel(turns(6));
    const tools = fakeTools();
    const input = baseInput({ budget: { maxTurns: 20, maxToolCalls: 20, deadlineMs: 3_600_000 }, limits: { continueAsNewAfterStateBytes: 1_500 } });
    const { result, status } = await withRun(activitiesOf(model, tools), input, async (handle) => ({ result: await handle.result(), status: await handle.query(runStatusQuery) }));
    expect(result.status).toBe('completed');
    expect(result.continued!.continuations).toBeGreaterThanOrEqual(1);
    expect(result.calls.length + result.continued!.earlierCalls.ran).toBe(6);
    // Each run hands over once its reports pass the bound: no run reports much more than it.
    expect(Buffer.byteLength(JSON.stringify(status.calls))).toBeLessThan(3_000);
  });

  it('an id the provider reuses every turn gets a checkpoint per turn across runs of the chain too', async () => {
    const model = scriptedModel([...Array.from({ length: 6 }, (_, i) => toolTurn(`turn ${i}`, call('ollama_0', 'lookup', { i }))), endTurn('done')]);
    const tools = fakeTools();
    const input = baseInput({ budget: { maxTurns: 20, maxToolCalls: 20, deadlineMs: 3_600_000 }, limits: { continueAsNewAfterEvents: 20 } });
    const result = await withRun(activitiesOf(model, tools), input, (handle) => handle.result());
    expect(result.status).toBe('completed');
    expect(result.continued!.continuations).toBeGreaterThanOrEqual(2);
    expect(tools.runs.map((r) => [withoutRun(r.callId), r.input])).toEqual([0, 1, 2, 3, 4, 5].map((i) => [i === 0 ? 'ollama_0' : `ollama_0_t${i}`, { i }]));
  });

  it('the budget counts across runs: maxToolCalls stops the chain at the same call it would stop one run', async () => {
    const model = scriptedModel(turns(8));
    const tools = fakeTools();
    const input = baseInput({ budget: { maxTurns: 20, maxToolCalls: 5, deadlineMs: 3_600_000 }, limits: { continueAsNewAfterEvents: 20 } });
    const result = await withRun(activitiesOf(model, tools), input, (handle) => handle.result());
    expect(result.status).toBe('budget-exhausted');
    expect(result.stoppedBecause).toBe('max-tool-calls');
    expect(tools.runs).toHaveLength(5);
    expect(result.continued!.continuations).toBeGreaterThanOrEqual(1);
  });

  it('approve, show and resolve keep working on a run that continued as new', async () => {
    const model = scriptedModel([...turns(5).slice(0, 5), toolTurn('refund', call('r1', 'refund', { amount: 3 })), toolTurn('email', call('e1', 'send_email')), endTurn('done')]);
    const tools = fakeTools(async (input) => {
      if (withoutRun(input.callId) === 'e1') throw outcomeUnknown();
      return undefined;
    });
    const input = baseInput({
      budget: { maxTurns: 20, maxToolCalls: 20, deadlineMs: 3_600_000 },
      limits: { continueAsNewAfterEvents: 20 },
      approvalRequired: { refund: { expiresAfterMs: 3_600_000 } },
    });
    const result = await withRun(activitiesOf(model, tools), input, async (handle) => {
      const waiting = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      expect(waiting.continuations).toBeGreaterThanOrEqual(1);
      expect(waiting.budget.toolCallsUsed).toBe(6);
      const pending = waiting.pendingCalls[0]!;
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: pending.intentDigest!, stateVersion: waiting.stateVersion }] });
      const paused = await waitForStatus(handle, (s) => s.phase === 'paused');
      // The model's id names the call, also where a continued run addresses it by run (`e1@<runId>`).
      expect(withoutRun(paused.paused!.callId)).toBe('e1');
      // The command line addresses the workflow id, whichever run of the chain is current.
      const shown = await cli('show', handle.workflowId);
      expect(shown.stderr).toBe('');
      expect(shown.stdout).toMatch(/continued as new [1-9]\d* times/);
      expect(shown.stdout).toContain(`paused on ${paused.paused!.callId} (send_email revision not reported, key not reported); pause ${paused.paused!.pauseId} `);
      const resolved = await cli('resolve', handle.workflowId, 'e1', '--applied', '{"messageId":"m-9"}', '--reason', 'in the outbox', '--pause', paused.paused!.pauseId);
      expect([resolved.code, resolved.stderr]).toEqual([0, '']);
      return handle.result();
    });
    expect(result.status).toBe('completed');
    expect(tools.runs.map((r) => withoutRun(r.callId))).toEqual(['t0', 't1', 't2', 't3', 't4', 'r1', 'e1']);
    // r1 was approved and ran once, e1 resolved applied; all seven counted across the chain (each run's result lists its own calls).
    const ran = result.calls.filter((c) => c.status === 'completed' || c.status === 'resolved-applied').length;
    expect(ran + result.continued!.earlierCalls.ran).toBe(7);
    expect(result.continued!.earlierCalls.notRun + result.continued!.earlierCalls.unknown).toBe(0);
  });
});
