/**
 * Never twice, also under overlapping attempts, redeploys and outages: each rule of
 * docs/protocol.md#overlapping-attempts to #integrity-and-rotation as a named test with the right
 * outcome, run the way a new user would try it: the real activities in `MockActivityEnvironment`
 * against a real SQLite store. Time-based rules (settle time, key retention, approval expiry) use
 * the fence's injected clock: real time plus an offset the test can jump.
 *
 * @see docs/protocol.md#overlapping-attempts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { createToolActivities, defineTool, ToolError, type ToolActivities, type ToolDefinition } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { FlakyStore, waitFor } from '../helpers/flaky-store';
import { stallFreeClock } from '../helpers/stall-free-clock';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { createCheckpoint } from '../../src/checkpoint/record';

jest.setTimeout(60_000);

const TENANT = 'acme';
const DEADLINE_MS = 1_000;
const MARGIN_MS = 200;

/** A provider fake: effects per idempotency key, each landing once `held` (if set) resolves. */
class Provider {
  readonly effects = new Map<string, number>();
  readonly requests: string[] = [];
  /** While set, requests are held (in flight) until it resolves: a request the test keeps out for as long as it needs. */
  held: Promise<void> | null = null;

  async apply(key: string): Promise<{ ticketId: string }> {
    this.requests.push(key);
    if (this.held !== null) await this.held;
    this.effects.set(key, (this.effects.get(key) ?? 0) + 1);
    return { ticketId: `T-${key.slice(5, 13)}` };
  }

  find(key: string): { ticketId: string } | null {
    return this.effects.has(key) ? { ticketId: `T-${key.slice(5, 13)}` } : null;
  }

