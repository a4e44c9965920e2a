/**
 * Adversarial regression (docs/protocol.md#reconciliation): tools that misbehave. A lookup that throws
 * or answers malformed proves nothing (RECONCILE_PENDING, the tool is not run); a tool that throws
 * or returns something unstorable after its effect ends in a typed outcome, stored once (an error
 * result, or an unknown outcome that pauses), never a nothing-applied code and never a second
 * effect. Last, a documentation test of the documented limitation (ToolContext.signal: "a request
 * must not outlive" the call deadline): the fence's part holds, but a tool that ignores ctx.signal
 * can land its request after the settle time.
 */
import { defineTool, ToolError } from '../../src/activities';
import { DEADLINE_MS, Gate, Harness, MARGIN_MS, never, NOTHING_APPLIED_CODES, Provider, schema, ticketTool, typeOf, waitFor, type Outcome, UNREACHED_DEADLINE_MS } from './harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

const isNothingApplied = (o: Outcome): boolean => 'failure' in o && NOTHING_APPLIED_CODES.includes(o.failure.type as never);

describe('lookups that throw or lie', () => {
  test.each([
    [
      'throws',
      async () => {
        throw new Error('search down');
      },
    ],
    ['returns undefined', async () => undefined],
    ['returns {found:"no"}', async () => ({ found: 'no' })],
    [
      'throws a non-Error',
      async () => {
        throw Symbol('x');
      },
    ],
  ])('lookup %s after the settle time: absence is not proven, RECONCILE_PENDING, the tool is not run again', async (_n, lookup) => {
    const provider = new Provider();
    const t = defineTool({ ...ticketTool(provider), lookup: lookup as never });
    const call = h.newCall();
    void h.run(h.activities([t], { hooks: { step: (p) => (p === 'after-effect' ? never() : undefined) } }), call, 1);
    await waitFor(() => provider.total() === 1);
    h.offsetMs = UNREACHED_DEADLINE_MS + MARGIN_MS + 50;
    const out = await h.run(h.activities([t]), call, 2);
    expect(out).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
    expect(provider.total()).toBe(1);
  });

  test('lookup says found:true without output: stored as an error result (ok: false), not as success; the tool is not run again', async () => {
    const provider = new Provider();
    const t = defineTool({ ...ticketTool(provider), lookup: (async () => ({ found: true })) as never });
    const call = h.newCall();
    void h.run(h.activities([t], { hooks: { step: (p) => (p === 'after-effect' ? never() : undefined) } }), call, 1);
    await waitFor(() => provider.total() === 1);
    h.offsetMs = UNREACHED_DEADLINE_MS + MARGIN_MS + 50; // a non-deduplicating tool's claim is taken over only after it settles
    const out = await h.run(h.activities([t]), call, 2);
    expect(out).toEqual({ result: expect.objectContaining({ source: 'lookup', outcome: expect.objectContaining({ ok: false }) }) });
    expect((await h.recordOf(call))?.result?.payload).toEqual((out as Extract<Outcome, { result: unknown }>).result.outcome);
    expect(provider.total()).toBe(1);
  });
});

