/**
 * The grouped writes of one `forEachItem` (items are written in groups, not two synchronous writes
 * each): items without a checkpoint are claimed by one grouped write (`CheckpointStore.writeGroup`,
 * one transaction), and the results of the items applied since the last write go into the same
 * write as the next claims. With a window of 1 (every tool's default) that is one write per item
 * instead of two, and item n + 1 is claimed only in the write that stores item n's result: a crash
 * leaves at most one item unsettled. A wider window (`groupSize`, only for a tool whose items can
 * be reconciled: lookup or key dedupe) claims that many items in one write; an item claimed but not
 * started when the worker dies is then looked up or repeated with its key.
 *
 * Items that already have a checkpoint (an earlier attempt's) are read ahead in chunks
 * (`getMany`) and settled one by one by the call's attempt logic (delivered, reconciled, paused).
 */
import { createClaimed } from '../../checkpoint/compose';
import type { CheckpointRecord } from '../../checkpoint/types';
import { CheckpointError } from '../../checkpoint/errors';
import { MAX_GROUP_SIZE, type GroupWrite } from '../../stores/checkpoint-store';
import type { ApplyItem, ItemsBatch, PreparedItem } from './batch-types';
import type { BatchItemResult, BatchReport } from '../contract/tool-types';
import type { ToolOutcome } from '../contract/contract';
import type { PreparedCall } from './prepare-call';
import { deadlineAfter } from './fence-deps';

/** The result of an item a cancelled batch claimed but never started (nothing was sent). */
export const NOT_STARTED: ToolOutcome = { ok: false, error: { type: 'CANCELLED', message: 'the batch was cancelled before this item started; nothing was sent' } };

/** An applied item whose result waits for the next grouped write. */
interface Carried {
  readonly write: Extract<GroupWrite, { kind: 'cas' }>;
  readonly item: PreparedCall;
  readonly result: BatchItemResult;
}

/** The state of one `forEachItem` call: results so far, records read ahead, completions not yet written. */
export class ItemsRun {
  private readonly results: BatchItemResult[] = [];
  private applied = 0;
  private readonly records = new Map<number, CheckpointRecord | null>();
  private carry: Carried[] = [];

  /** @param run this `forEachItem` call's number in the attempt (part of its items' attempt ids). */
  constructor(
    private readonly batch: ItemsBatch,
    private readonly items: readonly PreparedItem[],
    private readonly apply: ApplyItem,
    private readonly run: number,
  ) {}

  /** Item `index`'s first-generation checkpoint as read ahead (a chunk of up to 1,000 is read when `index` is not known yet). */
  async known(index: number): Promise<CheckpointRecord | null> {
    if (!this.records.has(index)) {
      const end = Math.min(this.items.length, index + MAX_GROUP_SIZE);
      const bindings = [];
      for (let i = index; i < end; i += 1) bindings.push(this.prepare(i).binding);
      const found = await this.batch.itemFence.store.getMany(bindings);
      found.forEach((record, k) => this.records.set(index + k, record));
    }
    return this.records.get(index)!;
  }

  /** Settles item `index`, which has a checkpoint, by the call's attempt logic (after writing the results carried so far). */
  async settleOne(index: number): Promise<void> {
    await this.flush([]);
    const { key, value } = this.items[index]!;
    this.batch.current(key);
    this.push(await this.batch.settle(value, { key, index, generation: 1 }, this.apply, this.run));
  }

