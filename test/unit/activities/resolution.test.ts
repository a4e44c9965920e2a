/**
 * `resolveUnknownOutcome` (src/activities/fence/resolution.ts), the one place a person's resolution of an
 * unknown outcome is stored for `agentWorkflow` and for the worker plugin, against a real SQLite
 * store: the decision for each status under each surface's policy, the stored shape and its
 * audit, the stale decision, and the lost compare-and-swap. Every refusal leaves the record exactly
 * as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isCheckpointError, type CheckpointErrorCode } from '../../../src/checkpoint/errors';
import { decideResolution } from '../../../src/checkpoint/resolution';
import { completeExecution } from '../../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord, Status } from '../../../src/checkpoint/types';
import {
  AGENT_ABSENT_RESOLUTION_POLICY,
  AGENT_RESOLUTION_POLICY,
  resolveUnknownOutcome,
  STORE_RESOLUTION_POLICY,
  type ResolutionPolicy,
  type UnknownOutcomeResolution,
} from '../../../src/activities/fence/resolution';
import { resolutionAuditOf } from '../../../src/activities/fence/resolution-audit';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import { seedStatus } from '../../helpers/seed-status';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(T0 + ms).toISOString();
/** The claim's deadline (claim + 30 s) plus the default margin (5 s). */
const SETTLE_MS = 35_000;

let dir: string;
let store: CheckpointStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttc-resolution-'));
  store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function freshBinding(): Binding {
  return { namespace: 'default/default', callId: `call-${randomUUID()}`, toolName: 'chargeCard', toolRevision: 'v1', inputFingerprint: `sha256:${'ab'.repeat(32)}` };
}

/** A fresh record driven to `status` through the transitions (claim at T0, deadline T0 + 30 s), as stored. */
const seed = (status: Status): Promise<CheckpointRecord> => seedStatus(store, freshBinding(), status, iso, 'attempt-1');

const stored = (record: CheckpointRecord): Promise<CheckpointRecord | null> => store.getByCall(record.binding.namespace, record.binding.callId);

/** A person's `applied` resolution of `record` decided at `atMs` after T0. */
function resolve(record: CheckpointRecord, policy: ResolutionPolicy, atMs: number, more: Partial<UnknownOutcomeResolution> = {}, on: CheckpointStore = store) {
  return resolveUnknownOutcome(
    { store: on, clock: () => new Date(T0 + atMs) },
    {
      record,
      kind: 'applied',
      outcome: () => ({ ok: true, output: { chargeId: 'ch-found' }, receipt: null }),
      by: 'alice',
      reason: 'found it at the provider',
      what: 'call "act-1"',
      details: { callId: 'act-1' },
      ...more,
    },
    policy,
  );
}

async function refused(promise: Promise<unknown>, code: CheckpointErrorCode, refusal: string): Promise<Record<string, unknown>> {
  const error = await promise.then(
    () => {
      throw new Error(`expected ${code}, but it resolved`);
    },
    (e: unknown) => e,
  );
  expect(isCheckpointError(error, code)).toBe(true);
  const details = (error as { details: Record<string, unknown> }).details;
  expect(details).toMatchObject({ refusal, callId: 'act-1' });
  return details;
}

