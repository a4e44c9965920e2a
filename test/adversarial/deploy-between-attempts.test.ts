/**
 * Adversarial regression (docs/protocol.md#nothing-applied): a deploy
 * lands between two attempts of one call (new tool revision, new schema default, stricter schema,
 * tool removed), also while the old revision's attempt is still running (rolling deploy) and for
 * `dedupeByIntent` tools, whose checkpoint is found by the tool name and the model's input. A
 * stored result is delivered (storedUnder the old revision); an unfinished claim this worker cannot
 * reconcile first waits for its holder's settle time (RECONCILE_PENDING, nextRetryDelay = time
 * left), then pauses (OUTCOME_UNKNOWN); a refusal on a later attempt is made durable before it is
 * reported; the tool never runs twice.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { defineTool, type ToolActivities } from '../../src/activities';
import { createCheckpoint } from '../../src/checkpoint/record';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { FlakyStore, Gate, Harness, MARGIN_MS, never, Provider, schema, ticketTool, typeOf, UNREACHED_DEADLINE_MS, waitFor, type Call, type Outcome } from './harness';

jest.setTimeout(60_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

const stricter = z.object({ title: z.string().min(1), queue: z.string() }).strict();

function intentTool(provider: Provider, over: Parameters<typeof ticketTool>[1] = {}) {
  return defineTool({ ...ticketTool(provider, over), dedupeByIntent: true });
}

/** Attempt 1 (revision v1) runs until `point`, where its worker dies; returns the call and its checkpoint then. */
async function diedAt(
  provider: Provider,
  point: 'after-result-stored' | 'after-effect',
  intent: boolean,
  tool = intent ? intentTool(provider) : ticketTool(provider),
  over: Parameters<Harness['activities']>[1] = {},
): Promise<{ call: Call; record: CheckpointRecord }> {
  const call = h.newCall();
  void h.run(h.activities([tool], { hooks: { step: (p) => (p === point ? never() : undefined) }, ...over }), call, 1);
  // After the result is stored the record is delivered: the result and this attempt's delivery are
  // one write (docs/protocol.md#cost).
  const status = point === 'after-effect' ? 'executing' : 'delivered';
  await waitFor(() => provider.total() === 1);
  let record: CheckpointRecord | undefined;
  await waitFor(async () => {
    record = (await h.recordsOfWorkflow(call)).find((r) => r.status === status);
    return record !== undefined;
  });
  return { call, record: record! };
}

/**
 * The two steps for an unfinished claim met by a worker that cannot reconcile it: before the
 * holder's settle time a retryable RECONCILE_PENDING whose nextRetryDelay is the time left;
 * after it, a non-retryable OUTCOME_UNKNOWN (the run pauses for a person).
 */
async function expectWaitThenPause(acts: ToolActivities, call: Call, record: CheckpointRecord, attempt: number): Promise<void> {
  const settleAt = Date.parse(record.execution!.deadlineAt!) + MARGIN_MS;
  expect(Date.parse(record.execution!.deadlineAt!)).toBe(Date.parse(record.execution!.claimedAt) + UNREACHED_DEADLINE_MS);
  const earliest = settleAt - Date.now();
  const before = await h.run(acts, call, attempt);
  const latest = settleAt - Date.now();
  expect(before).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
  const delay = (before as Extract<Outcome, { failure: unknown }>).failure.nextRetryDelay as number;
  expect(delay).toBeGreaterThanOrEqual(Math.floor(latest));
  expect(delay).toBeLessThanOrEqual(Math.ceil(earliest));

  h.passSettleTime(record);
  const after = await h.run(acts, call, attempt + 1);
  expect(after).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
}

