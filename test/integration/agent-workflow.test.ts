// Workflow logic of agentWorkflow in the time-skipping environment (Java test server), with
// mock activities registered on a real Worker: a scripted model that fails loudly when its
// script runs out, and a fenced-tool stub that records every call.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { approveCallUpdate, cancelRunSignal, rejectCallUpdate, resolveOutcomeUpdate, runStatusQuery } from '../../src/workflows';
import {
  activitiesOf,
  baseInput,
  call,
  callStatuses,
  deferred,
  endTurn,
  fakeTools,
  outcomeUnknown,
  scriptedModel,
  toolTurn,
  updateFailureType,
  useAgentTestEnv,
  waitForStatus,
  currentPauseId,
  pauseIdLike,
} from '../helpers/agent-harness';
import { releaseReplayHooks } from '../helpers/replay-hooks';

// Replays leave a process-wide promise hook that slows every later suite (see the helper).
afterEach(releaseReplayHooks);

const harness = useAgentTestEnv();
const withRun = harness.withRun.bind(harness);

// ---- tests ---------------------------------------------------------------------------------

describe('agentWorkflow: the loop', () => {
  it('runs each tool call in the order given after the model turn is recorded, and hands the results to the next turn', async () => {
    const model = scriptedModel([
      toolTurn('Creating and notifying.', call('toolu_1', 'create_ticket', { title: 'printer' }), call('toolu_2', 'send_email', { to: 'a@b.c' })),
      endTurn('Ticket created and customer notified.'),
    ]);
    const tools = fakeTools();
    const { result, history } = await withRun(activitiesOf(model, tools), baseInput(), async (handle) => ({
      result: await handle.result(),
      history: await handle.fetchHistory(),
    }));

    expect(result.status).toBe('completed');
    expect(result.stoppedBecause).toBe('model-stopped');
    expect(result.finalText).toBe('Ticket created and customer notified.');
    expect(result.turns).toBe(2);
    expect(tools.runs.map((r) => [r.callId, r.toolName, r.tenant])).toEqual([
      ['toolu_1', 'create_ticket', 'acme'],
      ['toolu_2', 'send_email', 'acme'],
    ]);
    expect(result.calls).toEqual([
      expect.objectContaining({ callId: 'toolu_1', status: 'completed', source: 'executed', receipt: { receiptId: 'r-toolu_1' }, idempotencyKey: 'key-toolu_1' }),
      expect.objectContaining({ callId: 'toolu_2', status: 'completed', source: 'executed', receipt: { receiptId: 'r-toolu_2' } }),
    ]);
    expect(model.requests[1]!.messages).toEqual([
      { role: 'user', text: 'Please handle ticket 42.' },
      { role: 'assistant', text: 'Creating and notifying.', toolCalls: expect.any(Array) },
      { role: 'tool', callId: 'toolu_1', toolName: 'create_ticket', content: { did: 'create_ticket', callId: 'toolu_1' }, isError: false },
      { role: 'tool', callId: 'toolu_2', toolName: 'send_email', content: { did: 'send_email', callId: 'toolu_2' }, isError: false },
    ]);

    // The model's decision is in history (activity completed) before the first tool activity is scheduled.
    const events = history.events ?? [];
    const scheduled = events
      .map((e, i) => ({ i, type: e.activityTaskScheduledEventAttributes?.activityType?.name, completed: e.activityTaskCompletedEventAttributes }))
      .filter((e) => e.type !== undefined && e.type !== null);
    // Each tool call is its own activity type, named after the tool.
    expect(scheduled.map((e) => e.type)).toEqual(['runModelTurn', 'create_ticket', 'send_email', 'runModelTurn']);
    const firstToolIndex = scheduled[1]!.i;
    const modelCompletedIndex = events.findIndex((e) => e.activityTaskCompletedEventAttributes != null);
    expect(modelCompletedIndex).toBeGreaterThan(-1);
    expect(modelCompletedIndex).toBeLessThan(firstToolIndex);

    // The history replays deterministically against the same workflow code.
    await Worker.runReplayHistory({ workflowBundle: harness.workflowBundle }, history);
  });

  it('a failure that proves nothing applied (INVALID_TOOL_INPUT) and a tool the run does not offer are shown to the model; the run goes on', async () => {
    const model = scriptedModel([toolTurn('Trying.', call('c1', 'create_ticket', { title: 7 }), call('c2', 'drop_database')), endTurn('I could not do it.')]);
    const tools = fakeTools(async (input) => {
      if (input.callId === 'c1') throw ApplicationFailure.create({ type: 'INVALID_TOOL_INPUT', message: 'INVALID_TOOL_INPUT: title must be a string', nonRetryable: true });
      return undefined;
    });
    const result = await withRun(activitiesOf(model, tools), baseInput(), (h) => h.result());

    expect(result.status).toBe('completed');
    expect(tools.runs.map((r) => r.callId)).toEqual(['c1']);
    expect(result.calls).toEqual([
      expect.objectContaining({ callId: 'c1', status: 'failed', errorType: 'INVALID_TOOL_INPUT' }),
      expect.objectContaining({ callId: 'c2', status: 'failed', errorType: 'UNKNOWN_TOOL' }),
    ]);
    const toolMessages = model.requests[1]!.messages!.filter((m) => m.role === 'tool');
    expect(toolMessages).toEqual([
      {
        role: 'tool',
        callId: 'c1',
        toolName: 'create_ticket',
        isError: true,
        content: { error: { type: 'INVALID_TOOL_INPUT', message: 'INVALID_TOOL_INPUT: title must be a string' } },
      },
      expect.objectContaining({
        callId: 'c2',
        isError: true,
        content: { error: { type: 'UNKNOWN_TOOL', message: 'UNKNOWN_TOOL: no tool of this name is available; nothing ran' } },
      }),
    ]);
  });
});

