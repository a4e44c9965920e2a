/**
 * A `dedupeByIntent` tool applies one action once per run, however the model phrased it
 * (docs/protocol.md#dedupe-keys): calls whose validated arguments are the same intent share one
 * checkpoint, also when the model's raw input differs by a field the schema strips or a default it
 * fills, and also when the calls run at the same time. Activities in MockActivityEnvironment
 * against a SQLite file store.
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
import type { CompensateToolCallResult } from '../../src/activities/contract/compensation-contract';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointRecord, JsonValue } from '../../src/checkpoint/types';
import { CheckpointError } from '../../src/checkpoint/errors';
import { FlakyStore } from '../helpers/flaky-store';
import { adoptedFrom } from '../../src/activities/fence/intent-dedupe';
import { intentCallId } from '../../src/activities/fence/prepare-call';
import { callBindingId } from '../../src/checkpoint/call-identity';

jest.setTimeout(120_000);

/** Effects per idempotency key; while `held` is set, a request waits for it (in flight). */
class Provider {
  readonly effects = new Map<string, number>();
  /** Effects applied per intent (`title/priority`). */
  readonly byIntent = new Map<string, number>();
  held: Promise<void> | null = null;
  /** The answer to the first request is lost after the effect (the tool throws). */
  loseFirstAnswer = false;

  async apply(key: string, title: string, priority = 'normal'): Promise<{ ticket: string }> {
    if (this.held !== null) await this.held;
    this.effects.set(key, (this.effects.get(key) ?? 0) + 1);
    this.byIntent.set(`${title}/${priority}`, (this.byIntent.get(`${title}/${priority}`) ?? 0) + 1);
    if (this.loseFirstAnswer) {
      this.loseFirstAnswer = false;
      throw new Error('the connection was reset after the request was sent');
    }
    return { ticket: `T-${title}` };
  }

  total(): number {
    return [...this.effects.values()].reduce((a, b) => a + b, 0);
  }
}

/** Strips fields it does not know (zod's default) and fills `priority`. */
const schema = z.object({ title: z.string().min(1), priority: z.enum(['low', 'normal', 'high']).default('normal') });

function ticketTool(provider: Provider, dedupeByIntent = true, revision = 'v1') {
  return defineTool({
    name: 'create_ticket',
    revision,
    input: schema,
    dedupeByIntent,
    callDeadlineMs: 500,
    async execute(input, ctx) {
      return { output: await provider.apply(ctx.idempotencyKey, input.title, input.priority) };
    },
  });
}

type Outcome = { result: FencedToolResult } | { failure: { type: string | undefined; nonRetryable: boolean } };

