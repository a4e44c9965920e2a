// Workflow side: compensations of applied effects (saga) and batch-item pauses in
// agentWorkflow, on a real dev server with recording fake activities (one server for the file).
// The worker side (compensateToolCall, the batch fence) is faked here; real-worker end-to-end
// tests live with the crash scenarios.
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import type { FencedToolInput, FencedToolResult, ResolveToolCallInput, ResolveToolCallResult, ToolOutcome } from '../../src/activities/contract/contract';
import type { CompensateToolCallInput, CompensateToolCallResult } from '../../src/activities/contract/compensation-contract';
import { toolCallActivities } from '../../src/activities/agent/tool-call-activities';
import type { BatchCancellationReport } from '../../src/activities/contract/batch-items';
import { cancelRunSignal, resolveOutcomeUpdate } from '../../src/workflows';
import type { ToolActivities } from '../../src/workflows/agent/activity-types';
import type { AgentWorkflowInput, RunStatusView } from '../../src/workflows/agent/types';
import {
  baseInput,
  call,
  deferred,
  endTurn,
  okResult,
  outcomeUnknown,
  scriptedModel,
  toolTurn,
  useAgentTestEnv,
  waitForStatus,
  currentPauseId,
  pauseIdLike,
} from '../helpers/agent-harness';
import { installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { runCli, type CliOutput } from '../helpers/cli';
import { temporalOperations } from '../../src/console/operations';
import { DecisionRefusedError } from '../../src/operator/run-decisions';
import { releaseReplayHooks } from '../helpers/replay-hooks';

// Replays leave a process-wide promise hook that slows every later suite (see the helper).
afterEach(releaseReplayHooks);

installQuietTemporalRuntime();

const harness = useAgentTestEnv('dev');

/** `ttc <args>` against the file's dev server. */
function cli(...args: string[]): Promise<CliOutput> {
  const { devServer } = harness.env as LocalTestEnv;
  return runCli(args, { ...process.env, TEMPORAL_ADDRESS: devServer.address, TEMPORAL_NAMESPACE: devServer.namespace });
}
const TOOLS = ['reserve', 'charge', 'ship', 'notify'];

type ToolBehaviour = (input: FencedToolInput, attempt: number) => Promise<FencedToolResult | undefined>;
type CompensationBehaviour = (input: CompensateToolCallInput) => Promise<CompensateToolCallResult | undefined>;

/** Recording fakes of the tool, resolve and compensate activities; `undefined` from a behaviour = ok. */
function fakes(tool: ToolBehaviour = async () => undefined, compensate: CompensationBehaviour = async () => undefined) {
  const runs: FencedToolInput[] = [];
  const resolved: ResolveToolCallInput[] = [];
  const compensations: CompensateToolCallInput[] = [];
  const runFencedTool = async (input: FencedToolInput): Promise<FencedToolResult> => {
    runs.push(input);
    return (await tool(input, Context.current().info.attempt)) ?? okResult(input);
  };
  const activities = (model: ReturnType<typeof scriptedModel>): ToolActivities & { compensateToolCall: typeof compensateToolCall } => ({
    ...toolCallActivities(TOOLS, runFencedTool),
    runModelTurn: model.runModelTurn,
    runFencedTool,
    describeToolCall: async () => {
      throw new Error('no call of these tests needs approval');
    },
    resolveToolCall: async (input: ResolveToolCallInput): Promise<ResolveToolCallResult> => {
      resolved.push(input);
      const outcome = input.result ?? { ok: false, error: { type: 'RESOLVED_ABSENT', message: 'proven absent' } };
      return { callId: input.callId, toolName: input.toolName, toolRevision: '1', outcome, idempotencyKey: `key-${input.callId}`, intentDigest: null };
    },
    compensateToolCall,
  });
  async function compensateToolCall(input: CompensateToolCallInput): Promise<CompensateToolCallResult> {
    compensations.push(input);
    return (await compensate(input)) ?? compensated(input, { ok: true, output: { undone: input.toolName }, receipt: { undoId: `u-${input.callId}` } });
  }
  return { runs, resolved, compensations, activities };
}

function compensated(input: CompensateToolCallInput, outcome: ToolOutcome): CompensateToolCallResult {
  const toolName = `${input.toolName}~compensation`;
  return {
    declared: true,
    compensation: { toolName, toolRevision: 'c1' },
    result: {
      callId: input.callId,
      toolName,
      toolRevision: 'c1',
      source: 'executed',
      outcome,
      idempotencyKey: `ttcc-${input.callId}-${input.compensationGeneration}`,
      intentDigest: null,
    },
  };
}

function rejected(input: FencedToolInput): FencedToolResult {
  return { ...okResult(input), outcome: { ok: false, error: { type: 'BUSINESS_REJECTION', message: 'no carrier serves this address' } } };
}

function sagaInput(overrides: Partial<AgentWorkflowInput> = {}): AgentWorkflowInput {
  return baseInput({ tools: TOOLS, compensateOn: ['BUSINESS_REJECTION'], ...overrides });
}

const order = () => toolTurn('Placing the order.', call('r1', 'reserve', { sku: 'A' }), call('c1', 'charge', { cents: 500 }), call('s1', 'ship', { to: 'Oslo' }));

describe('agentWorkflow compensations', () => {
  it('reserve → charge → ship rejected with a compensateOn type: charge then reserve are compensated once each, in that order; the result lists the effects', async () => {
    const model = scriptedModel([order()]);
    const f = fakes(async (input) => (input.toolName === 'ship' ? rejected(input) : undefined));
    const { result, history } = await harness.withRun(f.activities(model), sagaInput(), async (handle) => ({
      result: await handle.result(),
      history: await handle.fetchHistory(),
    }));

    expect(result).toMatchObject({ status: 'incomplete', stoppedBecause: 'compensate-on', turns: 1 });
    await expect(Worker.runReplayHistory({ workflowBundle: harness.workflowBundle }, history)).resolves.toBeUndefined();
    expect(result.reason).toContain('BUSINESS_REJECTION');
    expect(f.compensations.map((c) => [c.callId, c.toolName, c.role, c.compensationGeneration, c.input])).toEqual([
      ['c1', 'charge', 'compensation', 1, { cents: 500 }],
      ['r1', 'reserve', 'compensation', 1, { sku: 'A' }],
    ]);
    expect(result.effects).toEqual({ applied: [], compensated: ['r1', 'c1'], compensationPending: [], notRun: ['s1'], unknown: [] });
    expect(result.calls.find((c) => c.callId === 'c1')!.compensation).toEqual({
      status: 'compensated',
      generation: 1,
      toolName: 'charge~compensation',
      toolRevision: 'c1',
      source: 'executed',
      outcome: { ok: true, output: { undone: 'charge' }, receipt: { undoId: 'u-c1' } },
      idempotencyKey: 'ttcc-c1-1',
      errorType: null,
      reason: null,
    });
    expect(result.calls.find((c) => c.callId === 's1')!.compensation).toBeUndefined();
  });

  it("`ttc show` prints a refused call as refused with its error, every compensation, and the stopped run's effects", async () => {
    const model = scriptedModel([order()]);
    const f = fakes(async (input) => (input.toolName === 'ship' ? rejected(input) : undefined));
    const { workflowId, text, json } = await harness.withRun(f.activities(model), sagaInput(), async (handle) => {
      await handle.result();
      // The worker still runs: the closed run answers its status query.
      return { workflowId: handle.workflowId, text: await cli('show', handle.workflowId), json: await cli('show', handle.workflowId, '--json') };
    });
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^s1\s+ship\s+completed, refused\s+executed\s+BUSINESS_REJECTION: no carrier serves this address$/));
    expect(lines).toContainEqual('compensation of c1: compensated by charge~compensation revision c1 (generation 1, source executed, key ttcc-c1-1)');
    expect(lines).toContainEqual('compensation of r1: compensated by reserve~compensation revision c1 (generation 1, source executed, key ttcc-r1-1)');
    expect(lines).toContainEqual('effects: applied none; compensated r1, c1; compensation pending none; not run s1; unknown none');
    expect(JSON.parse(json.stdout)).toMatchObject({
      stoppedBecause: 'compensate-on',
      effects: { applied: [], compensated: ['r1', 'c1'], compensationPending: [], notRun: ['s1'], unknown: [] },
    });
    expect(workflowId).toMatch(/^run-/);
  });

  it('calls of a turn run at once: compensations undo them in the reverse order they applied, not the model order', async () => {
    const model = scriptedModel([order()]);
    const reserveMayFinish = deferred();
    const shipMayFinish = deferred();
    const f = fakes(async (input) => {
      if (input.toolName === 'reserve') await reserveMayFinish.promise;
      if (input.toolName !== 'ship') return undefined;
      await shipMayFinish.promise;
      return rejected(input);
    });
    const result = await harness.withRun(f.activities(model), sagaInput({ toolConcurrency: 3 }), async (handle) => {
      const statusOf = (s: RunStatusView, callId: string) => s.calls.find((c) => c.callId === callId)?.status;
      await waitForStatus(handle, (s) => statusOf(s, 'c1') === 'completed');
      reserveMayFinish.resolve();
      await waitForStatus(handle, (s) => statusOf(s, 'r1') === 'completed');
      shipMayFinish.resolve();
      return handle.result();
    });

    expect(result.stoppedBecause).toBe('compensate-on');
    expect(f.compensations.map((c) => c.callId)).toEqual(['r1', 'c1']);
  });

  it('without compensateOn nothing is compensated and the model reads the rejection (runs without a compensation policy behave as they did)', async () => {
    const model = scriptedModel([order(), endTurn('Shipping failed.')]);
    const f = fakes(async (input) => (input.toolName === 'ship' ? rejected(input) : undefined));
    const result = await harness.withRun(f.activities(model), sagaInput({ compensateOn: undefined }), (handle) => handle.result());

    expect(result).toMatchObject({ status: 'completed', stoppedBecause: 'model-stopped' });
    expect(f.compensations).toEqual([]);
    expect(result.effects).toEqual({ applied: ['r1', 'c1'], compensated: [], compensationPending: [], notRun: ['s1'], unknown: [] });
  });

  it('a cancel in the middle: the call cut off pauses first; proven absent it is not compensated; the applied one is; a tool without compensation stays applied', async () => {
    const model = scriptedModel([order()]);
    const charging = deferred();
    const f = fakes(
      async (input) => {
        if (input.toolName !== 'charge') return undefined;
        charging.resolve();
        const ctx = Context.current();
        for (;;) {
          ctx.heartbeat();
          await ctx.sleep(50);
        }
      },
      async (input) => (input.toolName === 'reserve' ? undefined : { declared: false }),
    );
    const { result, paused, answer } = await harness.withRun(f.activities(model), sagaInput({ activityOptions: { heartbeatTimeoutMs: 1_000 } }), async (handle) => {
      await charging.promise;
      await handle.signal(cancelRunSignal, { reason: 'customer cancelled' });
      const paused = await waitForStatus(handle, (s) => s.phase === 'paused');
      expect(f.compensations).toEqual([]);
      const answer = await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'c1', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'no charge in the provider log' }],
      });
      return { result: await handle.result(), paused, answer };
    });

    expect(paused.paused).toMatchObject({ callId: 'c1', toolName: 'charge' });
    expect(paused.paused!.role).toBeUndefined();
    expect(answer).toEqual({ callId: 'c1', pauseId: paused.paused!.pauseId, resolution: 'absent', status: 'resolved-absent', retryCallId: null });
    expect(paused.paused!.pauseId).toMatch(/^c1#1\.[0-9a-f]{12}$/);
    expect(result).toMatchObject({ status: 'cancelled', stoppedBecause: 'cancel', reason: 'customer cancelled' });
    expect(f.runs.map((r) => r.callId)).toEqual(['r1', 'c1']);
    expect(f.compensations.map((c) => c.callId)).toEqual(['r1']);
    expect(result.effects).toEqual({ applied: [], compensated: ['r1'], compensationPending: [], notRun: ['c1', 's1'], unknown: [] });
  });

  it('a run a person abandons on an unknown call compensates the calls applied before it; the abandoned call is not compensated', async () => {
    const model = scriptedModel([order()]);
    const f = fakes(async (input) => {
      if (input.toolName === 'charge') throw outcomeUnknown('charge: the provider timed out');
      return undefined;
    });
    const result = await harness.withRun(f.activities(model), sagaInput(), async (handle) => {
      await waitForStatus(handle, (s) => s.phase === 'paused');
      await handle.executeUpdate(resolveOutcomeUpdate, { args: [{ callId: 'c1', pauseId: await currentPauseId(handle), resolution: 'abandon', reason: 'the customer gave up' }] });
      return handle.result();
    });

    expect(result).toMatchObject({ status: 'abandoned', stoppedBecause: 'abandon' });
    expect(f.compensations.map((c) => c.callId)).toEqual(['r1']);
    expect(result.effects).toEqual({ applied: [], compensated: ['r1'], compensationPending: [], notRun: ['s1'], unknown: ['c1'] });
  });

  it('a cancel through Temporal (handle.cancel) still compensates, in a non-cancellable scope', async () => {
    const model = scriptedModel([toolTurn('Reserving.', call('r1', 'reserve')), toolTurn('Charging.', call('c1', 'charge'))]);
    const charging = deferred();
    const f = fakes(
      async (input) => {
        if (input.toolName !== 'charge') return undefined;
        charging.resolve();
        const ctx = Context.current();
        for (;;) {
          ctx.heartbeat();
          await ctx.sleep(50);
        }
      },
      async (input) => {
        if (input.toolName === 'charge') throw new Error('the cut-off charge must not be compensated');
        return undefined;
      },
    );
    const outcome = await harness.withRun(f.activities(model), sagaInput({ activityOptions: { heartbeatTimeoutMs: 1_000 } }), async (handle) => {
      await charging.promise;
      await handle.cancel();
      await waitForStatus(handle, (s) => s.phase === 'paused' && s.paused?.callId === 'c1');
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'c1', pauseId: await currentPauseId(handle), resolution: 'abandon', reason: 'finance checks it by hand' }],
      });
      const closed = await handle.result().then(
        (result) => ({ status: result.status, effects: result.effects }),
        (error: Error) => ({ failed: error.name }),
      );
      await expect(Worker.runReplayHistory({ workflowBundle: harness.workflowBundle }, await handle.fetchHistory())).resolves.toBeUndefined();
      return closed;
    });

    expect(f.compensations.map((c) => c.callId)).toEqual(['r1']);
    // The run closes as Temporal cancelled it, after the compensation ran.
    expect(outcome).toEqual({ failed: 'WorkflowFailedError' });
  });

  it('a cancel through Temporal while the run waits for a person (paused on a call) compensates before the run closes cancelled', async () => {
    const model = scriptedModel([order()]);
    const f = fakes(async (input) => {
      if (input.toolName === 'charge') throw outcomeUnknown('charge: the provider timed out');
      return undefined;
    });
    const outcome = await harness.withRun(f.activities(model), sagaInput(), async (handle) => {
      await waitForStatus(handle, (s) => s.phase === 'paused' && s.paused?.callId === 'c1');
      await handle.cancel();
      // The unknown charge is settled by a person first; proven absent, it is not compensated.
      await waitForStatus(handle, (s) => s.phase === 'paused' && s.paused?.callId === 'c1' && f.compensations.length === 0);
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'c1', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'no charge at the provider' }],
      });
      const closed = await handle.result().then(
        () => 'completed',
        (error: Error) => error.name,
      );
      await expect(Worker.runReplayHistory({ workflowBundle: harness.workflowBundle }, await handle.fetchHistory())).resolves.toBeUndefined();
      return closed;
    });
    expect(outcome).toBe('WorkflowFailedError');
    expect(f.compensations.map((c) => c.callId)).toEqual(['r1']);
  });

  it('a compensation the provider refuses pauses for a person (role compensation); "applied" stores it through resolveToolCall and the next one runs', async () => {
    const model = scriptedModel([order()]);
    const f = fakes(
      async (input) => (input.toolName === 'ship' ? rejected(input) : undefined),
      async (input) => (input.toolName === 'charge' ? compensated(input, { ok: false, error: { type: 'REFUND_REFUSED', message: 'the card was closed' } }) : undefined),
    );
    const { result, status, answer } = await harness.withRun(f.activities(model), sagaInput(), async (handle) => {
      const status = await waitForStatus(handle, (s) => s.phase === 'paused');
      expect(f.compensations.map((c) => c.callId)).toEqual(['c1']);
      const answer = await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [
          {
            callId: 'c1',
            pauseId: await currentPauseId(handle),
            resolution: 'applied',
            result: { refunded: 500, by: 'bank transfer' },
            receipt: { transfer: 't-9' },
            reason: 'refunded by transfer',
          },
        ],
      });
      return { result: await handle.result(), status, answer };
    });

    expect(status.paused).toMatchObject({ callId: 'c1', role: 'compensation', errorType: 'REFUND_REFUSED' });
    expect(status.pendingCalls).toEqual([expect.objectContaining({ callId: 'c1', status: 'paused', role: 'compensation', errorType: 'REFUND_REFUSED' })]);
    expect(answer).toEqual({
      callId: 'c1',
      pauseId: pauseIdLike('c1/compensation@1#1'),
      resolution: 'applied',
      status: 'resolved-applied',
      retryCallId: null,
      role: 'compensation',
    });
    expect(f.resolved).toEqual([
      expect.objectContaining({
        callId: 'c1',
        toolName: 'charge',
        role: 'compensation',
        compensationGeneration: 1,
        resolution: 'applied',
        result: { ok: true, output: { refunded: 500, by: 'bank transfer' }, receipt: { transfer: 't-9' } },
        reason: 'refunded by transfer',
      }),
    ]);
    expect(f.compensations.map((c) => c.callId)).toEqual(['c1', 'r1']);
    expect(result.effects).toEqual({ applied: [], compensated: ['r1', 'c1'], compensationPending: [], notRun: ['s1'], unknown: [] });
    expect(result.calls.find((c) => c.callId === 'c1')!.compensation).toMatchObject({ status: 'compensated', source: 'resolution' });
  });

  it('a compensation of unknown outcome: "absent" runs it again as generation 2; "abandon" leaves it pending and the others still run', async () => {
    const model = scriptedModel([order()]);
    const f = fakes(
      async (input) => (input.toolName === 'ship' ? rejected(input) : undefined),
      async (input) => {
        if (input.toolName === 'charge') throw outcomeUnknown('refund: the provider timed out');
        return undefined;
      },
    );
    const { result, rerun } = await harness.withRun(f.activities(model), sagaInput(), async (handle) => {
      const first = (s: RunStatusView) => s.paused?.role === 'compensation' && f.compensations.length === 1;
      await waitForStatus(handle, first);
      const rerun = await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'c1', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'no refund in the provider log' }],
      });
      await waitForStatus(handle, (s) => s.paused?.role === 'compensation' && f.compensations.length === 2);
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'c1', pauseId: await currentPauseId(handle), resolution: 'abandon', reason: 'finance refunds by hand' }],
      });
      return { result: await handle.result(), rerun };
    });

    expect(rerun).toEqual({
      callId: 'c1',
      pauseId: pauseIdLike('c1/compensation@1#1'),
      resolution: 'absent',
      status: 'resolved-absent',
      retryCallId: null,
      role: 'compensation',
      compensationGeneration: 2,
    });
    expect(f.compensations.map((c) => [c.callId, c.compensationGeneration])).toEqual([
      ['c1', 1],
      ['c1', 2],
      ['r1', 1],
    ]);
    expect(result.effects).toEqual({ applied: [], compensated: ['r1'], compensationPending: ['c1'], notRun: ['s1'], unknown: [] });
    expect(result.calls.find((c) => c.callId === 'c1')!.compensation).toMatchObject({ status: 'pending', generation: 2, errorType: 'OUTCOME_UNKNOWN' });
    expect(result.calls.find((c) => c.callId === 'c1')!.compensation!.reason).toContain('abandoned by a person: finance refunds by hand');
  });
});

