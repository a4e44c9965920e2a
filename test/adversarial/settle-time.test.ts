/**
 * Adversarial regression (docs/protocol.md#overlapping-attempts): a claim held by
 * another attempt is taken over, or a lookup that finds nothing is taken as proof of absence, only
 * once the holder's request can no longer be outstanding, i.e. after the holder's declared deadline
 * (claimedAt + callDeadlineMs) plus the margin; and the holder itself never calls `execute` once
 * its deadline has passed. Timing the rule does not look at directly: slow lookups, a holder
 * stalled after its claim answered, a deploy that shortens callDeadlineMs, clock skew within the margin.
 */
import { defineTool, type ToolDefinition } from '../../src/activities';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { DEADLINE_MS, FlakyStore, Gate, Harness, MARGIN_MS, never, Provider, schema, ticketTool, typeOf, waitFor, type Outcome } from './harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

const pending = { failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) };

function lookupOf(provider: Provider): NonNullable<ToolDefinition<any>['lookup']> {
  return async (ctx) => {
    const found = provider.find(ctx.idempotencyKey);
    return found === null ? { found: false as const } : { found: true as const, output: found };
  };
}

describe('settle time', () => {
  test('a lookup that started before the settle time and answered after it proves nothing: RECONCILE_PENDING, one effect', async () => {
    const provider = new Provider();
    const inFlight: string[] = [];
    let lookupStarted = 0;
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: schema,
      callDeadlineMs: DEADLINE_MS,
      async execute(_input, ctx) {
        if (ctx.attemptId.startsWith('attempt-1-')) {
          inFlight.push(ctx.idempotencyKey); // request sent; it is in the network, the worker then dies
          await never();
        }
        return { output: provider.apply(ctx.idempotencyKey) };
      },
      async lookup(ctx) {
        lookupStarted = h.clock().getTime();
        const snapshot = provider.find(ctx.idempotencyKey); // the provider answers as of now (before settleAt)
        // The lookup takes a while (slow search API); meanwhile the holder's request lands (within its
        // deadline + margin) and the settle time passes.
        h.offsetMs = DEADLINE_MS + MARGIN_MS + 50;
        for (const key of inFlight.splice(0)) provider.apply(key);
        return snapshot === null ? { found: false as const } : { found: true as const, output: snapshot };
      },
    });
    const call = h.newCall();
    void h.run(h.activities([tool], { hooks: { step: (p) => (p === 'after-effect' ? never() : undefined) } }), call, 1);
    await waitFor(() => inFlight.length === 1);
    const claimedAt = Date.parse((await h.recordOf(call))!.execution!.claimedAt);

    // Attempt 2 arrives 500 ms before the settle time, counted from the claim (the time this test took since is not eaten from it).
    h.offsetMs = claimedAt + DEADLINE_MS + MARGIN_MS - 500 - Date.now();
    const second = await h.run(h.activities([tool]), call, 2);

    expect(lookupStarted).toBeLessThan(claimedAt + DEADLINE_MS + MARGIN_MS);
    expect({ outcome: typeOf(second), effects: provider.total() }).toEqual({ outcome: 'failure:RECONCILE_PENDING', effects: 1 });
  });

  test('the holder stalls after its claim answered, past its settle time, while attempt 2 takes over: the holder sees its deadline passed and never calls execute (RECONCILE_PENDING); attempt 2 runs the tool once; one effect', async () => {
    const provider = new Provider();
    const signalAbortedAtCall: boolean[] = [];
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: schema,
      callDeadlineMs: DEADLINE_MS,
      async execute(_input, ctx) {
        signalAbortedAtCall.push(ctx.signal.aborted);
        ctx.signal.throwIfAborted(); // a tool that honours ctx.signal
        return { output: provider.apply(ctx.idempotencyKey) };
      },
      lookup: lookupOf(provider),
    });
    // The holder's claim is stored and answers, then its process stalls (VM pause, SIGSTOP, a slow
    // network return path) past its call deadline + margin before it continues.
    const stall = new Gate();
    let stalled = false;
    const slow = new (class extends FlakyStore {
      override async createIfAbsent(...args: Parameters<CheckpointStore['createIfAbsent']>) {
        const created = await super.createIfAbsent(...args);
        if (created.record.status === 'executing') {
          stalled = true;
          await stall.wait();
        }
        return created;
      }
    })(h.store);
    const call = h.newCall();
    const holder = h.run(h.activities([tool], { store: slow }), call, 1);
    await waitFor(() => stalled);

    h.offsetMs = DEADLINE_MS + MARGIN_MS + 1;
    const second = await h.run(h.activities([tool]), call, 2);
    expect(typeOf(second)).toBe('result:executed');
    stall.open();
    const first = await holder;

    expect(first).toEqual(pending);
    expect({ effects: provider.total(), signalAbortedAtCall }).toEqual({ effects: 1, signalAbortedAtCall: [false] });
  });

  test("the holder's claim is merely slow (pool wait) and answers after its call deadline: the holder fails RECONCILE_PENDING without calling execute; attempt 2 after the settle time runs the tool once; one effect", async () => {
    const provider = new Provider();
    const executeCalls: string[] = [];
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: schema,
      callDeadlineMs: DEADLINE_MS,
      async execute(_input, ctx) {
        executeCalls.push(ctx.attemptId);
        ctx.signal.throwIfAborted();
        return { output: provider.apply(ctx.idempotencyKey) };
      },
      lookup: lookupOf(provider),
    });
    const slow = new (class extends FlakyStore {
      override async createIfAbsent(...args: Parameters<CheckpointStore['createIfAbsent']>) {
        const created = await super.createIfAbsent(...args);
        h.offsetMs = DEADLINE_MS + MARGIN_MS - 20; // the answer waited for the pool's return path, past the holder's deadline
        return created;
      }
    })(h.store);
    const call = h.newCall();
    const holder = await h.run(h.activities([tool], { store: slow }), call, 1);
    expect(holder).toEqual(pending);
    expect(executeCalls).toEqual([]);

    h.offsetMs = DEADLINE_MS + MARGIN_MS + 1;
    const second = await h.run(h.activities([tool]), call, 2);
    expect(typeOf(second)).toBe('result:executed');
    const third = await h.run(h.activities([tool]), call, 3);
    expect(third).toEqual({ result: expect.objectContaining({ source: 'store', outcome: (second as Extract<Outcome, { result: unknown }>).result.outcome }) });

    expect(executeCalls).toHaveLength(1);
    expect(executeCalls[0]).toMatch(/^attempt-2-/);
    expect(provider.total()).toBe(1);
  });

  test("a deploy that shortens callDeadlineMs (same revision): the holder's declared deadline governs, attempt 2 on the new worker waits (RECONCILE_PENDING until claim + 10 s + margin); one effect", async () => {
    const provider = new Provider();
    const land = new Gate();
    const make = (deadline: number): ToolDefinition<any> =>
      defineTool({
        name: 'create_ticket',
        revision: 'v1',
        input: schema,
        callDeadlineMs: deadline,
        async execute(_input, ctx) {
          if (ctx.attemptId.startsWith('attempt-1-')) await land.wait(); // holder's request, 2 s into its 10 s deadline
          return { output: provider.apply(ctx.idempotencyKey) };
        },
        lookup: lookupOf(provider),
      });
    const call = h.newCall();
    const holder = h.run(h.activities([make(10_000)]), call, 1); // old deploy: 10 s deadline
    await waitFor(async () => (await h.recordOf(call))?.status === 'executing');
    const claimedAt = Date.parse((await h.recordOf(call))!.execution!.claimedAt);

    h.offsetMs = 2_000; // 2 s later; the old holder may send until claim + 10 s
    const earliest = claimedAt + 10_000 + MARGIN_MS - h.clock().getTime();
    const second = await h.run(h.activities([make(DEADLINE_MS)]), call, 2); // new deploy: 1 s deadline
    const latest = claimedAt + 10_000 + MARGIN_MS - h.clock().getTime();
    land.open();
    await holder;

    expect(second).toEqual(pending);
    const delay = (second as Extract<Outcome, { failure: unknown }>).failure.nextRetryDelay as number;
    expect(delay).toBeGreaterThanOrEqual(Math.floor(latest));
    expect(delay).toBeLessThanOrEqual(Math.ceil(earliest));
    expect(provider.total()).toBe(1);
  });

  test("holder clock 150 ms behind (within the 200 ms margin): attempt 2 with a true clock, before the holder's real deadline, waits (RECONCILE_PENDING); one effect", async () => {
    const provider = new Provider();
    const land = new Gate();
    const tool = defineTool({
      ...ticketTool(provider, { withLookup: true }),
      async execute(_i, ctx) {
        if (ctx.attemptId.startsWith('attempt-1-')) await land.wait();
        return { output: provider.apply(ctx.idempotencyKey) };
      },
    });
    const skewed = () => new Date(Date.now() + h.offsetMs - 150);
    const call = h.newCall();
    const holder = h.run(h.activities([tool], { clock: skewed }), call, 1);
    let claimedAt = 0;
    await waitFor(async () => {
      const record = await h.recordOf(call);
      claimedAt = record?.status === 'executing' ? Date.parse(record.execution!.claimedAt) : 0;
      return claimedAt !== 0;
    });
    // Real time 100 ms before the holder's real deadline (its claim in real time is 150 ms after the time it wrote), counted from the claim.
    h.offsetMs = claimedAt + 150 + DEADLINE_MS - 100 - Date.now();
    const second = await h.run(h.activities([tool]), call, 2);
    land.open();
    await holder;
    expect(second).toEqual(pending);
    expect(provider.total()).toBe(1);
  });
});
