/**
 * Calls of one run that mean the same action share one checkpoint (docs/protocol.md#dedupe-keys):
 * a `dedupeByIntent` tool's claim is inserted under a dedupe key made from what runs (the intent
 * digest of the validated arguments), and a call whose key another call's row holds adopts that
 * call's identity — its binding and idempotency key — and is answered from its checkpoint.
 */
import { parseCallBindingId } from '../../checkpoint/call-identity';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { CheckpointError } from '../../checkpoint/errors';
import { idempotencyKey, sha256Hex } from '../../checkpoint/digest';
import type { Binding, CheckpointRecord } from '../../checkpoint/types';

/** What a call needs to claim under a dedupe key, and to take the identity of the call that holds it. */
export interface CallDedupe<Call> {
  /** `intent1-` + 64 hex: the row's `dedupe_key` (see {@link intentDedupeKey}). */
  readonly key: string;
  /** This call under the identity of `holder`, the record that holds {@link key}. @throws as {@link adoptHolder}. */
  adopt(holder: CheckpointRecord): Call;
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
  return {
    ...call,
    binding: theirs,
    keyCallId: parts.callId,
    idempotencyKey: idempotencyKey(
      {
        namespace: theirs.namespace,
        runChainId: parts.runChainId,
        workflowId: parts.workflowId,
        callId: parts.callId,
        toolName: theirs.toolName,
        toolRevision: theirs.toolRevision,
      },
      secret,
    ),
    dedupe: undefined,
  };
}
