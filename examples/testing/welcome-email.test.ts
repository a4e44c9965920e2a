/**
 * Testing fenced tools in your own jest suite, with the public entries only:
 * `temporal-tool-checkpoint/testing` runs one call through a crash after its effect (no server),
 * and a worker with `ToolCheckpointPlugin` runs a plain workflow on the time-skipping server.
 * Set TEMPORAL_TEST_SERVER_PATH to run the server offline; without it the SDK downloads one.
 * On that server the plugin reads the time through `timeSkippingClock`: the fence's waits then
 * pass with the skipped time, as Temporal's retry backoffs do.
 */
import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { z } from 'zod/v4';
import { defineTool, type ToolDefinition } from 'temporal-tool-checkpoint';
import { ToolCheckpointPlugin } from 'temporal-tool-checkpoint/plugin';
import type { ToolContext } from 'temporal-tool-checkpoint';
import { createTempSqliteStore, createTimeSkippingEnv, runCrashAndRetry, timeSkippingClock, type TempCheckpointStore } from 'temporal-tool-checkpoint/testing';
import { findSent, outbox, send, sendWelcomeEmail } from './activities';

jest.setTimeout(120_000);

/** The same effect as a `defineTool` tool, with or without the provider's lookup. */
function welcomeTool(withLookup: boolean): ToolDefinition<{ to: string }> {
  return defineTool({
    name: 'send_welcome_email',
    revision: 'v1',
    input: z.object({ to: z.string() }),
    callDeadlineMs: 1_000,
    async execute(input, ctx) {
      return { output: send(input.to, ctx.idempotencyKey) };
    },
    ...(withLookup ? { lookup: findSent } : {}),
  });
}

beforeEach(() => {
  outbox.length = 0;
});

describe('a crash right after the effect, then a retry', () => {
  test('with a lookup: the retry finds the sent email by its key and delivers it; one email', async () => {
    const report = await runCrashAndRetry({ tool: welcomeTool(true), input: { to: 'ada@example.com' }, activities: { reconcileMarginMs: 0 } });
    expect(report).toMatchObject({ crashed: true, effects: 1, retry: { result: { source: 'lookup', outcome: { ok: true, output: { messageId: 'msg-1' } } } } });
    expect(outbox).toHaveLength(1);
  });

  test('without a lookup: the retry never sends again; it pauses the call for a person (OUTCOME_UNKNOWN)', async () => {
    const report = await runCrashAndRetry({ tool: welcomeTool(false), input: { to: 'ada@example.com' }, activities: { reconcileMarginMs: 0 } });
    expect(report).toMatchObject({ crashed: true, effects: 1, retry: { failure: { type: 'OUTCOME_UNKNOWN' } } });
    expect(outbox).toHaveLength(1);
  });
});

describe('a plain workflow on the time-skipping server, its activity fenced by the plugin', () => {
  let env: TestWorkflowEnvironment;
  let temp: TempCheckpointStore;
  beforeAll(async () => {
    env = await createTimeSkippingEnv();
    temp = await createTempSqliteStore();
  });
  afterAll(async () => {
    await env?.teardown();
    await temp?.close();
  });

  test('the activity runs once under an idempotency key, and its result is stored and delivered', async () => {
    const plugin = new ToolCheckpointPlugin({ store: temp.store, clock: timeSkippingClock, fence: { sendWelcomeEmail: { revision: 'v1', lookup: findSent } } });
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'signup',
      workflowsPath: require.resolve('./workflows'),
      activities: { sendWelcomeEmail },
      plugins: [plugin],
    });
    const result = await worker.runUntil(env.client.workflow.execute('signupWorkflow', { taskQueue: 'signup', workflowId: `signup-${Date.now()}`, args: ['ada@example.com'] }));
    expect(result).toEqual({ messageId: 'msg-1' });
    expect(outbox).toEqual([{ to: 'ada@example.com', messageId: 'msg-1', idempotencyKey: expect.stringMatching(/^ttc/) }]);
    const [record, ...others] = await temp.store.listByStatus(['delivered', 'completed', 'executing', 'uncertain'], { limit: 10 });
    expect(others).toEqual([]);
    expect(record).toMatchObject({ status: 'delivered', binding: { toolName: 'sendWelcomeEmail' }, result: { payload: { ok: true, output: result } } });
  });

  test('an answer lost after the email went out: a few attempts later the lookup finds it and delivers it; one email', async () => {
    // The provider applies the first send, then the worker never hears back (a connection reset).
    let answered = 0;
    async function sendWelcomeEmailLosingTheFirstAnswer(to: string): Promise<{ messageId: string }> {
      const sent = await sendWelcomeEmail(to);
      if (answered++ === 0) throw new Error('socket hang up');
      return sent;
    }
    let attempts = 0;
    async function findSentCountingAttempts(ctx: ToolContext) {
      attempts = Math.max(attempts, Context.current().info.attempt);
      return findSent(ctx);
    }
    const plugin = new ToolCheckpointPlugin({ store: temp.store, clock: timeSkippingClock, fence: { sendWelcomeEmail: { revision: 'v1', lookup: findSentCountingAttempts } } });
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'signup-lost-answer',
      workflowsPath: require.resolve('./workflows'),
      activities: { sendWelcomeEmail: sendWelcomeEmailLosingTheFirstAnswer },
      plugins: [plugin],
    });
    const result = await worker.runUntil(
      env.client.workflow.execute('signupWorkflow', { taskQueue: 'signup-lost-answer', workflowId: `signup-lost-${Date.now()}`, args: ['ada@example.com'] }),
    );
    expect(result).toEqual({ messageId: 'msg-1' });
    expect(outbox).toHaveLength(1);
    // The fence waits for the lost attempt's settle time (call deadline + margin, 35 s) on the server's clock, not 35 real seconds of retries.
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(5);
  });
});