describe('agentWorkflow: budgets and deadline', () => {
  it('stops at maxToolCalls: the calls beyond the budget are not run', async () => {
    const model = scriptedModel([toolTurn('Three things.', call('c1', 'lookup'), call('c2', 'lookup'), call('c3', 'refund'))]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), baseInput({ budget: { maxTurns: 5, maxToolCalls: 2, deadlineMs: 3_600_000 } }), (h) => h.result());

    expect(result.status).toBe('budget-exhausted');
    expect(result.stoppedBecause).toBe('max-tool-calls');
    expect(tools.runs.map((r) => r.callId)).toEqual(['c1', 'c2']);
    expect(callStatuses(result.calls)).toEqual({ c1: 'completed', c2: 'completed', c3: 'not-run' });
    expect(model.requests).toHaveLength(1);
  });

  it('stops at maxTurns even when the model keeps asking for tools', async () => {
    const model = scriptedModel([toolTurn('one', call('c1', 'lookup')), toolTurn('two', call('c2', 'lookup')), toolTurn('three', call('c3', 'lookup'))]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), baseInput({ budget: { maxTurns: 2, maxToolCalls: 10, deadlineMs: 3_600_000 } }), (h) => h.result());

    expect(result).toEqual(expect.objectContaining({ status: 'budget-exhausted', stoppedBecause: 'max-turns', turns: 2, finalText: 'two' }));
    expect(model.requests).toHaveLength(2);
    expect(callStatuses(result.calls)).toEqual({ c1: 'completed', c2: 'completed' });
  });

  it('a tool call running past the run deadline ends the run deadline-exceeded with that call unknown and later calls not run', async () => {
    const model = scriptedModel([toolTurn('slow then fast', call('slow', 'lookup'), call('after', 'lookup'))]);
    const tools = fakeTools(async (input) => {
      if (input.callId === 'slow') await Context.current().sleep(30_000);
      return undefined;
    });
    const t0 = Date.now();
    const result = await withRun(activitiesOf(model, tools), baseInput({ budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 2_000 } }), (h) => h.result());

    expect(result.status).toBe('deadline-exceeded');
    expect(result.stoppedBecause).toBe('deadline');
    expect(callStatuses(result.calls)).toEqual({ slow: 'unknown', after: 'not-run' });
    expect(result.calls[0]).toEqual(expect.objectContaining({ errorType: 'DEADLINE_EXCEEDED' }));
    expect(Date.now() - t0).toBeLessThan(25_000);
  });

  it('a budget stop says which calls ran and which did not in the result summary', async () => {
    const model = scriptedModel([toolTurn('Three things.', call('c1', 'lookup'), call('c2', 'lookup'), call('c3', 'refund'))]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), baseInput({ budget: { maxTurns: 5, maxToolCalls: 2, deadlineMs: 3_600_000 } }), (h) => h.result());

    expect(result.status).toBe('budget-exhausted');
    expect(result.summary).toEqual({ ran: ['c1', 'c2'], notRun: ['c3'], unknown: [] });
  });

  it('a deadline stop (time skipping) says which calls ran, which did not, and which are unknown', async () => {
    const model = scriptedModel([toolTurn('Ticket, email, ticket.', call('c1', 'create_ticket'), call('e1', 'send_email', { to: 'a@b.c' }), call('c2', 'create_ticket'))]);
    const tools = fakeTools(async (input) => {
      if (input.callId === 'e1') throw outcomeUnknown();
      return undefined;
    });
    const result = await withRun(activitiesOf(model, tools), baseInput({ budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 30 * 60_000 } }), (h) => h.result());

    expect(result).toEqual(expect.objectContaining({ status: 'deadline-exceeded', stoppedBecause: 'deadline' }));
    expect(callStatuses(result.calls)).toEqual({ c1: 'completed', e1: 'unknown', c2: 'not-run' });
    expect(result.summary).toEqual({ ran: ['c1'], notRun: ['c2'], unknown: ['e1'] });
    expect(tools.runs.map((r) => r.callId)).toEqual(['c1', 'e1']);
  });

  it('an approved call carries the approved intent digest to the worker; a call without approval carries none', async () => {
    const model = scriptedModel([toolTurn('refund and look', call('r1', 'refund', { amount: 25 }), call('l1', 'lookup')), endTurn('ok')]);
    const tools = fakeTools();
    await withRun(activitiesOf(model, tools), baseInput({ approvalRequired: { refund: { expiresAfterMs: 3_600_000 } } }), async (handle) => {
      const status = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: status.pendingCalls[0]!.intentDigest!, stateVersion: status.stateVersion }] });
      return handle.result();
    });
    expect(tools.runs.map((r) => [r.callId, r.expectedIntentDigest])).toEqual([
      ['r1', 'sha256:fake:refund:{"amount":25}'],
      ['l1', undefined],
    ]);
  });

  it('a pending approval left past the run deadline (time skipping) ends the run deadline-exceeded; nothing runs', async () => {
    const model = scriptedModel([toolTurn('refund?', call('r1', 'refund', { amount: 10 }))]);
    const tools = fakeTools();
    const t0 = Date.now();
    const result = await withRun(
      activitiesOf(model, tools),
      baseInput({ budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 10 * 60_000 }, approvalRequired: { refund: { expiresAfterMs: 24 * 3_600_000 } } }),
      (h) => h.result(),
    );

    expect(result.status).toBe('deadline-exceeded');
    expect(callStatuses(result.calls)).toEqual({ r1: 'not-run' });
    expect(tools.runs).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(20_000);
  });
});

