/**
 * Signed approval grants at the fence (docs/protocol.md#approval-grants): on a worker that holds
 * grant keys, a `requireApproval` tool runs only with a valid, unexpired grant for exactly that
 * call; a grant missing, forged, for another call or other arguments, or expired is refused before
 * any claim and nothing runs; a grant's use is recorded in the store, and its replay never runs the
 * effect again. Activities in MockActivityEnvironment against a SQLite file store.
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
import { grantUseCallId, grantUseKey, grantUseRecord, grantUser } from '../../src/activities/fence/approval-grants';
import { prepareCall } from '../../src/activities/fence/prepare-call';
import { signApprovalGrant, type GrantSigningKey } from '../../src/checkpoint/approval-grant';
import { callBindingId } from '../../src/checkpoint/call-identity';
import type { JsonValue } from '../../src/checkpoint/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { FlakyStore } from '../helpers/flaky-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

jest.setTimeout(60_000);

const SECRET = Buffer.from('9c2e41d07b6a5f38e1c04d2b97a6f5e3d2c1b0a9f8e7d6c5b4a39281706f5e4d', 'hex');
const KEY: GrantSigningKey = { keyId: 'ops', hmacSecret: SECRET };
const HOUR = 3_600_000;

type Outcome = { result: FencedToolResult } | { failure: { type: string | undefined; reason: unknown; message: string } };

describe('approval grants at the fence', () => {
  let dir: string;
  let store: CheckpointStore;
  let seq = 0;
  const refunds: string[] = [];

  const refund = defineTool({
    name: 'refund',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    async execute(input) {
      refunds.push(`${input.orderId}:${input.amountCents}`);
      return { output: { refunded: input.amountCents } };
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-grants-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    refunds.length = 0;
    seq += 1;
  });

  /** Added to the fence's clock: a test moves past a grant's expiry without waiting for it. */
  let offsetMs = 0;
  afterEach(() => {
    offsetMs = 0;
  });
  const signed = (over: { keys?: boolean } = {}): ToolActivities =>
    createToolActivities({
      store,
      tools: [refund],
      requireApproval: ['refund'],
      clock: () => new Date(Date.now() + offsetMs),
      ...(over.keys === false ? {} : { approvalGrantKeys: [{ keyId: 'ops', hmacSecret: SECRET }] }),
    });
  const workflowId = () => `refund-run-${seq}`;
  const runChainId = () => `chain-${seq}`;
  const input = (callId: string, args: JsonValue, over: Partial<FencedToolInput> = {}): FencedToolInput => ({
    tenant: 'acme',
    callId,
    runChainId: runChainId(),
    toolName: 'refund',
    input: args,
    ...over,
  });
  const env = (attempt = 1) => new MockActivityEnvironment({ attempt, workflowExecution: { workflowId: workflowId(), runId: runChainId() }, heartbeatTimeoutMs: 30_000 } as never);

  async function run(acts: ToolActivities, call: FencedToolInput, attempt = 1): Promise<Outcome> {
    try {
      return { result: await env(attempt).run(acts.runFencedTool, call) };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      return { failure: { type: error.type ?? undefined, reason: (error.details?.[0] as { reason?: unknown } | undefined)?.reason, message: error.message } };
    }
  }

  /** What an approve path signs: the call as the worker describes it, for `approver`, expiring in an hour (or at `expiresAt`). */
  async function grantFor(callId: string, args: JsonValue, over: { expiresAt?: string; key?: GrantSigningKey; now?: Date } = {}): Promise<string> {
    const described = (await env().run(signed().describeToolCall, input(callId, args))) as { intentDigest: string };
    const now = over.now ?? new Date();
    const call = { namespace: 'default', tenant: 'acme', workflowId: workflowId(), runChainId: runChainId(), callId, toolName: 'refund', intentDigest: described.intentDigest };
    return signApprovalGrant(call, { approver: 'alice@ops', expiresAt: over.expiresAt ?? new Date(now.getTime() + HOUR).toISOString() }, over.key ?? KEY, now);
  }

  const failure = (o: Outcome) => ('failure' in o ? { type: o.failure.type, reason: o.failure.reason } : { ran: o.result.source });

  test('a call with a valid grant runs once and the grant’s use is recorded with the approver', async () => {
    const args = { orderId: 'o-1', amountCents: 500 };
    const grant = await grantFor('toolu_1', args);
    const first = await run(signed(), input('toolu_1', args, { approvalGrant: grant }));
    expect(first).toMatchObject({ result: { source: 'executed', outcome: { ok: true, output: { refunded: 500 } } } });
    // The grant presented again (a retry, or a replay read from history): the stored result, no second refund.
    const again = await run(signed(), input('toolu_1', args, { approvalGrant: grant }), 2);
    expect(again).toMatchObject({ result: { source: 'store' } });
    expect(refunds).toEqual(['o-1:500']);
    const grantId = JSON.parse(Buffer.from(grant.split('.')[1]!, 'base64url').toString('utf8')).grantId as string;
    const use = await store.getByCall('default/acme', grantUseCallId(runChainId(), workflowId(), grantId));
    expect(use?.result?.payload).toMatchObject({
      grantUse: { grantId, approver: 'alice@ops', usedBy: callBindingId({ runChainId: runChainId(), workflowId: workflowId(), callId: 'toolu_1' }) },
    });
  });

  test('without a grant, with one forged, for another call, for other arguments or expired: refused before any claim, nothing runs', async () => {
    const args = { orderId: 'o-2', amountCents: 700 };
    const acts = signed();
    const cases: [string, Partial<FencedToolInput>, { type: string; reason?: string }][] = [
      ['none', {}, { type: 'APPROVAL_REQUIRED' }],
      [
        'forged',
        { approvalGrant: await grantFor('toolu_2', args, { key: { keyId: 'ops', hmacSecret: Buffer.alloc(32, 9) } }) },
        { type: 'APPROVAL_MISMATCH', reason: 'signature' },
      ],
      ['unknown key', { approvalGrant: await grantFor('toolu_2', args, { key: { keyId: 'workflow', hmacSecret: SECRET } }) }, { type: 'APPROVAL_REQUIRED', reason: 'unknown-key' }],
      ['another call', { approvalGrant: await grantFor('toolu_other', args) }, { type: 'APPROVAL_MISMATCH', reason: 'claims' }],
      ['other arguments', { approvalGrant: await grantFor('toolu_2', { orderId: 'o-2', amountCents: 70_000 }) }, { type: 'APPROVAL_MISMATCH', reason: 'signature' }],
      [
        'expired',
        { approvalGrant: await grantFor('toolu_2', args, { now: new Date(Date.now() - 2 * HOUR), expiresAt: new Date(Date.now() - 1).toISOString() }) },
        { type: 'APPROVAL_EXPIRED', reason: 'grant-expired' },
      ],
      ['not a grant', { approvalGrant: 'eyJhbGciOiJub25lIn0.e30.' }, { type: 'APPROVAL_REQUIRED', reason: 'malformed' }],
    ];
    for (const [what, over, refused] of cases) {
      expect([what, failure(await run(acts, input('toolu_2', args, over)))]).toEqual([what, { type: refused.type, reason: refused.reason }]);
    }
    expect(refunds).toEqual([]);
    expect(await store.getByCall('default/acme', callBindingId({ runChainId: runChainId(), workflowId: workflowId(), callId: 'toolu_2' }))).toBeNull();
  });

  test('a retry whose grant expired after an earlier attempt applied the effect delivers the stored result', async () => {
    const args = { orderId: 'o-3', amountCents: 300 };
    const grant = await grantFor('toolu_3', args);
    expect(await run(signed(), input('toolu_3', args, { approvalGrant: grant }))).toMatchObject({ result: { source: 'executed' } });
    offsetMs = 2 * HOUR;
    expect(failure(await run(signed(), input('toolu_3b', args, { approvalGrant: await grantFor('toolu_3b', args) })))).toEqual({
      type: 'APPROVAL_EXPIRED',
      reason: 'grant-expired',
    });
    expect(await run(signed(), input('toolu_3', args, { approvalGrant: grant }), 2)).toMatchObject({ result: { source: 'store' } });
    expect(refunds).toEqual(['o-3:300']);
  });

  test('a grant whose use is recorded for another call is refused (used once)', async () => {
    const args = { orderId: 'o-4', amountCents: 400 };
    const grant = await grantFor('toolu_4', args);
    const claims = JSON.parse(Buffer.from(grant.split('.')[1]!, 'base64url').toString('utf8'));
    // The store says another call of the run already used this grant id.
    const other = prepareCall(new Map([['refund', refund]]), input('toolu_other', args), { namespace: 'default', workflowId: workflowId(), runId: runChainId(), attempt: 1 });
    const written = await store.createIfAbsent(grantUseRecord(other, { ...claims, keyId: 'ops' }, new Date().toISOString()), grantUseKey(other, { ...claims, keyId: 'ops' }));
    expect(grantUser(written.record)).toBe(other.binding.callId);
    expect(failure(await run(signed(), input('toolu_4', args, { approvalGrant: grant })))).toEqual({ type: 'APPROVAL_REQUIRED', reason: 'grant-used' });
    expect(refunds).toEqual([]);
  });

  test('prune keeps the record of a grant’s use until the grant expires', async () => {
    const args = { orderId: 'o-6', amountCents: 600 };
    const grant = await grantFor('toolu_6', args);
    expect(await run(signed(), input('toolu_6', args, { approvalGrant: grant }))).toMatchObject({ result: { source: 'executed' } });
    const grantId = JSON.parse(Buffer.from(grant.split('.')[1]!, 'base64url').toString('utf8')).grantId as string;
    const useOf = () => store.getByCall('default/acme', grantUseCallId(runChainId(), workflowId(), grantId));
    await store.prune({ olderThan: new Date(Date.now() + 1000).toISOString() });
    expect(await useOf()).not.toBeNull();
    // The store's clock past the grant's expiry (an hour): prune removes it with the rest.
    jest.useFakeTimers({ now: Date.now() + 2 * HOUR, doNotFake: ['setTimeout', 'setImmediate', 'nextTick', 'queueMicrotask', 'setInterval', 'clearTimeout', 'clearInterval'] });
    try {
      await store.prune({ olderThan: new Date(Date.now() + 1000).toISOString() });
    } finally {
      jest.useRealTimers();
    }
    expect(await useOf()).toBeNull();
  });

  test('a store outage between the record of the grant’s use and the claim is settled by the next attempt: the call runs once', async () => {
    const args = { orderId: 'o-8', amountCents: 800 };
    const grant = await grantFor('toolu_8', args);
    const flaky = new FlakyStore(store);
    let claims = 0;
    // The claim insert (the second createIfAbsent of the attempt, after the use record's) fails once: nothing of it was written.
    flaky.failWhen = (op, opArgs) => op === 'createIfAbsent' && (opArgs[0] as { binding: { toolRevision: string } }).binding.toolRevision === 'v1' && claims++ === 0;
    const acts = createToolActivities({ store: flaky, tools: [refund], requireApproval: ['refund'], approvalGrantKeys: [{ keyId: 'ops', hmacSecret: SECRET }] });
    const first = await run(acts, input('toolu_8', args, { approvalGrant: grant }));
    expect('failure' in first && first.failure.type).toBe('STORE_UNAVAILABLE');
    expect(await run(acts, input('toolu_8', args, { approvalGrant: grant }), 2)).toMatchObject({ result: { source: 'executed' } });
    expect(refunds).toEqual(['o-8:800']);
  });

  test('a call whose id spells a grant-use record’s old address is only a call', async () => {
    const args = { orderId: 'o-7', amountCents: 700 };
    const grant = await grantFor('toolu_7', args);
    await run(signed(), input('toolu_7', args, { approvalGrant: grant }));
    const grantId = JSON.parse(Buffer.from(grant.split('.')[1]!, 'base64url').toString('utf8')).grantId as string;
    const spelled = await grantFor(`grant:${grantId}`, args);
    expect(await run(signed(), input(`grant:${grantId}`, args, { approvalGrant: spelled }))).toMatchObject({ result: { source: 'executed', outcome: { ok: true } } });
    expect(refunds).toEqual(['o-7:700', 'o-7:700']);
  });

  test('property: whatever grants are presented in whatever order, with time passing and prunes (24 h replay window) between, each call applies at most once and only under a valid grant of its own', async () => {
    type Step = { call: 0 | 1; grant: 'own' | 'other-call' | 'other-args' | 'expired' | 'forged' | 'none'; attempt: number; prune: boolean; laterMs: number };
    const step = fc.record({
      call: fc.constantFrom<0 | 1>(0, 1),
      grant: fc.constantFrom<Step['grant']>('own', 'other-call', 'other-args', 'expired', 'forged', 'none'),
      attempt: fc.integer({ min: 1, max: 4 }),
      prune: fc.boolean(),
      laterMs: fc.constantFrom(0, 0, 30 * 60_000, 2 * HOUR, 25 * HOUR),
    });
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        round += 1;
        refunds.length = 0;
        const ids = [`toolu_p${round}a`, `toolu_p${round}b`] as const;
        const args = (n: number) => ({ orderId: `p-${round}-${n}`, amountCents: 100 + n });
        const grants = {
          own: await Promise.all([0, 1].map((n) => grantFor(ids[n]!, args(n)))),
          'other-call': await Promise.all([0, 1].map((n) => grantFor(ids[1 - n]!, args(n)))),
          'other-args': await Promise.all([0, 1].map((n) => grantFor(ids[n]!, { ...args(n), amountCents: 9_999 }))),
          expired: await Promise.all([0, 1].map((n) => grantFor(ids[n]!, args(n), { now: new Date(Date.now() - 2 * HOUR), expiresAt: new Date(Date.now() - HOUR).toISOString() }))),
          forged: await Promise.all([0, 1].map((n) => grantFor(ids[n]!, args(n), { key: { keyId: 'ops', hmacSecret: Buffer.alloc(32, 3) } }))),
        };
        const validPresented = [false, false];
        offsetMs = 0;
        for (const s of steps) {
          // The fence's clock moves on; prune keeps what is younger than the minimum replay window (24 h) on that clock.
          offsetMs += s.laterMs;
          if (s.prune) await store.prune({ olderThan: new Date(Date.now() + offsetMs - 24 * HOUR).toISOString() });
          const approvalGrant = s.grant === 'none' ? {} : { approvalGrant: grants[s.grant][s.call]! };
          const outcome = await run(signed(), input(ids[s.call]!, args(s.call), approvalGrant), s.attempt);
          if (s.grant === 'own' && offsetMs < HOUR) validPresented[s.call] = true;
          if ('result' in outcome && outcome.result.source === 'executed') expect(validPresented[s.call]).toBe(true);
        }
        for (const n of [0, 1]) expect(refunds.filter((r) => r === `${args(n).orderId}:${args(n).amountCents}`).length).toBeLessThanOrEqual(validPresented[n] ? 1 : 0);
        expect(refunds.every((r) => !r.endsWith(':9999'))).toBe(true);
      }),
      { seed: 20261217, numRuns: 40 },
    );
  });

  test('unsigned mode (no keys): the grant is not required, the approved digest still is checked', async () => {
    const args = { orderId: 'o-5', amountCents: 100 };
    const acts = signed({ keys: false });
    expect(failure(await run(acts, input('toolu_5', args)))).toEqual({ type: 'APPROVAL_REQUIRED', reason: undefined });
    const described = (await env().run(acts.describeToolCall, input('toolu_5', args))) as { intentDigest: string };
    expect(await run(acts, input('toolu_5', args, { expectedIntentDigest: described.intentDigest }))).toMatchObject({ result: { source: 'executed' } });
    expect(refunds).toEqual(['o-5:100']);
  });
});
