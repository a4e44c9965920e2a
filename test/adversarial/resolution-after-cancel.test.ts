/**
 * A resolution applies only to the pause the person saw, also when it waits to be taken. The validator checks the
 * pause when the update arrives, but the handler leaves the request in `this.resolution` until
 * the run consumes it. When a cancel reaches the run in the same workflow task as a resolution
 * (the worker was away, or busy, while both arrived), `awaitResolution` returns the cancel stop
 * and leaves the resolution pending; the run then compensates (`compensateOn`), pauses AGAIN on
 * every unsettled call in model order (new pause ids), and the first of those waits,
 * `condition(() => this.resolution !== null)`, takes the stale request at once.
 *
 * Here the run waits on c2 (ship; its outcome was lost first), while c1 (charge) is also
 * unsettled. A person resolves c2 `applied` with c2's shipment id for pause `c2#1`; a cancel
 * arrives with it. Before the fix the run stored c2's result as c1's outcome (resolveToolCall
 * for c1) and answered the update for c2 with `callId: 'c1'`; now the waiting decision is refused
 * (STALE_PAUSE) when it is taken for another pause.
 */
import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import type { FencedToolInput, FencedToolResult, ResolveToolCallInput, ResolveToolCallResult } from '../../src/activities/contract/contract';
import type { CompensateToolCallInput, CompensateToolCallResult } from '../../src/activities/contract/compensation-contract';
import { toolCallActivities } from '../../src/activities/agent/tool-call-activities';
import { agentWorkflow, cancelRunSignal, resolveOutcomeUpdate } from '../../src/workflows';
import { baseInput, call, okResult, outcomeUnknown, scriptedModel, toolTurn, useAgentTestEnv, waitForStatus } from '../helpers/agent-harness';
import { installQuietTemporalRuntime } from '../helpers/temporal';
import { releaseReplayHooks } from '../helpers/replay-hooks';

afterEach(releaseReplayHooks);
installQuietTemporalRuntime();
jest.setTimeout(120_000);

const harness = useAgentTestEnv('dev');
const TOOLS = ['charge', 'ship'];

it('a resolution of c2 that arrives with a cancel is applied to c2, never to c1', async () => {
  const resolved: ResolveToolCallInput[] = [];
  const model = scriptedModel([toolTurn('Charge and ship.', call('c1', 'charge', { cents: 500 }), call('c2', 'ship', { to: 'Oslo' }))]);
  const runFencedTool = async (input: FencedToolInput): Promise<FencedToolResult> => {
    if (Context.current().info.attempt > 1) return okResult(input);
    // c2's answer is lost first; c1's a moment later: the run pauses on c2, then on c1.
    if (input.toolName === 'charge') await new Promise((r) => setTimeout(r, 1500));
    throw outcomeUnknown(`${input.toolName}: the answer was lost`);
  };
  const activities = {
    ...toolCallActivities(TOOLS, runFencedTool),
    runModelTurn: model.runModelTurn,
    runFencedTool,
    describeToolCall: async () => {
      throw new Error('no approvals here');
    },
    resolveToolCall: async (input: ResolveToolCallInput): Promise<ResolveToolCallResult> => {
      resolved.push(input);
      return { callId: input.callId, toolName: input.toolName, toolRevision: '1', outcome: input.result!, idempotencyKey: `key-${input.callId}`, intentDigest: null };
    },
    compensateToolCall: async (_input: CompensateToolCallInput): Promise<CompensateToolCallResult> => ({ declared: false }) as CompensateToolCallResult,
  };
  const env = harness.env;
  const taskQueue = `attack-misapplied-${Date.now()}`;
  const workerOptions = { connection: env.nativeConnection, taskQueue, workflowBundle: harness.workflowBundle, activities, maxCachedWorkflows: 0 };
  const handle = await env.client.workflow.start(agentWorkflow, {
    taskQueue,
    workflowId: `run-${taskQueue}`,
    args: [baseInput({ tools: TOOLS, toolConcurrency: 2, compensateOn: ['BUSINESS_REJECTION'] })],
  });
  // Worker A: the run pauses on c2 (c1 is paused too, deferred).
  const seen = await (await Worker.create(workerOptions)).runUntil(() => waitForStatus(handle, (s) => s.paused?.callId === 'c2'));
  expect(seen.calls.map((c) => [c.callId, c.status])).toEqual([
    ['c1', 'paused'],
    ['c2', 'paused'],
  ]);

  // No worker: a cancel and the person's decision about c2 arrive together.
  await handle.signal(cancelRunSignal, { reason: 'operator stops the order' });
  const decision = handle.executeUpdate(resolveOutcomeUpdate, {
    args: [{ callId: 'c2', pauseId: seen.paused!.pauseId, resolution: 'applied', result: { shipmentId: 'sh_c2' }, reason: 'found the shipment', by: 'bob' }],
  });
  decision.catch(() => undefined);
  await new Promise((r) => setTimeout(r, 1000));

  const { answer, status } = await (
    await Worker.create(workerOptions)
  ).runUntil(async () => {
    const answer = await decision.then(
      (r) => r,
      (e: { cause?: { type?: string } }) => ({ refused: e.cause?.type }),
    );
    const status = await waitForStatus(handle, (s) => s.phase === 'paused');
    return { answer, status };
  });
  await handle.terminate('attack test done').catch(() => undefined);

  const c1 = status.calls.find((c) => c.callId === 'c1')!;
  // Refused (the run stopped) or applied to c2: either is fine; applied to c1 never is.
  expect({
    answeredFor: (answer as { callId?: string }).callId ?? 'refused',
    storedForC1: resolved.filter((r) => r.callId === 'c1').map((r) => r.result),
    c1: [c1.status, c1.decisions?.map((d) => [d.by, d.pauseId])],
  }).toEqual({ answeredFor: expect.not.stringMatching(/^c1$/), storedForC1: [], c1: ['paused', undefined] });
});