describe('agentWorkflow: unknown outcomes pause the run', () => {
  const emailThenEnd = () => scriptedModel([toolTurn('Emailing.', call('e1', 'send_email', { to: 'a@b.c' }), call('t2', 'create_ticket')), endTurn('Done.')]);

  it('OUTCOME_UNKNOWN pauses; the query shows which call and why; "applied" stores the given result and the run goes on', async () => {
    const model = emailThenEnd();
    const tools = fakeTools(async (input) => {
      if (input.callId === 'e1') throw outcomeUnknown();
      return undefined;
    });
    const { result, paused, resolved } = await withRun(activitiesOf(model, tools), baseInput(), async (handle) => {
      const paused = await waitForStatus(handle, (s) => s.phase === 'paused');
      expect(
        await updateFailureType(handle.executeUpdate(resolveOutcomeUpdate, { args: [{ callId: 't2', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'x' }] })),
      ).toBe('CALL_NOT_PAUSED');
      expect(
        await updateFailureType(
          handle.executeUpdate(resolveOutcomeUpdate, {
            args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'applied', reason: 'seen in the outbox' } as never],
          }),
        ),
      ).toBe('INVALID_REQUEST');
      const resolved = await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [
          {
            callId: 'e1',
            pauseId: await currentPauseId(handle),
            resolution: 'applied',
            result: { messageId: 'm-77' },
            receipt: { messageId: 'm-77' },
            reason: 'seen in the outbox',
          },
        ],
      });
      return { result: await handle.result(), paused, resolved };
    });

    expect(paused.paused).toEqual(expect.objectContaining({ callId: 'e1', toolName: 'send_email', errorType: 'OUTCOME_UNKNOWN', reason: expect.stringContaining('no lookup') }));
    expect(paused.pendingCalls.map((c) => [c.callId, c.status])).toEqual([
      ['e1', 'paused'],
      ['t2', 'queued'],
    ]);
    expect(resolved).toEqual({ callId: 'e1', pauseId: pauseIdLike('e1#1'), resolution: 'applied', status: 'resolved-applied', retryCallId: null });
    expect(tools.resolved).toEqual([
      expect.objectContaining({
        tenant: 'acme',
        callId: 'e1',
        toolName: 'send_email',
        input: { to: 'a@b.c' },
        resolution: 'applied',
        result: { ok: true, output: { messageId: 'm-77' }, receipt: { messageId: 'm-77' } },
        reason: 'seen in the outbox',
      }),
    ]);
    expect(tools.runs.map((r) => r.callId)).toEqual(['e1', 't2']);
    expect(result.status).toBe('completed');
    expect(result.calls).toEqual([
      expect.objectContaining({ callId: 'e1', status: 'resolved-applied', source: 'resolution', receipt: { messageId: 'm-77' } }),
      expect.objectContaining({ callId: 't2', status: 'completed' }),
    ]);
    expect(model.requests[1]!.messages).toContainEqual({ role: 'tool', callId: 'e1', toolName: 'send_email', content: { messageId: 'm-77' }, isError: false });
  });

  it('"absent" reruns the call under a new call id (<callId>~retry1); the model sees the result under its own id', async () => {
    const model = emailThenEnd();
    const tools = fakeTools(async (input) => {
      if (input.callId === 'e1') throw outcomeUnknown();
      return undefined;
    });
    const { result, resolved } = await withRun(activitiesOf(model, tools), baseInput(), async (handle) => {
      await waitForStatus(handle, (s) => s.phase === 'paused');
      const resolved = await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'not in the provider log' }],
      });
      return { result: await handle.result(), resolved };
    });

    expect(resolved).toEqual({ callId: 'e1', pauseId: pauseIdLike('e1#1'), resolution: 'absent', status: 'resolved-absent', retryCallId: 'e1~retry1' });
    expect(tools.runs.map((r) => r.callId)).toEqual(['e1', 'e1~retry1', 't2']);
    expect(tools.resolved).toEqual([]);
    expect(result.status).toBe('completed');
    expect(result.calls.map((c) => [c.callId, c.modelCallId, c.status])).toEqual([
      ['e1', 'e1', 'resolved-absent'],
      ['e1~retry1', 'e1', 'completed'],
      ['t2', 't2', 'completed'],
    ]);
    expect(model.requests[1]!.messages).toContainEqual(expect.objectContaining({ role: 'tool', callId: 'e1', content: { did: 'send_email', callId: 'e1~retry1' } }));
  });

  it('"abandon" ends the run abandoned with the reason; later calls are not run', async () => {
    const model = emailThenEnd();
    const tools = fakeTools(async (input) => {
      if (input.callId === 'e1') throw outcomeUnknown();
      return undefined;
    });
    const result = await withRun(activitiesOf(model, tools), baseInput(), async (handle) => {
      await waitForStatus(handle, (s) => s.phase === 'paused');
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'abandon', reason: 'customer withdrew the request' }],
      });
      return handle.result();
    });

    expect(result).toEqual(expect.objectContaining({ status: 'abandoned', stoppedBecause: 'abandon', reason: 'customer withdrew the request' }));
    expect(callStatuses(result.calls)).toEqual({ e1: 'abandoned', t2: 'not-run' });
    expect(tools.runs.map((r) => r.callId)).toEqual(['e1']);
  });

  it('when the worker refuses an "applied" result, the update fails with its type and the run stays paused', async () => {
    const model = emailThenEnd();
    const tools = fakeTools(async (input) => {
      if (input.callId === 'e1') throw outcomeUnknown();
      return undefined;
    });
    tools.onResolve(async () => {
      throw ApplicationFailure.create({ type: 'PAYLOAD_TOO_LARGE', message: 'PAYLOAD_TOO_LARGE: result is 70,112 bytes', nonRetryable: true });
    });
    const result = await withRun(activitiesOf(model, tools), baseInput(), async (handle) => {
      await waitForStatus(handle, (s) => s.phase === 'paused');
      const type = await updateFailureType(
        handle.executeUpdate(resolveOutcomeUpdate, {
          args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'applied', result: { huge: true }, reason: 'seen' }],
        }),
      );
      expect(type).toBe('PAYLOAD_TOO_LARGE');
      const after = await handle.query(runStatusQuery);
      expect(after.phase).toBe('paused');
      expect(after.paused?.callId).toBe('e1');
      await handle.executeUpdate(resolveOutcomeUpdate, { args: [{ callId: 'e1', pauseId: await currentPauseId(handle), resolution: 'abandon', reason: 'give up' }] });
      return handle.result();
    });
    expect(result.status).toBe('abandoned');
  });

  it('a paused call left past the run deadline is reported unknown', async () => {
    const model = emailThenEnd();
    const tools = fakeTools(async () => {
      throw outcomeUnknown();
    });
    const result = await withRun(activitiesOf(model, tools), baseInput({ budget: { maxTurns: 5, maxToolCalls: 10, deadlineMs: 30 * 60_000 } }), (h) => h.result());
    expect(result.status).toBe('deadline-exceeded');
    expect(callStatuses(result.calls)).toEqual({ e1: 'unknown', t2: 'not-run' });
    expect(result.calls[0]).toEqual(expect.objectContaining({ errorType: 'OUTCOME_UNKNOWN' }));
  });
});

