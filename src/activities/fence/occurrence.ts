/**
 * Occurrences of an intent (docs/protocol.md#resets): an agent call of a tool without its own
 * dedupe key claims the first free occurrence of its intent digest in its run chain's segment,
 * under the dedupe key of that occurrence. After a Temporal reset, the reset run's call that means
 * an action the discarded branch applied meets that call's claim at the same occurrence and is
 * answered from its checkpoint; a call of the run's own history (or one a person proved not
 * applied) is passed by, so the run's n-th call of an intent is never answered by another of its
 * live calls. Each occurrence is adopted by at most one call of a run (its occurrence-adoption record names it).
 */
import { parseCallBindingId } from '../../checkpoint/call-identity';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { sha256Hex } from '../../checkpoint/digest';
import { hasCallHash, runOfCallId } from '../../checkpoint/run-scope';
import { createDelivered } from '../../checkpoint/compose';
import type { CheckpointRecord } from '../../checkpoint/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import { resolutionAuditOf } from './resolution-audit';
import { isNothingAppliedOutcome, type AppliedByRun, type ToolOutcome } from '../contract/contract';
import { adoptedFrom, adoptHolder, adoptionRecordedFor, type AdoptableCall, type CallDedupe } from './intent-dedupe';

/** Where the occurrences of a call's intent are counted, and who the call is. */
export interface OccurrenceScope {
  /** `<Temporal namespace>/<tenant>`. */
  readonly namespace: string;
  readonly workflowId: string;
  readonly runChainId: string;
  /** The run chain's segment (`occurrenceScopeOf` in `checkpoint/run-scope.ts`): a continued run counts afresh, a reset run counts with the run it reset. */
  readonly scope: string;
  /**
   * The run whose calls are this call's own, and the one its occurrence adoptions are recorded for:
   * where the run that scheduled it addresses its calls (`occurrences.ownCallsIn`, else `runOfCallId` of its id).
   */
  readonly runId: string;
  /** The call's own id (within the run chain). */
  readonly callId: string;
  /** `packCallHashes` of the calls of this run's history made by other runs (a reset run's calls before its reset point). */
  readonly liveCalls: string;
  /** The runs those calls were made in. */
  readonly liveRuns: readonly string[];
  /** In a reset lineage (which keeps the reset run's `scope` across continue-as-new): its earlier runs, every call of which is this run's history. */
  readonly earlierRuns: readonly string[];
  /** `packCallHashes` of the calls of this run's history that applied nothing in it (`occurrences.notRun`): never of its branch. */
  readonly notRun: string;
  readonly intentDigest: string;
}

/** The `toolRevision` of an occurrence-adoption record (it names the call of a run that adopted an occurrence; never a tool's). */
const ADOPTION_TAG = 'ttc/occurrence-adopted/1';

/** The dedupe key of occurrence `n` of an intent: `occurrence1-` + hex SHA-256 of the canonical JSON of namespace, workflow, segment, intent digest and n. */
export function occurrenceKey(scope: OccurrenceScope, n: number): string {
  return `occurrence1-${sha256Hex(canonicalJson(['ttc/occurrence/1', scope.namespace, scope.workflowId, scope.scope, scope.intentDigest, n]))}`;
}

/** The binding call id of the record saying which call of run `runId` adopted occurrence `n` (no call's id can be it). */
export function occurrenceAdoptionId(scope: OccurrenceScope, n: number, runId: string): string {
  return canonicalJson([ADOPTION_TAG, scope.runChainId, scope.workflowId, scope.scope, scope.intentDigest, n, runId]);
}

/** The call id (within the run chain) an occurrence-adoption record names, else null. */
function adopterOf(record: CheckpointRecord | null): string | null {
  if (record === null || record.binding.toolRevision !== ADOPTION_TAG) return null;
  const adopter = (record.result?.payload as { adoptedBy?: unknown } | null | undefined)?.adoptedBy;
  return typeof adopter === 'string' ? adopter : null;
}

/**
 * Whether call `callId` (within the run chain) is of `scope`'s branch: of this run or an earlier run
 * of its reset lineage, or a call of its history another run made; never one its history rejected
 * (another branch may have run it under the same id).
 */
function inBranch(scope: OccurrenceScope, callId: string): boolean {
  if (hasCallHash(scope.notRun, callId)) return false;
  const run = runOfCallId(callId, scope.runChainId);
  return run === scope.runId || scope.earlierRuns.includes(run) || hasCallHash(scope.liveCalls, callId);
}

/** Whether `holder` holds a refusal that proves its call applied nothing (its result is a nothing-applied code): no effect to adopt. */
function appliedNothing(holder: CheckpointRecord): boolean {
  return isNothingAppliedOutcome(holder.result?.payload as ToolOutcome | null | undefined);
}

