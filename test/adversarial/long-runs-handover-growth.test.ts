/**
 * Adversarial (continue-as-new): what a run hands over grows with the chain's length, without
 * bound. `ContinuedRun.usedCallIds` carries EVERY call id the chain ever used (README: "the first
 * event of each run grows by the call ids used so far"), so once the ids of a chain add up to
 * Temporal's 2 MB payload limit, the continue-as-new itself is refused and the run is killed by the
 * server between two turns, with no result: exactly what continue-as-new is there to stop. No
 * budget stops it first (`maxToolCalls` may be anything; nothing relates it to the handover).
 *
 * With real provider ids (~30 characters: `toolu_…`, `call_…`) that is about 65,000 calls; the
 * test uses ids of 2,000 characters (call ids may be up to 2,048) so that 1,000 calls reach it.
 *
 * Rule broken: "What is in history per turn stays bounded, whatever the run's length"; "An agent
 * run is built to stay under both [limits], whatever its length" (README, Long runs).
 *
 * Real dev server (it enforces the payload limit), stub activities.
 */
import { activitiesOf, baseInput, call, endTurn, fakeTools, scriptedModel, toolTurn, useAgentTestEnv } from '../helpers/agent-harness';
import { installQuietTemporalRuntime } from '../helpers/temporal';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(400_000);
const harness = useAgentTestEnv('dev');

const TURNS = 12;
const CALLS_PER_TURN = 100;
const PROGRESS_WINDOW_MS = 20_000;
const id = (turn: number, i: number) => `call_${turn}_${i}_${'x'.repeat(2_000)}`;

describe('continue-as-new handover stays bounded', () => {
  it(`a chain of ${TURNS * CALLS_PER_TURN} calls (2 KB ids) completes; each run starts from a bounded handover`, async () => {
    const script = [
      ...Array.from({ length: TURNS }, (_, t) => toolTurn(`turn ${t}`, ...Array.from({ length: CALLS_PER_TURN }, (_, i) => call(id(t, i), 'lookup', { t, i })))),
      endTurn('done'),
    ];
    const model = scriptedModel(script);
    const tools = fakeTools();
    const input = baseInput({
      toolConcurrency: undefined,
      budget: { maxTurns: TURNS + 1, maxToolCalls: TURNS * CALLS_PER_TURN, deadlineMs: 3_600_000 },
      // Hand over after every turn (a fresh run has ~3 events; a turn adds hundreds).
      limits: { continueAsNewAfterEvents: 20 },
    });
    const outcome = await harness.withRun(activitiesOf(model, tools), input, async (handle) => {
      // The run either ends, or stops making progress (its workflow task failing over and over). A window of
      // 20 s: a run that is stuck stays stuck; 5 s was too short on a loaded CI machine (a live run showed no new call).
      let lastRuns = -1;
      for (let waited = 0; waited < 300_000; waited += PROGRESS_WINDOW_MS) {
        const ended = await Promise.race([
          handle.result().then(
            (result) => ({ result }),
            (error: unknown) => ({ error }),
          ),
          new Promise<null>((r) => setTimeout(() => r(null), PROGRESS_WINDOW_MS)),
        ]);
        if (ended !== null) return { ...ended, stuck: null };
        if (tools.runs.length === lastRuns && lastRuns > 0) break;
        lastRuns = tools.runs.length;
      }
      const history = await handle.fetchHistory();
      const failures = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).map((e) => e.workflowTaskFailedEventAttributes!.failure?.message);
      await handle.terminate('adversarial test: stuck');
      return {
        stuck: `no progress for ${PROGRESS_WINDOW_MS / 1_000} s after ${tools.runs.length} tool calls; workflow task failures: ${failures.length} (${failures[0] ?? 'none'})`,
      };
    });
    process.stdout.write(
      `model asked ${model.requests.length} times, ${tools.runs.length} tool calls ran; ${JSON.stringify({ status: 'result' in outcome ? outcome.result?.status : undefined, error: 'error' in outcome ? String(outcome.error) : undefined, stuck: outcome.stuck })}\n`,
    );
    // Before 2ee5829: after ~9 turns the handover was over 2 MB; the SDK refused the continue-as-new command,
    // the workflow task failed over and over, and the run neither continued nor ended.
    expect(outcome.stuck).toBeNull();
    expect('result' in outcome && outcome.result?.status).toBe('completed');
  });
});