describe('agentWorkflow: cancel', () => {
  it('cancelling a running tool call cancels the activity; the result lists which calls ran', async () => {
    const model = scriptedModel([toolTurn('go', call('c1', 'lookup'), call('c2', 'create_ticket'), call('c3', 'lookup'))]);
    const started = deferred();
    let sawCancel = false;
    const tools = fakeTools(async (input) => {
      if (input.callId !== 'c2') return undefined;
      started.resolve();
      const ctx = Context.current();
      try {
        for (;;) {
          ctx.heartbeat();
          await ctx.sleep(50);
        }
      } catch (err) {
        sawCancel = ctx.cancellationSignal.aborted;
        throw err;
      }
    });
    const result = await withRun(activitiesOf(model, tools), baseInput({ activityOptions: { heartbeatTimeoutMs: 1_000 } }), async (handle) => {
      await started.promise;
      await handle.signal(cancelRunSignal, { reason: 'user pressed stop' });
      return handle.result();
    });

    expect(result).toEqual(expect.objectContaining({ status: 'cancelled', stoppedBecause: 'cancel', reason: 'user pressed stop' }));
    expect(callStatuses(result.calls)).toEqual({ c1: 'completed', c2: 'unknown', c3: 'not-run' });
    expect(sawCancel).toBe(true);
    expect(tools.runs.map((r) => r.callId)).toEqual(['c1', 'c2']);
  });

  it('cancelling while a call awaits approval stops before the next step', async () => {
    const model = scriptedModel([toolTurn('go', call('c1', 'lookup'), call('r1', 'refund'))]);
    const tools = fakeTools();
    const { result, after } = await withRun(activitiesOf(model, tools), baseInput({ approvalRequired: { refund: { expiresAfterMs: 3_600_000 } } }), async (handle) => {
      await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      await handle.signal(cancelRunSignal, {});
      const result = await handle.result();
      return { result, after: await handle.query(runStatusQuery) };
    });
    expect(result.status).toBe('cancelled');
    expect(callStatuses(result.calls)).toEqual({ c1: 'completed', r1: 'not-run' });
    expect(after.phase).toBe('cancelled');
  });
});

