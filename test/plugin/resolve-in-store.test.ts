/**
 * `resolveCallInStore` (docs/protocol.md#worker-plugin "a person resolves it in the store") against
 * real stores: a SQLite file and a PostgreSQL database (the server jest's global setup starts). The
 * unknown outcome is left by the real fence interceptor (the plugin on a MockActivityEnvironment)
 * or, for states an interceptor cannot be frozen in (a claim whose holder died), by the transitions
 * a dead holder leaves. Every refusal leaves the record exactly as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type WorkerOptions } from '@temporalio/worker';
import { ToolError } from '../../src/activities';
import { isCheckpointError, type CheckpointErrorCode } from '../../src/checkpoint/errors';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { completeExecution } from '../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord, Status } from '../../src/checkpoint/types';
import { ToolCheckpointPlugin, fencedCallContext } from '../../src/plugin';
import { RESOLVED_NOT_APPLIED, resolveCallInStore, storeResolutionOf, type ResolveCallInStoreArgs } from '../../src/plugin/resolve-in-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { createTestDatabase } from '../helpers/postgres';
import { seedStatus } from '../helpers/seed-status';

jest.setTimeout(60_000);

/** A fresh store location: a URL any number of store instances can open, and its removal. */
interface Target {
  readonly url: string;
  drop(): Promise<void>;
}