  total(): number {
    return [...this.effects.values()].reduce((a, b) => a + b, 0);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

const schema = z.object({ title: z.string().min(1) }).strict();

function ticketTool(
  provider: Provider,
  options: { lookup?: boolean; dedupesByKey?: boolean; keyRetentionMs?: number; revision?: string; input?: z.ZodType<any> } = {},
): ToolDefinition<any> {
  return defineTool({
    name: 'create_ticket',
    revision: options.revision ?? 'v1',
    input: options.input ?? schema,
    callDeadlineMs: DEADLINE_MS,
    ...(options.dedupesByKey ? { dedupesByKey: true, keyRetentionMs: options.keyRetentionMs ?? 60_000 } : {}),
    async execute(_input, ctx) {
      const r = await provider.apply(ctx.idempotencyKey);
      return { output: r, receipt: { key: ctx.idempotencyKey } };
    },
    ...(options.lookup
      ? {
          async lookup(ctx) {
            const found = provider.find(ctx.idempotencyKey);
            return found === null ? { found: false as const } : { found: true as const, output: found, receipt: { key: ctx.idempotencyKey, via: 'lookup' } };
          },
        }
      : {}),
  });
}

type Outcome = { result: FencedToolResult } | { failure: { type: string | undefined; nonRetryable: boolean; nextRetryDelay: unknown; message: string } };

describe('never twice, activities in MockActivityEnvironment against SQLite', () => {
  let dir: string;
  let store: CheckpointStore;
  let offsetMs = 0;
  let seq = 0;
  /** Real time, or in the overlapping-attempt tests at millisecond scale a stall-free clock (test/helpers/stall-free-clock.ts). */
  let realNow: () => number = Date.now;
  let stallFree: ReturnType<typeof stallFreeClock> | null = null;
  const clock = (): Date => new Date(realNow() + offsetMs);
  /** From now on in this test, the fence reads the stall-free clock: a stall of this process moves no deadline past an attempt. */
  function readStallFreeClock(): void {
    stallFree = stallFreeClock();
    const { clock: stallFreeNow } = stallFree;
    realNow = () => stallFreeNow().getTime();
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-never-twice-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    offsetMs = 0;
  });

  afterEach(() => {
    stallFree?.stop();
    stallFree = null;
    realNow = Date.now;
  });

  function activities(tools: ToolDefinition<any>[], over: { store?: CheckpointStore } = {}): ToolActivities {
    return createToolActivities({
      store: over.store ?? store,
      tools,
      clock,
      reconcileMarginMs: MARGIN_MS,
      transientRetry: { initialIntervalMs: 5, maximumIntervalMs: 20, maximumAttempts: 3 },
    });
  }

  function newCall(overrides: Partial<FencedToolInput> = {}): { input: FencedToolInput; workflowId: string; runId: string } {
    seq += 1;
    const workflowId = `wf-never-twice-${seq}`;
    const runId = `run-${seq}`;
    return { workflowId, runId, input: { tenant: TENANT, callId: `toolu_${seq}`, toolName: 'create_ticket', input: { title: `t${seq}` }, runChainId: runId, ...overrides } };
  }

  function env(call: { workflowId: string; runId: string }, attempt: number): MockActivityEnvironment {
    return new MockActivityEnvironment({ attempt, workflowExecution: { workflowId: call.workflowId, runId: call.runId }, heartbeatTimeoutMs: 30_000 } as never);
  }

  async function run(acts: ToolActivities, call: { input: FencedToolInput; workflowId: string; runId: string }, attempt: number, e = env(call, attempt)): Promise<Outcome> {
    try {
      return { result: await e.run(acts.runFencedTool, call.input) };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      return { failure: { type: error.type ?? undefined, nonRetryable: error.nonRetryable ?? false, nextRetryDelay: error.nextRetryDelay, message: error.message } };
    }
  }

  async function recordOf(call: { input: FencedToolInput; workflowId: string }): Promise<CheckpointRecord | null> {
    return store.getByCall(`default/${TENANT}`, callBindingId({ runChainId: call.input.runChainId!, workflowId: call.workflowId, callId: call.input.callId }));
  }

  // ---- overlapping attempts ------------------------------------------------------------------

  describe('overlapping attempts of one call', () => {
    test('1. lookup tool: attempt 2 arriving 100 ms into attempt 1 waits (RECONCILE_PENDING, nextRetryDelay = time to settle), never runs the tool; the effect is applied once and the next attempt delivers it', async () => {
      const provider = new Provider();
      let answer: () => void = () => undefined;
      provider.held = new Promise<void>((resolve) => (answer = resolve)); // attempt 1's request stays out until attempt 2 has been answered
      readStallFreeClock(); // "100 ms into attempt 1" on the fence's clock, whatever the machine's load
      const acts = activities([ticketTool(provider, { lookup: true })]);
      const call = newCall();

      const first = run(acts, call, 1);
      await sleep(100);
      await waitFor(() => provider.requests.length === 1);
      const second = await run(acts, call, 2);
      answer();

      expect(second).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
      const delay = (second as { failure: { nextRetryDelay: number } }).failure.nextRetryDelay;
      expect(delay).toBeGreaterThan(DEADLINE_MS + MARGIN_MS - 200);
      expect(delay).toBeLessThanOrEqual(DEADLINE_MS + MARGIN_MS);
      expect(await first).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      const third = await run(acts, call, 3);
      expect(third).toEqual({ result: expect.objectContaining({ source: 'store', outcome: ((await first) as { result: FencedToolResult }).result.outcome }) });
      expect(provider.total()).toBe(1);
    });

    test('1. attempts that start together: the loser of the claim fails retryably and never reconciles in the same attempt; one effect', async () => {
      const provider = new Provider();
      let answer: () => void = () => undefined;
      provider.held = new Promise<void>((resolve) => (answer = resolve)); // the winner's request stays out until the loser has been answered
      const acts = activities([ticketTool(provider, { lookup: true })]);
      const call = newCall();

      const attempts = [run(acts, call, 1), run(acts, call, 2)];
      await Promise.race(attempts);
      answer();
      const outcomes = await Promise.all(attempts);

      expect(outcomes.filter((o) => 'result' in o)).toHaveLength(1);
      expect(outcomes.filter((o) => 'failure' in o)).toEqual([{ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) }]);
      expect(provider.total()).toBe(1);
      expect(provider.requests).toHaveLength(1);
    });

    test('1. after the settle time a lookup that finds nothing proves absence: the call runs once more under the same key', async () => {
      const provider = new Provider();
      const acts = activities([ticketTool(provider, { lookup: true })]);
      const call = newCall();
      // Attempt 1 claims and its worker dies before the request is sent.
      void run(
        createToolActivities({
          store,
          tools: [ticketTool(provider, { lookup: true })],
          clock,
          reconcileMarginMs: MARGIN_MS,
          hooks: { step: (p) => (p === 'before-execute' ? new Promise<void>(() => undefined) : undefined) },
        }),
        call,
        1,
      );
      await waitFor(async () => (await recordOf(call))?.status === 'executing');

      offsetMs = DEADLINE_MS + MARGIN_MS + 1;
      const second = await run(acts, call, 2);

      expect(second).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      expect(provider.total()).toBe(1);
      expect((await recordOf(call))?.execution?.previousAttemptId).toMatch(/^attempt-1-/);
    });

    test('2. no lookup, no key dedupe: attempt 2 mid-request waits; attempt 1 completes and attempt 3 delivers its result (no pause, one effect)', async () => {
      const provider = new Provider();
      let answer: () => void = () => undefined;
      provider.held = new Promise<void>((resolve) => (answer = resolve)); // attempt 1's request stays out until attempt 2 has been answered
      const acts = activities([ticketTool(provider)]);
      const call = newCall();

      const first = run(acts, call, 1);
      await sleep(100);
      await waitFor(() => provider.requests.length === 1);
      const second = await run(acts, call, 2);
      answer();

      expect(second).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
      expect(await first).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      expect(await run(acts, call, 3)).toEqual({ result: expect.objectContaining({ source: 'store' }) });
      expect(provider.total()).toBe(1);
    });

    test('2. the owner of the fence completes from uncertain when its completion lost only to a mark made under its own fence', async () => {
      const provider = new Provider();
      let answer: () => void = () => undefined;
      provider.held = new Promise<void>((resolve) => (answer = resolve)); // attempt 1's request stays out until attempt 2 has been answered
      const acts = activities([ticketTool(provider)]);
      const call = newCall();

      const first = run(acts, call, 1);
      await sleep(100);
      await waitFor(() => provider.requests.length === 1);
      offsetMs = DEADLINE_MS + MARGIN_MS + 1; // attempt 2 arrives past the settle time while attempt 1's request is still out
      const second = await run(acts, call, 2);
      answer();
      expect(second).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
      expect((await recordOf(call))?.status).toBe('uncertain');

      const firstOutcome = await first;
      expect(firstOutcome).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      const record = await recordOf(call);
      expect(record?.status).toBe('delivered');
      expect(record?.result?.payload).toEqual((firstOutcome as { result: FencedToolResult }).result.outcome);
      expect(provider.total()).toBe(1);
    });

    test('3. a same-key repeat answered 409 (first request in flight) is retried with the same key and, when the retries run out, is an unknown outcome reconciled by the next attempt, never a stored final error', async () => {
      const provider = new Provider();
      let inFlight = 3;
      const tool = defineTool({
        name: 'create_ticket',
        revision: 'v1',
        input: schema,
        callDeadlineMs: DEADLINE_MS,
        dedupesByKey: true,
        keyRetentionMs: 60_000,
        async execute(_input, ctx) {
          if (inFlight > 0) {
            inFlight -= 1;
            throw new ToolError('transient', 'idempotency_key_in_use: a request with this key is in flight', undefined, 'OUTCOME_UNKNOWN');
          }
          return { output: await provider.apply(ctx.idempotencyKey) };
        },
      });
      const acts = activities([tool]);
      const call = newCall();

      const first = await run(acts, call, 1);
      expect(first).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) });
      expect((await recordOf(call))?.status).toBe('uncertain');
      expect(await run(acts, call, 2)).toEqual({ result: expect.objectContaining({ source: 'same-key-repeat', outcome: expect.objectContaining({ ok: true }) }) });
      expect(provider.total()).toBe(1);
    });

