/**
 * docs/protocol.md#nothing-applied: a store that is down after a claim ends in
 * RECONCILE_PENDING until the retries run out, for every tool. Attempt 1 claims the call and then
 * loses the store before it sends anything; the next attempts, after the claim's settle time, find
 * the store unreachable (writes refused while reads still answer, or everything down). An attempt
 * that could not read or write the store has learned nothing, so it fails retryably and never
 * pauses the run (OUTCOME_UNKNOWN) nor reports nothing applied; once the store is back, the next
 * attempt reconciles (same-key repeat, lookup) or, for a tool that can do neither, pauses having
 * read the claim itself. Both fences: the agent's tool activities and the plugin's fence for a
 * user's activity. Real SQLite store (TTC_ADVERSARIAL_STORE=postgres: PostgreSQL).
 */
import fc from 'fast-check';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';
import { defineTool, type ToolDefinition } from '../../src/activities';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { CheckpointError } from '../../src/checkpoint/errors';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { DEADLINE_MS, FlakyStore, Harness, NOTHING_APPLIED_CODES, Provider, schema, typeOf, type Call, type Outcome, UNREACHED_DEADLINE_MS } from './harness';

jest.setTimeout(180_000);

const h = new Harness();
beforeAll(() => h.open());
afterAll(() => h.close());
beforeEach(() => {
  h.offsetMs = 0;
});

type Kind = 'keyed' | 'lookup' | 'none';
type Availability = 'up' | 'writes-down' | 'down';

function tool(kind: Kind, provider: Provider): ToolDefinition<any> {
  return defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: schema,
    callDeadlineMs: UNREACHED_DEADLINE_MS,
    ...(kind === 'keyed' ? { dedupesByKey: true, keyRetentionMs: 86_400_000 } : {}),
    async execute(_input, ctx) {
      return { output: provider.find(ctx.idempotencyKey) ?? provider.apply(ctx.idempotencyKey) };
    },
    ...(kind === 'lookup'
      ? {
          async lookup(ctx: { idempotencyKey: string }) {
            const found = provider.find(ctx.idempotencyKey);
            return found === null ? { found: false as const } : { found: true as const, output: found };
          },
        }
      : {}),
  });
}

const WRITES = new Set(['createIfAbsent', 'writeGroup']);
function setAvailability(flaky: FlakyStore, availability: Availability): void {
  flaky.failWhen = availability === 'up' ? null : availability === 'down' ? () => true : (op) => WRITES.has(op) || op.startsWith('cas:');
}

/** Attempt 1 claims the call, then its worker loses the store before the request is sent; the clock passes the claim's settle time. */
async function claimLeftByAttempt1(kind: Kind, provider: Provider, flaky: FlakyStore, call: Call): Promise<Outcome> {
  // The claiming insert lands; right after it the store fails this worker, which sends nothing.
  const step = (point: string) => {
    if (point === 'after-claim') throw new CheckpointError('STORE_UNAVAILABLE', 'the store went away right after the claim');
  };
  const first = await h.run(h.activities([tool(kind, provider)], { store: flaky, hooks: { step } }), call, 1);
  const record = await h.recordOf(call);
  expect(record?.status).toBe('executing');
  h.passSettleTime(record!);
  return first;
}

const LABEL: Record<Kind, string> = { keyed: 'a tool whose provider dedupes by key', lookup: 'a tool with lookup', none: 'a tool without lookup or key dedupe' };

describe.each(['keyed', 'lookup', 'none'] as Kind[])('%s, claimed by an attempt that lost the store before sending', (kind) => {
  test('the next attempts that cannot write or read the store fail RECONCILE_PENDING (never OUTCOME_UNKNOWN, never nothing applied); with the store back the call is reconciled', async () => {
    const provider = new Provider();
    const flaky = new FlakyStore(h.store);
    const acts = h.activities([tool(kind, provider)], { store: flaky });
    const call = h.newCall();
    expect(typeOf(await claimLeftByAttempt1(kind, provider, flaky, call))).toBe('failure:RECONCILE_PENDING');

    setAvailability(flaky, 'writes-down');
    const second = await h.run(acts, call, 2);
    setAvailability(flaky, 'down');
    const third = await h.run(acts, call, 3);
    expect([LABEL[kind], second, third]).toEqual([
      LABEL[kind],
      { failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) },
      { failure: expect.objectContaining({ type: 'RECONCILE_PENDING', nonRetryable: false }) },
    ]);
    expect(provider.total()).toBe(0);

    setAvailability(flaky, 'up');
    const fourth = await h.run(acts, call, 4);
    if (kind === 'none') {
      // Having read the claim itself, an attempt of a tool that can neither look up nor repeat pauses for a person.
      expect(fourth).toEqual({ failure: expect.objectContaining({ type: 'OUTCOME_UNKNOWN' }) });
      expect(provider.total()).toBe(0);
    } else {
      expect(typeOf(fourth)).toBe(kind === 'keyed' ? 'result:same-key-repeat' : 'result:executed');
      expect(provider.total()).toBe(1);
    }
  });
});

