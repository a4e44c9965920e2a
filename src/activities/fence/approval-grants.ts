/**
 * The fence's check of signed approval grants (docs/protocol.md#approval-grants), one
 * implementation for `runFencedTool` (the agent's and the plugin's tools) and the plugin's fence
 * interceptor (fenced activities, whose grant rides in the call header). On a worker that holds
 * grant keys, a call of a `requireApproval` tool runs only with a valid, unexpired grant for
 * exactly that call, and any grant a call carries is verified; the grant's use is recorded in the
 * checkpoint store under the grant's id before the claim, so one grant is used by one call. Every
 * refusal is thrown before any claim: nothing runs.
 */
import { verifyApprovalGrant, type VerifiedGrant, type GrantVerificationKey } from '../../checkpoint/approval-grant';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { sha256Hex } from '../../checkpoint/digest';
import { createDelivered } from '../../checkpoint/compose';
import { CheckpointError } from '../../checkpoint/errors';
import type { CheckpointRecord, JsonValue } from '../../checkpoint/types';
import type { CheckpointStore, CreateOptions } from '../../stores/checkpoint-store';
import { assertApprovedIntent, assertCallApproved } from './approval-checks';
import type { ResolvedPins } from './pins';
import type { PreparedCall } from './prepare-call';

/**
 * The tag of a grant-use record: its `toolRevision` (it names the call a grant was used by, never a
 * tool run) and the first element of its call id ({@link grantUseCallId}; `../../checkpoint/binding-label` names it).
 */
const GRANT_USE_TAG = 'ttc/grant-use/1';

/** What the check needs of the worker: its grant keys (none: unsigned mode), store and clock. */
export interface GrantCheck {
  readonly keys: readonly GrantVerificationKey[] | undefined;
  readonly store: CheckpointStore;
  readonly clock?: () => Date;
}

/**
 * Checks the `approvalGrantKeys` option: absent, or a non-empty array of keys, each with a key id
 * and either an HMAC secret of at least 32 bytes or an Ed25519 public `KeyObject`, ids unique.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT (details `field: 'approvalGrantKeys'`) otherwise.
 */
export function assertGrantKeys(keys: unknown): void {
  if (keys === undefined) return;
  const bad = (why: string): never => {
    throw new CheckpointError('INVALID_ARGUMENT', `approvalGrantKeys ${why}`, { field: 'approvalGrantKeys' });
  };
  if (!Array.isArray(keys) || keys.length === 0) bad('must be a non-empty array of keys (parseGrantVerificationKeys reads them from configuration)');
  const ids = new Set<string>();
  for (const key of keys as unknown[]) {
    const k = (key ?? {}) as { keyId?: unknown; hmacSecret?: unknown; ed25519PublicKey?: { type?: unknown; asymmetricKeyType?: unknown } };
    if (typeof k.keyId !== 'string' || k.keyId === '') bad('entries need a keyId');
    if (ids.has(k.keyId as string)) bad(`names key id ${JSON.stringify(k.keyId)} twice`);
    ids.add(k.keyId as string);
    const hmac = k.hmacSecret instanceof Uint8Array && k.hmacSecret.byteLength >= 32;
    const ed25519 = k.ed25519PublicKey?.type === 'public' && k.ed25519PublicKey.asymmetricKeyType === 'ed25519';
    if (hmac === ed25519) bad(`key ${JSON.stringify(k.keyId)} must have either an hmacSecret of at least 32 bytes or an Ed25519 public KeyObject`);
  }
}

/**
 * Whether `call` may go on to the fence, by the worker's approval mode: unsigned (no keys), the
 * approved intent digest (`assertCallApproved`); signed, a digest the call carries must match
 * (`assertApprovedIntent`) and the grant is checked ({@link checkApprovalGrant}), which alone
 * satisfies `requireApproval`.
 *
 * @throws {@link CheckpointError} the codes of those checks; nothing has been claimed or run.
 */
export async function authorizeCall(check: GrantCheck, pins: ResolvedPins | undefined, call: PreparedCall, namespace: string): Promise<VerifiedGrant | null> {
  if (check.keys === undefined) {
    assertCallApproved(pins, call);
    return null;
  }
  assertApprovedIntent(call);
  return checkApprovalGrant(check.keys, check, pins, call, namespace);
}

