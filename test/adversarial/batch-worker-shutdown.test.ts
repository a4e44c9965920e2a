/**
 * Adversarial (batch tools): a worker shutting down (SIGTERM) mid-batch is not a
 * cancellation of the run. The batch fence stops at an item boundary on any cancellation of its
 * activity (the SDK also aborts the signal with WORKER_SHUTDOWN, or when a heartbeat times out)
 * and throws a CancelledFailure carrying its batch report. When that attempt is the call's last
 * (a `maximumAttempts` the run's activity options allow), the run must not report that it was
 * cancelled (nobody cancelled it) nor list the remaining items as "not applied" for good as if
 * the run had been stopped by a person (the agent workflow reads a CancelledFailure cause as "the
 * workflow was cancelled": agent-run-base.ts callActivity → `isCancellation`).
 *
 * Holds today: the SDK reports the shut-down attempt as a WorkerShutdown failure, not the
 * activity's CancelledFailure, so the run pauses on the call (a person settles it) and is not
 * stopped as cancelled. A real dev server, the real agentWorkflow, a fake tool activity that
 * behaves as the batch fence does on shutdown (waits for its cancellation signal, throws
 * CancelledFailure with the report).
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import type { BatchCancellationReport } from '../../src/activities/contract/batch-items';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { agentWorkflow, runStatusQuery } from '../../src/workflows';
import { activitiesOf, baseInput, call, endTurn, fakeTools, scriptedModel, toolTurn, useAgentTestEnv, waitForStatus } from '../helpers/agent-harness';
import { installQuietTemporalRuntime } from '../helpers/temporal';

installQuietTemporalRuntime();
jest.setTimeout(60_000);

const harness = useAgentTestEnv('dev');

test("a worker shut down mid-batch on the call's last attempt: the run is not reported as cancelled; it pauses on the call", async () => {
  const env = harness.env;
  const taskQueue = `shutdown-${Date.now()}`;
  let started: () => void = () => undefined;
  const running = new Promise<void>((r) => (started = r));
  const report: BatchCancellationReport = {
    total: 10,
    applied: { count: 3, keys: ['n1', 'n2', 'n3'] },
    notApplied: { count: 7, keys: ['n4', 'n5', 'n6', 'n7', 'n8', 'n9', 'n10'] },
    unknown: { count: 0, keys: [] },
    truncated: false,
  };
  const tools = fakeTools(async (_input: FencedToolInput): Promise<FencedToolResult | undefined> => {
    const signal = Context.current().cancellationSignal;
    started();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    // What the batch fence throws at the next item boundary once its activity's signal aborts.
    throw new CancelledFailure(`send_email call was cancelled after 3 of 10 items: 3 applied, 7 not applied, 0 unknown`, [{ batch: report }]);
  });
  const model = scriptedModel([toolTurn('Sending.', call('b1', 'send_email', { to: 'all' })), endTurn('Done.')]);
  const activities = activitiesOf(model, tools);
  const input = baseInput({ activityOptions: { retry: { maximumAttempts: 1 } } });
  const first = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: harness.workflowBundle, activities, shutdownGraceTime: '5s' });
  const firstRun = first.run();
  const handle = await env.client.workflow.start(agentWorkflow, { taskQueue, workflowId: `run-${taskQueue}`, args: [input] });
  await running;
  first.shutdown(); // SIGTERM: the worker cancels its running activities with WORKER_SHUTDOWN
  await firstRun;
  const second = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: harness.workflowBundle, activities });
  // The SDK reports the shut-down attempt as a WorkerShutdown failure (not the batch's CancelledFailure): the run pauses on the call for a person.
  const status = await second.runUntil(async () => {
    await waitForStatus(handle, (st) => st.phase === 'paused');
    return handle.query(runStatusQuery);
  });
  expect([status.phase, status.stoppedBecause, status.paused?.callId]).toEqual(['paused', null, 'b1']);
  await handle.terminate();
});
