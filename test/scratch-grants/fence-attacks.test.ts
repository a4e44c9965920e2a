/**
 * Scratch attacks on signed approval grants at the fence (MockActivityEnvironment + SQLite).
 * Each `FINDING` test asserts the promise and FAILS on the current code; `HELD` tests pass.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createToolActivities, defineTool, type ToolActivities } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { signApprovalGrant, verifyApprovalGrant, type GrantSigningKey } from '../../src/checkpoint/approval-grant';
import { callBindingId } from '../../src/checkpoint/call-identity';
import { canonicalJson } from '../../src/checkpoint/canonical-json';
import type { JsonValue } from '../../src/checkpoint/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

jest.setTimeout(60_000);

const SECRET = Buffer.from('9c2e41d07b6a5f38e1c04d2b97a6f5e3d2c1b0a9f8e7d6c5b4a39281706f5e4d', 'hex');
const KEY: GrantSigningKey = { keyId: 'ops', hmacSecret: SECRET };
const HOUR = 3_600_000;

type Outcome = { result: FencedToolResult } | { failure: { type: string | undefined; reason: unknown; message: string } };

describe('scratch: grant attacks at the fence', () => {
  let dir: string;
  let store: CheckpointStore;
  let seq = 0;
  const refunds: string[] = [];
  const charges: string[] = [];
  const lookups: string[] = [];

  const refund = defineTool({
    name: 'refund',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    async execute(input) {
      refunds.push(`${input.orderId}:${input.amountCents}`);
      return { output: { refunded: input.amountCents } };
    },
  });
  // No approval needed to charge; its compensation is the approval-gated `refund`.
  const charge = defineTool({
    name: 'charge',
    revision: 'v1',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    compensation: { tool: 'refund', input: (applied: { args: JsonValue }) => applied.args },
    async execute(input) {
      charges.push(`${input.orderId}:${input.amountCents}`);
      return { output: { charged: input.amountCents } };
    },
  });
  const lookupOrder = defineTool({
    name: 'lookup_order',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    async execute(input) {
      lookups.push(input.orderId);
      return { output: { found: input.orderId } };
    },
  });
  const payIntent = defineTool({
    name: 'pay_intent',
    revision: 'v1',
    dedupeByIntent: true,
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    async execute(input) {
      refunds.push(`intent:${input.orderId}:${input.amountCents}`);
      return { output: { paid: input.amountCents } };
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-scratch-grants-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    refunds.length = 0;
    charges.length = 0;
    lookups.length = 0;
    seq += 1;
  });

  const signed = (): ToolActivities =>
    createToolActivities({
      store,
      tools: [refund, charge, lookupOrder, payIntent],
      requireApproval: ['refund', 'pay_intent'],
      approvalGrantKeys: [{ keyId: 'ops', hmacSecret: SECRET }],
    });
  const workflowId = () => `scratch-run-${seq}`;
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

  async function run(fn: (i: never) => Promise<unknown>, call: unknown, attempt = 1): Promise<Outcome> {
    try {
      return { result: (await env(attempt).run(fn as never, call as never)) as FencedToolResult };
    } catch (error) {
      if (!(error instanceof ApplicationFailure)) throw error;
      return { failure: { type: error.type ?? undefined, reason: (error.details?.[0] as { reason?: unknown } | undefined)?.reason, message: error.message } };
    }
  }

  async function grantFor(callId: string, args: JsonValue, over: { toolName?: string; expiresAt?: string; key?: GrantSigningKey } = {}): Promise<string> {
    const toolName = over.toolName ?? 'refund';
    const described = (await env().run(signed().describeToolCall, input(callId, args, { toolName }))) as { intentDigest: string };
    const now = new Date();
    const call = { namespace: 'default', tenant: 'acme', workflowId: workflowId(), runChainId: runChainId(), callId, toolName, intentDigest: described.intentDigest };
    return signApprovalGrant(call, { approver: 'alice@ops', expiresAt: over.expiresAt ?? new Date(now.getTime() + HOUR).toISOString() }, over.key ?? KEY, now);
  }
  const claimsOf = (grant: string) => JSON.parse(Buffer.from(grant.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

  // ---------------------------------------------------------------- FINDINGS

  test('FINDING 1: prune deletes the grant-use row while the grant is still valid; the same grant then runs the effect again', async () => {
    const args = { orderId: 'o-prune', amountCents: 900 };
    const grant = await grantFor('toolu_p', args);
    expect(await run(signed().runFencedTool, input('toolu_p', args, { approvalGrant: grant }))).toMatchObject({ result: { source: 'executed' } });
    // `ttc prune` with a replay window shorter than the grant's remaining life (here: everything delivered so far).
    await new Promise((r) => setTimeout(r, 5));
    const pruned = await store.prune({ olderThan: new Date().toISOString() });
    expect(pruned).toBeGreaterThanOrEqual(2); // the call's checkpoint and the grant-use record
    // A replay of the same activity input (workflow reset, late activity retry, or workflow code presenting the grant from history).
    const again = await run(signed().runFencedTool, input('toolu_p', args, { approvalGrant: grant }), 2);
    // The promise: a grant is used once; its second presentation never runs the effect.
    expect(refunds).toEqual(['o-prune:900']);
    expect(again).not.toMatchObject({ result: { source: 'executed' } });
  });

  test('FINDING 2: compensateToolCall runs a requireApproval tool (refund) with no grant at all, once per compensationGeneration', async () => {
    const args = { orderId: 'o-comp', amountCents: 4_200 };
    expect(await run(signed().runFencedTool, input('toolu_c', args, { toolName: 'charge' }))).toMatchObject({ result: { source: 'executed' } });
    const outcomes: Outcome[] = [];
    for (const generation of [1, 2, 3]) {
      outcomes.push(await run(signed().compensateToolCall, { ...input('toolu_c', args, { toolName: 'charge' }), role: 'compensation', compensationGeneration: generation }));
    }
    // The promise: on a worker with grant keys, a call of a requireApproval tool runs only with a valid grant for exactly that call.
    expect(refunds).toEqual([]);
  });

  test('FINDING 3: a call whose id is `grant:<grantId>` reads the grant-use record as its own stored result (nothing ran)', async () => {
    const args = { orderId: 'o-g', amountCents: 100 };
    const grant = await grantFor('toolu_g', args);
    expect(await run(signed().runFencedTool, input('toolu_g', args, { approvalGrant: grant }))).toMatchObject({ result: { source: 'executed' } });
    const grantId = claimsOf(grant).grantId as string;
    // Any tool, any input, under the call id the grant-use record occupies.
    const collided = await run(signed().runFencedTool, input(`grant:${grantId}`, { orderId: 'o-other' }, { toolName: 'lookup_order' }));
    // It must either run lookup_order or be refused; it must never be "delivered" the grant-use payload.
    expect(JSON.stringify(collided)).not.toContain('grantUse');
    expect(lookups.length + ('failure' in collided ? 1 : 0)).toBe(1);
  });

  test('FINDING 4: a grant has many texts: claims JSON re-encoded with whitespace/reordered keys still verifies (docs: "a grant has one text")', async () => {
    const args = { orderId: 'o-text', amountCents: 10 };
    const grant = await grantFor('toolu_t', args);
    const [h, c, s] = grant.split('.') as [string, string, string];
    const claims = claimsOf(grant);
    const reordered = Object.fromEntries(Object.entries(claims).reverse());
    const variant = `${h}.${Buffer.from(JSON.stringify(reordered, null, 2)).toString('base64url')}.${s}`;
    expect(variant).not.toBe(grant);
    const described = (await env().run(signed().describeToolCall, input('toolu_t', args))) as { intentDigest: string };
    const call = { namespace: 'default', tenant: 'acme', workflowId: workflowId(), runChainId: runChainId(), callId: 'toolu_t', toolName: 'refund', intentDigest: described.intentDigest };
    expect(() => verifyApprovalGrant(variant, call, [{ keyId: 'ops', hmacSecret: SECRET }], Date.now())).toThrow();
    void c;
  });

  // ---------------------------------------------------------------- HELD

  test('HELD: algorithm confusion, key-id games, __proto__/duplicate keys, bad base64, over-long grants', async () => {
    const args = { orderId: 'o-alg', amountCents: 11 };
    const grant = await grantFor('toolu_a', args);
    const [h, c, s] = grant.split('.') as [string, string, string];
    const described = (await env().run(signed().describeToolCall, input('toolu_a', args))) as { intentDigest: string };
    const call = { namespace: 'default', tenant: 'acme', workflowId: workflowId(), runChainId: runChainId(), callId: 'toolu_a', toolName: 'refund', intentDigest: described.intentDigest };
    const { publicKey } = generateKeyPairSync('ed25519');
    const pubRaw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
    const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const withDigest = (claimsPart: string) => Buffer.from(canonicalJson({ ...JSON.parse(Buffer.from(claimsPart, 'base64url').toString()), intentDigest: call.intentDigest }));
    // HS256 keyed with the Ed25519 public key bytes, under the Ed25519 key's id.
    const hsHead = enc({ alg: 'HS256', kid: 'alice', typ: 'ttc-approval-grant' });
    const hsSig = createHmac('sha256', pubRaw).update(Buffer.concat([Buffer.from(`${hsHead}.`), withDigest(c)])).digest('base64url');
    const keys = [{ keyId: 'ops', hmacSecret: SECRET }, { keyId: 'alice', ed25519PublicKey: publicKey }];
    const attempts: Record<string, string> = {
      'hs256-with-ed25519-pub': `${hsHead}.${c}.${hsSig}`,
      'eddsa-header-on-hmac-kid': `${enc({ alg: 'EdDSA', kid: 'ops', typ: 'ttc-approval-grant' })}.${c}.${s}`,
      'alg-none': `${enc({ alg: 'none', kid: 'ops', typ: 'ttc-approval-grant' })}.${c}.`,
      'padded-sig': `${h}.${c}.${s}=`,
      'proto-claim': `${h}.${Buffer.from(JSON.stringify(claimsOf(grant)).replace('{', '{"__proto__":{"x":1},')).toString('base64url')}.${s}`,
      'dup-callId': `${h}.${Buffer.from(JSON.stringify(claimsOf(grant)).replace('{', '{"callId":"toolu_zzz",')).toString('base64url')}.${s}`,
      'intentDigest-claim': `${h}.${enc({ ...claimsOf(grant), intentDigest: call.intentDigest })}.${s}`,
      'too-long': `${h}.${c}.${s}${'A'.repeat(5000)}`,
    };
    const results: Record<string, string> = {};
    for (const [name, g] of Object.entries(attempts)) {
      try {
        verifyApprovalGrant(g, call, keys, Date.now());
        results[name] = 'ACCEPTED';
      } catch (e) {
        results[name] = (e as { code: string }).code;
      }
    }
    // dup-callId: JSON.parse keeps the last callId (the real one), so the signature still verifies: malleability, not a bypass.
    expect(results).toEqual({
      'hs256-with-ed25519-pub': 'APPROVAL_REQUIRED',
      'eddsa-header-on-hmac-kid': 'APPROVAL_REQUIRED',
      'alg-none': 'APPROVAL_REQUIRED',
      'padded-sig': 'APPROVAL_REQUIRED',
      'proto-claim': 'APPROVAL_REQUIRED',
      'dup-callId': 'ACCEPTED',
      'intentDigest-claim': 'APPROVAL_REQUIRED',
      'too-long': 'APPROVAL_REQUIRED',
    });
  });

  test('HELD: a grant is bound to call id, workflow, tenant and run chain even though runChainId/tenant come from the input', async () => {
    const args = { orderId: 'o-bind', amountCents: 12 };
    const grant = await grantFor('toolu_b', args);
    const acts = signed();
    const reason = (o: Outcome) => ('failure' in o ? `${o.failure.type}/${String(o.failure.reason)}` : o.result.source);
    expect(reason(await run(acts.runFencedTool, input('toolu_other', args, { approvalGrant: grant })))).toBe('APPROVAL_MISMATCH/claims');
    expect(reason(await run(acts.runFencedTool, input('toolu_b', args, { approvalGrant: grant, tenant: 'evil' })))).toBe('APPROVAL_MISMATCH/claims');
    expect(reason(await run(acts.runFencedTool, input('toolu_b', args, { approvalGrant: grant, runChainId: 'other-chain' })))).toBe('APPROVAL_MISMATCH/claims');
    expect(reason(await run(acts.runFencedTool, input('toolu_b', args, { approvalGrant: grant, toolName: 'pay_intent' })))).toBe('APPROVAL_MISMATCH/claims');
    // Another workflow id (from the activity context) with the same input.
    const otherWf = new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId: 'someone-else', runId: runChainId() }, heartbeatTimeoutMs: 30_000 } as never);
    await expect(otherWf.run(acts.runFencedTool as never, input('toolu_b', args, { approvalGrant: grant }) as never)).rejects.toMatchObject({ type: 'APPROVAL_MISMATCH' });
    // A digest alone on a signed worker.
    const described = (await env().run(acts.describeToolCall, input('toolu_b', args))) as { intentDigest: string };
    expect(reason(await run(acts.runFencedTool, input('toolu_b', args, { expectedIntentDigest: described.intentDigest })))).toBe('APPROVAL_REQUIRED/undefined');
    expect(refunds).toEqual([]);
    // Concurrent attempts with the same grant: one effect.
    const both = await Promise.all([run(acts.runFencedTool, input('toolu_b', args, { approvalGrant: grant })), run(signed().runFencedTool, input('toolu_b', args, { approvalGrant: grant }), 2)]);
    expect(refunds).toEqual(['o-bind:12']);
    void both;
  });

  test('HELD: dedupeByIntent, a grant replayed under another intent generation is refused (grant-used)', async () => {
    const args = { orderId: 'o-int', amountCents: 13 };
    const grant = await grantFor('toolu_i', args, { toolName: 'pay_intent' });
    const acts = signed();
    expect(await run(acts.runFencedTool, input('toolu_i', args, { toolName: 'pay_intent', approvalGrant: grant }))).toMatchObject({ result: { source: 'executed' } });
    const gen1 = await run(acts.runFencedTool, input('toolu_i', args, { toolName: 'pay_intent', approvalGrant: grant, intentGeneration: 1 }));
    expect(gen1).toMatchObject({ failure: { type: 'APPROVAL_REQUIRED', reason: 'grant-used' } });
    expect(refunds).toEqual(['intent:o-int:13']);
    void callBindingId;
  });

  test('HELD: a worker WITHOUT keys ignores a grant and still needs the approved digest', async () => {
    const args = { orderId: 'o-unsigned', amountCents: 14 };
    const grant = await grantFor('toolu_u', args);
    const unsigned = createToolActivities({ store, tools: [refund, charge, lookupOrder, payIntent], requireApproval: ['refund', 'pay_intent'] });
    expect(await run(unsigned.runFencedTool, input('toolu_u', args, { approvalGrant: grant }))).toMatchObject({ failure: { type: 'APPROVAL_REQUIRED' } });
    expect(refunds).toEqual([]);
  });
});
