/**
 * The step of an attempt whose claim insert met another call's row (docs/protocol.md#dedupe-keys):
 * the holder of its dedupe key (store the adoption under this call's address, then go on as the
 * holder), or this call's own adoption record (an earlier attempt adopted: go on as its holder).
 */
import { parseCallBindingId } from '../../checkpoint/call-identity';
import { CheckpointError } from '../../checkpoint/errors';
import type { CheckpointRecord } from '../../checkpoint/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import { adoptedFrom, adoptionRecord, adoptionRecordedFor } from './intent-dedupe';
import { resolutionAuditOf } from './resolution-audit';
import type { PreparedCall } from './prepare-call';

/** Go on as `call` (the holder's identity) from `record` (the holder's record). */
export interface Adopted {
  readonly call: PreparedCall;
  readonly record: CheckpointRecord;
}

/** Claim again as `call`: the same call under its next occurrence key (`./occurrence`). */
export interface NextOccurrence {
  readonly next: PreparedCall;
}

/**
 * What `call` does with `found`, the row its claim insert returned instead of inserting: null when
 * it is not another call's (decide on it as usual), `reread` when this call's slot holds something
 * the attempt must read again (also after releasing the key of a holder proven not applied), `next`
 * when the holder of an occurrence key is one this call passes by (`./occurrence`), else the call it adopts. `at`: ISO-8601 UTC, for the adoption record.
 *
 * @throws {@link CheckpointError} BINDING_CONFLICT when the holder cannot be adopted here (another
 *   revision, or the tool no longer dedupes by intent: the failure path follows the adoption record);
 *   OUTCOME_UNKNOWN when the adopted call's checkpoint is gone; the store's codes.
 */
export async function adoptionOf(store: CheckpointStore, call: PreparedCall, found: CheckpointRecord, at: string): Promise<Adopted | NextOccurrence | 'reread' | null> {
  if (found.binding.callId !== call.binding.callId) {
    // Another call of the run with the same intent holds this call's dedupe key.
    if (call.dedupe === undefined) return null;
    const { next, claimAdoption } = call.dedupe;
    if (next !== undefined && (await call.dedupe.passes!(found, store))) return { next: { ...call, dedupe: next() } };
    if (call.dedupe.releasesAbsent === true && provenAbsent(call, found)) {
      // A person proved the holder applied nothing: the key is free for a call that will (docs/protocol.md#business-keys).
      await store.releaseDedupeKey(found);
      return 'reread';
    }
    const adopted = call.dedupe.adopt(found);
    // Another call of this run adopted this occurrence first: the next one is this call's to find.
    if (claimAdoption !== undefined && next !== undefined && !(await claimAdoption(found, store, at))) return { next: { ...call, dedupe: next() } };
    const written = await store.createIfAbsent(adoptionRecord(call, found, at, call.dedupe.recordedFor));
    if (!written.created && adoptedFrom(written.record) !== found.binding.callId) return 'reread';
    return { call: adopted, record: found };
  }
  const holderCallId = adoptedFrom(found);
  if (holderCallId === null) return null;
  const holder = await store.getByCall(found.binding.namespace, holderCallId);
  if (holder === null) {
    throw new CheckpointError(
      'OUTCOME_UNKNOWN',
      `${call.tool.name} call ${JSON.stringify(call.input.callId)} was answered by call ${holderCallId}, whose checkpoint is gone; whether its effect was applied is unknown`,
      { callId: call.input.callId },
    );
  }
  if (call.dedupe === undefined) {
    throw new CheckpointError(
      'BINDING_CONFLICT',
      `${call.tool.name} call ${JSON.stringify(call.input.callId)} was answered by call ${holderCallId}; this worker's tool no longer dedupes by intent`,
      {
        callId: call.input.callId,
      },
    );
  }
  return { call: call.dedupe.adopt(holder, adoptionRecordedFor(found)), record: holder };
}

/** The binding call id of the call `call` adopted (its adoption record holds `call`'s address), else null. @throws the store's codes. */
export async function adoptedCallOf(store: CheckpointStore, call: PreparedCall): Promise<string | null> {
  const own = await store.getByCall(call.binding.namespace, call.binding.callId);
  return own === null ? null : adoptedFrom(own);
}

/**
 * Whether a person proved that `holder` applied nothing: a resolution stored it so, or `call`'s
 * input names it among the calls of its run proven absent (a rerun of it) and its outcome is still
 * not stored (calls of other runs never claim it: `awaitFirstCall` in `./business-key`).
 */
function provenAbsent(call: PreparedCall, holder: CheckpointRecord): boolean {
  if (resolutionAuditOf(holder)?.kind === 'not-applied') return true;
  // Only the holder's own unsettled claim, as the person saw it paused: an outcome stored since (an
  // adopter's delivery, a resolution `applied`) outweighs the proof.
  if (holder.status !== 'executing' && holder.status !== 'uncertain') return false;
  const parts = parseCallBindingId(holder.binding.callId);
  const named = call.input.provenAbsentCallIds;
  return parts !== null && parts.runChainId === call.runChainId && parts.workflowId === call.workflowId && named !== undefined && named.includes(parts.callId);
}