/**
 * Whether occurrence `n`, whose claim `holder` holds, is taken in `scope`'s branch: `holder` is a
 * call of that branch (`inBranch`), one a person proved not applied or whose stored result is a
 * nothing-applied refusal (nothing to adopt), or another call of the
 * branch adopted it. Otherwise it is a call of a discarded branch that no call of this history
 * answers for. Reads one adoption record per run of `liveRuns` and `earlierRuns`.
 */
async function takenInBranch(store: CheckpointStore, scope: OccurrenceScope, holder: CheckpointRecord, n: number): Promise<boolean> {
  const parts = parseCallBindingId(holder.binding.callId);
  if (parts === null) return true; // not a call's checkpoint: never adopted
  if (inBranch(scope, parts.callId)) return true;
  if (resolutionAuditOf(holder)?.kind === 'not-applied' || appliedNothing(holder)) return true;
  for (const run of new Set([...scope.liveRuns, ...scope.earlierRuns])) {
    const adopter = adopterOf(await store.getByCall(scope.namespace, occurrenceAdoptionId(scope, n, run)));
    // This call's own adoption (an earlier attempt's, cut off before its adoption record): it goes on adopting.
    if (adopter !== null && adopter !== scope.callId && inBranch(scope, adopter)) return true;
  }
  return false;
}

/**
 * The dedupe of occurrence `n` of `call`'s intent: a holder taken in the call's branch sends the
 * call on to occurrence n + 1; any other holder is adopted (`adoptHolder`), by one call per run
 * (the occurrence-adoption record names it), the adopted call naming the run and call that applied
 * the action and the run its adoption is recorded for (`appliedByRun`).
 */
export function occurrenceDedupe<Call extends AdoptableCall & { readonly appliedByRun?: AppliedByRun }>(
  call: Call,
  scope: OccurrenceScope,
  secret: Uint8Array | undefined,
  n = 0,
): CallDedupe<Call> {
  return {
    key: occurrenceKey(scope, n),
    passes: (holder, store) => takenInBranch(store, scope, holder, n),
    next: () => occurrenceDedupe(call, scope, secret, n + 1),
    async claimAdoption(holder, store, at) {
      const binding = { ...call.binding, callId: occurrenceAdoptionId(scope, n, scope.runId), toolRevision: ADOPTION_TAG };
      const result = { adoptedBy: call.input.callId, holder: holder.binding.callId };
      const mine = createDelivered(binding, { attemptId: call.attemptId, deliveryId: call.deliveryId, at, result });
      const written = await store.createIfAbsent(mine);
      const adopter = adopterOf(written.record);
      if (adopter === call.input.callId) return true;
      // The run's adoption names a call that applied nothing in this branch (cut off before its own
      // adoption record, then refused): it never adopted, so this call takes the occurrence over.
      if (adopter === null || !hasCallHash(scope.notRun, adopter)) return false;
      const current = written.record;
      return store.compareAndSwap(current.revision, { ...mine, revision: current.revision + 1 }, current);
    },
    recordedFor: scope.runId,
    adopt: (holder, recordedFor = scope.runId) => {
      const adopted = adoptHolder(call, holder, secret);
      const holderCallId = parseCallBindingId(holder.binding.callId)!.callId;
      return { ...adopted, appliedByRun: { runId: runOfCallId(holderCallId, scope.runChainId), callId: holderCallId, recordedFor } };
    },
  };
}

/**
 * What a call's occurrence adoption record (`adoptionRecord` with `recordedFor`) says: the call and
 * run that applied the action, and the run the adoption is recorded for. Undefined for any other
 * record (a business key's or an intent's adoption, or none).
 */
export function appliedByRunOf(adoption: CheckpointRecord | null): AppliedByRun | undefined {
  if (adoption === null) return undefined;
  const recordedFor = adoptionRecordedFor(adoption);
  const holder = adoptedFrom(adoption);
  const parts = holder === null ? null : parseCallBindingId(holder);
  if (recordedFor === undefined || parts === null) return undefined;
  return { runId: runOfCallId(parts.callId, parts.runChainId), callId: parts.callId, recordedFor };
}

/**
 * Whether a call runs in another run than the one whose workflow task built its input
 * (`occurrences.builtInRun`): Temporal dispatches an activity still scheduled at a reset point again
 * in the reset run, with the input the discarded run built (docs/protocol.md#resets).
 */
export function builtInAnotherRun(input: { readonly occurrences?: { readonly builtInRun?: string } }, runId: string): boolean {
  const built = input.occurrences?.builtInRun;
  return built !== undefined && built !== runId;
}