describe('agentWorkflow: approvals', () => {
  const approvalInput = (expiresAfterMs = 3_600_000) => baseInput({ approvalRequired: { refund: { expiresAfterMs } } });

  it('an approval bound to the call digest and current state version releases the call; the query shows the frozen pending call', async () => {
    const model = scriptedModel([toolTurn('refunding', call('r1', 'refund', { amount: 25 })), endTurn('Refunded.')]);
    const tools = fakeTools();
    const { status, result, decision } = await withRun(activitiesOf(model, tools), approvalInput(), async (handle) => {
      const status = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      const pending = status.pendingCalls[0]!;
      const decision = await handle.executeUpdate(approveCallUpdate, {
        args: [{ callId: 'r1', intentDigest: pending.intentDigest!, stateVersion: status.stateVersion }],
      });
      return { status, decision, result: await handle.result() };
    });

    expect(status.pendingCalls).toEqual([
      expect.objectContaining({
        callId: 'r1',
        toolName: 'refund',
        status: 'awaiting-approval',
        arguments: { amount: 25 },
        modelInput: { amount: 25 },
        toolRevision: '1',
        intentDigest: 'sha256:fake:refund:{"amount":25}',
        approvalExpiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      }),
    ]);
    expect(status.budget).toEqual(expect.objectContaining({ turnsUsed: 1, maxTurns: 5, toolCallsUsed: 1, maxToolCalls: 10 }));
    expect(decision).toEqual(expect.objectContaining({ callId: 'r1', decision: 'approved' }));
    expect(tools.runs.map((r) => r.callId)).toEqual(['r1']);
    expect(result.status).toBe('completed');
    expect(callStatuses(result.calls)).toEqual({ r1: 'completed' });
  });

  it('a rejection gives the model a rejection result and nothing runs', async () => {
    const model = scriptedModel([toolTurn('refunding', call('r1', 'refund', { amount: 25 })), endTurn('Not refunded.')]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), approvalInput(), async (handle) => {
      await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      await handle.executeUpdate(rejectCallUpdate, { args: [{ callId: 'r1', reason: 'amount too high' }] });
      return handle.result();
    });

    expect(tools.runs).toEqual([]);
    expect(callStatuses(result.calls)).toEqual({ r1: 'rejected' });
    expect(model.requests[1]!.messages).toContainEqual({
      role: 'tool',
      callId: 'r1',
      toolName: 'refund',
      isError: true,
      content: { rejected: true, reason: expect.stringContaining('amount too high') },
    });
  });

  it('refuses a mismatched digest (APPROVAL_MISMATCH), a stale state version (STALE_STATE_VERSION) and unknown call ids', async () => {
    const model = scriptedModel([toolTurn('look then refund', call('l1', 'lookup'), call('r1', 'refund', { amount: 25 })), endTurn('ok')]);
    const gate = deferred();
    const lookupStarted = deferred();
    const tools = fakeTools(async (input) => {
      if (input.callId === 'l1') {
        lookupStarted.resolve();
        await gate.promise;
      }
      return undefined;
    });
    const result = await withRun(activitiesOf(model, tools), approvalInput(), async (handle) => {
      await lookupStarted.promise;
      const seen = await waitForStatus(handle, (s) => s.pendingCalls.some((c) => c.callId === 'r1' && c.status === 'awaiting-approval'));
      const digest = seen.pendingCalls.find((c) => c.callId === 'r1')!.intentDigest!;
      expect(
        await updateFailureType(
          handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: 'sha256:fake:refund:{"amount":2500}', stateVersion: seen.stateVersion }] }),
        ),
      ).toBe('APPROVAL_MISMATCH');
      expect(await updateFailureType(handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'nope', intentDigest: digest, stateVersion: seen.stateVersion }] }))).toBe(
        'CALL_NOT_AWAITING_APPROVAL',
      );
      expect(await updateFailureType(handle.executeUpdate(rejectCallUpdate, { args: [{ callId: 'l1', reason: 'no' }] }))).toBe('CALL_NOT_AWAITING_APPROVAL');

      // The lookup finishes: the run advanced, so an approval given on the old state is stale.
      gate.resolve();
      const now = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      expect(now.stateVersion).toBeGreaterThan(seen.stateVersion);
      expect(await updateFailureType(handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: digest, stateVersion: seen.stateVersion }] }))).toBe(
        'STALE_STATE_VERSION',
      );
      expect(tools.runs.map((r) => r.callId)).toEqual(['l1']);
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: digest, stateVersion: now.stateVersion }] });
      return handle.result();
    });
    expect(callStatuses(result.calls)).toEqual({ l1: 'completed', r1: 'completed' });
    expect(tools.runs.map((r) => r.callId)).toEqual(['l1', 'r1']);
  });

  it('an unanswered approval expires (time skipping): the model gets a rejection, and a late approval is refused with APPROVAL_EXPIRED', async () => {
    const model = scriptedModel([toolTurn('refund 1', call('r1', 'refund', { amount: 1 })), toolTurn('refund 2', call('r2', 'refund', { amount: 2 })), endTurn('done')]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), approvalInput(60_000), async (handle) => {
      const first = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      const digest1 = first.pendingCalls[0]!.intentDigest!;
      await harness.env.sleep(61_000);
      const second = await waitForStatus(handle, (s) => s.pendingCalls.some((c) => c.callId === 'r2' && c.status === 'awaiting-approval'));
      expect(callStatuses(second.calls)).toEqual({ r1: 'rejected', r2: 'awaiting-approval' });
      expect(await updateFailureType(handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: digest1, stateVersion: second.stateVersion }] }))).toBe(
        'APPROVAL_EXPIRED',
      );
      const r2 = second.pendingCalls.find((c) => c.callId === 'r2')!;
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r2', intentDigest: r2.intentDigest!, stateVersion: second.stateVersion }] });
      return handle.result();
    });

    expect(tools.runs.map((r) => r.callId)).toEqual(['r2']);
    expect(callStatuses(result.calls)).toEqual({ r1: 'rejected', r2: 'completed' });
    expect(result.calls[0]!.reason).toMatch(/^APPROVAL_EXPIRED: nobody approved/);
    expect(model.requests[1]!.messages).toContainEqual(
      expect.objectContaining({ role: 'tool', callId: 'r1', isError: true, content: { rejected: true, reason: expect.stringMatching(/^APPROVAL_EXPIRED/) } }),
    );
  });

  it('an approval given in time but reached after its expiry is refused and nothing runs', async () => {
    const model = scriptedModel([toolTurn('slow lookup then refund', call('l1', 'lookup'), call('r1', 'refund', { amount: 5 })), endTurn('done')]);
    const lookupStarted = deferred();
    const approved = deferred();
    const tools = fakeTools(async (input) => {
      if (input.callId === 'l1') {
        lookupStarted.resolve();
        await approved.promise;
        await harness.env.sleep(120_000); // two minutes of server time pass while the lookup runs
      }
      return undefined;
    });
    const result = await withRun(
      activitiesOf(model, tools),
      // No heartbeat timeout: the stub lookup sends none while two minutes of server time pass.
      baseInput({ approvalRequired: { refund: { expiresAfterMs: 60_000 } }, activityOptions: { startToCloseTimeoutMs: 10 * 60_000, heartbeatTimeoutMs: null } }),
      async (handle) => {
        await lookupStarted.promise;
        const s = await waitForStatus(handle, (st) => st.pendingCalls.some((c) => c.callId === 'r1' && c.status === 'awaiting-approval'));
        const r1 = s.pendingCalls.find((c) => c.callId === 'r1')!;
        const decision = await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: r1.intentDigest!, stateVersion: s.stateVersion }] });
        expect(decision.decision).toBe('approved');
        approved.resolve();
        return handle.result();
      },
    );

    expect(tools.runs.map((r) => r.callId)).toEqual(['l1']);
    expect(callStatuses(result.calls)).toEqual({ l1: 'completed', r1: 'rejected' });
    expect(result.calls[1]!.reason).toMatch(/^APPROVAL_EXPIRED: the call was approved at .* but could not start before its approval expired/);
  });

  it('a rerun after "absent" runs under the approval the person gave: the same approved digest, approver and expiry reach the worker', async () => {
    const model = scriptedModel([toolTurn('refunding', call('r1', 'refund', { amount: 25 })), endTurn('Refunded.')]);
    const tools = fakeTools(async (input) => {
      if (input.callId === 'r1') throw outcomeUnknown('refund: the answer was lost');
      return undefined;
    });
    await withRun(activitiesOf(model, tools), approvalInput(), async (handle) => {
      const status = await waitForStatus(handle, (s) => s.phase === 'awaiting-approval');
      await handle.executeUpdate(approveCallUpdate, {
        args: [{ callId: 'r1', intentDigest: status.pendingCalls[0]!.intentDigest!, stateVersion: status.stateVersion, by: 'alice' }],
      });
      await waitForStatus(handle, (s) => s.phase === 'paused');
      await handle.executeUpdate(resolveOutcomeUpdate, {
        args: [{ callId: 'r1', pauseId: await currentPauseId(handle), resolution: 'absent', reason: 'no refund in the ledger', by: 'bob' }],
      });
      return handle.result();
    });

    const [first, rerun] = tools.runs;
    expect(rerun!.callId).toBe('r1~retry1');
    const approval = (input: typeof first) => ({ expectedIntentDigest: input!.expectedIntentDigest, approvalExpiresAt: input!.approvalExpiresAt, approvedBy: input!.approvedBy });
    expect(approval(first)).toEqual({ expectedIntentDigest: expect.any(String), approvalExpiresAt: expect.any(String), approvedBy: 'alice' });
    expect(approval(rerun)).toEqual(approval(first));
  });

  it('two pending approvals in one turn never cross: approving one releases only that call', async () => {
    const model = scriptedModel([toolTurn('two refunds', call('r1', 'refund', { amount: 1 }), call('r2', 'refund', { amount: 2 })), endTurn('done')]);
    const tools = fakeTools();
    const result = await withRun(activitiesOf(model, tools), approvalInput(), async (handle) => {
      const s = await waitForStatus(handle, (st) => st.phase === 'awaiting-approval' && st.pendingCalls.filter((c) => c.status === 'awaiting-approval').length === 2);
      const [p1, p2] = [s.pendingCalls.find((c) => c.callId === 'r1')!, s.pendingCalls.find((c) => c.callId === 'r2')!];
      expect(p1.intentDigest).not.toBe(p2.intentDigest);

      // r2's approval releases r2 only; r1 still waits and nothing runs.
      await handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r2', intentDigest: p2.intentDigest!, stateVersion: s.stateVersion }] });
      const after = await handle.query(runStatusQuery);
      expect(after.phase).toBe('awaiting-approval');
      expect(callStatuses(after.calls)).toEqual({ r1: 'awaiting-approval', r2: 'approved' });
      expect(tools.runs).toEqual([]);
      // r2's digest cannot approve r1.
      expect(await updateFailureType(handle.executeUpdate(approveCallUpdate, { args: [{ callId: 'r1', intentDigest: p2.intentDigest!, stateVersion: s.stateVersion }] }))).toBe(
        'APPROVAL_MISMATCH',
      );
      await handle.executeUpdate(rejectCallUpdate, { args: [{ callId: 'r1', reason: 'duplicate refund' }] });
      return handle.result();
    });

    expect(tools.runs.map((r) => r.callId)).toEqual(['r2']);
    expect(callStatuses(result.calls)).toEqual({ r1: 'rejected', r2: 'completed' });
  });
});