describe('resolveUnknownOutcome: the decision for each status', () => {
  const LATE = 10 * SETTLE_MS;

  it('uncertain is resolved under every policy: completed under its own claim with the audit, or delivered in the same write with a delivery id', async () => {
    const before = await seed('uncertain');
    const done = await resolve(before, STORE_RESOLUTION_POLICY, LATE);
    expect(done).toMatchObject({
      resolved: true,
      fromStatus: 'uncertain',
      previous: before,
      record: { status: 'completed', revision: before.revision + 1, execution: { attemptId: 'attempt-1' } },
    });
    expect(done.record.result!.payload).toEqual({
      ok: true,
      output: { chargeId: 'ch-found' },
      receipt: null,
      resolvedInStore: { kind: 'applied', by: 'alice', reason: 'found it at the provider', at: iso(LATE), fromStatus: 'uncertain', attemptId: 'attempt-1' },
    });
    expect(await stored(before)).toEqual(done.record);
    expect(resolutionAuditOf(done.record)).toMatchObject({ kind: 'applied', by: 'alice' });

    const other = await seed('uncertain');
    const delivered = await resolve(other, AGENT_RESOLUTION_POLICY, LATE, {
      deliveryId: 'delivery-resolve-1',
      by: null,
      kind: 'not-applied',
      outcome: () => ({ ok: false, error: { type: 'GONE', message: 'no such charge' } }),
    });
    expect(delivered.record).toMatchObject({ status: 'delivered', delivery: { deliveryId: 'delivery-resolve-1' } });
    expect(delivered.record.result!.payload).toMatchObject({ ok: false, error: { type: 'GONE' }, resolvedInStore: { kind: 'not-applied', by: null, fromStatus: 'uncertain' } });
    expect(await stored(other)).toEqual(delivered.record);
  });

  it('executing before its settle time: refused (may-be-running, the time left) by the plugin and for an absent item, resolved at once by the agent; after it, resolved from executing', async () => {
    for (const policy of [STORE_RESOLUTION_POLICY, AGENT_ABSENT_RESOLUTION_POLICY]) {
      const before = await seed('executing');
      const details = await refused(resolve(before, policy, SETTLE_MS - 1_000), 'RECONCILE_PENDING', 'may-be-running');
      expect(details).toMatchObject({ retryAfterMs: 1_000, fromStatus: 'executing' });
      // A larger margin moves the settle time.
      await refused(
        resolveUnknownOutcome(
          { store, clock: () => new Date(T0 + SETTLE_MS), reconcileMarginMs: 60_000 },
          { record: before, kind: 'applied', outcome: () => ({ ok: true, output: 1, receipt: null }), by: null, reason: 'r', what: 'call', details: { callId: 'act-1' } },
          policy,
        ),
        'RECONCILE_PENDING',
        'may-be-running',
      );
      expect(await stored(before)).toEqual(before);
      const done = await resolve(before, policy, SETTLE_MS);
      expect(done).toMatchObject({ resolved: true, fromStatus: 'executing', record: { status: 'completed', updatedAt: iso(SETTLE_MS) } });
    }
    const early = await seed('executing');
    const done = await resolve(early, AGENT_RESOLUTION_POLICY, 1_000, { deliveryId: 'delivery-1' });
    expect(done).toMatchObject({ resolved: true, fromStatus: 'executing', record: { status: 'delivered' } });
  });

  it('ready is refused under every policy (never-claimed); the outcome is never built', async () => {
    for (const policy of [STORE_RESOLUTION_POLICY, AGENT_RESOLUTION_POLICY, AGENT_ABSENT_RESOLUTION_POLICY]) {
      const before = await seed('ready');
      const outcome = jest.fn(() => ({ ok: true as const, output: 1, receipt: null }));
      const details = await refused(resolve(before, policy, LATE, { outcome }), 'INVALID_TRANSITION', 'never-claimed');
      expect(details.fromStatus).toBe('ready');
      expect(outcome).not.toHaveBeenCalled();
      expect(await stored(before)).toEqual(before);
    }
  });

  it.each(['completed', 'delivering', 'delivered'] as const)(
    '%s: refused by the plugin (already-settled), returned as stored by the agent; nothing written, the outcome never built',
    async (status) => {
      const before = await seed(status);
      const outcome = jest.fn(() => ({ ok: true as const, output: 1, receipt: null }));
      const details = await refused(resolve(before, STORE_RESOLUTION_POLICY, LATE, { outcome }), 'INVALID_TRANSITION', 'already-settled');
      expect(details.fromStatus).toBe(status);
      for (const policy of [AGENT_RESOLUTION_POLICY, AGENT_ABSENT_RESOLUTION_POLICY]) {
        await expect(resolve(before, policy, LATE, { outcome })).resolves.toEqual({ resolved: false, record: before });
      }
      expect(outcome).not.toHaveBeenCalled();
      expect(await stored(before)).toEqual(before);
    },
  );

  it('a decision made on another revision is refused (stale-decision) whatever the status, before anything else; on the revision it is resolved', async () => {
    const before = await seed('uncertain');
    const details = await refused(resolve(before, STORE_RESOLUTION_POLICY, LATE, { expectedRevision: before.revision - 1 }), 'FENCE_CONFLICT', 'stale-decision');
    expect(details).toMatchObject({ seenRevision: before.revision - 1, nowRevision: before.revision, nowStatus: 'uncertain' });
    expect(await stored(before)).toEqual(before);
    const settled = await seed('completed');
    await refused(resolve(settled, AGENT_RESOLUTION_POLICY, LATE, { expectedRevision: 0 }), 'FENCE_CONFLICT', 'stale-decision');
    await expect(resolve(before, STORE_RESOLUTION_POLICY, LATE, { expectedRevision: before.revision })).resolves.toMatchObject({ resolved: true });
  });

  it('an outcome over the payload bound is refused (PAYLOAD_TOO_LARGE), nothing written', async () => {
    const before = await seed('uncertain');
    await expect(
      resolveUnknownOutcome(
        { store, maxPayloadBytes: 1_024 },
        { record: before, kind: 'applied', outcome: () => ({ ok: true, output: 'x'.repeat(2_000), receipt: null }), by: null, reason: 'r', what: 'call' },
        STORE_RESOLUTION_POLICY,
      ),
    ).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(await stored(before)).toEqual(before);
  });
});

