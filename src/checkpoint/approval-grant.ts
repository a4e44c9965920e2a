/**
 * Signed approval grants (docs/protocol.md#approval-grants): a person's approval of exactly one
 * call, signed by the approve path with a key workflow code does not hold, verified by the worker
 * before any claim. A grant is a JWS compact serialization (RFC 7515) with `alg` HS256 (an HMAC
 * key per deployment) or EdDSA (an Ed25519 key per approver, RFC 8037). Its signature covers the
 * carried claims and the call's intent digest, which the grant does not carry: the worker supplies
 * the digest it computes, so a history reader holds no bare digest to test guesses against.
 * Uses node:crypto, so workflow code must never import this file. No I/O.
 */
import { createHmac, randomBytes, sign, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import { MAX_GRANT_LENGTH, type GrantedCall } from './approval';

export type { GrantedCall } from './approval';
import { parseTimestamp } from './bounds';
import { canonicalJson } from './canonical-json';
import { CheckpointError } from './errors';

/** What a grant says: the call it names (without the intent digest its signature covers), who approved, when. Times are ISO-8601 UTC. */
export interface GrantClaims extends Omit<GrantedCall, 'intentDigest'> {
  readonly v: 1;
  /** 22 base64url characters (16 random bytes); recorded in the store when the grant is used. */
  readonly grantId: string;
  /** Who approved (1 to 256 characters). */
  readonly approver: string;
  readonly issuedAt: string;
  readonly expiresAt: string;
}

/** The claims of a grant that verified, with the id of the key that verified it. */
export interface VerifiedGrant extends GrantClaims {
  readonly keyId: string;
}

/** A key that signs grants: an HMAC secret (≥ 32 bytes) or an Ed25519 private key. */
export type GrantSigningKey = { readonly keyId: string; readonly hmacSecret: Uint8Array } | { readonly keyId: string; readonly ed25519PrivateKey: KeyObject };

/** A key that verifies grants: the same HMAC secret, or the approver's Ed25519 public key. */
export type GrantVerificationKey = { readonly keyId: string; readonly hmacSecret: Uint8Array } | { readonly keyId: string; readonly ed25519PublicKey: KeyObject };

/**
 * Longest a grant may live, `expiresAt` − `issuedAt`: 24 hours. The record of a grant's use is kept
 * until the grant expires (docs/protocol.md#approval-grants), so this bounds what prune must keep.
 */
export const MAX_GRANT_TTL_MS = 24 * 3_600_000;

/** The JWS `typ` of a grant. */
const GRANT_TYPE = 'ttc-approval-grant';

interface GrantHeader {
  readonly alg: 'HS256' | 'EdDSA';
  readonly kid: string;
  readonly typ: typeof GRANT_TYPE;
}

/**
 * Signs a grant for `call` (its intent digest included in the signature, not in the grant).
 *
 * @param grant who approved and until when (`expiresAt` ISO-8601 UTC, after `now`).
 * @returns the grant, `<header>.<claims>.<signature>` in base64url.
 * @throws {@link CheckpointError} INVALID_ARGUMENT (details `field`) for an empty approver or
 *   identity field, an expiry that is not a timestamp after `now` and within {@link MAX_GRANT_TTL_MS}
 *   of it, or an HMAC secret under 32 bytes.
 */
export function signApprovalGrant(call: GrantedCall, grant: { readonly approver: string; readonly expiresAt: string }, key: GrantSigningKey, now: Date): string {
  const claims: GrantClaims = {
    v: 1,
    grantId: randomBytes(16).toString('base64url'),
    namespace: call.namespace,
    tenant: call.tenant,
    workflowId: call.workflowId,
    runChainId: call.runChainId,
    callId: call.callId,
    toolName: call.toolName,
    approver: grant.approver,
    issuedAt: now.toISOString(),
    expiresAt: grant.expiresAt,
  };
  assertClaims(claims, 'INVALID_ARGUMENT');
  const ttl = parseTimestamp(claims.expiresAt, 'expiresAt') - now.getTime();
  if (!(ttl > 0 && ttl <= MAX_GRANT_TTL_MS)) {
    throw new CheckpointError('INVALID_ARGUMENT', `a grant must expire after it is issued and within ${MAX_GRANT_TTL_MS / 3_600_000} hours of it`, { field: 'expiresAt' });
  }
  const header: GrantHeader = { alg: 'hmacSecret' in key ? 'HS256' : 'EdDSA', kid: key.keyId, typ: GRANT_TYPE };
  const head = `${encode(canonicalJson(header))}.${encode(canonicalJson(claims))}`;
  const signature = 'hmacSecret' in key ? hmac(key.hmacSecret, signingInput(head, call.intentDigest)) : sign(null, signingInput(head, call.intentDigest), key.ed25519PrivateKey);
  return `${head}.${signature.toString('base64url')}`;
}

/**
 * The claims a grant carries, unverified (for showing, never for trusting).
 *
 * @throws {@link CheckpointError} APPROVAL_REQUIRED (details `reason: 'malformed'`) when it is not a grant
 *   (claims not in RFC 8785 form, or living longer than {@link MAX_GRANT_TTL_MS}, included).
 */
export function readApprovalGrant(grant: unknown): { readonly keyId: string; readonly alg: GrantHeader['alg']; readonly claims: GrantClaims } {
  const parts = typeof grant === 'string' && grant.length <= MAX_GRANT_LENGTH ? grant.split('.') : [];
  const header = parts.length === 3 ? decodeJson(parts[0]!) : undefined;
  const claims = parts.length === 3 ? decodeJson(parts[1]!) : undefined;
  const h = header as Partial<GrantHeader> | undefined;
  if (h === undefined || (h.alg !== 'HS256' && h.alg !== 'EdDSA') || h.typ !== GRANT_TYPE || typeof h.kid !== 'string' || h.kid === '' || !isCanonicalBase64url(parts[2] ?? '')) {
    throw refusal('APPROVAL_REQUIRED', 'malformed', 'the approval grant is not a grant (three base64url parts: header, claims, signature)');
  }
  assertClaims(claims, 'APPROVAL_REQUIRED');
  // One text per grant: the claims exactly as signing wrote them (RFC 8785), no other spelling.
  if (Buffer.from(parts[1]!, 'base64url').toString('utf8') !== canonicalJson(claims)) {
    throw refusal('APPROVAL_REQUIRED', 'malformed', "the approval grant's claims are not in RFC 8785 canonical form");
  }
  const c = claims as GrantClaims;
  const ttl = Date.parse(c.expiresAt) - Date.parse(c.issuedAt);
  if (!(ttl > 0 && ttl <= MAX_GRANT_TTL_MS)) {
    throw refusal('APPROVAL_REQUIRED', 'malformed', `the approval grant must expire after it was issued and within ${MAX_GRANT_TTL_MS / 3_600_000} hours of it`);
  }
  return { keyId: h.kid, alg: h.alg, claims: c };
}

/**
 * Verifies that `grant` approves exactly `call` at `nowMs`: signed by one of `keys` over its
 * claims and `call.intentDigest`, naming `call`'s namespace, tenant, workflow, run chain, call and
 * tool, and not expired.
 *
 * @returns the verified claims and the key id.
 * @throws {@link CheckpointError} (details `callId`, `reason`) APPROVAL_REQUIRED: not a grant
 *   (`malformed`), or signed by a key this worker does not hold (`unknown-key`);
 *   APPROVAL_MISMATCH: it names another call (`claims`, with `field`), or its signature does not
 *   verify for this call's intent (`signature`: forged, or approved for other arguments);
 *   APPROVAL_EXPIRED at or after `expiresAt`.
 */
export function verifyApprovalGrant(grant: unknown, call: GrantedCall, keys: readonly GrantVerificationKey[], nowMs: number): VerifiedGrant {
  const { keyId, alg, claims } = readApprovalGrant(grant);
  const [head, claimsPart, sig] = (grant as string).split('.') as [string, string, string];
  const key = keys.find((k) => k.keyId === keyId && ('hmacSecret' in k ? alg === 'HS256' : alg === 'EdDSA'));
  if (key === undefined)
    throw refusal('APPROVAL_REQUIRED', 'unknown-key', `the approval grant is signed with key ${JSON.stringify(keyId)} (${alg}), which this worker does not hold`, call.callId);
  for (const field of ['namespace', 'tenant', 'workflowId', 'runChainId', 'callId', 'toolName'] as const) {
    if (claims[field] !== call[field]) {
      throw refusal(
        'APPROVAL_MISMATCH',
        'claims',
        `the approval grant is for ${field} ${JSON.stringify(claims[field])}, this call's is ${JSON.stringify(call[field])}`,
        call.callId,
        {
          field,
        },
      );
    }
  }
  const input = signingInput(`${head}.${claimsPart}`, call.intentDigest);
  const signature = Buffer.from(sig, 'base64url');
  const valid = 'hmacSecret' in key ? equalBytes(signature, hmac(key.hmacSecret, input)) : verify(null, input, key.ed25519PublicKey, signature);
  if (!valid) {
    throw refusal(
      'APPROVAL_MISMATCH',
      'signature',
      `the approval grant's signature does not verify for this call's intent ${call.intentDigest} (forged, or approved for other arguments or another tool revision)`,
      call.callId,
    );
  }
  if (!(nowMs < Date.parse(claims.expiresAt))) {
    throw new CheckpointError('APPROVAL_EXPIRED', `call ${JSON.stringify(call.callId)}: its approval grant expired at ${claims.expiresAt}; nothing ran`, {
      callId: call.callId,
      approvalExpiresAt: claims.expiresAt,
      reason: 'grant-expired',
    });
  }
  return { ...claims, keyId };
}

/** What is signed: the JWS signing input with the intent digest in the claims (the grant carries them without it). */
function signingInput(head: string, intentDigest: string): Buffer {
  const [header, claims] = head.split('.') as [string, string];
  const withDigest = { ...(decodeJson(claims) as object), intentDigest };
  return Buffer.from(`${header}.${encode(canonicalJson(withDigest))}`, 'ascii');
}

function hmac(secret: Uint8Array, input: Buffer): Buffer {
  if (secret.byteLength < 32) throw new CheckpointError('INVALID_ARGUMENT', 'an approval grant HMAC secret must be at least 32 bytes', { field: 'hmacSecret' });
  return createHmac('sha256', secret).update(input).digest();
}

function equalBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function encode(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

/** Unpadded base64url that re-encodes to itself (no unused bits set): one text per grant. */
function isCanonicalBase64url(part: string): boolean {
  return /^[A-Za-z0-9_-]+$/.test(part) && Buffer.from(part, 'base64url').toString('base64url') === part;
}

function decodeJson(part: string): unknown {
  if (!isCanonicalBase64url(part)) return undefined;
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

const TEXT_CLAIMS = ['grantId', 'namespace', 'tenant', 'workflowId', 'runChainId', 'callId', 'toolName', 'approver'] as const;

/** Exactly the fields of {@link GrantClaims}, each non-empty text of at most 2,048 characters (256 for the approver), and timestamps. */
function assertClaims(claims: unknown, code: 'APPROVAL_REQUIRED' | 'INVALID_ARGUMENT'): void {
  const bad = (field: string, why: string): never => {
    throw code === 'APPROVAL_REQUIRED'
      ? refusal(code, 'malformed', `the approval grant's ${field} ${why}`, undefined, { field })
      : new CheckpointError(code, `approval grant ${field} ${why}`, { field });
  };
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return bad('claims', 'are not an object');
  const c = claims as Record<string, unknown>;
  const known = new Set<string>(['v', ...TEXT_CLAIMS, 'issuedAt', 'expiresAt']);
  const extra = Object.keys(c).find((k) => !known.has(k));
  if (extra !== undefined) bad(extra, 'is not a grant field');
  if (c.v !== 1) bad('v', 'must be 1');
  for (const field of TEXT_CLAIMS) {
    const value = c[field];
    if (typeof value !== 'string' || value === '' || value.length > (field === 'approver' ? 256 : 2048) || !value.isWellFormed()) bad(field, 'must be non-empty, bounded text');
  }
  for (const field of ['issuedAt', 'expiresAt'] as const) {
    try {
      parseTimestamp(c[field], field);
    } catch {
      bad(field, 'must be an ISO-8601 UTC timestamp');
    }
  }
}

function refusal(code: 'APPROVAL_REQUIRED' | 'APPROVAL_MISMATCH', reason: string, message: string, callId?: string, details: Record<string, string> = {}): CheckpointError {
  const call = callId === undefined ? '' : `call ${JSON.stringify(callId)}: `;
  return new CheckpointError(code, `${call}${message}; nothing ran`, { ...(callId === undefined ? {} : { callId }), reason, ...details });
}