describe('dedupeByIntent keys calls by what runs', () => {
  let dir: string;
  let store: CheckpointStore;
  let seq = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-intent-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Added to the fence's clock: a test moves past a claim's settle time without waiting for it. */
  let offsetMs = 0;
  const clock = (): Date => new Date(Date.now() + offsetMs);
  afterEach(() => {
    offsetMs = 0;
  });

  function activities(provider: Provider, dedupeByIntent = true, over: { store?: CheckpointStore; revision?: string } = {}): ToolActivities {
    const tools = over.revision === null ? [] : [ticketTool(provider, dedupeByIntent, over.revision)];
    return createToolActivities({ store: over.store ?? store, tools, clock, reconcileMarginMs: 100 });
  }

  /** A run: its workflow id and run chain. */
  function newRun(): { workflowId: string; runId: string } {
    seq += 1;
    return { workflowId: `wf-intent-${seq}`, runId: `run-${seq}` };
  }

  function call(run: { runId: string }, callId: string, input: JsonValue, over: Partial<FencedToolInput> = {}): FencedToolInput {
    return { tenant: 'acme', callId, toolName: 'create_ticket', input, runChainId: run.runId, ...over };
  }

  async function attempt(acts: ToolActivities, run: { workflowId: string; runId: string }, input: FencedToolInput, n = 1): Promise<Outcome> {
    const env = new MockActivityEnvironment({ attempt: n, workflowExecution: { workflowId: run.workflowId, runId: run.runId }, heartbeatTimeoutMs: 30_000 } as never);
    try {
      return { result: await env.run(acts.runFencedTool, input) };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      return { failure: { type: error.type ?? undefined, nonRetryable: error.nonRetryable ?? false } };
    }
  }

  test.each([
    ['a field the schema strips', { title: 'printer', note: 'asked again' }],
    ['a default the schema fills', { title: 'printer', priority: 'normal' }],
    ['the default, given first', { priority: 'normal', title: 'printer' }],
  ])('a re-planned call whose model input differs by %s is answered from the first call: one effect', async (_what, again) => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();

    const first = await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }));
    const second = await attempt(acts, run, call(run, 'toolu_2', again));

    expect(first).toEqual({ result: expect.objectContaining({ source: 'executed', outcome: expect.objectContaining({ ok: true, output: { ticket: 'T-printer' } }) }) });
    expect(second).toEqual({
      result: expect.objectContaining({ callId: 'toolu_2', source: 'store', outcome: expect.objectContaining({ ok: true, output: { ticket: 'T-printer' } }) }),
    });
    const [a, b] = [first, second].map((o) => (o as { result: FencedToolResult }).result);
    expect(b!.idempotencyKey).toBe(a!.idempotencyKey);
    expect(b!.intentDigest).toBe(a!.intentDigest);
    expect(provider.total()).toBe(1);
  });

  test("two calls with one intent started together: one effect; the later one waits for the first and its retry delivers the first call's result", async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();
    let release!: () => void;
    provider.held = new Promise<void>((resolve) => (release = resolve));

    const first = attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }));
    while (provider.effects.size === 0 && !(await store.listByStatus(['executing'], { limit: 10_000 })).some((r) => r.binding.callId.includes(run.workflowId))) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const second = await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }));
    release();

    expect(second).toEqual({ failure: { type: 'RECONCILE_PENDING', nonRetryable: false } });
    expect(await first).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
    expect(await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }), 2)).toEqual({
      result: expect.objectContaining({ callId: 'toolu_2', source: 'store', outcome: expect.objectContaining({ ok: true, output: { ticket: 'T-printer' } }) }),
    });
    expect(provider.total()).toBe(1);
  });

  describe('a call that adopted another keeps to it (its adoption is stored under its own address)', () => {
    /** Call toolu_2 adopts toolu_1 and is answered from its checkpoint; Temporal never records that answer (its worker died), so toolu_2 runs again. */
    async function adopted(provider: Provider, run: { workflowId: string; runId: string }): Promise<FencedToolResult> {
      const first = await attempt(activities(provider), run, call(run, 'toolu_1', { title: 'printer' }));
      const second = await attempt(activities(provider), run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }));
      expect(second).toEqual({ result: expect.objectContaining({ source: 'store' }) });
      return (first as { result: FencedToolResult }).result;
    }

    test("its retry on a worker with a new tool revision is answered from the holder's checkpoint, never applied again", async () => {
      const provider = new Provider();
      const run = newRun();
      const first = await adopted(provider, run);

      const retry = await attempt(activities(provider, true, { revision: 'v2' }), run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }), 2);

      expect(retry).toEqual({ result: expect.objectContaining({ callId: 'toolu_2', source: 'store', idempotencyKey: first.idempotencyKey, toolRevision: 'v1' }) });
      expect(provider.total()).toBe(1);
    });

    test("its retry on a worker without the tool is delivered the holder's result, as the holder's own retry is", async () => {
      const provider = new Provider();
      const run = newRun();
      const first = await adopted(provider, run);
      const without = createToolActivities({ store, tools: [defineTool({ name: 'other', revision: 'x', input: z.object({}), execute: async () => ({ output: null }) })] });

      const holderRetry = await attempt(without, run, call(run, 'toolu_1', { title: 'printer' }), 2);
      const retry = await attempt(without, run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }), 2);

      expect(holderRetry).toEqual({ result: expect.objectContaining({ source: 'store' }) });
      expect(retry).toEqual({ result: expect.objectContaining({ callId: 'toolu_2', source: 'store', idempotencyKey: first.idempotencyKey, outcome: first.outcome }) });
      expect(provider.total()).toBe(1);
    });

    test('an adopter whose adoption record cannot be stored is not answered from the holder (STORE_UNAVAILABLE, nothing of it stored); its retry adopts', async () => {
      const provider = new Provider();
      const run = newRun();
      const flaky = new FlakyStore(store);
      await attempt(activities(provider, true, { store: flaky }), run, call(run, 'toolu_1', { title: 'printer' }));
      flaky.failWhen = (op, args) => op === 'createIfAbsent' && (args[0] as CheckpointRecord).binding.toolRevision === 'adopted';

      const first = await attempt(activities(provider, true, { store: flaky }), run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }));
      flaky.failWhen = null;
      const retry = await attempt(activities(provider), run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }), 2);

      expect(first).toEqual({ failure: { type: 'STORE_UNAVAILABLE', nonRetryable: false } });
      expect(retry).toEqual({ result: expect.objectContaining({ source: 'store' }) });
      expect(
        adoptedFrom(
          (await store.getByCall(
            `default/acme`,
            callBindingId({ runChainId: run.runId, workflowId: run.workflowId, callId: intentCallId('create_ticket', { title: 'printer', priority: 'normal' }) }),
          ))!,
        ),
      ).not.toBeNull();
      expect(provider.total()).toBe(1);
    });

    test("paused on a holder whose outcome is unknown, it is resolved applied by a person on the holder's checkpoint", async () => {
      const provider = new Provider();
      const run = newRun();
      const flaky = new FlakyStore(store);
      const acts = activities(provider, true, { store: flaky });
      // The holder applies its effect and the store goes away before its result is stored.
      flaky.failWhen = (op) => op !== 'createIfAbsent';
      const first = await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }));
      flaky.failWhen = null;
      offsetMs = 10_000; // past the holder's settle time (claim + 500 ms deadline + 100 ms margin)

      const paused = await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', priority: 'normal' }));
      const resolved = await new MockActivityEnvironment({ attempt: 1, workflowExecution: run } as never).run(acts.resolveToolCall, {
        ...call(run, 'toolu_2', { title: 'printer', priority: 'normal' }),
        resolution: 'applied' as const,
        result: { ok: true as const, output: { ticket: 'T-printer' }, receipt: null },
        reason: 'the ticket is in the tracker',
      });
      const holderRetry = await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }), 2);

      expect(first).toEqual({ failure: { type: 'RECONCILE_PENDING', nonRetryable: false } });
      expect(paused).toEqual({ failure: { type: 'OUTCOME_UNKNOWN', nonRetryable: true } });
      expect(resolved).toEqual(expect.objectContaining({ outcome: expect.objectContaining({ ok: true, output: { ticket: 'T-printer' } }) }));
      expect(holderRetry).toEqual({ result: expect.objectContaining({ source: 'store', outcome: expect.objectContaining({ output: { ticket: 'T-printer' } }) }) });
      expect(provider.total()).toBe(1);
    });
  });

  test('a call refused before its claim (its approval expired) answers no other call: a re-plan with a valid approval runs', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();
    const expired = { approvalExpiresAt: new Date(Date.now() - 1_000).toISOString() };
    const typeOf = (o: Outcome): string => ('failure' in o ? String(o.failure.type) : o.result.outcome.ok ? 'ok' : o.result.outcome.error.type);

    const refused = [
      await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }, expired)),
      await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }, expired), 2),
    ];
    const replanned = await attempt(
      acts,
      run,
      call(run, 'toolu_2', { title: 'printer', priority: 'normal' }, { approvalExpiresAt: new Date(Date.now() + 3_600_000).toISOString() }),
    );

    expect(refused.map(typeOf)).toEqual(['APPROVAL_EXPIRED', 'APPROVAL_EXPIRED']);
    expect(replanned).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
    expect(provider.total()).toBe(1);
  });

  test("compensating an adopter is compensating its holder's action: one refund, under one key", async () => {
    const refunds: string[] = [];
    const charge = defineTool({
      name: 'charge',
      revision: 'v1',
      input: z.object({ amountCents: z.number().int(), currency: z.string().default('EUR') }),
      dedupeByIntent: true,
      async execute(input) {
        return { output: { chargeId: `ch-${input.amountCents}` } };
      },
      compensation: {
        revision: 'refund-v1',
        async execute(_applied, ctx) {
          refunds.push(ctx.idempotencyKey);
          return { output: { refunded: true } };
        },
      },
    });
    const acts = createToolActivities({ store, tools: [charge] });
    const run = newRun();
    const input = (callId: string, amount: JsonValue): FencedToolInput => ({ tenant: 'acme', callId, toolName: 'charge', input: amount, runChainId: run.runId });
    const env = (): MockActivityEnvironment => new MockActivityEnvironment({ attempt: 1, workflowExecution: run } as never);
    await env().run(acts.runFencedTool, input('toolu_1', { amountCents: 500 }));
    const adopter = await env().run(acts.runFencedTool, input('toolu_2', { amountCents: 500, currency: 'EUR' }));

    const compensations: CompensateToolCallResult[] = [
      await env().run(acts.compensateToolCall, { ...input('toolu_2', { amountCents: 500, currency: 'EUR' }), role: 'compensation' as const }),
      await env().run(acts.compensateToolCall, { ...input('toolu_1', { amountCents: 500 }), role: 'compensation' as const }),
    ];

    expect(adopter).toEqual(expect.objectContaining({ source: 'store' }));
    expect(compensations.map((c) => (c.declared ? c.result.source : null))).toEqual(['executed', 'store']);
    const keys = compensations.map((c) => (c.declared ? c.result.idempotencyKey : null));
    expect(keys[0]).toBe(keys[1]);
    expect(refunds).toHaveLength(1);
  });

  test('different validated arguments are two actions, and so are the same arguments in another run chain', async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();
    const other = newRun();

    const results = [
      await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' })),
      await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', priority: 'high' })),
      await attempt(acts, other, call(other, 'toolu_1', { title: 'printer' })),
    ];

    expect(results.map((o) => (o as { result: FencedToolResult }).result.source)).toEqual(['executed', 'executed', 'executed']);
    expect(provider.total()).toBe(3);
  });

  test('a tool without dedupeByIntent runs each call, whatever its intent', async () => {
    const provider = new Provider();
    const acts = activities(provider, false);
    const run = newRun();

    await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }));
    await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', note: 'again' }));

    expect(provider.total()).toBe(2);
  });

  test("a rerun's generation is its own intent: a later call in that generation adopts the rerun, never the proven-absent call", async () => {
    const provider = new Provider();
    const acts = activities(provider);
    const run = newRun();
    const first = (await attempt(acts, run, call(run, 'toolu_1', { title: 'printer' }))) as { result: FencedToolResult };
    const digest = first.result.intentDigest!;

    const rerun = await attempt(acts, run, call(run, 'toolu_1~retry1', { title: 'printer' }, { intentGeneration: 1 }));
    const later = await attempt(acts, run, call(run, 'toolu_2', { title: 'printer', note: 'x' }, { intentGenerations: { [digest]: 1 } }));

    expect(rerun).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
    expect(later).toEqual({ result: expect.objectContaining({ source: 'store', idempotencyKey: (rerun as { result: FencedToolResult }).result.idempotencyKey }) });
    expect(provider.total()).toBe(2);
  });

  /** The model's phrasings of a few intents: a field the schema strips, a default given or not, member order. */
  const phrasings = fc.array(
    fc.record(
      {
        title: fc.constantFrom('printer', 'laptop'),
        priority: fc.constantFrom(undefined, 'normal', 'high'),
        note: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
        order: fc.boolean(),
      },
      { requiredKeys: ['title', 'order'] },
    ),
    { minLength: 2, maxLength: 5 },
  );
  type Phrasing = { title: string; priority?: 'normal' | 'high'; note?: string; order: boolean };
  const intentOf = (p: Phrasing): string => `${p.title}/${p.priority ?? 'normal'}`;

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
          const write = prop === 'createIfAbsent' || prop === 'compareAndSwap' || prop === 'writeGroup';
          if (fault?.kind === 'unavailable' || (fault !== undefined && !write)) throw new CheckpointError('STORE_UNAVAILABLE', `injected at ${String(prop)}`, {});
          const answer = await (value as (...a: unknown[]) => unknown).apply(target, args);
          if (fault?.kind === 'unknown') throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `injected after ${String(prop)}`, {});
          return answer;
        };
      },
    });
  }

  /** Runs each call's attempts 1..maxAttempts under `s`, all first attempts at once, then the retries of each call in turn (as Temporal retries them). */
  async function runAll(s: fc.Scheduler, acts: ToolActivities, run: { workflowId: string; runId: string }, inputs: FencedToolInput[], maxAttempts: number): Promise<Outcome[]> {
    const outcomes = await s.waitFor(Promise.all(inputs.map((input) => attempt(acts, run, input))));
    for (const [i, outcome] of outcomes.entries()) {
      let current = outcome;
      for (let n = 2; 'failure' in current && !current.failure.nonRetryable && n <= maxAttempts; n += 1) current = await s.waitFor(attempt(acts, run, inputs[i]!, n));
      outcomes[i] = current;
    }
    return outcomes;
  }

  function inputsOf(run: { runId: string }, ps: readonly Phrasing[]): FencedToolInput[] {
    return ps.map((p, i) => {
      const fields: Record<string, JsonValue> = { title: p.title };
      if (p.priority !== undefined) fields.priority = p.priority;
      if (p.note !== undefined) fields.note = p.note;
      return call(run, `toolu_${i}`, p.order ? fields : Object.fromEntries(Object.entries(fields).reverse()));
    });
  }

  test('property: calls of one run that mean the same action, phrased any way and interleaved any way, apply it once', async () => {
    await fc.assert(
      fc.asyncProperty(phrasings, fc.scheduler(), async (ps, s) => {
        const provider = new Provider();
        const acts = createToolActivities({ store: scheduledStore(s), tools: [ticketTool(provider)], reconcileMarginMs: 100 });
        const run = newRun();

        const outcomes = await runAll(s, acts, run, inputsOf(run, ps), 3);

        expect(outcomes.every((o) => 'result' in o)).toBe(true);
        expect(provider.total()).toBe(new Set(ps.map(intentOf)).size);
        const keys = new Map<string, string>();
        outcomes.forEach((o, i) => {
          const key = (o as { result: FencedToolResult }).result.idempotencyKey;
          expect(keys.get(intentOf(ps[i]!)) ?? key).toBe(key);
          keys.set(intentOf(ps[i]!), key);
        });
      }),
      { seed: 20261206, numRuns: 40 },
    );
  });

  test('property: with store faults and a lost answer, an intent is never applied twice, and every success is its one effect under one key', async () => {
    const faults = fc.array(fc.record({ at: fc.nat(30), kind: fc.constantFrom<'unavailable' | 'unknown'>('unavailable', 'unknown') }), { maxLength: 3 });
    await fc.assert(
      fc.asyncProperty(phrasings, faults, fc.boolean(), fc.scheduler(), async (ps, storeFaults, loseFirstAnswer, s) => {
        const provider = new Provider();
        provider.loseFirstAnswer = loseFirstAnswer;
        const acts = createToolActivities({
          store: scheduledStore(s, storeFaults),
          tools: [ticketTool(provider)],
          reconcileMarginMs: 100,
          transientRetry: { initialIntervalMs: 1, maximumIntervalMs: 2, maximumAttempts: 2 },
        });
        const run = newRun();

        const outcomes = await runAll(s, acts, run, inputsOf(run, ps), 4);

        for (const [intent, n] of provider.byIntent) expect([intent, n]).toEqual([intent, 1]);
        const keys = new Map<string, string>();
        outcomes.forEach((o, i) => {
          if (!('result' in o) || !o.result.outcome.ok) return;
          const intent = intentOf(ps[i]!);
          expect(provider.byIntent.get(intent)).toBe(1);
          expect(provider.effects.get(o.result.idempotencyKey)).toBe(1);
          expect(keys.get(intent) ?? o.result.idempotencyKey).toBe(o.result.idempotencyKey);
          keys.set(intent, o.result.idempotencyKey);
        });
      }),
      { seed: 20261207, numRuns: 60 },
    );
  });
});