describe('resolveUnknownOutcome: the lost compare-and-swap', () => {
  it('a holder that stores its result after the read wins: the plugin is refused (FENCE_CONFLICT lost-race), the agent told to retry (STORE_OUTCOME_UNKNOWN), and its retry returns what won', async () => {
    for (const policy of [STORE_RESOLUTION_POLICY, AGENT_RESOLUTION_POLICY]) {
      const read = await seed('executing');
      // The holder was only slow: it stores its own result under its claim after the person read the record.
      const holder = completeExecution(read, { attemptId: 'attempt-1', at: iso(SETTLE_MS), result: { ok: true, output: { chargeId: 'ch-holder' }, receipt: null } });
      expect(await store.compareAndSwap(holder.expectedRevision, holder.next, read)).toBe(true);
      const details = await refused(
        resolve(read, policy, SETTLE_MS, { deliveryId: 'delivery-x' }),
        policy.lostRace === 'refuse' ? 'FENCE_CONFLICT' : 'STORE_OUTCOME_UNKNOWN',
        'lost-race',
      );
      expect(details).toMatchObject({ fromStatus: 'executing', nowStatus: 'completed', expectedRevision: read.revision });
      expect(await stored(read)).toEqual(holder.next);
      if (policy.settled === 'return') await expect(resolve((await stored(read))!, policy, SETTLE_MS)).resolves.toEqual({ resolved: false, record: holder.next });
    }
  });

  it('two people who read the same uncertain record race on two connections: exactly one write wins, the other is refused and overwrites nothing', async () => {
    const read = await seed('uncertain');
    const second = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    try {
      // Each store instance writes only from a record it returned: the second person reads on their own connection.
      const readBySecond = (await second.getByCall(read.binding.namespace, read.binding.callId))!;
      const results = await Promise.allSettled([
        resolve(read, STORE_RESOLUTION_POLICY, SETTLE_MS, { by: 'alice' }),
        resolve(
          readBySecond,
          STORE_RESOLUTION_POLICY,
          SETTLE_MS,
          { by: 'bob', kind: 'not-applied', outcome: () => ({ ok: false, error: { type: 'GONE', message: 'no' } }) },
          second,
        ),
      ]);
      const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(isCheckpointError(lost[0], 'FENCE_CONFLICT')).toBe(true);
      expect((lost[0] as { details: unknown }).details).toMatchObject({ refusal: 'lost-race', nowStatus: 'completed' });
      const winner = resolutionAuditOf(won[0]!.record)!;
      expect((lost[0] as Error).message).toContain(`resolved in the store as ${winner.kind} by ${winner.by}`);
      expect(await stored(read)).toEqual(won[0]!.record);
    } finally {
      await second.close();
    }
  });
});

describe('decideResolution (pure)', () => {
  it('maps each status to its decision under each rule, checks the revision first, and reads the settle time only for executing', async () => {
    const records = Object.fromEntries(
      await Promise.all((['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'] as const).map(async (s) => [s, await seed(s)] as const)),
    );
    const settleAt = jest.fn(() => T0 + SETTLE_MS);
    const early = { now: T0, settleAt };
    const refuse = { executingBeforeSettle: 'refuse', settled: 'refuse' } as const;
    const allow = { executingBeforeSettle: 'allow', settled: 'return' } as const;
    expect(decideResolution(records.ready!, early, allow)).toEqual({ action: 'refuse', refusal: { kind: 'never-claimed' } });
    expect(decideResolution(records.uncertain!, early, refuse)).toEqual({ action: 'resolve', fromStatus: 'uncertain', attemptId: 'attempt-1' });
    expect(settleAt).not.toHaveBeenCalled();
    expect(decideResolution(records.executing!, early, refuse)).toEqual({
      action: 'refuse',
      refusal: { kind: 'may-be-running', settleAt: T0 + SETTLE_MS, retryAfterMs: SETTLE_MS },
    });
    expect(decideResolution(records.executing!, { now: T0 + SETTLE_MS, settleAt }, refuse)).toEqual({ action: 'resolve', fromStatus: 'executing', attemptId: 'attempt-1' });
    expect(decideResolution(records.executing!, early, allow)).toEqual({ action: 'resolve', fromStatus: 'executing', attemptId: 'attempt-1' });
    for (const s of ['completed', 'delivering', 'delivered'] as const) {
      expect(decideResolution(records[s]!, early, refuse)).toEqual({ action: 'refuse', refusal: { kind: 'already-settled' } });
      expect(decideResolution(records[s]!, early, allow)).toEqual({ action: 'return-settled' });
    }
    expect(decideResolution(records.uncertain!, { ...early, expectedRevision: 0 }, allow)).toEqual({ action: 'refuse', refusal: { kind: 'stale-decision', seenRevision: 0 } });
  });
});
