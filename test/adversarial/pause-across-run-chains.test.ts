/**
 * A pause id names the run chain too. A workflow id can be used again once its run chain ended
 * (terminated, failed, completed), and the model of the new chain can name its calls as before
 * (`c1`): the new chain's first pause would then have the same id as the old chain's (`c1#1`),
 * and a person's decision taken on the old chain's page, sent by workflow id, would settle the
 * new chain's call. The run refuses it (STALE_PAUSE): the pause id carries the chain
 * (`firstExecutionRunId`), so the two pauses differ.
 */
import { Worker } from '@temporalio/worker';
import { agentWorkflow, resolveOutcomeUpdate } from '../../src/workflows';
import {
  activitiesOf,
  baseInput,
  call,
  fakeTools,
  outcomeUnknown,
  scriptedModel,
  toolTurn,
  updateFailureType,
  useAgentTestEnv,
  waitForStatus,
  endTurn,
} from '../helpers/agent-harness';
import { installQuietTemporalRuntime } from '../helpers/temporal';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const harness = useAgentTestEnv();

it('a decision taken on an ended run chain is refused by the next chain with the same workflow id and call id', async () => {
  const model = scriptedModel([toolTurn('Charging.', call('c1', 'refund', { cents: 500 })), toolTurn('Charging.', call('c1', 'refund', { cents: 500 })), endTurn('Done.')]);
  const tools = fakeTools(async (input) => {
    throw outcomeUnknown(`${input.toolName}: the answer was lost`);
  });
  const taskQueue = `chains-${Date.now()}`;
  const workflowId = `order-${taskQueue}`;
  const worker = await Worker.create({ connection: harness.env.nativeConnection, taskQueue, workflowBundle: harness.workflowBundle, activities: activitiesOf(model, tools) });
  const outcome = await worker.runUntil(async () => {
    const first = await harness.env.client.workflow.start(agentWorkflow, { taskQueue, workflowId, args: [baseInput()] });
    // A person reads the first chain's pause, and decides later; meanwhile the chain is terminated.
    const seen = (await waitForStatus(first, (s) => s.paused?.callId === 'c1')).paused!;
    await first.terminate('replaced by a new run');
    const second = await harness.env.client.workflow.start(agentWorkflow, { taskQueue, workflowId, args: [baseInput()] });
    const waiting = (await waitForStatus(second, (s) => s.paused?.callId === 'c1')).paused!;
    // The decision reaches the workflow id, which now names the second chain.
    const byId = harness.env.client.workflow.getHandle(workflowId);
    const stale = await updateFailureType(
      byId.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'c1', pauseId: seen.pauseId, resolution: 'applied', result: { refundId: 're_old' }, reason: 'seen on the old page', by: 'alice' }],
      }),
    );
    const storedAfterStale = tools.resolved.length;
    await byId.executeUpdate(resolveOutcomeUpdate, { args: [{ callId: 'c1', pauseId: waiting.pauseId, resolution: 'absent', reason: 'not in the ledger', by: 'bob' }] });
    await second.terminate('test done');
    return { seen: seen.pauseId, waiting: waiting.pauseId, stale, storedAfterStale };
  });

  expect(outcome.waiting).not.toBe(outcome.seen);
  expect({ stale: outcome.stale, storedAfterStale: outcome.storedAfterStale }).toEqual({ stale: 'STALE_PAUSE', storedAfterStale: 0 });
});
