/**
 * One business action across runs (docs/protocol.md#business-keys): a tool that declares
 * `businessKey` applies each key once per window per tenant, whichever run calls it. A second
 * call with the key, from any run, gets the first call's result and says so (`answeredBy`); a
 * call with the key and other arguments is refused (IDEMPOTENCY_CONFLICT naming the first run) and
 * never runs. Activities in MockActivityEnvironment against a SQLite file store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import fc from 'fast-check';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { CheckpointError } from '../../src/checkpoint/errors';
import type { JsonValue } from '../../src/checkpoint/types';
import { FlakyStore } from '../helpers/flaky-store';

jest.setTimeout(120_000);

const WINDOW_MS = 60_000;

/** Charges per idempotency key and per order; while `held` is set, a charge waits for it (in flight). */
class Provider {
  readonly charges = new Map<string, number>();
  readonly byOrder = new Map<string, number>();
  held: Promise<void> | null = null;
  /** The answer to the next charge is lost after the charge (the tool throws). */
  loseNextAnswer = false;
  /** The next request never reaches the provider (the tool throws before charging). */
  dropNextRequest = false;

  async charge(key: string, orderId: string, amount: number): Promise<{ charge: string; amount: number }> {
    if (this.held !== null) await this.held;
    if (this.dropNextRequest) {
      this.dropNextRequest = false;
      throw new Error('the worker lost its network before sending the request');
    }
    this.charges.set(key, (this.charges.get(key) ?? 0) + 1);
    this.byOrder.set(orderId, (this.byOrder.get(orderId) ?? 0) + 1);
    if (this.loseNextAnswer) {
      this.loseNextAnswer = false;
      throw new Error('the connection was reset after the request was sent');
    }
    return { charge: `ch-${orderId}`, amount };
  }

  total(): number {
    return [...this.byOrder.values()].reduce((a, b) => a + b, 0);
  }
}

/** Strips fields it does not know (zod's default) and fills `currency`. */
const schema = z.object({ orderId: z.string().min(1), amount: z.number().int().positive(), currency: z.string().default('EUR') });

function chargeTool(provider: Provider, over: { revision?: string; lookup?: boolean; windowMs?: number; refunds?: string[] } = {}) {
  return defineTool({
    name: 'charge_order',
    revision: over.revision ?? 'v1',
    input: schema,
    businessKey: (input) => input.orderId,
    businessKeyWindowMs: over.windowMs ?? WINDOW_MS,
    callDeadlineMs: 500,
    async execute(input, ctx) {
      return { output: await provider.charge(ctx.idempotencyKey, input.orderId, input.amount) };
    },
    ...(over.lookup === true
      ? {
          async lookup({ idempotencyKey }: { idempotencyKey: string }) {
            const found = provider.charges.has(idempotencyKey);
            return found ? { found: true as const, output: { charge: 'found' } } : { found: false as const };
          },
        }
      : {}),
    ...(over.refunds !== undefined
      ? {
          compensation: {
            revision: 'refund-v1',
            async execute(_applied: unknown, ctx: { idempotencyKey: string }) {
              over.refunds!.push(ctx.idempotencyKey);
              return { output: { refunded: true } };
            },
          },
        }
      : {}),
  });
}

type Outcome = { result: FencedToolResult } | { failure: { type: string | undefined; nonRetryable: boolean; message: string; details: unknown } };
type Run = { workflowId: string; runId: string };

