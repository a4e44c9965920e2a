/**
 * Calls of one run that mean the same action share one checkpoint (docs/protocol.md#dedupe-keys):
 * a `dedupeByIntent` tool's claim is inserted under a dedupe key made from what runs (the intent
 * digest of the validated arguments), and a call whose key another call's row holds adopts that
 * call's identity — its binding and idempotency key — and is answered from its checkpoint. The
 * adoption is stored under the adopting call's own address (an adoption record), so its later
 * attempts, and a person resolving it, find the holder whatever a deploy changed meanwhile.
 */
import { parseCallBindingId, type CallIdentity } from '../../checkpoint/call-identity';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { createDelivered } from '../../checkpoint/compose';
import { CheckpointError } from '../../checkpoint/errors';
import { idempotencyKey, sha256Hex } from '../../checkpoint/digest';
import type { Binding, CheckpointRecord, JsonValue } from '../../checkpoint/types';
import type { CheckpointStore, CreateOptions } from '../../stores/checkpoint-store';

/** The tool revision of an adoption record's binding (see {@link adoptionRecord}); like `refused`, never a tool's. */
export const ADOPTED_REVISION = 'adopted';

/** What a call needs to claim under a dedupe key, and to take the identity of the call that holds it. */
export interface CallDedupe<Call> {
  /** The row's `dedupe_key`: `intent1-` + 64 hex ({@link intentDedupeKey}) or `business1-` + 64 hex (`./business-key`). */
  readonly key: string;
  /** How long the claim holds the key, ms (a business key's window); absent: while its row exists. */
  readonly windowMs?: number;
  /** Whether a holder a person proved not applied gives the key up to this call (business keys; an intent's rerun takes a new generation instead). */
  readonly releasesAbsent?: boolean;
  /**
   * This call under the identity of `holder`, the record that holds {@link key}; `recordedFor`: the
   * run an earlier attempt's adoption was recorded for (its adoption record says), else {@link recordedFor}.
   * @throws as {@link adoptHolder}.
   */
  adopt(holder: CheckpointRecord, recordedFor?: string): Call;
  /** Occurrence keys: the run this call's adoptions are recorded for (`./occurrence`); its adoption record keeps it. */
  readonly recordedFor?: string;
  /** Occurrence keys (`./occurrence`): whether `holder`'s occurrence is taken in this call's branch, so it tries {@link next} instead of adopting it. */
  passes?(holder: CheckpointRecord, store: CheckpointStore): Promise<boolean>;
  /** Occurrence keys: the dedupe of the next occurrence (after one taken, or one another call of the run adopted). */
  next?(): CallDedupe<Call>;
  /** Occurrence keys: records that this call adopts `holder`'s occurrence for its run (`at`: ISO-8601 UTC); false when another call of the run did. */
  claimAdoption?(holder: CheckpointRecord, store: CheckpointStore, at: string): Promise<boolean>;
}

/** The store options of a claim under `dedupe` made at `at` (ISO-8601 UTC). */
export function dedupeOptions(dedupe: CallDedupe<unknown>, at: string): CreateOptions {
  return dedupe.windowMs === undefined ? { dedupeKey: dedupe.key } : { dedupeKey: dedupe.key, dedupeUntil: new Date(Date.parse(at) + dedupe.windowMs).toISOString() };
}

/** The parts of a prepared call (`./prepare-call`) that adopting a holder reads and replaces. */
export interface AdoptableCall {
  readonly tool: { readonly name: string };
  readonly input: { readonly callId: string };
  readonly binding: Binding;
  readonly runChainId: string;
  readonly workflowId: string;
  readonly keyCallId: string;
  readonly idempotencyKey: string;
  readonly attemptId: string;
  readonly deliveryId: string;
  readonly dedupe?: unknown;
}

/**
 * The dedupe key of a `dedupeByIntent` call: `intent1-` + hex SHA-256 of the canonical JSON of
 * the binding namespace (`<Temporal namespace>/<tenant>`), the run chain, the workflow id, the
 * intent digest (tool, revision, validated arguments, target: docs/protocol.md#keys-and-digests)
 * and the intent generation. Two calls share it exactly when they mean the same action in the
 * same run chain and generation, whatever the model's raw input was.
 */
export function intentDedupeKey(parts: { namespace: string; runChainId: string; workflowId: string; intentDigest: string; generation: number }): string {
  const text = canonicalJson(['ttc/intent-dedupe/1', parts.namespace, parts.runChainId, parts.workflowId, parts.intentDigest, parts.generation]);
  return `intent1-${sha256Hex(text)}`;
}

