/**
 * A tool that needs approval never runs without a person's approval, whatever else the model's
 * turn holds. Calls refused before they run (a tool the run does not offer, a repeated call id, a
 * description that failed) take nothing of `budget.maxToolCalls`; the approval step must count
 * the same way, or a call after a refused one is neither asked about nor stopped by the budget
 * and runs unapproved. Named scenarios, then a generator over turns mixing refused calls, calls
 * that need approval and plain calls under small budgets: every run of an approval tool carries
 * the digest a person approved. On a dev server (time must not skip while a person decides)
 * with recording fake activities.
 */
import { ApplicationFailure } from '@temporalio/common';
import fc from 'fast-check';
import { approveCallUpdate, runStatusQuery, type AgentWorkflowResult } from '../../src/workflows';
import type { ToolCallRequest } from '../../src/model/types';
import { activitiesOf, baseInput, call, endTurn, fakeTools, scriptedModel, toolTurn, useAgentTestEnv } from '../helpers/agent-harness';
import { installQuietTemporalRuntime } from '../helpers/temporal';
import { releaseReplayHooks } from '../helpers/replay-hooks';

afterEach(releaseReplayHooks);
installQuietTemporalRuntime();
jest.setTimeout(180_000);

const harness = useAgentTestEnv('dev');
const APPROVAL = { refund: { expiresAfterMs: 3_600_000 } };

/** Runs `turns` with `maxToolCalls`, approving (as `alice`) every call that waits for approval; returns the result and the recorded tool runs. */
async function runApprovingAll(turns: ToolCallRequest[][], maxToolCalls: number, failDescribeOf: readonly string[] = []) {
  const model = scriptedModel([...turns.map((calls) => toolTurn('calls', ...calls)), endTurn('done')]);
  const tools = fakeTools();
  const describe = tools.describeToolCall;
  tools.describeToolCall = async (input) => {
    if (failDescribeOf.includes(input.callId))
      throw ApplicationFailure.create({ type: 'INVALID_TOOL_INPUT', message: 'INVALID_TOOL_INPUT: refused by the schema', nonRetryable: true });
    return describe(input);
  };
  const result: AgentWorkflowResult = await harness.withRun(
    activitiesOf(model, tools),
    baseInput({ approvalRequired: APPROVAL, budget: { maxTurns: 5, maxToolCalls, deadlineMs: 3_600_000 } }),
    async (handle) => {
      const done = handle.result();
      let finished = false;
      void done.then(
        () => (finished = true),
        () => (finished = true),
      );
      while (!finished) {
        const status = await handle.query(runStatusQuery).catch(() => null);
        for (const pending of status?.pendingCalls.filter((c) => c.status === 'awaiting-approval') ?? []) {
          await handle
            .executeUpdate(approveCallUpdate, { args: [{ callId: pending.callId, intentDigest: pending.intentDigest!, stateVersion: status!.stateVersion, by: 'alice' }] })
            .catch(() => undefined);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return done;
    },
  );
  return { result, runs: tools.runs };
}

describe('a call that needs approval, after calls refused before they run', () => {
  it.each([
    ['a tool the run does not offer', [call('x1', 'drop_database'), call('r1', 'refund', { amount: 500 })], 1, []],
    ['a repeated call id', [call('c1', 'create_ticket', { title: 'a' }), call('c1', 'create_ticket', { title: 'b' }), call('r1', 'refund', { amount: 500 })], 2, []],
    ['a refund whose description failed', [call('r0', 'refund', { amount: 1 }), call('r1', 'refund', { amount: 500 })], 1, ['r0']],
  ] as const)('after %s, the refund waits for approval and runs only approved', async (_what, calls, maxToolCalls, failDescribeOf) => {
    const { result, runs } = await runApprovingAll([[...calls]], maxToolCalls, failDescribeOf);
    const refund = runs.filter((r) => r.callId === 'r1');
    expect(refund.map((r) => [r.expectedIntentDigest !== undefined, r.approvedBy])).toEqual([[true, 'alice']]);
    expect(result.calls.find((c) => c.callId === 'r1')?.decisions?.map((d) => d.kind)).toEqual(['approved']);
  });

  it('generated turns: every run of a tool that needs approval carries an approved digest', async () => {
    const step = fc.constantFrom<'refund' | 'plain' | 'unknown' | 'repeat'>('refund', 'plain', 'unknown', 'repeat');
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 5 }), fc.integer({ min: 1, max: 3 }), fc.boolean(), async (steps, maxToolCalls, failFirstDescribe) => {
        const calls: ToolCallRequest[] = [];
        steps.forEach((kind, i) => {
          if (kind === 'refund') calls.push(call(`r${i}`, 'refund', { amount: i }));
          else if (kind === 'plain') calls.push(call(`p${i}`, 'create_ticket', { title: `t${i}` }));
          else if (kind === 'unknown') calls.push(call(`x${i}`, 'drop_database'));
          else calls.push(call(calls[0]?.callId ?? `p${i}`, 'create_ticket', { title: 'again' }));
        });
        const firstRefund = calls.find((c) => c.toolName === 'refund')?.callId;
        const { runs } = await runApprovingAll([calls], maxToolCalls, failFirstDescribe && firstRefund !== undefined ? [firstRefund] : []);
        expect(runs.filter((r) => r.toolName === 'refund' && r.expectedIntentDigest === undefined).map((r) => r.callId)).toEqual([]);
        expect(runs.length).toBeLessThanOrEqual(maxToolCalls);
      }),
      { seed: 20261204, numRuns: 12 },
    );
  });
});