/**
 * Verifies `call`'s grant with `keys` and records its use, or does nothing for a call of a tool
 * that needs no approval and carries no grant.
 *
 * @param namespace the Temporal namespace of the workflow (the activity's, never the input's).
 * @returns the verified claims, or null when nothing was checked.
 * @throws {@link CheckpointError} APPROVAL_REQUIRED (details `field: 'approvalGrant'`) when a
 *   `requireApproval` call carries no grant; the codes of `verifyApprovalGrant`; APPROVAL_REQUIRED
 *   (`reason: 'grant-used'`) when the grant was used by another call; the store's codes.
 */
async function checkApprovalGrant(
  keys: readonly GrantVerificationKey[],
  check: GrantCheck,
  pins: ResolvedPins | undefined,
  call: PreparedCall,
  namespace: string,
): Promise<VerifiedGrant | null> {
  const grant = call.input.approvalGrant;
  if (grant === undefined) {
    if (pins === undefined || !pins.requireApproval.has(call.tool.name)) return null;
    throw new CheckpointError(
      'APPROVAL_REQUIRED',
      `${call.tool.name} call ${JSON.stringify(call.input.callId)} runs on this worker only with a person's signed approval grant, and it carries none; nothing ran`,
      { field: 'approvalGrant', toolName: call.tool.name, callId: call.input.callId },
    );
  }
  const now = (check.clock ?? (() => new Date()))();
  const granted = { namespace, tenant: call.input.tenant, workflowId: call.workflowId, runChainId: call.runChainId, callId: call.input.callId, toolName: call.tool.name };
  const claims = verifyApprovalGrant(grant, { ...granted, intentDigest: call.intentDigest }, keys, now.getTime());
  const written = await check.store.createIfAbsent(grantUseRecord(call, claims, now.toISOString()), grantUseKey(call, claims));
  const usedBy = grantUser(written.record);
  // Used before by this very call (a retry): its checkpoint decides, as for any retry.
  if (usedBy !== call.binding.callId) {
    throw new CheckpointError('APPROVAL_REQUIRED', `the approval grant ${claims.grantId} was already used by another call (${usedBy ?? 'unknown'}); nothing ran`, {
      callId: call.input.callId,
      reason: 'grant-used',
    });
  }
  return claims;
}

/**
 * The dedupe key of a grant's use: one per grant id in the binding namespace, held until the grant
 * expires, so no other row takes it and prune keeps the record while the grant could be presented.
 */
export function grantUseKey(call: PreparedCall, claims: VerifiedGrant): CreateOptions {
  return { dedupeKey: `grant1-${sha256Hex(canonicalJson([call.binding.namespace, claims.grantId]))}`, dedupeUntil: claims.expiresAt };
}

/**
 * The record of a grant's use: under its own tagged call id (`["ttc/grant-use/1", run chain,
 * workflow id, grant id]`, which no call's id can be), delivered, its payload naming the call that
 * used it, who approved and when the grant expires. Pure.
 */
export function grantUseRecord(call: PreparedCall, claims: VerifiedGrant, at: string): CheckpointRecord {
  const binding = {
    namespace: call.binding.namespace,
    callId: grantUseCallId(call.runChainId, call.workflowId, claims.grantId),
    toolName: call.tool.name,
    toolRevision: GRANT_USE_TAG,
    inputFingerprint: call.binding.inputFingerprint,
  };
  const result: JsonValue = {
    grantUse: { usedBy: call.binding.callId, grantId: claims.grantId, approver: claims.approver, keyId: claims.keyId, issuedAt: claims.issuedAt, expiresAt: claims.expiresAt },
  };
  return createDelivered(binding, { attemptId: call.attemptId, deliveryId: call.deliveryId, at, result });
}

/** The binding call id of the record of grant `grantId`'s use in a run chain. */
export function grantUseCallId(runChainId: string, workflowId: string, grantId: string): string {
  return canonicalJson([GRANT_USE_TAG, runChainId, workflowId, grantId]);
}

/** The binding call id of the call a grant-use record names, else null. */
export function grantUser(record: CheckpointRecord): string | null {
  if (record.binding.toolRevision !== GRANT_USE_TAG) return null;
  const use = (record.result?.payload as { grantUse?: { usedBy?: unknown } } | null | undefined)?.grantUse;
  return typeof use?.usedBy === 'string' ? use.usedBy : null;
}