describe('dedupeByIntent tool, deploy between attempts', () => {
  test('new tool revision after the result was stored: the stored result is delivered (source store, storedUnder v1), the tool is not called again', async () => {
    const provider = new Provider();
    const { call } = await diedAt(provider, 'after-result-stored', true);
    const out = await h.run(h.activities([intentTool(provider, { revision: 'v2' })]), call, 2);
    expect(out).toEqual({ result: expect.objectContaining({ source: 'store', storedUnder: { toolName: 'create_ticket', toolRevision: 'v1' } }) });
    expect(provider.total()).toBe(1);
  });

  test('new schema default after the result was stored: the stored result is delivered, the tool is not called again', async () => {
    const provider = new Provider();
    const { call } = await diedAt(provider, 'after-result-stored', true);
    const withDefault = z.object({ title: z.string().min(1), priority: z.string().default('normal') }).strict();
    const out = await h.run(h.activities([intentTool(provider, { input: withDefault })]), call, 2);
    expect(typeOf(out)).toBe('result:store');
    expect(provider.total()).toBe(1);
  });

  test('new tool revision, unfinished claim (effect applied, worker died): RECONCILE_PENDING until the settle time, then OUTCOME_UNKNOWN; never a second effect', async () => {
    const provider = new Provider();
    const { call, record } = await diedAt(provider, 'after-effect', true);
    await expectWaitThenPause(h.activities([intentTool(provider, { revision: 'v2' })]), call, record, 2);
    expect(provider.requests).toHaveLength(1);
  });

  test('tool removed after the result was stored: the stored result is delivered, not UNKNOWN_TOOL (nothing applied)', async () => {
    const provider = new Provider();
    const { call } = await diedAt(provider, 'after-result-stored', true);
    const out = await h.run(h.activities([]), call, 2);
    expect(typeOf(out)).toBe('result:store');
  });

  test('tool removed, unfinished claim: RECONCILE_PENDING until the settle time, then OUTCOME_UNKNOWN, never UNKNOWN_TOOL', async () => {
    const provider = new Provider();
    const { call, record } = await diedAt(provider, 'after-effect', true);
    await expectWaitThenPause(h.activities([]), call, record, 2);
    expect(provider.requests).toHaveLength(1);
  });

  test('schema made stricter so the old input is invalid, unfinished claim: RECONCILE_PENDING until the settle time, then OUTCOME_UNKNOWN, never INVALID_TOOL_INPUT', async () => {
    const provider = new Provider();
    const { call, record } = await diedAt(provider, 'after-effect', true);
    await expectWaitThenPause(h.activities([intentTool(provider, { input: stricter })]), call, record, 2);
    expect(provider.requests).toHaveLength(1);
  });
});

describe('plain tool, deploy between attempts', () => {
  test('schema made stricter after the result was stored: the stored result is delivered', async () => {
    const provider = new Provider();
    const { call } = await diedAt(provider, 'after-result-stored', false);
    expect(typeOf(await h.run(h.activities([ticketTool(provider, { input: stricter })]), call, 2))).toBe('result:store');
    expect(provider.total()).toBe(1);
  });

  test('schema made stricter, unfinished claim: RECONCILE_PENDING until the settle time, then OUTCOME_UNKNOWN; never a second effect', async () => {
    const provider = new Provider();
    const { call, record } = await diedAt(provider, 'after-effect', false);
    await expectWaitThenPause(h.activities([ticketTool(provider, { input: stricter })]), call, record, 2);
    expect(provider.requests).toHaveLength(1);
  });

  test('an activity reset (attempt counter back to 1) after the tool was removed: the stored result is delivered, not UNKNOWN_TOOL', async () => {
    const provider = new Provider();
    const { call } = await diedAt(provider, 'after-result-stored', false);
    const out = await h.run(h.activities([]), call, 1);
    expect(typeOf(out)).toBe('result:store');
  });
});

