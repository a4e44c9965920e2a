/**
 * Approval grant keys from configuration text (docs/protocol.md#approval-grants): the keys a
 * worker verifies grants with (`TTC_APPROVAL_GRANT_KEYS`) and the key an approve path signs with
 * (`TTC_APPROVAL_SIGNING_KEY`). One entry is `<key id>:hmac:<secret>` (the same secret on both
 * sides, at least 32 random bytes) or `<key id>:ed25519:<32-byte key>` (the approver's private
 * key seed to sign, its public key to verify); key bytes in the formats of `./key-material`.
 * Errors name the variable and key id, never the key.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import type { GrantSigningKey, GrantVerificationKey } from './checkpoint/approval-grant';
import { CheckpointError } from './checkpoint/errors';
import { KEY_ID_PATTERN, parseKeyMaterial } from './key-material';

/** DER prefixes of a raw Ed25519 key: PKCS #8 private (RFC 8410 §7) and SubjectPublicKeyInfo (RFC 8410 §4). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * The verification keys of `raw`, a comma-separated list of entries; undefined (the variable is
 * unset): undefined, unsigned mode.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG (details `field` = `variable`) for an empty list, an
 *   entry without `<id>:<hmac|ed25519>:<key>`, a key id used twice, or key bytes `parseKeyMaterial` refuses.
 */
export function parseGrantVerificationKeys(variable: string, raw: string): GrantVerificationKey[];
export function parseGrantVerificationKeys(variable: string, raw: string | undefined): GrantVerificationKey[] | undefined;
export function parseGrantVerificationKeys(variable: string, raw: string | undefined): GrantVerificationKey[] | undefined {
  if (raw === undefined) return undefined;
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.length === 0 || entries.some((entry) => entry === '')) throw invalid(variable, 'must list at least one <key id>:<hmac|ed25519>:<key>, comma-separated');
  const keys = entries.map((entry): GrantVerificationKey => {
    const { keyId, kind, bytes } = parseEntry(variable, entry);
    return kind === 'hmac'
      ? { keyId, hmacSecret: bytes }
      : { keyId, ed25519PublicKey: createPublicKey({ key: Buffer.concat([SPKI_ED25519, bytes]), format: 'der', type: 'spki' }) };
  });
  const seen = new Set<string>();
  for (const { keyId } of keys) {
    if (seen.has(keyId)) throw invalid(variable, `names key id ${JSON.stringify(keyId)} twice`);
    seen.add(keyId);
  }
  return keys;
}

/**
 * The signing key of `raw`, one entry.
 *
 * @throws {@link CheckpointError} INVALID_CONFIG (details `field` = `variable`) as for {@link parseGrantVerificationKeys}.
 */
export function parseGrantSigningKey(variable: string, raw: string): GrantSigningKey {
  const { keyId, kind, bytes } = parseEntry(variable, raw.trim());
  return kind === 'hmac'
    ? { keyId, hmacSecret: bytes }
    : { keyId, ed25519PrivateKey: createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, bytes]), format: 'der', type: 'pkcs8' }) };
}

/**
 * A new Ed25519 key pair for an approver, as the entries the two variables take: `signing` for
 * the approver's `TTC_APPROVAL_SIGNING_KEY`, `verification` for the workers' `TTC_APPROVAL_GRANT_KEYS`.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT as {@link assertGrantKeyId}.
 */
export function newEd25519GrantKeyEntries(keyId: string): { readonly signing: string; readonly verification: string } {
  assertGrantKeyId(keyId);
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_ED25519.length);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519.length);
  return { signing: `${keyId}:ed25519:base64:${seed.toString('base64url')}`, verification: `${keyId}:ed25519:base64:${pub.toString('base64url')}` };
}

/**
 * Refuses a key id that is not 1 to 128 of `[A-Za-z0-9_.-]`.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (details `field: 'keyId'`).
 */
export function assertGrantKeyId(keyId: string): void {
  if (!KEY_ID_PATTERN.test(keyId)) throw new CheckpointError('INVALID_ARGUMENT', 'a key id must be 1 to 128 letters, digits, "_", "." or "-"', { field: 'keyId' });
}

function parseEntry(variable: string, entry: string): { keyId: string; kind: 'hmac' | 'ed25519'; bytes: Buffer } {
  const first = entry.indexOf(':');
  const second = first < 0 ? -1 : entry.indexOf(':', first + 1);
  const keyId = first < 0 ? '' : entry.slice(0, first);
  const kind = second < 0 ? '' : entry.slice(first + 1, second);
  if (!KEY_ID_PATTERN.test(keyId) || (kind !== 'hmac' && kind !== 'ed25519')) {
    throw invalid(variable, 'entries must be <key id>:hmac:<secret> or <key id>:ed25519:<key> (key id: 1 to 128 of A-Z a-z 0-9 _ . -)');
  }
  const what = `key id ${JSON.stringify(keyId)}`;
  // An Ed25519 key is exactly 32 bytes; public keys are not checked for entropy beyond parseKeyMaterial's rule.
  const bytes = parseKeyMaterial(variable, entry.slice(second + 1), kind === 'hmac' ? { minBytes: 32 } : { bytes: 32 }, what);
  return { keyId, kind, bytes };
}

function invalid(variable: string, message: string): CheckpointError {
  return new CheckpointError('INVALID_CONFIG', `${variable} ${message}`, { field: variable });
}