const BACKENDS: ReadonlyArray<readonly [string, () => Promise<Target>]> = [
  [
    'SQLite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ttc-resolve-in-store-'));
      return { url: `sqlite:${join(dir, 'checkpoints.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const db = await createTestDatabase();
      return { url: db.url, drop: () => db.drop() };
    },
  ],
];

/** The expected activity failures stay out of the test output. */
const QUIET = new DefaultLogger('ERROR');

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(T0 + ms).toISOString();
/** A claim's declared deadline (claim + 30 s) plus the default margin (5 s): the settle time of a claim made at T0. */
const SETTLE_MS = 35_000;

describe.each(BACKENDS)('resolveCallInStore on %s', (_name, makeTarget) => {
  let target: Target;
  let store: CheckpointStore;
  const opened: CheckpointStore[] = [];

  /** Another store instance on the same database (its own connection / file handle). */
  async function open(): Promise<CheckpointStore> {
    const s = await openCheckpointStore(target.url);
    opened.push(s);
    return s;
  }

  beforeAll(async () => {
    target = await makeTarget();
    store = await open();
  });

  afterAll(async () => {
    for (const s of opened) await s.close();
    await target.drop();
  });

  // ---- records as a dead holder leaves them --------------------------------------------------

  /** The binding the fence builds for call `callId` of workflow `workflowId` in run chain `runChainId`, tenant `default`. */
  function bindingOf(workflowId: string, runChainId: string, callId = 'act-1'): Binding {
    return {
      namespace: 'default/default',
      callId: callBindingId({ runChainId, workflowId, callId }),
      toolName: 'chargeCard',
      toolRevision: 'v1',
      inputFingerprint: `sha256:${'ab'.repeat(32)}`,
    };
  }

  /** Writes a record of `binding` driven to `status` through the transitions (claim at T0, deadline T0 + 30 s). */
  const seed = (binding: Binding, status: Status): Promise<CheckpointRecord> => seedStatus(store, binding, status, iso, 'attempt-1-dead');

  const fresh = (): { workflowId: string; runChainId: string } => ({ workflowId: `wf-${randomUUID()}`, runChainId: `run-${randomUUID()}` });

  const args = (workflowId: string, runChainId: string | undefined, more: Partial<ResolveCallInStoreArgs> = {}): ResolveCallInStoreArgs => ({
    namespace: 'default',
    workflowId,
    callId: 'act-1',
    ...(runChainId === undefined ? {} : { runChainId }),
    resolution: { applied: { chargeId: 'ch-found' } },
    reason: 'found the charge in the provider dashboard',
    resolvedBy: 'alice',
    ...more,
  });

  /** Asserts that `promise` rejects with a CheckpointError of `code` whose `details.refusal` is `refusal`; returns it. */
  async function refused(promise: Promise<unknown>, code: CheckpointErrorCode, refusal?: string): Promise<{ message: string; details: Record<string, unknown> }> {
    const error = await promise.then(
      () => {
        throw new Error(`expected ${code}, but it resolved`);
      },
      (e: unknown) => e,
    );
    expect(isCheckpointError(error, code)).toBe(true);
    const e = error as { message: string; details: Record<string, unknown> };
    if (refusal !== undefined) expect(e.details.refusal).toBe(refusal);
    return e;
  }

  /** Asserts the stored record of `binding` is still `before` (same revision and body). */
  async function unchanged(binding: Binding, before: CheckpointRecord): Promise<void> {
    const now = await store.getByCall(binding.namespace, binding.callId);
    expect(now).toEqual(before);
  }

  // ---- through the real fence interceptor ------------------------------------------------------

  /** The plugin's activity interceptors, as `Worker.create` would apply them. */
  function interceptorsOf(plugin: ToolCheckpointPlugin): NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']> {
    return plugin.configureWorker({ taskQueue: 'unit' } as WorkerOptions).interceptors?.activity ?? [];
  }

  /**
   * A fenced `chargeCard` whose first attempt applies its effect and then fails with an unknown
   * outcome (no lookup: the call pauses as OUTCOME_UNKNOWN, the checkpoint is `uncertain`).
   * Returns the ids, the effects so far, the key the activity was given, and the next attempt.
   */
  async function pausedCall(secret?: Uint8Array): Promise<{ workflowId: string; runId: string; effects: string[]; key: string | undefined; nextAttempt(): Promise<unknown> }> {
    const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, ...(secret === undefined ? {} : { idempotencyKeySecret: secret }) });
    const workflowId = `wf-${randomUUID()}`;
    const runId = `run-${randomUUID()}`;
    const info = { activityType: 'chargeCard', activityId: '1', workflowExecution: { workflowId, runId } };
    const effects: string[] = [];
    let key: string | undefined;
    const charge = async (customer: string): Promise<{ chargeId: string }> => {
      key = fencedCallContext()?.idempotencyKey;
      effects.push(customer);
      throw new ToolError('unknown-outcome', 'connection reset after the charge request was sent');
    };
    await expect(new MockActivityEnvironment({ ...info, attempt: 1 }, { interceptors: interceptorsOf(plugin), logger: QUIET }).run(charge, 'cus_1')).rejects.toMatchObject({
      type: 'OUTCOME_UNKNOWN',
      nonRetryable: true,
    });
    return {
      workflowId,
      runId,
      effects,
      key,
      nextAttempt: () => new MockActivityEnvironment({ ...info, attempt: 2 }, { interceptors: interceptorsOf(plugin), logger: QUIET }).run(charge, 'cus_1'),
    };
  }

  it('applied: an uncertain call left by the fence is completed under its own fence with the result and the audit; the next attempt delivers it and the activity is not called again', async () => {
    const secret = randomBytes(32);
    const call = await pausedCall(secret);
    const before = await store.getByCall('default/default', callBindingId({ runChainId: call.runId, workflowId: call.workflowId, callId: 'activity-1' }));
    expect(before?.status).toBe('uncertain');

    // No run chain given: found among the store's uncertain records.
    const resolved = await resolveCallInStore(store, args(call.workflowId, undefined, { callId: 'activity-1' }), { idempotencyKeySecret: secret });
    expect(resolved).toMatchObject({ toolName: 'chargeCard', toolRevision: 'v1', runChainId: call.runId, claimedAt: before!.execution!.claimedAt, idempotencyKey: call.key });
    expect(resolved.previous).toEqual(before);
    expect(resolved.record).toMatchObject({
      status: 'completed',
      revision: before!.revision + 1,
      execution: { attemptId: before!.execution!.attemptId, finishedAt: resolved.record.updatedAt },
    });
    const stored = await store.getByCall(before!.binding.namespace, before!.binding.callId);
    expect(stored).toEqual(resolved.record);
    expect(stored!.result!.payload).toEqual({
      ok: true,
      output: { chargeId: 'ch-found' },
      receipt: null,
      resolvedInStore: {
        kind: 'applied',
        by: 'alice',
        reason: 'found the charge in the provider dashboard',
        at: resolved.record.updatedAt,
        fromStatus: 'uncertain',
        attemptId: before!.execution!.attemptId,
      },
    });
    expect(storeResolutionOf(stored)).toMatchObject({ kind: 'applied', by: 'alice' });

    await expect(call.nextAttempt()).resolves.toEqual({ chargeId: 'ch-found' });
    expect(call.effects).toEqual(['cus_1']);
    expect((await store.getByCall(before!.binding.namespace, before!.binding.callId))?.status).toBe('delivered');
  });

  it('not applied: the next attempt fails non-retryably with RESOLVED_NOT_APPLIED (or the given type) and the message; the activity is not called again', async () => {
    for (const type of [undefined, 'CHARGE_NOT_FOUND']) {
      const call = await pausedCall();
      const failed = { message: 'no charge for this key at the provider', ...(type === undefined ? {} : { type }) };
      const resolved = await resolveCallInStore(store, args(call.workflowId, call.runId, { callId: 'activity-1', resolution: { failed } }));
      expect(resolved.outcome).toMatchObject({
        ok: false,
        error: { type: type ?? RESOLVED_NOT_APPLIED, message: failed.message },
        resolvedInStore: { kind: 'not-applied', fromStatus: 'uncertain' },
      });
      await expect(call.nextAttempt()).rejects.toMatchObject({ type: type ?? RESOLVED_NOT_APPLIED, message: failed.message, nonRetryable: true });
      expect(call.effects).toEqual(['cus_1']);
    }
  });

  // ---- executing: only once its holder can no longer be running --------------------------------

  it('executing before its settle time is refused (the holder may still be running) with the time left; after it, it is resolved from executing', async () => {
    const { workflowId, runChainId } = fresh();
    const binding = bindingOf(workflowId, runChainId);
    const before = await seed(binding, 'executing');
    const early = await refused(resolveCallInStore(store, args(workflowId, runChainId), { clock: () => new Date(T0 + SETTLE_MS - 1_000) }), 'RECONCILE_PENDING', 'may-be-running');
    expect(early.details.retryAfterMs).toBe(1_000);
    expect(early.message).toContain(`until ${iso(SETTLE_MS)}`);
    await unchanged(binding, before);
    // A larger margin (the plugin's reconcileMarginMs) moves the settle time.
    await refused(
      resolveCallInStore(store, args(workflowId, runChainId), { clock: () => new Date(T0 + SETTLE_MS), reconcileMarginMs: 60_000 }),
      'RECONCILE_PENDING',
      'may-be-running',
    );
    await unchanged(binding, before);

    const resolved = await resolveCallInStore(store, args(workflowId, runChainId, { resolution: { failed: { message: 'declined' } } }), { clock: () => new Date(T0 + SETTLE_MS) });
    expect(resolved.record).toMatchObject({ status: 'completed', updatedAt: iso(SETTLE_MS), execution: { attemptId: 'attempt-1-dead', claimedAt: iso(0) } });
    expect(resolved.outcome.resolvedInStore).toMatchObject({ fromStatus: 'executing', attemptId: 'attempt-1-dead', at: iso(SETTLE_MS) });
  });

  // ---- statuses that are not waiting for a person ----------------------------------------------

  it('ready is refused: the call was never claimed, it never ran, there is nothing to resolve', async () => {
    const { workflowId, runChainId } = fresh();
    const binding = bindingOf(workflowId, runChainId);
    const before = await seed(binding, 'ready');
    for (const chain of [runChainId, undefined]) {
      const e = await refused(resolveCallInStore(store, args(workflowId, chain), { clock: () => new Date(T0 + 10 * SETTLE_MS) }), 'INVALID_TRANSITION', 'never-claimed');
      expect(e.message).toMatch(/never claimed/);
    }
    await unchanged(binding, before);
  });

  it.each(['completed', 'delivering', 'delivered'] as const)('%s is refused: the result is already stored', async (status) => {
    const { workflowId, runChainId } = fresh();
    const binding = bindingOf(workflowId, runChainId);
    const before = await seed(binding, status);
    for (const chain of [runChainId, undefined]) {
      const e = await refused(resolveCallInStore(store, args(workflowId, chain), { clock: () => new Date(T0 + 10 * SETTLE_MS) }), 'INVALID_TRANSITION', 'already-settled');
      expect(e.details.fromStatus).toBe(status);
    }
    await unchanged(binding, before);
  });

  it('a second resolution of a resolved call is refused and names the first (who, when, why)', async () => {
    const { workflowId, runChainId } = fresh();
    const binding = bindingOf(workflowId, runChainId);
    await seed(binding, 'uncertain');
    const first = await resolveCallInStore(store, args(workflowId, runChainId));
    const e = await refused(
      resolveCallInStore(store, args(workflowId, runChainId, { resolvedBy: 'bob', resolution: { failed: { message: 'no' } } })),
      'INVALID_TRANSITION',
      'already-settled',
    );
    expect(e.message).toContain(`resolved in the store as applied by alice at ${first.record.updatedAt}: found the charge in the provider dashboard`);
    await unchanged(binding, first.record);
  });

  // ---- compare-and-swap --------------------------------------------------------------------------

  /** `inner` whose reads (`getByCall`, `listByStatus`) wait for `gate` before they return, after calling `onRead`. */
  function gated(inner: CheckpointStore, gate: Promise<void>, onRead: () => void): CheckpointStore {
    return new Proxy(inner, {
      get(t, prop) {
        const value = Reflect.get(t, prop, t) as unknown;
        if (typeof value !== 'function') return value;
        if (prop !== 'getByCall' && prop !== 'listByStatus') return (value as (...a: unknown[]) => unknown).bind(t);
        return async (...a: unknown[]) => {
          const read = await (value as (...x: unknown[]) => Promise<unknown>).apply(t, a);
          onRead();
          await gate;
          return read;
        };
      },
    });
  }

  it('two resolvers that read the same record race: exactly one compare-and-swap wins, the other is refused with FENCE_CONFLICT and overwrites nothing', async () => {
    for (const chain of ['named', 'looked up'] as const) {
      const { workflowId, runChainId } = fresh();
      const binding = bindingOf(workflowId, runChainId);
      await seed(binding, 'uncertain');
      let reads = 0;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const onRead = (): void => {
        reads += 1;
        if (reads === 2) release();
      };
      const [a, b] = [gated(await open(), gate, onRead), gated(await open(), gate, onRead)];
      const results = await Promise.allSettled([
        resolveCallInStore(a, args(workflowId, chain === 'named' ? runChainId : undefined, { resolvedBy: 'alice' })),
        resolveCallInStore(b, args(workflowId, chain === 'named' ? runChainId : undefined, { resolvedBy: 'bob', resolution: { failed: { message: 'not there' } } })),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(isCheckpointError(lost[0]!.reason, 'FENCE_CONFLICT')).toBe(true);
      expect(lost[0]!.reason.details).toMatchObject({ refusal: 'lost-race', fromStatus: 'uncertain', nowStatus: 'completed' });
      const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof resolveCallInStore>>>).value;
      expect(lost[0]!.reason.message).toContain(`resolved in the store as ${winner.outcome.resolvedInStore.kind} by ${winner.outcome.resolvedInStore.by}`);
      await unchanged(binding, winner.record);
    }
  });

  it('a holder that stores its own result between the read and the write wins; the resolver is refused and the holder result stays', async () => {
    const { workflowId, runChainId } = fresh();
    const binding = bindingOf(workflowId, runChainId);
    const executing = await seed(binding, 'executing');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let read!: () => void;
    const hasRead = new Promise<void>((r) => (read = r));
    const resolver = gated(await open(), gate, () => read());
    const resolving = resolveCallInStore(resolver, args(workflowId, runChainId), { clock: () => new Date(T0 + SETTLE_MS) });
    await hasRead;
    // The holder was only slow: it stores its result under its fence.
    const holder = completeExecution(executing, { attemptId: 'attempt-1-dead', at: iso(SETTLE_MS), result: { ok: true, output: { chargeId: 'ch-holder' }, receipt: null } });
    expect(await store.compareAndSwap(holder.expectedRevision, holder.next, executing)).toBe(true);
    release();
    const e = await refused(resolving, 'FENCE_CONFLICT', 'lost-race');
    expect(e.details).toMatchObject({ fromStatus: 'executing', nowStatus: 'completed' });
    await unchanged(binding, holder.next);
  });

  // ---- finding the call ----------------------------------------------------------------------------

  it('finds the call by its run chain, or without it when one run chain has it; a workflow id reused in two run chains is ambiguous; another tenant, namespace or call id is not found', async () => {
    const { workflowId, runChainId } = fresh();
    const otherChain = `run-${randomUUID()}`;
    const first = await seed(bindingOf(workflowId, runChainId), 'uncertain');
    const second = await seed(bindingOf(workflowId, otherChain), 'uncertain');
    const e = await refused(resolveCallInStore(store, args(workflowId, undefined)), 'INVALID_ARGUMENT', 'ambiguous');
    expect(e.message).toContain(runChainId);
    expect(e.message).toContain(otherChain);
    await unchanged(first.binding, first);
    await unchanged(second.binding, second);

    await refused(resolveCallInStore(store, args(workflowId, runChainId, { tenant: 'acme' })), 'INVALID_ARGUMENT', 'not-found');
    await refused(resolveCallInStore(store, args(workflowId, undefined, { tenant: 'acme' })), 'INVALID_ARGUMENT', 'not-found');
    await refused(resolveCallInStore(store, args(workflowId, runChainId, { namespace: 'prod' })), 'INVALID_ARGUMENT', 'not-found');
    await refused(resolveCallInStore(store, args(workflowId, undefined, { callId: 'act-2' })), 'INVALID_ARGUMENT', 'not-found');
    await refused(resolveCallInStore(store, args(`wf-${randomUUID()}`, undefined)), 'INVALID_ARGUMENT', 'not-found');

    const named = await resolveCallInStore(store, args(workflowId, otherChain));
    expect(named.record.binding).toEqual(second.binding);
    await unchanged(first.binding, first);
    // Now only one run chain has it waiting for a person.
    const lookedUp = await resolveCallInStore(store, args(workflowId, undefined));
    expect(lookedUp).toMatchObject({ runChainId, record: { binding: first.binding, status: 'completed' } });
  });

  it('a tenant other than the default is part of the address', async () => {
    const { workflowId, runChainId } = fresh();
    const binding = { ...bindingOf(workflowId, runChainId), namespace: 'default/acme' };
    await seed(binding, 'uncertain');
    await refused(resolveCallInStore(store, args(workflowId, runChainId)), 'INVALID_ARGUMENT', 'not-found');
    const resolved = await resolveCallInStore(store, args(workflowId, undefined, { tenant: 'acme' }));
    expect(resolved.record.binding).toEqual(binding);
  });

  // ---- bad arguments -----------------------------------------------------------------------------

  it('bad arguments are INVALID_ARGUMENT naming the field; a result over the bounds is PAYLOAD_TOO_LARGE; nothing is written', async () => {
    const { workflowId, runChainId } = fresh();
    const binding = bindingOf(workflowId, runChainId);
    const before = await seed(binding, 'uncertain');
    const cases: Array<[Partial<ResolveCallInStoreArgs>, string]> = [
      [{ resolution: { applied: 1, failed: { message: 'x' } } as never }, 'resolution'],
      [{ resolution: {} as never }, 'resolution'],
      [{ resolution: { failed: { message: '' } } }, 'resolution.failed.message'],
      [{ resolution: { failed: { message: 'x', type: 'bad type\n' } } }, 'resolution.failed.type'],
      [{ resolution: { failed: { message: 'x', extra: 1 } as never } }, 'resolution.failed'],
      [{ reason: '  ' }, 'reason'],
      [{ reason: 'x'.repeat(2_049) }, 'reason'],
      [{ resolvedBy: 'eve\u001b[2J' }, 'resolvedBy'],
      [{ workflowId: '' }, 'workflowId'],
      [{ callId: 'x'.repeat(2_049) }, 'callId'],
      [{ tenant: '' }, 'tenant'],
    ];
    for (const [more, field] of cases) {
      const e = await refused(resolveCallInStore(store, args(workflowId, runChainId, more)), 'INVALID_ARGUMENT');
      expect(e.details.field).toBe(field);
    }
    await refused(resolveCallInStore(store, args(workflowId, runChainId), { reconcileMarginMs: -1 }), 'INVALID_ARGUMENT');
    await refused(resolveCallInStore(store, args(workflowId, runChainId, { resolution: { applied: 'x'.repeat(70_000) } })), 'PAYLOAD_TOO_LARGE');
    await refused(resolveCallInStore(store, args(workflowId, runChainId, { resolution: { applied: Number.NaN } })), 'NOT_JSON');
    await unchanged(binding, before);
  });
});
