/**
 * Adversarial regression (docs/protocol.md#key-lifetime): a tool whose
 * provider deduplicates by key is repeated with the same key while (or after) an earlier attempt's
 * request may have applied the effect. A 409 "key in flight" and the repeat's own transient
 * failures prove nothing about the earlier request: the outcome is unknown (RECONCILE_PENDING, the
 * next attempt repeats with the same key), never a stored final TRANSIENT_EXHAUSTED. A key older
 * than the declared keyRetentionMs is not repeated at all.
 */
import { classifyHttpFailure, defineTool, ToolError, type ToolDefinition } from '../../src/activities';
import { DEADLINE_MS, Gate, Harness, Provider, UNREACHED_DEADLINE_MS, never, schema, ticketTool, typeOf, waitFor } from './harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

function keyedTool(provider: Provider, repeatAnswers: Array<'409' | '503'>, holderLands: Gate) {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: schema,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    dedupesByKey: true,
    keyRetentionMs: 86_400_000,
    async execute(_input, ctx) {
      if (ctx.attemptId.startsWith('attempt-1-')) {
        await holderLands.wait(); // attempt 1's request is in flight
        return { output: provider.apply(ctx.idempotencyKey) };
      }
      const answer = repeatAnswers.shift();
      if (answer !== undefined) {
        const c = classifyHttpFailure(answer === '409' ? { status: 409, code: 'idempotency_key_in_use', keyed: true, sent: 'yes' } : { status: 503, sent: 'yes', keyed: true });
        throw new ToolError(c.kind, `HTTP ${answer}`, undefined, c.type);
      }
      // The provider deduplicates by key: a repeat of an applied key answers the first effect.
      return { output: provider.find(ctx.idempotencyKey) ?? provider.apply(ctx.idempotencyKey) };
    },
  });
}

describe('same-key repeat of a live or dead claim', () => {
  test('repeat answered [409 key in flight, 503, 503] while attempt 1 is mid-request: RECONCILE_PENDING, never a stored TRANSIENT_EXHAUSTED; the next same-key repeat gets the one effect', async () => {
    const provider = new Provider();
    const lands = new Gate();
    const tool = keyedTool(provider, ['409', '503', '503'], lands);
    const call = h.newCall();
    const first = h.run(h.activities([tool]), call, 1);
    await waitFor(async () => (await h.recordOf(call))?.status === 'executing');

    const second = await h.run(h.activities([tool]), call, 2); // overlapping attempt 2: same-key repeat at once
    lands.open();
    await first;
    const stored = (await h.recordOf(call))?.result?.payload;

    // A 409 on a keyed request means in flight or applied: unknown outcome, never a stored final error.
    expect({ second: typeOf(second), stored, effects: provider.total() }).toEqual({ second: 'failure:RECONCILE_PENDING', stored: undefined, effects: 1 });

    const third = await h.run(h.activities([tool]), call, 3);
    expect(third).toEqual({ result: expect.objectContaining({ source: 'same-key-repeat', outcome: expect.objectContaining({ ok: true }) }) });
    expect(provider.total()).toBe(1);
  });

  test('repeat after attempt 1 died with its request applied, provider briefly 503: RECONCILE_PENDING, no stored final error; one effect', async () => {
    const provider = new Provider();
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: schema,
      callDeadlineMs: UNREACHED_DEADLINE_MS,
      dedupesByKey: true,
      keyRetentionMs: 86_400_000,
      async execute(_input, ctx) {
        if (ctx.attemptId.startsWith('attempt-1-')) return { output: provider.apply(ctx.idempotencyKey) };
        throw new ToolError('transient', 'HTTP 503 Service Unavailable');
      },
    });
    const call = h.newCall();
    void h.run(h.activities([tool], { hooks: { step: (p) => (p === 'after-effect' ? never() : undefined) } }), call, 1);
    await waitFor(() => provider.total() === 1);

    const second = await h.run(h.activities([tool]), call, 2);
    const stored = (await h.recordOf(call))?.result?.payload as { ok: boolean; error?: { type: string } } | undefined;

    // The repeat's transient failures prove nothing about attempt 1's request: the next attempt repeats with the same key.
    expect({ second: typeOf(second), storedType: stored?.error?.type ?? null, effects: provider.total() }).toEqual({
      second: 'failure:RECONCILE_PENDING',
      storedType: null,
      effects: 1,
    });
  });

  test('exactly at createdAt + keyRetentionMs the key counts as forgotten: no same-key repeat; without lookup, after the settle time, the run pauses (OUTCOME_UNKNOWN); execute is not called', async () => {
    const provider = new Provider();
    const t = (): ToolDefinition<any> => ticketTool(provider, { dedupesByKey: true, keyRetentionMs: 5_000, callDeadlineMs: DEADLINE_MS });
    const call = h.newCall();
    void h.run(h.activities([t()], { hooks: { step: (p) => (p === 'before-execute' ? never() : undefined) } }), call, 1);
    await waitFor(async () => (await h.recordOf(call))?.status === 'executing');
    const rec = (await h.recordOf(call))!;
    h.offsetMs = Date.parse(rec.createdAt) + 5_000 - Date.now();
    const out = await h.run(h.activities([t()]), call, 2);
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
    expect(provider.requests).toHaveLength(0);
  });
});
