/**
 * Adversarial (after 2ee5829 "a wide turn lowers its inline threshold so its outputs
 * stay under 256 KiB"): the bound covers SUCCESSFUL outputs only. Error results are never sent by
 * reference (`deliverOutput` returns every error outcome unchanged), and a tool's own error
 * reaches the model "as written" (up to 2,000 characters after `sanitizeReason`). So a wide turn
 * whose calls fail carries ~2 KB per call inline: in the next model turn's input (the pending
 * tool messages) and in a handover. 1,000 failing calls in one turn put the next model turn's
 * input over Temporal's 2 MB payload limit: the SDK refuses the command, the workflow task fails
 * over and over, and the run neither continues nor ends.
 *
 * Rule broken: "What is in history per turn stays bounded, whatever the run's length"; the new
 * code's own claim that what the next model turn's input and a handover carry "stays bounded
 * however many calls a turn makes". (1,000 calls in one turn is far from what models send today:
 * severity low.)
 *
 * Real dev server (it enforces the payload limit), stub activities.
 */
import { activitiesOf, baseInput, call, endTurn, fakeTools, okResult, scriptedModel, toolTurn, useAgentTestEnv } from '../helpers/agent-harness';
import { installQuietTemporalRuntime } from '../helpers/temporal';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(400_000);
const harness = useAgentTestEnv('dev');

const CALLS = 1_000;

describe('a wide turn of failing calls', () => {
  it(`${CALLS} calls that each end with a tool's own 2,000-character error: the run goes on to its next turn`, async () => {
    const model = scriptedModel([toolTurn('many', ...Array.from({ length: CALLS }, (_, i) => call(`c${i}`, 'lookup', { i }))), endTurn('done')]);
    const tools = fakeTools(async (input) => ({
      ...okResult(input),
      outcome: { ok: false, error: { type: 'BUSINESS_REJECTION', message: `lookup ${input.callId} refused: ${'e'.repeat(1_970)}` } },
    }));
    const input = baseInput({ toolConcurrency: 50, budget: { maxTurns: 5, maxToolCalls: CALLS, deadlineMs: 3_600_000 } });
    const outcome = await harness.withRun(activitiesOf(model, tools), input, async (handle) => {
      let last = -1;
      for (let waited = 0; waited < 300_000; waited += 5_000) {
        const ended = await Promise.race([
          handle.result().then(
            (result) => ({ result }),
            (error: unknown) => ({ error }),
          ),
          new Promise<null>((r) => setTimeout(() => r(null), 5_000)),
        ]);
        if (ended !== null) return { ...ended, stuck: null };
        const progress = tools.runs.length + model.requests.length;
        if (progress === last && tools.runs.length === CALLS) break;
        last = progress;
      }
      const history = await handle.fetchHistory();
      const failures = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).map((e) => e.workflowTaskFailedEventAttributes!.failure?.message);
      await handle.terminate('adversarial test: stuck');
      return {
        stuck: `stuck after ${tools.runs.length} tool calls and ${model.requests.length} model turns; ${failures.length} workflow task failures (${failures[0] ?? 'none'})`,
      };
    });
    process.stdout.write(
      `${JSON.stringify({ status: 'result' in outcome ? outcome.result?.status : undefined, error: 'error' in outcome ? String(outcome.error) : undefined, stuck: outcome.stuck })}\n`,
    );
    // FAILS: the next model turn's input carries ~2.1 MB of inline error messages; it is never scheduled.
    expect(outcome.stuck).toBeNull();
    expect(model.requests).toHaveLength(2);
  });
});