describe('property: an attempt that could not reach the store never pauses the run and never says nothing applied', () => {
  test('any tool, any sequence of store availability per attempt after the claim: failed store operations end in RECONCILE_PENDING; at most one effect', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Kind>('keyed', 'lookup', 'none'),
        fc.array(fc.constantFrom<Availability>('up', 'writes-down', 'down'), { minLength: 1, maxLength: 5 }),
        async (kind, availabilities) => {
          h.offsetMs = 0;
          const provider = new Provider();
          const flaky = new FlakyStore(h.store);
          const acts = h.activities([tool(kind, provider)], { store: flaky });
          const call = h.newCall();
          await claimLeftByAttempt1(kind, provider, flaky, call);
          let settled = false;
          for (const [i, availability] of availabilities.entries()) {
            if (settled) break;
            setAvailability(flaky, availability);
            const before = flaky.ops.length;
            const outcome = await h.run(acts, call, i + 2);
            const storeFailed = availability === 'down' || (availability === 'writes-down' && flaky.ops.slice(before).some((op) => WRITES.has(op) || op.startsWith('cas:')));
            const label = [kind, availabilities.join(','), `attempt ${i + 2}`, typeOf(outcome)].join(' ');
            expect([label, 'raw' in outcome]).toEqual([label, false]);
            if ('failure' in outcome) {
              expect([label, NOTHING_APPLIED_CODES.includes(outcome.failure.type as never)]).toEqual([label, false]);
              if (storeFailed) expect([label, outcome.failure.type, outcome.failure.nonRetryable]).toEqual([label, 'RECONCILE_PENDING', false]);
              settled = outcome.failure.nonRetryable;
            } else {
              settled = true;
            }
          }
          expect(provider.total()).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe("the plugin's fence for a user's activity", () => {
  /** The activity interceptor factories the plugin adds (as Worker.create applies them). */
  function interceptorsOf(plugin: ToolCheckpointPlugin): NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']> {
    return plugin.configureWorker({ taskQueue: 'store-lost-after-claim' } as WorkerOptions).interceptors?.activity ?? [];
  }

  async function attempt(
    plugin: ToolCheckpointPlugin,
    info: object,
    n: number,
    activity: () => Promise<unknown>,
  ): Promise<{ value: unknown } | { type: string | undefined; nonRetryable: boolean }> {
    try {
      return { value: await new MockActivityEnvironment({ ...info, attempt: n }, { interceptors: interceptorsOf(plugin) }).run(activity) };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      return { type: error.type ?? undefined, nonRetryable: error.nonRetryable === true };
    }
  }

  test('a keyed activity whose claim was left by attempt 1: attempts that cannot write the store fail RECONCILE_PENDING (not OUTCOME_UNKNOWN); with the store back the activity runs once', async () => {
    const flaky = new FlakyStore(h.store);
    const options = {
      store: flaky,
      clock: h.clock,
      reconcileMarginMs: 200,
      fence: { chargeCard: { revision: 'v1', dedupesByKey: true, keyRetentionMs: 86_400_000, callDeadlineMs: DEADLINE_MS } },
    };
    const plugin = new ToolCheckpointPlugin(options);
    const workflowId = `wf-store-lost-${(h.seq += 1)}`;
    const info = { activityType: 'chargeCard', activityId: '1', workflowExecution: { workflowId, runId: 'run-1' } };
    let calls = 0;
    const charge = async (): Promise<{ chargeId: string }> => ({ chargeId: `ch-${(calls += 1)}` });

    // The claiming insert lands; right after it the store fails this worker, which sends nothing.
    const step = (point: string) => {
      if (point === 'after-claim') throw new CheckpointError('STORE_UNAVAILABLE', 'the store went away right after the claim');
    };
    expect(await attempt(new ToolCheckpointPlugin({ ...options, hooks: { step } }), info, 1, charge)).toEqual({ type: 'RECONCILE_PENDING', nonRetryable: false });
    const record = await h.store.getByCall('default/default', callBindingId({ runChainId: 'run-1', workflowId, callId: 'activity-1' }));
    expect(record?.status).toBe('executing');
    h.passSettleTime(record!);

    setAvailability(flaky, 'writes-down');
    expect(await attempt(plugin, info, 2, charge)).toEqual({ type: 'RECONCILE_PENDING', nonRetryable: false });
    setAvailability(flaky, 'up');
    expect(await attempt(plugin, info, 3, charge)).toEqual({ value: { chargeId: 'ch-1' } });
    expect(calls).toBe(1);
  });
});