describe('tool errors and results out of bounds, after the effect', () => {
  test.each([
    ['a 10 MB message', 'result:executed', () => new ToolError('rejected', 'x'.repeat(10_000_000))],
    ['a message with a lone surrogate', 'result:executed', () => new ToolError('rejected', 'bad \ud800 text')],
    ['a 100,000-character type', 'result:executed', () => new ToolError('rejected', 'no', undefined, 'T'.repeat(100_000))],
    ['a type with a lone surrogate', 'result:executed', () => new ToolError('rejected', 'no', undefined, 'T\udc00')],
    [
      'an object whose message getter throws',
      'result:executed',
      () => ({
        kind: 'rejected',
        get message() {
          throw new Error('boom');
        },
      }),
    ],
    ['null thrown (no kind: unknown outcome)', 'failure:OUTCOME_UNKNOWN', () => null],
  ])('rejected with %s: a typed outcome (%s), stored once, never nothing-applied', async (_n, expected, make) => {
    const provider = new Provider();
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: schema,
      callDeadlineMs: DEADLINE_MS,
      async execute(_input, ctx) {
        provider.apply(ctx.idempotencyKey);
        throw make();
      },
    });
    const call = h.newCall();
    const out = await h.run(h.activities([tool]), call, 1);
    expect(typeOf(out)).toBe(expected);
    expect(isNothingApplied(out)).toBe(false);
    const r = await h.recordOf(call);
    if ('result' in out) {
      expect(r?.status).toBe('delivered');
      expect(out.result.outcome).toEqual(expect.objectContaining({ ok: false }));
      expect(r?.result?.payload).toEqual(out.result.outcome);
      expect(JSON.stringify(r?.result?.payload).isWellFormed()).toBe(true);
    } else {
      expect(r?.status).toBe('uncertain');
    }
    const again = await h.run(h.activities([tool]), call, 2);
    expect(isNothingApplied(again)).toBe(false);
    expect(provider.total()).toBe(1);
  });

  test.each([
    ['over maxPayloadBytes', 'result:executed', () => ({ output: 'y'.repeat(70_000) })],
    ['with a bigint', 'result:executed', () => ({ output: { n: 1n } as never })],
    [
      'with a cycle',
      'result:executed',
      () => {
        const o: Record<string, unknown> = {};
        o.o = o;
        return { output: o as never };
      },
    ],
    [
      'nested 40 deep',
      'result:executed',
      () => {
        let v: unknown = 1;
        for (let i = 0; i < 40; i += 1) v = [v];
        return { output: v as never };
      },
    ],
    ['undefined (unknown outcome)', 'failure:OUTCOME_UNKNOWN', () => undefined as never],
  ])('result %s: a typed outcome (%s), stored once, never nothing-applied, the next attempt answers the same', async (_n, expected, make) => {
    const provider = new Provider();
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: schema,
      callDeadlineMs: DEADLINE_MS,
      async execute(_input, ctx) {
        provider.apply(ctx.idempotencyKey);
        return make();
      },
    });
    const call = h.newCall();
    const out = await h.run(h.activities([tool]), call, 1);
    expect(typeOf(out)).toBe(expected);
    expect(isNothingApplied(out)).toBe(false);
    const again = await h.run(h.activities([tool]), call, 2);
    expect(provider.total()).toBe(1);
    if ('result' in out) {
      expect(out.result.outcome).toEqual(expect.objectContaining({ ok: false }));
      expect(again).toEqual({ result: expect.objectContaining({ source: 'store', outcome: out.result.outcome }) });
    } else {
      expect(typeOf(again)).toBe(expected);
    }
  });
});

describe('documented limitation: a tool that ignores ctx.signal', () => {
  test('the fence stops waiting at the deadline (RECONCILE_PENDING) and after the settle time runs the call once; a request the tool let outlive its deadline lands afterwards as a second effect (ToolContext.signal: a request must not outlive the deadline)', async () => {
    const provider = new Provider();
    const late = new Gate();
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: schema,
      callDeadlineMs: DEADLINE_MS,
      async execute(_input, ctx) {
        if (ctx.attemptId.startsWith('attempt-1-')) await late.wait(); // ignores ctx.signal
        return { output: provider.apply(ctx.idempotencyKey) };
      },
      async lookup(ctx) {
        const f = provider.find(ctx.idempotencyKey);
        return f === null ? { found: false as const } : { found: true as const, output: f };
      },
    });
    const call = h.newCall();
    const started = Date.now();
    const firstOut = await h.run(h.activities([tool]), call, 1); // returns at its deadline (real 1 s)
    expect(Date.now() - started).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(firstOut).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });

    expect(provider.total()).toBe(0);

    h.offsetMs = MARGIN_MS + 50;
    const after = await h.run(h.activities([tool]), call, 2); // after the settle time: the lookup proves absence, one run
    expect(typeOf(after)).toBe('result:executed');
    expect(provider.total()).toBe(1);

    late.open(); // the request attempt 1 never aborted lands now
    await new Promise((r) => setImmediate(r));
    expect(provider.total()).toBe(2);
  });
});
