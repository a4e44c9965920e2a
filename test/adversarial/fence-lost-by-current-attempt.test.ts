/**
 * A keyed tool (`dedupesByKey`) whose earlier attempt, delayed past its heartbeat timeout (a
 * stalled store), meets the current attempt's claim and takes the call over by a same-key repeat
 * (docs/protocol.md#fences). The current attempt, the one Temporal waits for, then loses its
 * completion: it must fail retryably (RECONCILE_PENDING, cause FENCE_CONFLICT) so that the next
 * attempt delivers the stored result, never pause the run with a non-retryable FENCE_CONFLICT. An
 * attempt Temporal has given up on (a later attempt holds the call, or its heartbeat told it it
 * timed out) keeps the final FENCE_CONFLICT. The two attempts' store operations run in a chosen
 * order (gates in the tool and the fence's step hook), never by timing; real SQLite store
 * (TTC_ADVERSARIAL_STORE=postgres: PostgreSQL).
 */
import fc from 'fast-check';
import { defineTool, type ToolDefinition } from '../../src/activities';
import { fenceLost, supersededAttempt } from '../../src/activities/fence/fenced-tool';
import { CheckpointError } from '../../src/checkpoint/errors';
import { Gate, Harness, Provider, schema, typeOf } from './harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

/** A keyed tool whose provider deduplicates by key; `hold(attemptId)` may keep a request in flight. */
function keyedTool(provider: Provider, hold: (attemptId: string) => Promise<void>): ToolDefinition<any> {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: schema,
    callDeadlineMs: 60_000,
    dedupesByKey: true,
    keyRetentionMs: 86_400_000,
    async execute(_input, ctx) {
      await hold(ctx.attemptId);
      return { output: provider.find(ctx.idempotencyKey) ?? provider.apply(ctx.idempotencyKey) };
    },
  });
}

/** Resolves once `predicate` held at one of the fence's step points. */
function stepReached(): { hook: (point: string, attemptId: string) => void; when(point: string, prefix: string): Promise<void> } {
  const waiters: Array<{ point: string; prefix: string; done: () => void }> = [];
  return {
    hook(point, attemptId) {
      for (const w of waiters.filter((x) => x.point === point && attemptId.startsWith(x.prefix))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.done();
      }
    },
    when(point, prefix) {
      return new Promise((done) => waiters.push({ point, prefix, done }));
    },
  };
}

describe('a keyed call taken over by an earlier, delayed attempt', () => {
  test('the current attempt that loses its fence to a live competitor fails retryably (RECONCILE_PENDING), and the next attempt delivers the stored result: one effect, no pause', async () => {
    const provider = new Provider();
    const releaseAttempt2 = new Gate();
    const steps = stepReached();
    const tool = keyedTool(provider, (attemptId) => (attemptId.startsWith('attempt-2-') ? releaseAttempt2.wait() : Promise.resolve()));
    const acts = h.activities([tool], { hooks: { step: (point, attemptId) => steps.hook(point, attemptId) } });
    const call = h.newCall();

    // Attempt 2 (the current one) claims first and sends its request; it stays in flight.
    const attempt2InFlight = steps.when('before-execute', 'attempt-2-');
    const second = h.run(acts, call, 2);
    await attempt2InFlight;
    // Attempt 1, delayed past its heartbeat timeout, reaches the store now: it takes the keyed call over and stores the result.
    const first = await h.run(acts, call, 1);
    expect(first).toEqual({ result: expect.objectContaining({ source: 'same-key-repeat' }) });
    // Attempt 2's request lands (the provider deduplicates by key); its completion loses the fence.
    releaseAttempt2.open();
    const lost = await second;
    expect(lost).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
    if (!('failure' in lost)) throw new Error('unreachable');
    expect(lost.failure.message).toContain('FENCE_CONFLICT');

    // Temporal retries the current attempt: attempt 3 delivers what attempt 1 stored.
    const third = await h.run(acts, call, 3);
    expect(third).toEqual({ result: expect.objectContaining({ source: 'store', outcome: (await h.recordOf(call))?.result?.payload }) });
    expect(provider.total()).toBe(1);
  });

  test('an attempt Temporal has given up on (a later attempt took its call over) keeps the final FENCE_CONFLICT; its result is discarded', async () => {
    const provider = new Provider();
    const releaseAttempt1 = new Gate();
    const steps = stepReached();
    const tool = keyedTool(provider, (attemptId) => (attemptId.startsWith('attempt-1-') ? releaseAttempt1.wait() : Promise.resolve()));
    const acts = h.activities([tool], { hooks: { step: (point, attemptId) => steps.hook(point, attemptId) } });
    const call = h.newCall();

    const attempt1InFlight = steps.when('before-execute', 'attempt-1-');
    const first = h.run(acts, call, 1);
    await attempt1InFlight;
    const second = await h.run(acts, call, 2);
    expect(typeOf(second)).toBe('result:same-key-repeat');
    releaseAttempt1.open();
    expect(await first).toEqual({ failure: expect.objectContaining({ type: 'FENCE_CONFLICT', nonRetryable: true }) });
    expect(provider.total()).toBe(1);
  });
});

describe('which attempt keeps FENCE_CONFLICT final', () => {
  const call = { tool: { name: 'create_ticket' }, input: { callId: 'toolu_1' } } as never;
  const conflict = (heldBy: string): CheckpointError =>
    new CheckpointError('FENCE_CONFLICT', `completeExecution refused: the fence is held by ${heldBy}`, { heldBy, field: 'attemptId' });

  test('property: the conflict stays final exactly when the holder is a later attempt or Temporal told the attempt it timed out, was not found or reset; otherwise it is RECONCILE_PENDING naming the holder', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 50 }),
        fc.record({ notFound: fc.boolean(), timedOut: fc.boolean(), reset: fc.boolean(), cancelRequested: fc.boolean() }),
        fc.boolean(),
        (own, holder, cancellation, cancelled) => {
          const heldBy = `attempt-${holder}-0b7c5a3e-3f0a-4f7e-9d55-6c1d2b0f9a11`;
          const standing = { attempt: own, cancellation: cancelled ? cancellation : undefined };
          const told = cancelled && (cancellation.notFound || cancellation.timedOut || cancellation.reset);
          const mapped = fenceLost(conflict(heldBy), call, standing) as CheckpointError;
          expect(supersededAttempt(standing, heldBy)).toBe(told || holder > own);
          if (told || holder > own) {
            expect(mapped.code).toBe('FENCE_CONFLICT');
          } else {
            expect({ code: mapped.code, retryable: mapped.retryable, cause: mapped.details.cause, heldBy: mapped.details.heldBy }).toEqual({
              code: 'RECONCILE_PENDING',
              retryable: true,
              cause: 'FENCE_CONFLICT',
              heldBy,
            });
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  test('a holder fence not named after an attempt (a person, another tool) never makes the conflict final by itself', () => {
    expect((fenceLost(conflict('resolver-7'), call, { attempt: 3 }) as CheckpointError).code).toBe('RECONCILE_PENDING');
    expect(fenceLost(new CheckpointError('BINDING_CONFLICT', 'x'), call, { attempt: 3 })).toEqual(expect.objectContaining({ code: 'BINDING_CONFLICT' }));
  });
});