describe('agentWorkflow batch calls', () => {
  const itemUnknown = (generation: number) =>
    ApplicationFailure.create({
      type: 'OUTCOME_UNKNOWN',
      message: `OUTCOME_UNKNOWN: item n20 of the batch may have been sent`,
      nonRetryable: true,
      details: [{ item: { key: 'n20', generation, index: 19, idempotencyKey: `ttci-n20-${generation}` } }],
    });

  it('`ttc show` names the paused item counted from 1 with its keys; `ttc resolve --applied` says the item is not sent again and the call resumes after it', async () => {
    const model = scriptedModel([toolTurn('Notifying.', call('b1', 'notify', { to: 'all' })), endTurn('Sent.')]);
    const paused = ApplicationFailure.create({
      type: 'OUTCOME_UNKNOWN',
      message: 'OUTCOME_UNKNOWN: item "n20" (20 of 100, generation 1) of notify call "b1": the answer was lost',
      nonRetryable: true,
      details: [
        {
          callId: 'b1',
          toolName: 'notify',
          toolRevision: 'v7',
          idempotencyKey: 'ttc2-b1',
          item: { key: 'n20', generation: 1, index: 19, total: 100, idempotencyKey: 'ttci-n20-1' },
        },
      ],
    });
    const f = fakes(async () => {
      if (f.runs.length === 1) throw paused;
      return undefined;
    });
    const { pauseId, shown, resolved, result } = await harness.withRun(f.activities(model), baseInput({ tools: TOOLS }), async (handle) => {
      await waitForStatus(handle, (s) => s.phase === 'paused');
      const pauseId = await currentPauseId(handle);
      const shown = await cli('show', handle.workflowId);
      const resolved = await cli(
        'resolve',
        handle.workflowId,
        'b1',
        '--applied',
        JSON.stringify({ messageId: 'm-20' }),
        '--reason',
        'n20 is in the provider log',
        '--pause',
        pauseId,
      );
      return { pauseId, shown, resolved, result: await handle.result() };
    });
    expect(pauseId).toEqual(pauseIdLike('b1/item:n20@1#1'));
    expect(shown.stdout).toContain(
      `paused on b1 (notify revision v7, key ttc2-b1; item "n20" (20 of 100, generation 1), item key ttci-n20-1); pause ${pauseId} (ttc resolve … --pause ${pauseId}): OUTCOME_UNKNOWN: `,
    );
    expect(resolved).toEqual({
      code: 0,
      stdout:
        'resolved b1 as applied: call status resolved-applied; item "n20" (generation 1) is stored as applied and is not sent again; call b1 runs again and resumes the batch after it\n',
      stderr: '',
    });
    expect(result.status).toBe('completed');
    expect(f.runs).toHaveLength(2);
  });

  it('an item pause routes "absent" then "applied" to the item (resolveToolCall with item) and reruns the same call each time', async () => {
    const model = scriptedModel([toolTurn('Notifying.', call('b1', 'notify', { to: 'all' })), endTurn('Sent.')]);
    const f = fakes(async () => {
      const run = f.runs.length;
      if (run === 1) throw itemUnknown(1);
      if (run === 2) throw itemUnknown(2);
      return undefined;
    });
    const { result, paused, answers } = await harness.withRun(f.activities(model), baseInput({ tools: TOOLS }), async (handle) => {
      const paused = await waitForStatus(handle, (s) => s.phase === 'paused' && f.runs.length === 1);
      const absent = await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'b1', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'n20 not in the provider log' }],
      });
      await waitForStatus(handle, (s) => s.phase === 'paused' && f.runs.length === 2);
      const applied = await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'b1', pauseId: await currentPauseId(handle), resolution: 'applied', result: { messageId: 'm-20' }, receipt: { id: 'm-20' }, reason: 'n20 is in the log' }],
      });
      return { result: await handle.result(), paused, answers: [absent, applied] };
    });

    expect(paused.paused).toMatchObject({ callId: 'b1', errorType: 'OUTCOME_UNKNOWN', item: { key: 'n20', generation: 1, index: 19, idempotencyKey: 'ttci-n20-1' } });
    expect(paused.pendingCalls).toEqual([
      expect.objectContaining({ callId: 'b1', status: 'paused', item: { key: 'n20', generation: 1, index: 19, idempotencyKey: 'ttci-n20-1' } }),
    ]);
    expect(answers).toEqual([
      { callId: 'b1', pauseId: pauseIdLike('b1/item:n20@1#1'), resolution: 'absent', status: 'resolved-absent', retryCallId: 'b1', item: { key: 'n20', generation: 1 } },
      { callId: 'b1', pauseId: pauseIdLike('b1/item:n20@2#2'), resolution: 'applied', status: 'resolved-applied', retryCallId: 'b1', item: { key: 'n20', generation: 2 } },
    ]);
    expect(f.resolved.map((r) => [r.callId, r.resolution, r.item, r.result])).toEqual([
      ['b1', 'absent', { key: 'n20', generation: 1 }, undefined],
      ['b1', 'applied', { key: 'n20', generation: 2 }, { ok: true, output: { messageId: 'm-20' }, receipt: { id: 'm-20' } }],
    ]);
    expect(f.runs.map((r) => [r.callId, r.input])).toEqual([
      ['b1', { to: 'all' }],
      ['b1', { to: 'all' }],
      ['b1', { to: 'all' }],
    ]);
    expect(result.status).toBe('completed');
    expect(result.calls.map((c) => [c.callId, c.status, c.item])).toEqual([['b1', 'completed', undefined]]);
  });

  it.each([
    ['some items applied, none unknown', 20, 0, 'applied', 'ran'],
    ['no item applied, none unknown', 0, 0, 'notRun', 'notRun'],
    ['an item unknown', 20, 1, 'unknown', 'unknown'],
  ] as const)("a batch call cancelled part-way is grouped by its items in the run's effects and summary (%s)", async (_case, applied, unknown, effect, summary) => {
    const notApplied = 100 - applied - unknown;
    const report: BatchCancellationReport = {
      total: 100,
      applied: { count: applied, keys: Array.from({ length: applied }, (_, i) => `n${i + 1}`) },
      notApplied: { count: notApplied, keys: Array.from({ length: notApplied }, (_, i) => `n${applied + unknown + i + 1}`) },
      unknown: { count: unknown, keys: unknown === 0 ? [] : [`n${applied + 1}`] },
      truncated: false,
    };
    const model = scriptedModel([toolTurn('Notifying.', call('b1', 'notify', { to: 'all' }))]);
    const sending = deferred();
    const f = fakes(async () => {
      sending.resolve();
      const ctx = Context.current();
      try {
        for (;;) {
          ctx.heartbeat();
          await ctx.sleep(50);
        }
      } catch (error) {
        if (error instanceof CancelledFailure) throw new CancelledFailure('the batch stopped at an item boundary', [{ batch: report }]);
        throw error;
      }
    });
    const result = await harness.withRun(f.activities(model), baseInput({ tools: TOOLS, activityOptions: { heartbeatTimeoutMs: 1_000 } }), async (handle) => {
      await sending.promise;
      await handle.signal(cancelRunSignal, { reason: 'stop sending' });
      return handle.result();
    });
    expect(result.calls.map((c) => [c.callId, c.status, c.batch])).toEqual([['b1', 'unknown', report]]);
    const effects = { applied: [], compensated: [], compensationPending: [], notRun: [], unknown: [], [effect]: ['b1'] };
    expect(result.effects).toEqual(effects);
    expect(result.summary).toEqual({ ran: [], notRun: [], unknown: [], [summary]: ['b1'] });
  });

  it("a cancelled batch call reports its items applied / not applied / unknown from the activity's cancellation", async () => {
    const report: BatchCancellationReport = {
      total: 100,
      applied: { count: 20, keys: Array.from({ length: 20 }, (_, i) => `n${i + 1}`) },
      notApplied: { count: 80, keys: Array.from({ length: 80 }, (_, i) => `n${i + 21}`) },
      unknown: { count: 0, keys: [] },
      truncated: false,
    };
    const model = scriptedModel([toolTurn('Notifying.', call('b1', 'notify', { to: 'all' }))]);
    const sending = deferred();
    const f = fakes(async () => {
      sending.resolve();
      const ctx = Context.current();
      try {
        for (;;) {
          ctx.heartbeat();
          await ctx.sleep(50);
        }
      } catch (error) {
        if (error instanceof CancelledFailure) throw new CancelledFailure('the batch stopped at an item boundary', [{ batch: report }]);
        throw error;
      }
    });
    const result = await harness.withRun(f.activities(model), baseInput({ tools: TOOLS, activityOptions: { heartbeatTimeoutMs: 1_000 } }), async (handle) => {
      await sending.promise;
      await handle.signal(cancelRunSignal, { reason: 'stop sending' });
      return handle.result();
    });

    expect(result.status).toBe('cancelled');
    const batch = result.calls[0]!;
    expect([batch.status, batch.batch, batch.reason]).toEqual(['unknown', report, 'cancelled during the batch of 100 items: 20 applied, 80 not applied, 0 unknown']);
  });
});

