/**
 * A fresh call's store writes as the fence makes them (docs/protocol.md#cost), without Temporal:
 * the claimed record inserted (`createClaimed`: create + claimExecution, revision 1), then the
 * result and this attempt's delivery in one compare-and-swap (`completeAndDeliver`, revision 4)
 * with the record read as `expected`. Shared by bench:store, bench:fence-cost and bench:overhead's
 * event-loop section.
 */
import { completeAndDeliver, createClaimed } from '../src/checkpoint/compose';
import { fingerprintInput } from '../src/checkpoint/digest';
import type { Binding, CheckpointRecord, TransitionResult } from '../src/checkpoint/types';
import type { CheckpointStore } from '../src/stores/checkpoint-store';

/** The two records of one fresh call, composed (pure protocol work: no store). */
export interface ComposedFreshCall {
  readonly binding: Binding;
  readonly claimed: CheckpointRecord;
  readonly done: TransitionResult;
}

/** Composes one fresh call's records: the claimed insert and the completing compare-and-swap. */
export function composeFreshCall(client: number, n: number): ComposedFreshCall {
  const binding: Binding = {
    namespace: 'bench',
    callId: `c${client}-${n}-${process.hrtime.bigint()}`,
    toolName: 'create_ticket',
    toolRevision: '1',
    inputFingerprint: fingerprintInput({ client, n }),
  };
  const attemptId = `a${client}-${n}`;
  const claimed = createClaimed(binding, { attemptId, at: new Date().toISOString() });
  const done = completeAndDeliver(claimed, { attemptId, deliveryId: `d${client}-${n}`, at: new Date().toISOString(), result: { ticket: `T-${n}`, ok: true } });
  return { binding, claimed, done };
}

/** Writes a composed fresh call (store work only); throws if either write does not apply (nothing competes). */
export async function writeFreshCall(store: CheckpointStore, call: ComposedFreshCall): Promise<Binding> {
  const { created, record } = await store.createIfAbsent(call.claimed);
  if (!created) throw new Error('the claim insert found a record with no competitor');
  if (!(await store.compareAndSwap(call.done.expectedRevision, call.done.next, record))) throw new Error('a compare-and-swap lost with no competitor');
  return call.binding;
}

/** Composes and writes one fresh call. @returns the call's binding. */
export async function freshCall(store: CheckpointStore, client: number, n: number): Promise<Binding> {
  return writeFreshCall(store, composeFreshCall(client, n));
}