  /**
   * Claims the items from `start` that have no checkpoint (at most `width`, within what was read
   * ahead) in one grouped write together with the carried results, then applies them in order.
   * @returns the index after the last item handled.
   */
  async claimAndApply(start: number, width: number): Promise<number> {
    let end = start + 1;
    while (end < this.items.length && end - start < width && this.records.has(end) && this.records.get(end) === null) end += 1;
    const calls = [];
    for (let i = start; i < end; i += 1) calls.push(this.prepare(i));
    const at = this.batch.itemFence.now();
    const deadlineMs = this.batch.callDeadlineMs;
    // The k-th item of a group starts after the k - 1 before it, each within its deadline: its claim declares the sum.
    const claims = calls.map((item, k) => createClaimed(item.binding, { attemptId: item.attemptId, at, deadlineAt: deadlineAfter(at, (k + 1) * deadlineMs) }));
    const answers = await this.flush(claims.map((record) => ({ kind: 'create', record })));
    for (let k = 0; k < calls.length; k += 1) {
      const index = start + k;
      const item = calls[k]!;
      const answer = answers[k]!;
      const { key } = this.items[index]!;
      if (answer.kind !== 'create') throw new CheckpointError('INVALID_CHECKPOINT', `the store answered a claim of item ${key} with a ${answer.kind}`, {});
      const ours = answer.record.status === 'executing' && answer.record.execution?.attemptId === item.attemptId;
      if (!ours) {
        // Another attempt created it meanwhile: settle it as any item with a checkpoint.
        this.records.set(index, answer.record);
        await this.settleOne(index);
        continue;
      }
      if (this.batch.cancellationRequested) {
        // Claimed by this attempt but not started: not applied. When the workflow asked for the
        // cancellation, they are closed as such (nothing was sent); on a worker shutdown they stay
        // claimed for the next attempt, which looks them up or repeats them with their keys.
        if (this.batch.itemFence.cancelRequested()) {
          for (let j = k; j < calls.length; j += 1) {
            const mine = answers[j]!;
            if (mine.kind === 'create' && mine.record.status === 'executing' && mine.record.execution?.attemptId === calls[j]!.attemptId)
              this.carryResult(calls[j]!, mine.record, NOT_STARTED, start + j);
          }
        }
        await this.cancel();
      }
      this.batch.current(key);
      const claimed = this.batch.itemFence.claimed(item);
      const outcome = await claimed.apply(answer.record);
      if (outcome.kind === 'unknown') {
        await this.flush([]);
        try {
          await claimed.recordUnknown(answer.record, outcome.reason);
        } catch (error) {
          this.batch.failed(error, { key, index, generation: 1 }, item.idempotencyKey);
        }
      } else {
        this.carryResult(item, answer.record, outcome.value, index);
      }
    }
    return end;
  }

  /** Writes the carried results (and `claims`) in one grouped write; a result whose claim was taken over stops the batch (FENCE_CONFLICT). @returns the answers to `claims`. */
  async flush(claims: readonly GroupWrite[]): Promise<Awaited<ReturnType<ItemsBatch['itemFence']['store']['writeGroup']>>> {
    const carried = this.carry;
    if (carried.length === 0 && claims.length === 0) return [];
    this.carry = [];
    const answers = await this.batch.itemFence.store.writeGroup([...carried.map((c) => c.write), ...claims]);
    carried.forEach((c, k) => {
      const answer = answers[k]!;
      if (answer.kind !== 'cas' || !answer.swapped) {
        this.batch.failed(
          new CheckpointError('FENCE_CONFLICT', `the item's claim was taken over before its result was stored (it ran past its deadline); this attempt's result is discarded`, {
            callId: c.item.input.callId,
          }),
          c.item.item!,
          c.item.idempotencyKey,
        );
      }
      this.push(c.result);
    });
    return answers.slice(carried.length);
  }

  /** Stops the batch for cancellation, after writing the results carried so far. */
  async cancel(): Promise<never> {
    await this.flush([]);
    return this.batch.cancelled(this.items, this.results);
  }

  /** What `forEachItem` returns. */
  report(): BatchReport {
    return { items: this.results, applied: this.applied, rejected: this.results.length - this.applied };
  }

  private carryResult(item: PreparedCall, claimed: CheckpointRecord, outcome: ToolOutcome, index: number): void {
    const completion = this.batch.itemFence.claimed(item).completion(claimed, outcome);
    const stored = completion.next.result!.payload as ToolOutcome;
    this.carry.push({
      write: { kind: 'cas', expectedRevision: completion.expectedRevision, next: completion.next, expected: claimed },
      item,
      result: { key: this.items[index]!.key, index, outcome: stored, source: 'executed' },
    });
    this.progress();
  }

  /** Reports progress: items settled, counting those applied by this attempt whose results wait for the group's write. */
  private progress(): void {
    const applied = this.applied + this.carry.filter((c) => c.result.outcome.ok).length;
    this.batch.settled(this.results.length + this.carry.length, applied, this.items.length);
  }

  private push(result: BatchItemResult): void {
    this.results.push(result);
    if (result.outcome.ok) this.applied += 1;
    this.progress();
  }

  private prepare(index: number): PreparedCall {
    const { key, value } = this.items[index]!;
    return this.batch.prepareItem(value, { key, index, generation: 1 }, this.apply, this.run);
  }
}
