/**
 * Digests of docs/protocol.md#keys-and-digests: input fingerprint, idempotency key, intent
 * digest. Uses node:crypto, so workflow code must never import this file.
 */
import { createHash, createHmac } from 'node:crypto';
import { assertIdentifier } from './bounds';
import { canonicalJson } from './canonical-json';
import { CheckpointError } from './errors';

/**
 * `sha256:` + lowercase hex SHA-256 of the RFC 8785 canonical JSON of `input`, so
 * `{a:1,b:2}` and `{b:2,a:1}` agree and `[1,2]` and `[2,1]` differ.
 *
 * With `keySecret` (the worker's idempotency-key secret) the hash also covers a check value of
 * the secret (HMAC-SHA-256 of a fixed label, never the secret itself), so the binding records
 * which key derivation the call's requests used. A worker whose secret differs (set, changed or
 * removed while the call was in flight) computes another binding for the same call and never
 * looks the call up or repeats it under a key its first request did not carry: it delivers a
 * stored result or, for an unfinished claim, waits for the settle time and pauses
 * (docs/protocol.md#nothing-applied, the same path as a deploy that changed the tool revision).
 * Without a secret the fingerprint is unchanged from earlier releases.
 *
 * @throws {@link CheckpointError} NOT_JSON or PAYLOAD_TOO_LARGE when `input` is not a bounded
 *   JSON value; INVALID_ARGUMENT for a secret shorter than 32 bytes.
 * @see RFC 8785, docs/protocol.md#keys-and-digests
 */
export function fingerprintInput(input: unknown, keySecret?: Uint8Array): string {
  return fingerprintCanonicalInput(canonicalJson(input, 'input'), keySecret);
}

/**
 * {@link fingerprintInput} of the input whose RFC 8785 canonical JSON is `text` (for a caller
 * that already canonicalised and bounded it, e.g. with `canonicalToolInput`).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a secret shorter than 32 bytes.
 */
export function fingerprintCanonicalInput(text: string, keySecret?: Uint8Array): string {
  if (keySecret === undefined) return `sha256:${sha256Hex(text)}`;
  assertIdempotencyKeySecret(keySecret);
  const check = createHmac('sha256', keySecret).update('ttc/idempotency-key-check/1', 'utf8').digest('hex');
  return `sha256:${sha256Hex(`ttc/keyed-input/1\n${check}\n${text}`)}`;
}

/** The logical call an idempotency key names (docs/protocol.md#keys-and-digests, #call-identity). */
export interface IdempotencyKeyParts {
  readonly namespace: string;
  /** The run chain (`firstExecutionRunId`): a new chain that reuses a workflow id gets new keys. */
  readonly runChainId: string;
  readonly workflowId: string;
  readonly callId: string;
  readonly toolName: string;
  readonly toolRevision: string;
}

/** Keyed idempotency keys need a secret of at least this many bytes (RFC 2104 §3: the hash output length). */
export const MIN_IDEMPOTENCY_KEY_SECRET_BYTES = 32;

/**
 * A stable idempotency key for one logical tool call: the same parts always give the same
 * key, across retries and workers; never random. The parts are hashed as one canonical JSON
 * array, so no two different part lists share a key.
 *
 * - Without `secret`: `ttc2-` + 64 lowercase hex of SHA-256 (69 characters). Anyone who knows
 *   the parts (namespace, run chain, workflow id, call id, tool) can compute it.
 * - With `secret` (at least 32 bytes, e.g. `TTC_IDEMPOTENCY_KEY_SECRET`): `ttc3-` + 64
 *   lowercase hex of HMAC-SHA-256 keyed with it, so a third party on the
 *   same provider account cannot predict a key and pre-empt or replay a call under it.
 *
 * Both are safe in an `Idempotency-Key` header. The key is recomputed on every attempt, never
 * stored, so every worker of a fleet should use the same secret (or none). A call whose attempts
 * meet different secrets fails closed: the binding's input fingerprint covers a check value of the
 * secret (see {@link fingerprintInput}), so a worker with another secret never looks the call up
 * or repeats it under a key its first request did not carry; it delivers a stored result, or
 * waits for an unfinished claim's settle time and pauses the run for a person. Set the secret
 * before first use, or drain in-flight calls before setting, changing or removing it.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT when a part is missing, empty or too long,
 *   or `secret` is not a Uint8Array of at least 32 bytes.
 * @see draft-ietf-httpapi-idempotency-key-header §2
 */
export function idempotencyKey(parts: IdempotencyKeyParts, secret?: Uint8Array): string {
  assertIdentifier(parts?.namespace, 'namespace');
  assertIdentifier(parts.runChainId, 'runChainId');
  assertIdentifier(parts.workflowId, 'workflowId');
  assertIdentifier(parts.callId, 'callId');
  assertIdentifier(parts.toolName, 'toolName');
  assertIdentifier(parts.toolRevision, 'toolRevision');
  const text = canonicalJson(['ttc/idempotency-key/2', parts.namespace, parts.runChainId, parts.workflowId, parts.callId, parts.toolName, parts.toolRevision]);
  if (secret === undefined) return `ttc2-${sha256Hex(text)}`;
  assertIdempotencyKeySecret(secret);
  return `ttc3-${createHmac('sha256', secret).update(text, 'utf8').digest('hex')}`;
}

/**
 * Asserts a usable idempotency-key secret: a Uint8Array of at least 32 bytes.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming `idempotencyKeySecret`.
 */
export function assertIdempotencyKeySecret(secret: unknown): asserts secret is Uint8Array {
  if (!(secret instanceof Uint8Array) || secret.length < MIN_IDEMPOTENCY_KEY_SECRET_BYTES) {
    throw new CheckpointError('INVALID_ARGUMENT', `idempotencyKeySecret must be a Buffer of at least ${MIN_IDEMPOTENCY_KEY_SECRET_BYTES} bytes`, {
      field: 'idempotencyKeySecret',
      limit: MIN_IDEMPOTENCY_KEY_SECRET_BYTES,
    });
  }
}

/** What a call means to do: the tool, its revision, its canonical arguments and its target. */
export interface Intent {
  readonly toolName: string;
  readonly toolRevision: string;
  readonly args: unknown;
  /** What the effect acts on (an account, a ticket queue, a mailbox); null when the args say it all. */
  readonly target?: unknown;
}

/**
 * `sha256:` + hex over the canonical JSON of tool, revision, arguments and target. The same
 * idempotency key presented with a different intent digest is a conflict
 * (docs/protocol.md#keys-and-digests).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a bad tool name or revision; NOT_JSON or
 *   PAYLOAD_TOO_LARGE for arguments or target that are not bounded JSON.
 */
export function intentDigest(intent: Intent): string {
  assertIdentifier(intent?.toolName, 'toolName');
  assertIdentifier(intent.toolRevision, 'toolRevision');
  if (intent.args === undefined) {
    throw new CheckpointError('INVALID_ARGUMENT', 'intent args are required (use {} for none)', { field: 'args' });
  }
  const text = canonicalJson(['ttc/intent/1', intent.toolName, intent.toolRevision, intent.args, intent.target ?? null], 'intent');
  return `sha256:${sha256Hex(text)}`;
}

/** Lowercase hex SHA-256 of the UTF-8 bytes of `text`. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