    test('4. a same-key repeat of a claim older than the key retention is not a reconciliation: without lookup the run pauses and execute is called 0 times', async () => {
      const provider = new Provider();
      const holderActs = createToolActivities({
        store,
        tools: [ticketTool(provider, { dedupesByKey: true, keyRetentionMs: 5_000 })],
        clock,
        hooks: { step: (p) => (p === 'before-execute' ? new Promise<void>(() => undefined) : undefined) },
      });
      const call = newCall();
      void run(holderActs, call, 1);
      await waitFor(async () => (await recordOf(call))?.status === 'executing');

      offsetMs = 6_000;
      const second = await run(activities([ticketTool(provider, { dedupesByKey: true, keyRetentionMs: 5_000 })]), call, 2);

      expect(second).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
      expect(provider.requests).toHaveLength(0);
      expect((await recordOf(call))?.status).toBe('uncertain');
    });

    test('4. within the key retention a provider that dedupes by key is repeated with the same key at once', async () => {
      const provider = new Provider();
      const holderActs = createToolActivities({
        store,
        tools: [ticketTool(provider, { dedupesByKey: true })],
        clock,
        hooks: { step: (p) => (p === 'before-execute' ? new Promise<void>(() => undefined) : undefined) },
      });
      const call = newCall();
      void run(holderActs, call, 1);
      await waitFor(async () => (await recordOf(call))?.status === 'executing');

      const second = await run(activities([ticketTool(provider, { dedupesByKey: true })]), call, 2);

      expect(second).toEqual({ result: expect.objectContaining({ source: 'same-key-repeat' }) });
      expect(provider.total()).toBe(1);
    });