describe('a decision applies only to the pause the person saw', () => {
  it('charge paused, resolved applied by B; ship refused; the refund pauses on the same call: A\'s stale "absent" is refused by the run, the console and the CLI, and the refund runs once', async () => {
    const model = scriptedModel([toolTurn('Charging, then shipping.', call('c1', 'charge', { cents: 500 }), call('s1', 'ship', { to: 'Oslo' }))]);
    const f = fakes(
      async (input) => {
        if (input.toolName === 'charge') throw outcomeUnknown('charge: the answer was lost');
        return input.toolName === 'ship' ? rejected(input) : undefined;
      },
      async (input) => {
        if (input.toolName === 'charge') throw outcomeUnknown('refund: the answer was lost');
        return undefined;
      },
    );
    const { seenByA, refundPause, refusals, result } = await harness.withRun(f.activities(model), sagaInput(), async (handle) => {
      // Operator A reads the pause on the charge (and keeps the page open).
      const seenByA = (await waitForStatus(handle, (s) => s.paused?.callId === 'c1' && s.paused.role === undefined)).paused!;
      // Operator B resolves the charge applied; ship is refused; the refund's answer is lost too.
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'c1', pauseId: seenByA.pauseId, resolution: 'applied', result: { chargeId: 'ch_1' }, reason: 'B found the charge' }],
      });
      const refundPause = (await waitForStatus(handle, (s) => s.paused?.role === 'compensation')).paused!;
      // A submits the old decision: through the update itself, the console and the CLI.
      const stale = { callId: 'c1', pauseId: seenByA.pauseId, resolution: 'absent', reason: 'A: no charge seen' } as const;
      const byUpdate = await handle.executeUpdate(resolveOutcomeUpdate, { args: [stale] }).then(
        () => 'accepted',
        (error: { cause?: { type?: string } }) => error.cause?.type,
      );
      const byConsole = await temporalOperations(harness.env.client)
        .resolveCall(handle.workflowId, stale, { intentDigest: null })
        .then(
          () => 'accepted',
          (error: unknown) => (error instanceof DecisionRefusedError ? error.type : String(error)),
        );
      const byCli = await cli('resolve', handle.workflowId, 'c1', '--absent', '--reason', 'A: no charge seen', '--pause', seenByA.pauseId);
      const compensationsAfterStale = f.compensations.length;
      // The refund's own pause is decided with its own id.
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'c1', pauseId: refundPause.pauseId, resolution: 'applied', result: { refundId: 're_1' }, reason: 'refund found' }],
      });
      return { seenByA, refundPause, refusals: { byUpdate, byConsole, byCli: [byCli.code, byCli.stdout], compensationsAfterStale }, result: await handle.result() };
    });

    expect(refundPause.callId).toBe(seenByA.callId);
    expect(refundPause.pauseId).not.toBe(seenByA.pauseId);
    expect(refusals).toEqual({ byUpdate: 'STALE_PAUSE', byConsole: 'STALE_PAUSE', byCli: [1, ''], compensationsAfterStale: 1 });
    // The refund ran once; nothing ran the charge again.
    expect(f.compensations.map((c) => [c.callId, c.compensationGeneration])).toEqual([['c1', 1]]);
    expect(f.runs.filter((r) => r.toolName === 'charge').map((r) => r.callId)).toEqual(['c1']);
    expect(result.calls.find((c) => c.callId === 'c1')!.compensation).toMatchObject({ status: 'compensated', generation: 1, source: 'resolution' });
  });
});
