/**
 * Adversarial (continue-as-new): the continue-as-new check runs before EVERY model
 * turn, including the first one of a fresh run, and a fresh run's history already holds what the
 * previous run handed over (its first event carries the last turn's pending messages, every call
 * id used so far, ...). Once that handover alone is over `continueAsNewAfterHistoryBytes`, each
 * new run continues as new again before taking a single turn: the chain spins (no model turn, no
 * tool call) until the deadline, then ends `deadline-exceeded`, having created a run per spin.
 *
 * Here: 15 lookups of ~3.9 KB each (under the 4 KiB inline threshold, so inline in the handed-over
 * pending tool messages) and `continueAsNewAfterHistoryBytes: 60_000`. The same happens with any
 * bound once the chain is long enough (the handover grows with every call id).
 *
 * Rule broken: "Continue-as-new when ... a history-size budget says so, carrying ..." must make
 * progress; a run that has taken no turn must not continue as new (README: "between two model
 * turns ... the run continues as new").
 *
 * Real dev server (historySize is only reported there), stub activities.
 */
import { activitiesOf, baseInput, call, endTurn, fakeTools, okResult, scriptedModel, toolTurn, useAgentTestEnv } from '../helpers/agent-harness';

jest.setTimeout(180_000);
const harness = useAgentTestEnv('dev');

describe('continue-as-new makes progress', () => {
  it('a run whose handover alone is over continueAsNewAfterHistoryBytes still takes its next turn', async () => {
    const lookups = Array.from({ length: 15 }, (_, i) => call(`l${i}`, 'lookup', { i }));
    const model = scriptedModel([toolTurn('fifteen lookups', ...lookups), endTurn('done')]);
    const tools = fakeTools(async (input) => ({ ...okResult(input), outcome: { ok: true, output: { page: 'p'.repeat(3_900) }, receipt: null } }));
    const input = baseInput({
      budget: { maxTurns: 5, maxToolCalls: 20, deadlineMs: 20_000 },
      limits: { continueAsNewAfterHistoryBytes: 60_000 },
    });
    const { result, runs } = await harness.withRun(activitiesOf(model, tools), input, async (handle) => {
      const result = await handle.result();
      const runs = result.continued?.continuations ?? 0;
      return { result, runs };
    });
    process.stdout.write(`status ${result.status} (${result.stoppedBecause}); continued as new ${runs} times; model asked ${model.requests.length} times\n`);
    expect(tools.runs).toHaveLength(15);
    // Before 2ee5829: the chain continued as new over and over without asking the model again, until the deadline (20 runs in 20 s).
    expect(model.requests).toHaveLength(2);
    expect(result.status).toBe('completed');
    expect(runs).toBeLessThanOrEqual(2);
  });
});