    test('4. dedupesByKey without keyRetentionMs is refused when the tool is declared', () => {
      expect(() => defineTool({ name: 't', revision: '1', input: schema, dedupesByKey: true, execute: async () => ({ output: null }) })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'keyRetentionMs' }) }),
      );
    });
  });

  // ---- nothing applied belongs to the call -------------------------------------------------

  describe('"nothing applied" belongs to the call', () => {
    async function storedThenDied(provider: Provider, tools: ToolDefinition<any>[]): Promise<ReturnType<typeof newCall>> {
      const call = newCall();
      const acts = createToolActivities({ store, tools, clock, hooks: { step: (p) => (p === 'after-result-stored' ? new Promise<void>(() => undefined) : undefined) } });
      void run(acts, call, 1);
      await waitFor(async () => (await recordOf(call))?.status === 'delivered'); // the result and its delivery are one write (docs/protocol.md#cost)
      expect(provider.total()).toBe(1);
      return call;
    }

    test('5. a result stored under v1 is delivered by a worker with v2 (source store, storedUnder names v1), not "failed"', async () => {
      const provider = new Provider();
      const call = await storedThenDied(provider, [ticketTool(provider)]);

      const out = await run(activities([ticketTool(provider, { revision: 'v2' })]), call, 2);

      expect(out).toEqual({
        result: expect.objectContaining({
          source: 'store',
          toolRevision: 'v1',
          storedUnder: { toolName: 'create_ticket', toolRevision: 'v1' },
          outcome: expect.objectContaining({ ok: true }),
        }),
      });
      expect(provider.total()).toBe(1);
      expect((await recordOf(call))?.status).toBe('delivered');
    });

    test('5. a result stored before the tool was removed is delivered by a worker without the tool', async () => {
      const provider = new Provider();
      const call = await storedThenDied(provider, [ticketTool(provider)]);

      const out = await run(activities([]), call, 2);

      expect(out).toEqual({ result: expect.objectContaining({ source: 'store', storedUnder: { toolName: 'create_ticket', toolRevision: 'v1' } }) });
    });

    test('5. a deploy that adds a schema default does not change the binding: the stored result is delivered as the same call', async () => {
      const provider = new Provider();
      const call = await storedThenDied(provider, [ticketTool(provider)]);
      const withDefault = z.object({ title: z.string().min(1), priority: z.string().default('normal') }).strict();

      const out = await run(activities([ticketTool(provider, { input: withDefault })]), call, 2);

      expect(out).toEqual({ result: expect.objectContaining({ source: 'store' }) });
      expect((out as { result: FencedToolResult }).result.storedUnder).toBeUndefined();
    });

    test('5. an unfinished claim met by a worker with another revision or without the tool waits for the holder\'s settle time (RECONCILE_PENDING), then pauses (OUTCOME_UNKNOWN), never "nothing applied"', async () => {
      const provider = new Provider();
      const call = newCall();
      const holder = createToolActivities({
        store,
        tools: [ticketTool(provider)],
        clock,
        hooks: { step: (p) => (p === 'after-effect' ? new Promise<void>(() => undefined) : undefined) },
      });
      void run(holder, call, 1);
      await waitFor(async () => provider.total() === 1);

      // A rolling deploy: the holder may still be running on the old revision, so the new worker waits.
      expect(await run(activities([ticketTool(provider, { revision: 'v2' })]), call, 2)).toEqual({
        failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }),
      });
      offsetMs = DEADLINE_MS + MARGIN_MS + 1;
      expect(await run(activities([ticketTool(provider, { revision: 'v2' })]), call, 2)).toEqual({
        failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }),
      });
      expect(await run(activities([]), call, 3)).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
      expect(provider.total()).toBe(1);
    });

    test('5. a person resolves a call paused after its tool was removed: resolveToolCall on a worker without the tool stores the result under the original fence', async () => {
      const provider = new Provider();
      const call = newCall();
      const holder = createToolActivities({
        store,
        tools: [ticketTool(provider)],
        clock,
        hooks: { step: (p) => (p === 'after-effect' ? new Promise<void>(() => undefined) : undefined) },
      });
      void run(holder, call, 1);
      await waitFor(async () => provider.total() === 1);
      offsetMs = DEADLINE_MS + MARGIN_MS + 1;
      expect(await run(activities([]), call, 2)).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN' }) });

      const result = { ok: true as const, output: { ticketId: 'T-found' }, receipt: null };
      const resolved = await env(call, 1).run(activities([]).resolveToolCall, { ...call.input, resolution: 'applied' as const, result, reason: 'found in the provider' });

      // The run receives the stored payload whole: the result and the audit of who settled it, from what.
      const audit = { kind: 'applied', reason: 'found in the provider', fromStatus: 'executing', by: null };
      expect(resolved).toEqual(
        expect.objectContaining({ toolName: 'create_ticket', toolRevision: 'v1', outcome: { ...result, resolvedInStore: expect.objectContaining(audit) }, intentDigest: null }),
      );
      const record = await recordOf(call);
      expect(record?.status).toBe('delivered');
      expect(record?.execution?.attemptId).toMatch(/^attempt-1-/);
      expect(provider.total()).toBe(1);
    });

    test('6. the store fails after the claim and stays down past the retry policy: every attempt is RECONCILE_PENDING (retryable, the run pauses when retries run out), never STORE_UNAVAILABLE', async () => {
      const provider = new Provider();
      const outage = new FlakyStore(store);
      const acts = activities([ticketTool(provider)], { store: outage });
      const call = newCall();
      // The store goes away when the result is about to be stored, after the claim and the effect.
      outage.failWhen = (op) => (op === 'cas:delivered' ? (outage.down = true) : outage.down);

      const outcomes = [await run(acts, call, 1)];
      outage.down = true;
      for (let attempt = 2; attempt <= 10; attempt += 1) outcomes.push(await run(acts, call, attempt));

      expect(outcomes.map((o) => ('failure' in o ? o.failure.type : 'result'))).toEqual(Array(10).fill('RECONCILE_PENDING'));
      expect(provider.total()).toBe(1);
    });

    test('6. a store that is down on the first attempt before anything was claimed is STORE_UNAVAILABLE (nothing applied, retryable)', async () => {
      const provider = new Provider();
      const outage = new FlakyStore(store);
      outage.down = true;
      const out = await run(activities([ticketTool(provider)], { store: outage }), newCall(), 1);
      expect(out).toEqual({ failure: expect.objectContaining({ type: 'STORE_UNAVAILABLE', nonRetryable: false }) });
    });

    test.each([
      ['a blank message', '   ', 'failed without a message after the request may have been sent'],
      ['a 2,000-character message cut in the middle of an emoji', `${'x'.repeat(1_998)}😀😀😀`, '…'],
    ])('7. a tool that applies its effect and throws unknown-outcome with %s is recorded uncertain with a sanitised reason and pauses', async (_name, message, expected) => {
      const provider = new Provider();
      const tool = defineTool({
        name: 'create_ticket',
        revision: 'v1',
        input: schema,
        callDeadlineMs: DEADLINE_MS,
        async execute(_input, ctx) {
          await provider.apply(ctx.idempotencyKey);
          throw new ToolError('unknown-outcome', message);
        },
      });
      const call = newCall();
      const out = await run(activities([tool]), call, 1);
      expect(out).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN', nonRetryable: true }) });
      const record = await recordOf(call);
      expect(record?.status).toBe('uncertain');
      expect(record?.execution?.uncertainReason).toContain(expected);
      expect(record!.execution!.uncertainReason!.isWellFormed()).toBe(true);
      expect(record!.execution!.uncertainReason!.length).toBeLessThanOrEqual(2_000);
    });

    test('7. createToolActivities validates maxPayloadBytes when it is built', () => {
      expect(() => createToolActivities({ store, tools: [], maxPayloadBytes: 0 })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ field: 'maxPayloadBytes' }) }),
      );
    });

    test('8. approval expired between attempts (earlier attempts failed before the claim): APPROVAL_EXPIRED, nothing runs', async () => {
      const provider = new Provider();
      const call = newCall({ approvalExpiresAt: new Date(Date.now() + 60_000).toISOString() });
      const outage = new FlakyStore(store);
      outage.down = true;
      const acts = activities([ticketTool(provider)], { store: outage });
      for (let attempt = 1; attempt <= 5; attempt += 1)
        expect(await run(acts, call, attempt)).toEqual({ failure: expect.objectContaining({ type: attempt === 1 ? 'STORE_UNAVAILABLE' : 'RECONCILE_PENDING' }) });

      outage.down = false;
      offsetMs = 61_000;
      const sixth = await run(acts, call, 6);

      expect(sixth).toEqual({ failure: expect.objectContaining({ type: 'APPROVAL_EXPIRED', nonRetryable: true }) });
      expect(provider.requests).toHaveLength(0);
      // The refusal is the call's durable result: no earlier attempt can claim the call afterwards.
      expect((await recordOf(call))?.result?.payload).toEqual({ ok: false, error: expect.objectContaining({ type: 'APPROVAL_EXPIRED' }) });
    });

    test('"nothing applied" from a ready checkpoint is made durable first: an earlier attempt about to claim loses its compare-and-swap and never runs the tool', async () => {
      const provider = new Provider();
      const call = newCall();
      let release!: () => void;
      const released = new Promise<void>((done) => (release = done));
      // Attempt 1, on a release that created the checkpoint and then claimed it in two writes (as
      // before the two-write fresh call of docs/protocol.md#cost), created it and stalls right
      // before its claim (a slow network path to the store).
      const previousRelease = new (class extends FlakyStore {
        override createIfAbsent(record: CheckpointRecord) {
          return super.createIfAbsent(record.status === 'executing' ? createCheckpoint(record.binding, { createdAt: record.createdAt }) : record);
        }
      })(store);
      let claims = 0;
      const first = run(
        createToolActivities({
          store: previousRelease,
          tools: [ticketTool(provider)],
          clock,
          hooks: { step: (p) => (p === 'before-claim' && ++claims === 2 ? released : undefined) },
        }),
        call,
        1,
      );
      await waitFor(async () => (await recordOf(call))?.status === 'ready');

      // Attempt 2 lands on a worker without the tool: UNKNOWN_TOOL is reported as nothing applied only after the refusal is stored.
      const second = await run(activities([]), call, 2);
      release();

      expect(second).toEqual({ failure: expect.objectContaining({ type: 'UNKNOWN_TOOL', nonRetryable: true }) });
      expect(await first).toEqual({ failure: expect.objectContaining({ type: 'RECONCILE_PENDING' }) });
      expect(provider.requests).toHaveLength(0);
      expect((await recordOf(call))?.result?.payload).toEqual({ ok: false, error: expect.objectContaining({ type: 'UNKNOWN_TOOL' }) });
    });
  });

  // ---- identity --------------------------------------------------------------------------

  describe('identity', () => {
    test('9. workflow "a/b" call "c" and workflow "a" call "b/c" are two calls with two checkpoints and two effects', async () => {
      const provider = new Provider();
      const acts = activities([ticketTool(provider)]);
      seq += 1;
      const one = { workflowId: `a${seq}/b`, runId: `r${seq}`, input: { tenant: TENANT, callId: 'c', runChainId: `r${seq}`, toolName: 'create_ticket', input: { title: 'x' } } };
      const two = { workflowId: `a${seq}`, runId: `r${seq}`, input: { tenant: TENANT, callId: 'b/c', runChainId: `r${seq}`, toolName: 'create_ticket', input: { title: 'x' } } };

      const first = await run(acts, one, 1);
      const second = await run(acts, two, 1);

      expect(first).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      expect(second).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      expect((first as { result: FencedToolResult }).result.idempotencyKey).not.toBe((second as { result: FencedToolResult }).result.idempotencyKey);
      expect(provider.total()).toBe(2);
    });

    test("10. dedupeByIntent: a later call with a proven-absent intent uses the run's current generation and never reopens the old checkpoint", async () => {
      const provider = new Provider();
      const tool = defineTool({ ...ticketTool(provider), dedupeByIntent: true });
      const holder = createToolActivities({
        store,
        tools: [tool],
        clock,
        reconcileMarginMs: MARGIN_MS,
        hooks: { step: (p) => (p === 'before-execute' ? new Promise<void>(() => undefined) : undefined) },
      });
      const first = newCall();
      void run(holder, first, 1);
      await waitFor(async () => (await store.listByStatus(['executing'], { limit: 10_000 })).some((r) => r.binding.callId.includes(first.workflowId)));
      // A person proved the effect absent; the rerun is generation 1 and runs once.
      const described = (await env(first, 1).run(activities([tool]).describeToolCall, first.input)) as { intentDigest: string };
      const rerun = { ...first, input: { ...first.input, callId: `${first.input.callId}~retry1`, intentGeneration: 1 } };
      expect(await run(activities([tool]), rerun, 1)).toEqual({ result: expect.objectContaining({ source: 'executed' }) });

      // A later model call with the same intent carries the run's generation map: answered from generation 1.
      const later = { ...first, input: { ...first.input, callId: `${first.input.callId}-later`, intentGenerations: { [described.intentDigest]: 1 } } };
      expect(await run(activities([tool]), later, 1)).toEqual({ result: expect.objectContaining({ source: 'store' }) });
      expect(provider.total()).toBe(1);
    });

    test("11. a new run chain that reuses a workflow id is never answered from the older chain's checkpoint", async () => {
      const provider = new Provider();
      const acts = activities([ticketTool(provider)]);
      const old = newCall();
      expect(await run(acts, old, 1)).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      const reused = { ...old, runId: 'run-new-chain', input: { ...old.input, runChainId: 'run-new-chain' } };

      const out = await run(acts, reused, 1);

      expect(out).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      expect(provider.total()).toBe(2);
    });

    test('11. without runChainId the activity binds the call to its workflow run id', async () => {
      const provider = new Provider();
      const acts = activities([ticketTool(provider)]);
      const call = newCall();
      const { runChainId: _omitted, ...input } = call.input;
      expect(await run(acts, { ...call, input }, 1)).toEqual({ result: expect.objectContaining({ source: 'executed' }) });
      expect(await recordOf(call)).toEqual(expect.objectContaining({ status: 'delivered' }));
    });
  });

  // ---- shutdown --------------------------------------------------------------------------

  test('16. cancellation (worker shutdown) while backing off after a transient error leaves the call to the next attempt: no final TRANSIENT_EXHAUSTED is stored', async () => {
    const tool = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: schema,
      callDeadlineMs: 10_000,
      async execute() {
        throw new ToolError('transient', 'rate limited', 2_000);
      },
    });
    const call = newCall();
    const e = env(call, 1);
    const outcome = e
      .run(createToolActivities({ store, tools: [tool], clock, transientRetry: { initialIntervalMs: 10, maximumIntervalMs: 10, maximumAttempts: 5 } }).runFencedTool, call.input)
      .then(
        () => 'returned',
        (error: unknown) => error,
      );
    await waitFor(async () => (await recordOf(call))?.status === 'executing');
    await sleep(100);
    e.cancel('WORKER_SHUTDOWN' as never);

    expect(await outcome).toBeInstanceOf(CancelledFailure);
    expect((await recordOf(call))?.status).toBe('executing');
  });
});
