/**
 * A checkpoint driven to a status through the real transitions, as a dead holder leaves it: the
 * claim at `at(0)` with its deadline at `at(30 s)`, an unknown outcome or a result at `at(1 s)`.
 * For tests of a person's resolution (the claim can not be frozen in a real attempt).
 */
import { createCheckpoint } from '../../src/checkpoint/record';
import { claimDelivery, claimExecution, completeDelivery, completeExecution, markExecutionUncertain } from '../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord, Status, TransitionResult } from '../../src/checkpoint/types';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';

/**
 * Writes a record of `binding` in `store` and drives it to `status` under the claim `attemptId`;
 * `at(ms)` is the ISO time `ms` after the test's origin. The holder's result is `{ chargeId: 'ch-holder' }`.
 * @returns the record as stored (the one `store` returned or wrote last).
 */
export async function seedStatus(store: CheckpointStore, binding: Binding, status: Status, at: (ms: number) => string, attemptId: string): Promise<CheckpointRecord> {
  let record = (await store.createIfAbsent(createCheckpoint(binding, { createdAt: at(0) }))).record;
  const step = async (t: TransitionResult): Promise<void> => {
    expect(await store.compareAndSwap(t.expectedRevision, t.next, record)).toBe(true);
    record = t.next;
  };
  if (status === 'ready') return record;
  await step(claimExecution(record, { attemptId, at: at(0), deadlineAt: at(30_000) }));
  if (status === 'executing') return record;
  if (status === 'uncertain') {
    await step(markExecutionUncertain(record, { attemptId, at: at(1_000), reason: 'the worker died after the request was sent' }));
    return record;
  }
  await step(completeExecution(record, { attemptId, at: at(1_000), result: { ok: true, output: { chargeId: 'ch-holder' }, receipt: null } }));
  if (status === 'completed') return record;
  await step(claimDelivery(record, { deliveryId: 'delivery-1', at: at(1_000) }));
  if (status === 'delivering') return record;
  await step(completeDelivery(record, { deliveryId: 'delivery-1', at: at(1_000) }));
  return record;
}
