/**
 * A fresh call's store writes as the fence makes them (docs/protocol.md#cost), without Temporal:
 * the claimed record inserted (`createClaimed`: create + claimExecution, revision 1), then the
 * result and this attempt's delivery in one compare-and-swap (`completeAndDeliver`, revision 4)
 * with the record read as `expected`. Shared by bench:store and bench:overhead's event-loop
 * section.
 */
import { completeAndDeliver, createClaimed } from '../src/checkpoint/compose';
import { fingerprintInput } from '../src/checkpoint/digest';
import type { Binding } from '../src/checkpoint/types';
import type { CheckpointStore } from '../src/stores/checkpoint-store';

/** Runs one fresh call's two writes; throws if either does not apply (nothing competes). @returns the call's binding. */
export async function freshCall(store: CheckpointStore, client: number, n: number): Promise<Binding> {
  const binding: Binding = {
    namespace: 'bench',
    callId: `c${client}-${n}-${process.hrtime.bigint()}`,
    toolName: 'create_ticket',
    toolRevision: '1',
    inputFingerprint: fingerprintInput({ client, n }),
  };
  const attemptId = `a${client}-${n}`;
  const { created, record } = await store.createIfAbsent(createClaimed(binding, { attemptId, at: new Date().toISOString() }));
  if (!created) throw new Error('the claim insert found a record with no competitor');
  const done = completeAndDeliver(record, { attemptId, deliveryId: `d${client}-${n}`, at: new Date().toISOString(), result: { ticket: `T-${n}`, ok: true } });
  if (!(await store.compareAndSwap(done.expectedRevision, done.next, record))) throw new Error('a compare-and-swap lost with no competitor');
  return binding;
}
