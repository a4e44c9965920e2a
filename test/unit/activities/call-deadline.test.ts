/**
 * A call's deadline and the signal its tool receives (src/activities/fence/call-deadline.ts): the
 * signal aborts at the deadline or on cancellation, whenever it is first read, and is released when
 * the call is over.
 */
import { getEventListeners } from 'node:events';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../../src/activities';
import { CallDeadline, DEADLINE } from '../../../src/activities/fence/call-deadline';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('CallDeadline', () => {
  it('at the deadline, `expired` rejects with DEADLINE and a signal read before aborts with the deadline reason', async () => {
    const deadline = new CallDeadline(new AbortController().signal, 20, 'the call deadline of 20 ms passed');
    const signal = deadline.signal;
    expect(signal.aborted).toBe(false);
    await expect(deadline.expired).rejects.toBe(DEADLINE);
    expect(deadline.passed).toBe(true);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('the call deadline of 20 ms passed');
    deadline.end('t');
  });

  it('a signal first read after the deadline is already aborted', async () => {
    const deadline = new CallDeadline(new AbortController().signal, 0, 'passed');
    await expect(deadline.expired).rejects.toBe(DEADLINE);
    expect(deadline.signal.aborted).toBe(true);
    deadline.end('t');
  });

  it('cancellation aborts the signal; the deadline has not passed', () => {
    const cancellation = new AbortController();
    const deadline = new CallDeadline(cancellation.signal, 60_000, 'passed');
    const signal = deadline.signal;
    cancellation.abort(new Error('cancelled'));
    expect(signal.aborted).toBe(true);
    expect(deadline.passed).toBe(false);
    deadline.end('t');
  });

  it('no deadline (a batch call): nothing expires; the signal aborts only when the call is over', async () => {
    const deadline = new CallDeadline(new AbortController().signal, undefined, 'passed');
    const signal = deadline.signal;
    await tick(30);
    expect(signal.aborted).toBe(false);
    deadline.end('create_ticket');
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('create_ticket call is over');
  });

  it('after the call is over, the timer is stopped and a signal read then is aborted', async () => {
    const deadline = new CallDeadline(new AbortController().signal, 20, 'passed');
    deadline.end('create_ticket');
    await tick(40);
    expect(deadline.passed).toBe(false);
    expect(deadline.signal.aborted).toBe(true);
  });
});

describe("the signal and the activity's cancellation signal", () => {
  it('cancellation aborts a read signal with its own reason, and no listener stays on the cancellation signal once the call is over', () => {
    const cancellation = new AbortController();
    const calls = Array.from({ length: 20 }, () => new CallDeadline(cancellation.signal, 60_000, 'passed'));
    for (const call of calls) void call.signal.aborted;
    expect(getEventListeners(cancellation.signal, 'abort')).toHaveLength(20);
    for (const call of calls.slice(1)) call.end('t');
    expect(getEventListeners(cancellation.signal, 'abort')).toHaveLength(1);
    const reason = new Error('cancelled');
    cancellation.abort(reason);
    expect(calls[0]!.signal.reason).toBe(reason);
    expect((calls[1]!.signal.reason as Error).message).toBe('t call is over');
    calls[0]!.end('t');
    expect(getEventListeners(cancellation.signal, 'abort')).toHaveLength(0);
  });

  it('a cancellation signal aborted before the first read gives its reason, and no listener is added', () => {
    const cancellation = new AbortController();
    const reason = new Error('cancelled first');
    cancellation.abort(reason);
    const deadline = new CallDeadline(cancellation.signal, 60_000, 'passed');
    expect(deadline.signal.reason).toBe(reason);
    expect(getEventListeners(cancellation.signal, 'abort')).toHaveLength(0);
    deadline.end('t');
  });
});

describe('the call deadline through runFencedTool', () => {
  it("a tool waiting on ctx.signal sees it abort at callDeadlineMs, and the call's outcome is unknown (OUTCOME_UNKNOWN), never executed", async () => {
    const store = await openCheckpointStore('sqlite::memory:');
    let reason: unknown;
    const tool = defineTool({
      name: 'slow_charge',
      revision: '1',
      input: z.object({}),
      callDeadlineMs: 200,
      async execute(_input, ctx) {
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        reason = ctx.signal.reason;
        throw ctx.signal.reason;
      },
    });
    const { runFencedTool } = createToolActivities({ store, tools: [tool] });
    const env = new MockActivityEnvironment({ attempt: 1, heartbeatTimeoutMs: 10_000, workflowExecution: { workflowId: 'wf', runId: 'run' } } as never);
    const outcome = await env.run(runFencedTool, { tenant: 't', callId: 'c1', toolName: 'slow_charge', input: {} }).catch((error: unknown) => error);
    await store.close();
    expect((reason as Error).message).toBe('the call deadline of 200 ms passed');
    expect(outcome).toMatchObject({ type: 'OUTCOME_UNKNOWN' });
  });
});

describe('a far call deadline', () => {
  it('a deadline 2^31 ms away (past what setTimeout honours) has not passed 30 ms later', async () => {
    const deadline = new CallDeadline(new AbortController().signal, 2 ** 31, 'passed');
    await tick(30);
    expect(deadline.passed).toBe(false);
    expect(deadline.signal.aborted).toBe(false);
    deadline.end('t');
  });
});