describe('rolling deploy meets overlapping attempts', () => {
  test('live v1 holder mid-request, attempt 2 on a v2 worker before the settle time: waits (RECONCILE_PENDING), the holder stores its result, attempt 3 on v2 delivers it (storedUnder v1); one effect', async () => {
    const provider = new Provider();
    const land = new Gate();
    const v = (revision: string) =>
      defineTool({
        name: 'create_ticket',
        revision,
        input: schema,
        callDeadlineMs: UNREACHED_DEADLINE_MS,
        async execute(_i, ctx) {
          await land.wait();
          return { output: provider.apply(ctx.idempotencyKey) };
        },
      });
    const call = h.newCall();
    const holder = h.run(h.activities([v('v1')]), call, 1);
    await waitFor(async () => (await h.recordOf(call))?.status === 'executing');

    const second = await h.run(h.activities([v('v2')]), call, 2);
    expect(second).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
    land.open();
    const first = await holder;
    expect(typeOf(first)).toBe('result:executed');
    expect((await h.recordOf(call))?.status).toBe('delivered');

    const third = await h.run(h.activities([v('v2')]), call, 3);
    expect(third).toEqual({ result: expect.objectContaining({ source: 'store', storedUnder: { toolName: 'create_ticket', toolRevision: 'v1' } }) });
    expect((third as Extract<Outcome, { result: unknown }>).result.outcome).toEqual((first as Extract<Outcome, { result: unknown }>).result.outcome);
    expect(provider.total()).toBe(1);
  });

  test('attempt 1 (v1, on a release that created the checkpoint and then claimed it in two writes, as before the two-write fresh call of docs/protocol.md#cost) made the checkpoint and stalled before its claim; attempt 2 on v2 makes its BINDING_CONFLICT durable (refusal stored and delivered), so the stalled attempt 1 loses its claim; the call ends refused with no effect and the row is prunable', async () => {
    const provider = new Provider();
    const call = h.newCall();
    const resume = new Gate();
    let stalled = false;
    let claims = 0;
    // The previous release inserted a ready checkpoint first, then claimed it by compare-and-swap.
    const previousRelease = new (class extends FlakyStore {
      override createIfAbsent(record: CheckpointRecord) {
        return super.createIfAbsent(record.status === 'executing' ? createCheckpoint(record.binding, { createdAt: record.createdAt }) : record);
      }
    })(h.store);
    const first = h.run(
      h.activities([ticketTool(provider)], {
        store: previousRelease,
        hooks: {
          step: async (p) => {
            if (p !== 'before-claim' || ++claims < 2) return; // the second: the claim of the ready record
            stalled = true;
            await resume.wait();
          },
        },
      }),
      call,
      1,
    );
    await waitFor(() => stalled);
    expect((await h.recordOf(call))?.status).toBe('ready');

    const v2 = h.activities([ticketTool(provider, { revision: 'v2' })]);
    const second = await h.run(v2, call, 2);
    expect(second).toEqual({ failure: expect.objectContaining({ type: 'BINDING_CONFLICT', nonRetryable: true }) });
    const settled = await h.recordOf(call);
    expect(settled?.status).toBe('delivered');
    expect(settled?.result?.payload).toEqual({ ok: false, error: expect.objectContaining({ type: 'BINDING_CONFLICT' }) });

    // The stalled v1 attempt wakes up: its claim compare-and-swap loses, the tool is not called.
    resume.open();
    const late = await first;
    expect(late).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });

    const third = await h.run(v2, call, 3);
    expect(third).toEqual({
      result: expect.objectContaining({ source: 'store', outcome: expect.objectContaining({ ok: false, error: expect.objectContaining({ type: 'BINDING_CONFLICT' }) }) }),
    });
    expect(provider.requests).toHaveLength(0);

    // Settled: a delivered row is pruned.
    await h.store.prune({ olderThan: new Date(Date.now() + 60_000).toISOString() });
    expect(await h.recordOf(call)).toBeNull();
  });
});

describe('idempotency-key secret set, changed or removed between attempts', () => {
  const secretA = randomBytes(32);
  const secretB = randomBytes(32);

  /** Attempt 1 runs with `secret` (or none) until `point`, where its worker dies. */
  const diedWith = (provider: Provider, secret: Buffer | undefined, point: 'after-result-stored' | 'after-effect') =>
    diedAt(provider, point, false, ticketTool(provider, { withLookup: true }), secret ? { idempotencyKeySecret: secret } : {});

  test.each([
    ['set', undefined, secretA],
    ['changed', secretA, secretB],
    ['removed', secretA, undefined],
  ] as const)(
    'secret %s with the claim unfinished (effect applied, worker died): the new worker never looks the call up under its own key; RECONCILE_PENDING until the settle time, then OUTCOME_UNKNOWN; one effect',
    async (_how, before, after) => {
      const provider = new Provider();
      const { call, record } = await diedWith(provider, before, 'after-effect');
      await expectWaitThenPause(h.activities([ticketTool(provider, { withLookup: true })], after ? { idempotencyKeySecret: after } : {}), call, record, 2);
      expect(provider.requests).toHaveLength(1);
      expect(provider.total()).toBe(1);
    },
  );

  test('secret changed after the result was stored: the stored result is delivered, the tool is not called again', async () => {
    const provider = new Provider();
    const { call } = await diedWith(provider, secretA, 'after-result-stored');
    const out = await h.run(h.activities([ticketTool(provider, { withLookup: true })], { idempotencyKeySecret: secretB }), call, 2);
    expect(typeOf(out)).toBe('result:store');
    expect(provider.total()).toBe(1);
  });
});