describe('business keys: one business action across runs', () => {
  let dir: string;
  let store: CheckpointStore;
  let seq = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-business-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Added to the fence's clock: a test moves past a window or a settle time without waiting for it. */
  let offsetMs = 0;
  const clock = (): Date => new Date(Date.now() + offsetMs);
  afterEach(() => {
    offsetMs = 0;
  });

  function activities(provider: Provider, over: Parameters<typeof chargeTool>[1] & { store?: CheckpointStore } = {}): ToolActivities {
    return createToolActivities({ store: over.store ?? store, tools: [chargeTool(provider, over)], clock, reconcileMarginMs: 100 });
  }

  function newRun(): Run {
    seq += 1;
    return { workflowId: `order-webhook-${seq}`, runId: `run-${seq}` };
  }

  /** Each test its own orders: the store is shared. */
  function order(): string {
    seq += 1;
    return `order-${seq}`;
  }

  function call(run: Run, callId: string, input: JsonValue, over: Partial<FencedToolInput> = {}): FencedToolInput {
    return { tenant: 'acme', callId, toolName: 'charge_order', input, runChainId: run.runId, ...over };
  }

  async function attempt(acts: ToolActivities, run: Run, input: FencedToolInput, n = 1): Promise<Outcome> {
    const env = new MockActivityEnvironment({ attempt: n, workflowExecution: { workflowId: run.workflowId, runId: run.runId }, heartbeatTimeoutMs: 30_000 } as never);
    try {
      return { result: await env.run(acts.runFencedTool, input) };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      return { failure: { type: error.type ?? undefined, nonRetryable: error.nonRetryable ?? false, message: error.message, details: error.details?.[0] } };
    }
  }

  const resultOf = (o: Outcome): FencedToolResult => {
    if (!('result' in o)) throw new Error(`expected a result, got ${JSON.stringify(o.failure)}`);
    return o.result;
  };

  test('a second run with the same key and arguments gets the first call’s result, says which run applied it, and charges nothing', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const [a, b] = [newRun(), newRun()];
    const id = order();

    const first = resultOf(await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 })));
    // Another phrasing of the same arguments: a field the schema strips, the default given.
    const second = resultOf(await attempt(acts, b, call(b, 'toolu_b', { amount: 500, orderId: id, currency: 'EUR', note: 'again' })));

    expect(first).toMatchObject({ source: 'executed', outcome: { ok: true, output: { charge: `ch-${id}`, amount: 500 } } });
    expect(first.answeredBy).toBeUndefined();
    expect(second).toMatchObject({ callId: 'toolu_b', source: 'store', outcome: { ok: true, output: { charge: `ch-${id}`, amount: 500 } } });
    expect(second.answeredBy).toEqual({ workflowId: a.workflowId, runChainId: a.runId, callId: 'toolu_a' });
    expect(second.idempotencyKey).toBe(first.idempotencyKey);
    expect(provider.total()).toBe(1);
    // Its later attempts follow what it adopted.
    expect(resultOf(await attempt(acts, b, call(b, 'toolu_b', { amount: 500, orderId: id }), 2))).toMatchObject({ source: 'store', answeredBy: second.answeredBy });
  });

  test('the same key with other arguments is refused as IDEMPOTENCY_CONFLICT naming the first run; nothing runs or is written', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const [a, b] = [newRun(), newRun()];
    const id = order();

    await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    const refused = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 700 }));

    expect(refused).toEqual({
      failure: {
        type: 'IDEMPOTENCY_CONFLICT',
        nonRetryable: true,
        message: expect.stringContaining(`workflow ${a.workflowId} (run chain ${a.runId}), call "toolu_a", with other arguments`),
        details: expect.objectContaining({ firstWorkflowId: a.workflowId, firstRunChainId: a.runId, firstCallId: 'toolu_a' }),
      },
    });
    expect(await store.getByCall('default/acme', callBindingId({ runChainId: b.runId, workflowId: b.workflowId, callId: 'toolu_b' }))).toBeNull();
    expect(provider.total()).toBe(1);
  });

  test('a deploy that changes the tool revision: the same key is refused, never charged again', async () => {
    const provider = new Provider();
    const [a, b] = [newRun(), newRun()];
    const id = order();

    await attempt(activities(provider), a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    const refused = await attempt(activities(provider, { revision: 'v2' }), b, call(b, 'toolu_b', { orderId: id, amount: 500 }));

    expect(refused).toMatchObject({ failure: { type: 'IDEMPOTENCY_CONFLICT', nonRetryable: true, message: expect.stringContaining('under tool revision v1') } });
    expect(provider.total()).toBe(1);
  });

  test('other keys, and the same key in another tenant, are other actions: each charges once', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const [a, b] = [newRun(), newRun()];
    const [x, y] = [order(), order()];

    const results = [
      await attempt(acts, a, call(a, 'toolu_1', { orderId: x, amount: 500 })),
      await attempt(acts, b, call(b, 'toolu_1', { orderId: y, amount: 500 })),
      await attempt(acts, b, call(b, 'toolu_2', { orderId: x, amount: 500 }, { tenant: 'globex' })),
    ].map(resultOf);

    expect(results.map((r) => [r.source, r.answeredBy])).toEqual([
      ['executed', undefined],
      ['executed', undefined],
      ['executed', undefined],
    ]);
    expect(provider.total()).toBe(3);
  });

  test('after the window the key is free: the next call charges, and answers the calls in its own window', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const [a, b, c] = [newRun(), newRun(), newRun()];
    const id = order();

    await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    offsetMs = WINDOW_MS - 1_000;
    const within = resultOf(await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 })));
    offsetMs = WINDOW_MS;
    const after = resultOf(await attempt(acts, b, call(b, 'toolu_b2', { orderId: id, amount: 900 })));
    offsetMs = WINDOW_MS + 1_000;
    const answered = resultOf(await attempt(acts, c, call(c, 'toolu_c', { orderId: id, amount: 900 })));

    expect(within).toMatchObject({ source: 'store', answeredBy: { workflowId: a.workflowId } });
    expect(after).toMatchObject({ source: 'executed', outcome: { ok: true, output: { amount: 900 } } });
    expect(after.answeredBy).toBeUndefined();
    expect(answered).toMatchObject({ source: 'store', answeredBy: { workflowId: b.workflowId, callId: 'toolu_b2' } });
    expect(provider.byOrder.get(id)).toBe(2);
  });

  test('after the window, a first call whose outcome is still unknown keeps its key: the next call pauses on it, never charges again', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const [a, b] = [newRun(), newRun()];
    const id = order();
    provider.loseNextAnswer = true;

    const first = await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    offsetMs = WINDOW_MS + 10_000;
    const late = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }));

    expect(first).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN' } });
    expect(late).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN', nonRetryable: true } });
    expect(provider.total()).toBe(1);
  });

  test('while the first call is in flight, a second run waits (retryable), then gets its result', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const [a, b] = [newRun(), newRun()];
    const id = order();
    let release!: () => void;
    provider.held = new Promise<void>((resolve) => (release = resolve));

    const first = attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const waiting = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }));
    provider.held = null;
    release();
    await first;
    const later = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }), 2);

    expect(waiting).toMatchObject({ failure: { type: 'RECONCILE_PENDING', nonRetryable: false } });
    expect(later).toMatchObject({ result: { source: 'store', answeredBy: { workflowId: a.workflowId } } });
    expect(provider.total()).toBe(1);
  });

  test('a second run whose retry cannot read its own checkpoint is still given the first call’s key and run, from the failure path', async () => {
    const provider = new Provider();
    const flaky = new FlakyStore(store);
    const acts = activities(provider, { store: flaky });
    const [a, b] = [newRun(), newRun()];
    const id = order();
    let release!: () => void;
    provider.held = new Promise<void>((resolve) => (release = resolve));

    const first = attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const waiting = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }));
    provider.held = null;
    release();
    const charged = resultOf(await first);
    let failed = false;
    flaky.failWhen = (op) => op === 'get' && !failed && (failed = true);
    const later = resultOf(await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }), 2));

    expect(waiting).toMatchObject({ failure: { type: 'RECONCILE_PENDING' } });
    expect(failed).toBe(true);
    expect(later).toMatchObject({ source: 'store', idempotencyKey: charged.idempotencyKey, answeredBy: { workflowId: a.workflowId, callId: 'toolu_a' } });
    expect(later.storedUnder).toBeUndefined();
    expect(provider.total()).toBe(1);
  });

  test('a first call whose outcome is unknown: a second run waits while the first run can reconcile it, or pauses without a lookup; never charges again', async () => {
    for (const lookup of [true, false]) {
      const provider = new Provider();
      const acts = activities(provider, { lookup });
      const [a, b] = [newRun(), newRun()];
      const id = order();
      provider.loseNextAnswer = true;

      const first = await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
      offsetMs = 10_000; // past the first call's settle time (claim + 500 ms deadline + 100 ms margin)
      const second = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }));
      const firstRetry = await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }), 2);
      const secondRetry = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }), 2);

      expect(first).toMatchObject({ failure: { type: lookup ? 'RECONCILE_PENDING' : 'OUTCOME_UNKNOWN', nonRetryable: !lookup } });
      expect(second).toMatchObject({ failure: { type: lookup ? 'RECONCILE_PENDING' : 'OUTCOME_UNKNOWN', nonRetryable: !lookup } });
      if (lookup) {
        expect(firstRetry).toMatchObject({ result: { source: 'lookup' } });
        expect(secondRetry).toMatchObject({ result: { source: 'store', answeredBy: { workflowId: a.workflowId } } });
      }
      expect(provider.total()).toBe(1);
      offsetMs = 0;
    }
  });

  test('a rerun after a person proved the first call absent takes the key over and charges; other runs then get the rerun’s result', async () => {
    const provider = new Provider();
    const flaky = new FlakyStore(store);
    const acts = activities(provider, { store: flaky });
    const [a, b] = [newRun(), newRun()];
    const id = order();
    // The first call's claim lands, its request never leaves the worker, and the store is lost: nothing charged, outcome unknown.
    flaky.failWhen = (op) => op !== 'createIfAbsent';
    provider.dropNextRequest = true;
    await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    flaky.failWhen = null;
    offsetMs = 10_000;
    const paused = await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }), 2);

    // Without a person's proof another call is answered by the paused one; the rerun the proof names charges.
    const unproven = await attempt(acts, a, call(a, 'toolu_x', { orderId: id, amount: 500 }));
    const rerun = await attempt(acts, a, call(a, 'toolu_a~retry1', { orderId: id, amount: 500 }, { provenAbsentCallIds: ['toolu_a'] }));
    const other = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }, { provenAbsentCallIds: ['toolu_a'] }));

    expect(paused).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN' } });
    expect(unproven).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN' } });
    expect(rerun).toMatchObject({ result: { source: 'executed' } });
    // Another run's proof names its own calls only: it is answered by the rerun, never takes the key.
    expect(other).toMatchObject({ result: { source: 'store', answeredBy: { workflowId: a.workflowId, callId: 'toolu_a~retry1' } } });
    expect(provider.total()).toBe(1);
  });

  test('a second run never claims or reconciles another run’s unsettled call: it waits, and the first run’s rerun after a person’s proof charges once', async () => {
    const provider = new Provider();
    const flaky = new FlakyStore(store);
    const acts = activities(provider, { store: flaky, lookup: true });
    const [a, b] = [newRun(), newRun()];
    const id = order();
    // Run A's claim lands, its request never leaves the worker, the store is lost: nothing charged, the claim unsettled.
    flaky.failWhen = (op) => op !== 'createIfAbsent';
    provider.dropNextRequest = true;
    await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    flaky.failWhen = null;
    offsetMs = 10_000; // past the claim's settle time: a lookup would find nothing and could take it over

    const waiting = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }));
    const rerun = await attempt(acts, a, call(a, 'toolu_a~retry1', { orderId: id, amount: 500 }, { provenAbsentCallIds: ['toolu_a'] }));
    const answered = await attempt(acts, b, call(b, 'toolu_b2', { orderId: id, amount: 500 }));

    expect(waiting).toMatchObject({ failure: { type: 'RECONCILE_PENDING', nonRetryable: false, details: expect.objectContaining({ firstCallId: 'toolu_a' }) } });
    expect(rerun).toMatchObject({ result: { source: 'executed' } });
    expect(answered).toMatchObject({ result: { source: 'store', answeredBy: { callId: 'toolu_a~retry1' } } });
    expect(provider.total()).toBe(1);
  });

  test('a first call another run’s person resolved applied is not given up by a rerun that names it proven absent', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const [a, b] = [newRun(), newRun()];
    const id = order();
    provider.loseNextAnswer = true;
    await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    offsetMs = 10_000;
    const pausedB = await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }));
    // Run B's person sees the charge at the provider: stored in the first call's checkpoint.
    await new MockActivityEnvironment({ attempt: 1, workflowExecution: b } as never).run(acts.resolveToolCall, {
      ...call(b, 'toolu_b', { orderId: id, amount: 500 }),
      resolution: 'applied' as const,
      result: { ok: true as const, output: { charge: `ch-${id}`, amount: 500 }, receipt: null },
      reason: 'seen at the provider',
    });

    // Run A's person decides from a stale view: absent. The stored outcome outweighs it.
    const rerun = await attempt(acts, a, call(a, 'toolu_a~retry1', { orderId: id, amount: 500 }, { provenAbsentCallIds: ['toolu_a'] }));

    expect(pausedB).toMatchObject({ failure: { type: 'OUTCOME_UNKNOWN' } });
    expect(rerun).toMatchObject({ result: { source: 'store', outcome: { ok: true, output: { charge: `ch-${id}` } } } });
    expect(provider.total()).toBe(1);
  });

  test('compensating a call another run answered refunds nothing: that run owns the effect', async () => {
    const provider = new Provider();
    const refunds: string[] = [];
    const acts = activities(provider, { refunds });
    const [a, b] = [newRun(), newRun()];
    const id = order();
    const env = (run: Run) => new MockActivityEnvironment({ attempt: 1, workflowExecution: run } as never);

    await attempt(acts, a, call(a, 'toolu_a', { orderId: id, amount: 500 }));
    await attempt(acts, b, call(b, 'toolu_b', { orderId: id, amount: 500 }));
    const refused = await env(b)
      .run(acts.compensateToolCall, { ...call(b, 'toolu_b', { orderId: id, amount: 500 }), role: 'compensation' as const })
      .catch((error: ApplicationFailure) => error);
    const own = await env(a).run(acts.compensateToolCall, { ...call(a, 'toolu_a', { orderId: id, amount: 500 }), role: 'compensation' as const });

    expect(refused).toMatchObject({ type: 'NOTHING_TO_COMPENSATE', nonRetryable: true, message: expect.stringContaining(a.workflowId) });
    expect(own).toMatchObject({ declared: true, result: { source: 'executed' } });
    expect(refunds).toHaveLength(1);
  });

  test.each([
    [
      'throws',
      () => (): string => {
        throw new Error('no order id');
      },
    ],
    ['returns an empty string', () => (): string => ''],
    ['returns a number', () => (): string => 42 as unknown as string],
    ['returns 1,025 characters', () => (): string => 'k'.repeat(1_025)],
    ['returns a lone surrogate', () => (): string => 'order-\ud800'],
  ])('a businessKey that %s refuses the call as INVALID_TOOL_INPUT before anything is written', async (_what, makeKey) => {
    const provider = new Provider();
    const tool = defineTool({ ...chargeTool(provider), businessKey: makeKey() });
    const acts = createToolActivities({ store, tools: [tool], clock });
    const run = newRun();

    const refused = await attempt(acts, run, call(run, 'toolu_1', { orderId: order(), amount: 500 }));

    expect(refused).toMatchObject({ failure: { type: 'INVALID_TOOL_INPUT', nonRetryable: true } });
    expect(await store.getByCall('default/acme', callBindingId({ runChainId: run.runId, workflowId: run.workflowId, callId: 'toolu_1' }))).toBeNull();
    expect(provider.total()).toBe(0);
  });

  test.each([
    ['with batch', { batch: true }, 'businessKey'],
    ['with dedupeByIntent', { dedupeByIntent: true }, 'businessKey'],
    ['a window of 0', { businessKeyWindowMs: 0 }, 'businessKeyWindowMs'],
    ['a window over 366 days', { businessKeyWindowMs: 367 * 86_400_000 }, 'businessKeyWindowMs'],
  ])('defineTool refuses a businessKey %s: INVALID_ARGUMENT', (_what, extra, field) => {
    expect(() => defineTool({ ...chargeTool(new Provider()), ...extra })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field }) }),
    );
  });

  test('defineTool refuses a window without a businessKey', () => {
    const { businessKey: _key, ...unkeyed } = chargeTool(new Provider());
    expect(() => defineTool({ ...unkeyed, businessKey: undefined, businessKeyWindowMs: 1_000 })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'businessKeyWindowMs' }) }),
    );
  });

  /** `store` with every call released by the scheduler `s`, and the n-th call failing as `faults` says (a write that fails `unknown` was applied). */
  function scheduledStore(s: fc.Scheduler, faults: readonly { at: number; kind: 'unavailable' | 'unknown' }[] = []): CheckpointStore {
    let calls = 0;
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function' || prop === 'close') return value;
        return async (...args: unknown[]) => {
          await s.schedule(Promise.resolve(), String(prop));
          const fault = faults.find((f) => f.at === calls);
          calls += 1;
          const write = prop === 'createIfAbsent' || prop === 'compareAndSwap' || prop === 'writeGroup' || prop === 'releaseDedupeKey';
          if (fault?.kind === 'unavailable' || (fault !== undefined && !write)) throw new CheckpointError('STORE_UNAVAILABLE', `injected at ${String(prop)}`, {});
          const answer = await (value as (...a: unknown[]) => unknown).apply(target, args);
          if (fault?.kind === 'unknown') throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `injected after ${String(prop)}`, {});
          return answer;
        };
      },
    });
  }

  /** Calls from many runs: which order (of two) and amount (of two) each charges, and its phrasing. */
  const calls = fc.array(fc.record({ order: fc.constantFrom(0, 1), amount: fc.constantFrom(500, 700), run: fc.nat(3), stripped: fc.boolean() }), { minLength: 2, maxLength: 6 });

  test('property: calls of many runs, interleaved any way, with store faults and a lost answer, charge each order at most once and only as its first call asked', async () => {
    const faults = fc.array(fc.record({ at: fc.nat(40), kind: fc.constantFrom<'unavailable' | 'unknown'>('unavailable', 'unknown') }), { maxLength: 3 });
    await fc.assert(
      fc.asyncProperty(calls, faults, fc.boolean(), fc.scheduler(), async (cs, storeFaults, loseNextAnswer, s) => {
        const provider = new Provider();
        provider.loseNextAnswer = loseNextAnswer;
        const acts = createToolActivities({
          store: scheduledStore(s, storeFaults),
          tools: [chargeTool(provider, { lookup: true })],
          reconcileMarginMs: 100,
          transientRetry: { initialIntervalMs: 1, maximumIntervalMs: 2, maximumAttempts: 2 },
        });
        const orders = [order(), order()];
        const runs = [newRun(), newRun(), newRun(), newRun()];
        const inputs = cs.map((c, i) =>
          call(runs[c.run]!, `toolu_${i}`, c.stripped ? { orderId: orders[c.order]!, amount: c.amount, note: 'x' } : { orderId: orders[c.order]!, amount: c.amount }),
        );

        const outcomes = await s.waitFor(Promise.all(inputs.map((input, i) => attempt(acts, runs[cs[i]!.run]!, input))));
        for (const [i, outcome] of outcomes.entries()) {
          let current = outcome;
          for (let n = 2; 'failure' in current && !current.failure.nonRetryable && n <= 4; n += 1) current = await s.waitFor(attempt(acts, runs[cs[i]!.run]!, inputs[i]!, n));
          outcomes[i] = current;
        }

        for (const [id, n] of provider.byOrder) expect([id, n]).toEqual([id, 1]);
        outcomes.forEach((o, i) => {
          if (!('result' in o)) {
            // A refusal names the other arguments; nothing else is final before the charge is known.
            if (o.failure.type === 'IDEMPOTENCY_CONFLICT') expect(cs.some((c) => c.order === cs[i]!.order && c.amount !== cs[i]!.amount)).toBe(true);
            return;
          }
          if (!o.result.outcome.ok) return;
          const output = o.result.outcome.output as { amount?: number; charge: string };
          expect(provider.byOrder.get(orders[cs[i]!.order]!)).toBe(1);
          if (output.charge !== 'found') expect(output.amount).toBe(cs[i]!.amount);
          expect(provider.charges.get(o.result.idempotencyKey)).toBe(1);
        });
      }),
      { seed: 20261213, numRuns: 60 },
    );
  });
});
