/**
 * Signed approval grants (docs/protocol.md#approval-grants): a grant verifies for exactly the call
 * it names, with the intent digest it was signed over, under a key the worker holds, until it
 * expires; anything else is refused with the code that says why. The grant never carries the digest.
 */
import { createHmac, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { MAX_GRANT_TTL_MS, readApprovalGrant, signApprovalGrant, verifyApprovalGrant, type GrantVerificationKey } from '../../../src/checkpoint/approval-grant';
import type { GrantedCall } from '../../../src/checkpoint/approval';
import { CheckpointError } from '../../../src/checkpoint/errors';
import { newEd25519GrantKeyEntries, parseGrantSigningKey, parseGrantVerificationKeys } from '../../../src/approval-grant-keys';

const SECRET = Buffer.from('6f1c2b9a8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170615243f', 'hex');
const HMAC_SIGN = { keyId: 'ops', hmacSecret: SECRET };
const HMAC_VERIFY: GrantVerificationKey[] = [{ keyId: 'ops', hmacSecret: SECRET }];
const NOW = new Date('2026-12-06T12:00:00.000Z');
const EXPIRES = '2026-12-06T13:00:00.000Z';

const CALL: GrantedCall = {
  namespace: 'default',
  tenant: 'acme',
  workflowId: 'refund-42',
  runChainId: '0193a5b0-0000-7000-8000-000000000001',
  callId: 'toolu_01',
  toolName: 'refund',
  intentDigest: `sha256:${'a'.repeat(64)}`,
};

function refusal(run: () => unknown): { code: string; reason: unknown; field?: unknown } {
  try {
    run();
  } catch (error) {
    if (!(error instanceof CheckpointError)) throw error;
    return { code: error.code, reason: error.details?.reason, ...(error.details?.field === undefined ? {} : { field: error.details.field }) };
  }
  throw new Error('expected a refusal');
}

describe('approval grants', () => {
  it('verify for the call they name (HMAC), and carry no intent digest', () => {
    const grant = signApprovalGrant(CALL, { approver: 'alice@ops', expiresAt: EXPIRES }, HMAC_SIGN, NOW);
    const claims = verifyApprovalGrant(grant, CALL, HMAC_VERIFY, NOW.getTime() + 1000);
    expect(claims).toMatchObject({ callId: 'toolu_01', approver: 'alice@ops', expiresAt: EXPIRES, issuedAt: NOW.toISOString() });
    expect(grant).not.toContain('a'.repeat(16));
    const decoded = grant
      .split('.')
      .slice(0, 2)
      .map((part) => Buffer.from(part, 'base64url').toString('utf8'))
      .join(' ');
    expect(decoded).not.toContain(CALL.intentDigest);
    expect(decoded).not.toContain('a'.repeat(16));
  });

  it('verify with an Ed25519 key pair from the configured entries', () => {
    const entries = newEd25519GrantKeyEntries('alice');
    const signing = parseGrantSigningKey('TTC_APPROVAL_SIGNING_KEY', entries.signing);
    const keys = parseGrantVerificationKeys('TTC_APPROVAL_GRANT_KEYS', `ops:hmac:hex:${SECRET.toString('hex')}, ${entries.verification}`);
    const grant = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, signing, NOW);
    expect(verifyApprovalGrant(grant, CALL, keys, NOW.getTime()).approver).toBe('alice');
    // Another approver's public key under the same id does not verify it.
    const other = generateKeyPairSync('ed25519');
    expect(refusal(() => verifyApprovalGrant(grant, CALL, [{ keyId: 'alice', ed25519PublicKey: other.publicKey }], NOW.getTime()))).toEqual({
      code: 'APPROVAL_MISMATCH',
      reason: 'signature',
    });
  });

  it('are refused for any other call, tool, run chain, workflow, tenant or namespace', () => {
    const grant = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, HMAC_SIGN, NOW);
    for (const field of ['namespace', 'tenant', 'workflowId', 'runChainId', 'callId', 'toolName'] as const) {
      expect(refusal(() => verifyApprovalGrant(grant, { ...CALL, [field]: `${CALL[field]}x` }, HMAC_VERIFY, NOW.getTime()))).toEqual({
        code: 'APPROVAL_MISMATCH',
        reason: 'claims',
        field,
      });
    }
  });

  it('are refused for another intent: the signature covers the digest the worker computes', () => {
    const grant = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, HMAC_SIGN, NOW);
    expect(refusal(() => verifyApprovalGrant(grant, { ...CALL, intentDigest: `sha256:${'b'.repeat(64)}` }, HMAC_VERIFY, NOW.getTime()))).toEqual({
      code: 'APPROVAL_MISMATCH',
      reason: 'signature',
    });
  });

  it('are refused at and after their expiry', () => {
    const grant = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, HMAC_SIGN, NOW);
    expect(refusal(() => verifyApprovalGrant(grant, CALL, HMAC_VERIFY, Date.parse(EXPIRES)))).toEqual({ code: 'APPROVAL_EXPIRED', reason: 'grant-expired' });
  });

  it('are refused when signed with a key the worker does not hold, or under the other algorithm', () => {
    const grant = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, { keyId: 'guessed', hmacSecret: Buffer.alloc(32, 7) }, NOW);
    expect(refusal(() => verifyApprovalGrant(grant, CALL, HMAC_VERIFY, NOW.getTime()))).toEqual({ code: 'APPROVAL_REQUIRED', reason: 'unknown-key' });
    // The right key id with a key the workflow made up: the signature does not verify.
    const forged = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, { keyId: 'ops', hmacSecret: Buffer.alloc(32, 7) }, NOW);
    expect(refusal(() => verifyApprovalGrant(forged, CALL, HMAC_VERIFY, NOW.getTime()))).toEqual({ code: 'APPROVAL_MISMATCH', reason: 'signature' });
    // An EdDSA grant never meets an HMAC key of the same id (no algorithm confusion).
    const { privateKey } = generateKeyPairSync('ed25519');
    const ed = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, { keyId: 'ops', ed25519PrivateKey: privateKey }, NOW);
    expect(refusal(() => verifyApprovalGrant(ed, CALL, HMAC_VERIFY, NOW.getTime()))).toEqual({ code: 'APPROVAL_REQUIRED', reason: 'unknown-key' });
  });

  it('refuse what is not a grant: alg none, extra claims, bad text', () => {
    const good = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, HMAC_SIGN, NOW);
    const [, claims] = good.split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'ops', typ: 'ttc-approval-grant' })).toString('base64url')}.${claims}.`;
    const extra = Buffer.from(JSON.stringify({ ...readApprovalGrant(good).claims, admin: true })).toString('base64url');
    for (const bad of [none, `${good.split('.')[0]}.${extra}.${good.split('.')[2]}`, '', 'a.b.c', 42, null, `${good}.x`, good.replace(/.$/, '*')]) {
      expect(refusal(() => verifyApprovalGrant(bad, CALL, HMAC_VERIFY, NOW.getTime())).code).toBe('APPROVAL_REQUIRED');
    }
  });

  it('have one text: claims spelled otherwise (whitespace, key order, a repeated key) are refused, even when signed that way', () => {
    const good = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, HMAC_SIGN, NOW);
    const [header] = good.split('.');
    const claims = readApprovalGrant(good).claims;
    const respell = (text: string) => {
      // Signed over the re-spelt claims with the digest added, as a holder of the key could.
      const body = Buffer.from(text).toString('base64url');
      const input = Buffer.from(`${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(text), intentDigest: CALL.intentDigest })).toString('base64url')}`);
      return `${header}.${body}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
    };
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(claims).reverse()));
    for (const text of [JSON.stringify(claims, null, 1), reordered, JSON.stringify(claims).replace('{', `{"callId":"other",`)]) {
      expect(refusal(() => verifyApprovalGrant(respell(text), CALL, HMAC_VERIFY, NOW.getTime()))).toMatchObject({ code: 'APPROVAL_REQUIRED', reason: 'malformed' });
    }
  });

  it('live at most 24 hours: a longer one is neither signed nor accepted', () => {
    const longer = new Date(NOW.getTime() + MAX_GRANT_TTL_MS + 1).toISOString();
    expect(refusal(() => signApprovalGrant(CALL, { approver: 'alice', expiresAt: longer }, HMAC_SIGN, NOW))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'expiresAt' });
    expect(signApprovalGrant(CALL, { approver: 'alice', expiresAt: new Date(NOW.getTime() + MAX_GRANT_TTL_MS).toISOString() }, HMAC_SIGN, NOW)).toMatch(/\./);
  });

  it('verify only unchanged: changing any character of a grant is refused (property)', () => {
    const grant = signApprovalGrant(CALL, { approver: 'alice', expiresAt: EXPIRES }, HMAC_SIGN, NOW);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(fc.nat(grant.length - 1), fc.constantFrom(...alphabet), (at, char) => {
        fc.pre(grant[at] !== char);
        const changed = grant.slice(0, at) + char + grant.slice(at + 1);
        let refused = false;
        try {
          verifyApprovalGrant(changed, CALL, HMAC_VERIFY, NOW.getTime());
        } catch (error) {
          refused = error instanceof CheckpointError && ['APPROVAL_REQUIRED', 'APPROVAL_MISMATCH', 'APPROVAL_EXPIRED'].includes(error.code);
        }
        return refused;
      }),
      { seed: 20261216, numRuns: 3000 },
    );
  });

  it('refuse to sign an expiry that is not after now, or an empty approver', () => {
    expect(refusal(() => signApprovalGrant(CALL, { approver: 'alice', expiresAt: NOW.toISOString() }, HMAC_SIGN, NOW))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(refusal(() => signApprovalGrant(CALL, { approver: '', expiresAt: EXPIRES }, HMAC_SIGN, NOW))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'approver' });
  });

  it('keys from configuration: malformed entries and short or repeated keys are INVALID_CONFIG naming the variable, never the key', () => {
    const hex = SECRET.toString('hex');
    for (const raw of ['', 'ops', `ops:rsa:hex:${hex}`, 'ops:hmac:hex:00', `ops:hmac:hex:${hex},ops:hmac:hex:${hex}`, `bad id:hmac:hex:${hex}`]) {
      let error: unknown;
      try {
        parseGrantVerificationKeys('TTC_APPROVAL_GRANT_KEYS', raw);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CheckpointError);
      expect((error as CheckpointError).code).toBe('INVALID_CONFIG');
      expect((error as CheckpointError).message).toContain('TTC_APPROVAL_GRANT_KEYS');
      expect((error as CheckpointError).message).not.toContain(hex);
    }
  });
});
