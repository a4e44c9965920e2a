/**
 * A model turn may ask for any number of tool calls of any size: the agent workflow runs the
 * longest prefix within `budget.maxToolCallsPerTurn` and `budget.maxToolInputBytesPerTurn`, and
 * refuses the rest before anything of the turn is scheduled; the model reads each refusal with the
 * numbers. On a real dev server with recording fake activities.
 */
import { activitiesOf, baseInput, call, endTurn, fakeTools, scriptedModel, toolTurn, useAgentTestEnv } from '../helpers/agent-harness';
import { installQuietTemporalRuntime } from '../helpers/temporal';
import { releaseReplayHooks } from '../helpers/replay-hooks';

afterEach(releaseReplayHooks);
installQuietTemporalRuntime();
jest.setTimeout(60_000);

const harness = useAgentTestEnv('dev');

describe('a turn asks for more than a turn may run', () => {
  it('5 calls, at most 3 per turn: the first 3 run (concurrently), the last 2 are never scheduled and the model reads TOO_MANY_TOOL_CALLS with the counts', async () => {
    const calls = [1, 2, 3, 4, 5].map((n) => call(`c${n}`, 'create_ticket', { title: `ticket ${n}` }));
    const model = scriptedModel([toolTurn('Opening five tickets.', ...calls), endTurn('Three opened; I will ask for the rest.')]);
    const tools = fakeTools();
    const result = await harness.withRun(
      activitiesOf(model, tools),
      baseInput({ toolConcurrency: 4, budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 3_600_000, maxToolCallsPerTurn: 3 } }),
      (handle) => handle.result(),
    );

    expect(tools.runs.map((r) => r.callId).sort()).toEqual(['c1', 'c2', 'c3']);
    expect(result.calls.map((c) => [c.callId, c.status, c.errorType])).toEqual([
      ['c1', 'completed', null],
      ['c2', 'completed', null],
      ['c3', 'completed', null],
      ['c4', 'failed', 'TOO_MANY_TOOL_CALLS'],
      ['c5', 'failed', 'TOO_MANY_TOOL_CALLS'],
    ]);
    const refused = model.requests[1]!.messages!.filter((m) => m.role === 'tool' && m.isError);
    expect(refused).toEqual(
      ['c4', 'c5'].map((callId) => ({
        role: 'tool',
        callId,
        toolName: 'create_ticket',
        isError: true,
        content: {
          error: {
            type: 'TOO_MANY_TOOL_CALLS',
            message: 'TOO_MANY_TOOL_CALLS: this turn asked for 5 tool calls and at most 3 run per turn; the last 2 were not run (ask for them again in a later turn)',
          },
        },
      })),
    );
  });

  it('refused calls never ran, so they take nothing of the tool-call budget of the run: with 5 calls allowed, 3 run, 2 are refused, and the 2 asked again in the next turn run', async () => {
    const first = [1, 2, 3, 4, 5].map((n) => call(`c${n}`, 'create_ticket', { title: `ticket ${n}` }));
    const again = [4, 5].map((n) => call(`d${n}`, 'create_ticket', { title: `ticket ${n}` }));
    const model = scriptedModel([toolTurn('Opening five tickets.', ...first), toolTurn('The last two.', ...again), endTurn('Five opened.')]);
    const tools = fakeTools();
    const result = await harness.withRun(
      activitiesOf(model, tools),
      baseInput({ toolConcurrency: 4, budget: { maxTurns: 5, maxToolCalls: 5, deadlineMs: 3_600_000, maxToolCallsPerTurn: 3 } }),
      (handle) => handle.result(),
    );

    expect(tools.runs.map((r) => r.callId).sort()).toEqual(['c1', 'c2', 'c3', 'd4', 'd5']);
    expect({ status: result.status, turns: result.turns }).toEqual({ status: 'completed', turns: 3 });
  });

  it('refused calls never end the run on the budget either: 3 calls allowed, 6 asked in one turn, 3 per turn: 3 run, the model reads the 3 refusals and answers', async () => {
    const calls = [1, 2, 3, 4, 5, 6].map((n) => call(`c${n}`, 'create_ticket', { title: `ticket ${n}` }));
    const model = scriptedModel([toolTurn('Six tickets.', ...calls), endTurn('Three opened; the other three were refused.')]);
    const tools = fakeTools();
    const result = await harness.withRun(
      activitiesOf(model, tools),
      baseInput({ budget: { maxTurns: 5, maxToolCalls: 3, deadlineMs: 3_600_000, maxToolCallsPerTurn: 3 } }),
      (handle) => handle.result(),
    );

    expect(tools.runs.map((r) => r.callId)).toEqual(['c1', 'c2', 'c3']);
    expect({ status: result.status, turns: result.turns, refused: result.calls.filter((c) => c.errorType === 'TOO_MANY_TOOL_CALLS').length }).toEqual({
      status: 'completed',
      turns: 2,
      refused: 3,
    });
  });

  it("every call refused before it runs takes nothing of the budget: a repeated call id and a tool the run does not offer leave room for the next turn's call", async () => {
    const model = scriptedModel([
      toolTurn('Three asks.', call('c1', 'create_ticket', { title: 'a' }), call('c1', 'create_ticket', { title: 'again' }), call('x1', 'drop_database', {})),
      toolTurn('One more.', call('c2', 'create_ticket', { title: 'b' })),
      endTurn('Done.'),
    ]);
    const tools = fakeTools();
    const result = await harness.withRun(activitiesOf(model, tools), baseInput({ budget: { maxTurns: 5, maxToolCalls: 2, deadlineMs: 3_600_000 } }), (handle) => handle.result());

    expect(tools.runs.map((r) => r.callId)).toEqual(['c1', 'c2']);
    expect(result.calls.map((c) => c.errorType)).toEqual([null, 'DUPLICATE_CALL_ID', 'UNKNOWN_TOOL', null]);
    expect(result.status).toBe('completed');
  });

  it('inputs over the bytes per turn: the call that crosses the bound and every later one are refused (TURN_INPUT_TOO_LARGE), even a small one after it', async () => {
    const small = { title: 'a' };
    const large = { title: 'x'.repeat(200) };
    const model = scriptedModel([
      toolTurn('Three tickets.', call('s1', 'create_ticket', small), call('l2', 'create_ticket', large), call('s3', 'create_ticket', small)),
      endTurn('done'),
    ]);
    const tools = fakeTools();
    const result = await harness.withRun(
      activitiesOf(model, tools),
      baseInput({ budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 3_600_000, maxToolInputBytesPerTurn: 100 } }),
      (handle) => handle.result(),
    );

    expect(tools.runs.map((r) => r.callId)).toEqual(['s1']);
    expect(result.calls.map((c) => [c.callId, c.errorType])).toEqual([
      ['s1', null],
      ['l2', 'TURN_INPUT_TOO_LARGE'],
      ['s3', 'TURN_INPUT_TOO_LARGE'],
    ]);
    const bytes = JSON.stringify(small).length + JSON.stringify(large).length;
    expect(result.calls[1]!.reason).toBe(
      `TURN_INPUT_TOO_LARGE: the tool inputs of this turn up to call 2 of 3 total ${bytes} bytes, over the turn's limit of 100; that call and the 1 after it were not run (ask for them again, in smaller parts, in a later turn)`,
    );
  });

  it('a bound that is not a positive integer is refused at the start, naming it', async () => {
    const model = scriptedModel([endTurn('never asked')]);
    const run = harness.withRun(
      activitiesOf(model, fakeTools()),
      baseInput({ budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 3_600_000, maxToolCallsPerTurn: 0 } }),
      (handle) => handle.result(),
    );
    await expect(run).rejects.toMatchObject({ cause: { message: expect.stringContaining('budget.maxToolCallsPerTurn') } });
    expect(model.requests).toHaveLength(0);
  });
});