/**
 * `call` under the identity of `holder`, the record of the call of the same run chain and
 * workflow that holds `call`'s dedupe key: the holder's binding, key call id and idempotency key
 * (derived with `secret`, as `prepareCall` derives them). What runs, and what the tool's lookup
 * and a person see, is then the holder's call.
 *
 * @throws {@link CheckpointError} BINDING_CONFLICT when the holder is not a call of the same
 *   namespace, run chain, workflow, tool and revision (nothing of `call` was written).
 */
export function adoptHolder<Call extends AdoptableCall>(call: Call, holder: CheckpointRecord, secret: Uint8Array | undefined): Call {
  const mine = call.binding;
  const theirs = holder.binding;
  const parts = parseCallBindingId(theirs.callId);
  if (
    parts === null ||
    parts.runChainId !== call.runChainId ||
    parts.workflowId !== call.workflowId ||
    theirs.namespace !== mine.namespace ||
    theirs.toolName !== mine.toolName ||
    theirs.toolRevision !== mine.toolRevision
  ) {
    throw new CheckpointError(
      'BINDING_CONFLICT',
      `${call.tool.name} call ${JSON.stringify(call.input.callId)}: the checkpoint holding its dedupe key is not a call of the same run, tool and revision (${theirs.toolName} revision ${theirs.toolRevision}); nothing ran`,
      { callId: call.input.callId, toolName: call.tool.name },
    );
  }
  return takeIdentity(call, holder.binding, parts, secret);
}

/**
 * `call` under the identity of the call whose binding is `theirs` (binding call id parsed as
 * `parts`): that binding, key call id and idempotency key (derived with `secret`, as `prepareCall`
 * derives them); `dedupe` cleared, so the call never adopts again.
 */
export function takeIdentity<Call extends AdoptableCall>(call: Call, theirs: Binding, parts: CallIdentity, secret: Uint8Array | undefined): Call {
  return { ...call, binding: theirs, keyCallId: parts.callId, idempotencyKey: bindingIdempotencyKey(theirs, parts, secret), dedupe: undefined };
}

/** The idempotency key of the call whose binding is `binding` (binding call id parsed as `parts`), derived with `secret` as `prepareCall` derives it. */
export function bindingIdempotencyKey(binding: Binding, parts: CallIdentity, secret: Uint8Array | undefined): string {
  const { runChainId, workflowId, callId } = parts;
  return idempotencyKey({ namespace: binding.namespace, runChainId, workflowId, callId, toolName: binding.toolName, toolRevision: binding.toolRevision }, secret);
}

/**
 * The adoption record of `call`: under `call`'s own namespace and call id (revision
 * {@link ADOPTED_REVISION}, so it is never `call`'s own checkpoint), delivered at once with the
 * result `{ ok: false, error: { type: 'ADOPTED', message }, adoptedFrom: <holder's binding call id> }`.
 * It holds the call's slot: a later claim of `call` meets it, and {@link adoptedFrom} leads to the holder.
 * `at`: ISO-8601 UTC.
 */
export function adoptionRecord(call: AdoptableCall, holder: CheckpointRecord, at: string, recordedFor?: string): CheckpointRecord {
  const binding: Binding = { ...call.binding, toolRevision: ADOPTED_REVISION };
  const result = {
    ok: false,
    error: { type: 'ADOPTED', message: `this call means the same action as call ${holder.binding.callId}, whose checkpoint answers it` },
    adoptedFrom: holder.binding.callId,
    ...(recordedFor !== undefined ? { recordedFor } : {}),
  };
  return createDelivered(binding, { attemptId: call.attemptId, deliveryId: call.deliveryId, at, result });
}

/** The run an {@link adoptionRecord} says its call's occurrence adoption is recorded for, else undefined. */
export function adoptionRecordedFor(record: CheckpointRecord): string | undefined {
  const payload = record.result?.payload as { [key: string]: JsonValue } | null | undefined;
  return adoptedFrom(record) !== null && typeof payload?.recordedFor === 'string' ? payload.recordedFor : undefined;
}

/** The binding call id of the call `record` says its call adopted (an {@link adoptionRecord}), else null. */
export function adoptedFrom(record: CheckpointRecord): string | null {
  if (record.binding.toolRevision !== ADOPTED_REVISION) return null;
  const payload = record.result?.payload as { [key: string]: JsonValue } | null | undefined;
  return typeof payload === 'object' && payload !== null && typeof payload.adoptedFrom === 'string' ? payload.adoptedFrom : null;
}
