/**
 * A separate OS process that works on a store for the conformance suite (run with
 * `node -r tsx/cjs test/conformance/store-worker.ts <mode>`). Input comes as one JSON line on
 * stdin after the worker printed `ready`; output is one line per event on stdout.
 *
 * - `claim`: `{ url, options, bindings, workerId, concurrency }`. Claims every binding it can
 *   (get → claimExecution → compareAndSwap), all workers in the same order so they collide;
 *   prints `{"wins":[index…],"lost":n}` at the end.
 * - `insert-claim`: as `claim`, but each claim is the insert of a record already claimed
 *   (`createClaimed`, docs/protocol.md#cost), with no record there before; a win is an insert that created.
 * - `dedupe-claim`: as `insert-claim`, but each worker inserts its own call (binding `index`
 *   with the call id suffixed by its worker id) under the dedupe key `dedupe:<binding call id>`; a loss must
 *   return another worker's claim of the same index. With `dedupeWindowMs`, each insert holds its key
 *   for that long (`dedupeUntil`): a holder the parent left with an ended window must give the key up.
 * - `group-race`: `{ url, options, bindings, readyBindings, workerId, groupSize }`. As
 *   `insert-claim` on `bindings`, then as `claim` on `readyBindings` (ready records), in groups of
 *   `groupSize` through `writeGroup` (and `getMany`), in an order that makes groups of different
 *   workers overlap (see `raceGroups`); prints `{"inserts":{wins,lost},"claims":{wins,lost}}`.
 * - `churn`: `{ url, options, bindings, payloadBytes }`. Forever moves each record one step
 *   (claim, complete with a large payload, then claim/release delivery in a loop) and prints
 *   `ack <index> <revision>` after each compare-and-swap returned true; the parent SIGKILLs it.
 */
import { createInterface } from 'node:readline';
import { createClaimed } from '../../src/checkpoint/compose';
import { isCheckpointError } from '../../src/checkpoint/errors';
import { claimDelivery, claimExecution, completeExecution, releaseDelivery } from '../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord, TransitionResult } from '../../src/checkpoint/types';
import type { CheckpointStoreOptions } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

interface Input {
  readonly url: string;
  readonly options: SerializedOptions;
  readonly bindings: Binding[];
  readonly workerId?: string;
  readonly concurrency?: number;
  readonly payloadBytes?: number;
  readonly groupSize?: number;
  readonly readyBindings?: Binding[];
  readonly dedupeWindowMs?: number;
}

/** Store options with keys as hex, as they cross the process boundary. */
export interface SerializedOptions {
  readonly hmacKeyHex?: string;
  readonly keyId?: string;
  readonly busyTimeoutMs?: number;
  readonly poolSize?: number;
}

/** The inverse of the parent's serialization. */
export function deserializeOptions(o: SerializedOptions): CheckpointStoreOptions {
  return {
    ...(o.hmacKeyHex !== undefined ? { hmacKey: Buffer.from(o.hmacKeyHex, 'hex'), keyId: o.keyId } : {}),
    ...(o.busyTimeoutMs !== undefined ? { busyTimeoutMs: o.busyTimeoutMs } : {}),
    ...(o.poolSize !== undefined ? { poolSize: o.poolSize } : {}),
  };
}

/** This process's worker id (`w0`, `w1`, …), from its input. */
let workerId: string | undefined;

async function main(): Promise<void> {
  const mode = process.argv[2];
  process.stdout.write('ready\n');
  const line = await firstLine();
  const input = JSON.parse(line) as Input;
  workerId = input.workerId;
  const store = await openCheckpointStore(input.url, deserializeOptions(input.options));
  if (mode === 'claim' || mode === 'insert-claim' || mode === 'dedupe-claim') {
    const wins: number[] = [];
    let lost = 0;
    let next = 0;
    /** Whether this worker's claim of binding `index` won. */
    const claim = async (index: number): Promise<boolean> => {
      const attemptId = `${input.workerId}-${index}`;
      if (mode === 'dedupe-claim') {
        const base = input.bindings[index]!;
        const own: Binding = { ...base, callId: `${base.callId}/${input.workerId}` };
        const now = Date.now();
        const window = input.dedupeWindowMs === undefined ? {} : { dedupeUntil: new Date(now + input.dedupeWindowMs).toISOString() };
        const { created, record } = await store.createIfAbsent(createClaimed(own, { attemptId, at: new Date(now).toISOString() }), {
          dedupeKey: `dedupe:${base.callId}`,
          ...window,
        });
        const holder = record.execution?.attemptId ?? '';
        if (created !== (holder === attemptId)) throw new Error(`record ${index}: created ${created} but the stored claim is ${holder}`);
        if (!created && (record.binding.callId === own.callId || !holder.endsWith(`-${index}`)))
          throw new Error(`record ${index}: the holder ${record.binding.callId} is not another worker's claim of it`);
        return created;
      }
      if (mode === 'insert-claim') {
        const { created, record } = await store.createIfAbsent(createClaimed(input.bindings[index]!, { attemptId, at: new Date().toISOString() }));
        if (created !== (record.execution?.attemptId === attemptId)) throw new Error(`record ${index}: created ${created} but the stored claim is ${record.execution?.attemptId}`);
        return created;
      }
      const record = await store.get(input.bindings[index]!);
      if (record === null) throw new Error(`record ${index} is missing`);
      if (record.status !== 'ready') return false;
      const t = claimExecution(record, { attemptId, at: notBefore(record) });
      return store.compareAndSwap(t.expectedRevision, t.next);
    };
    const lane = async (): Promise<void> => {
      while (next < input.bindings.length) {
        const index = next++;
        if (await claim(index)) wins.push(index);
        else lost += 1;
      }
    };
    await Promise.all(Array.from({ length: input.concurrency ?? 4 }, lane));
    await store.close();
    // Exit explicitly: the stdin pipe stays open in the parent and would keep this process alive.
    process.stdout.write(`${JSON.stringify({ wins, lost })}\n`, () => process.exit(0));
    return;
  }
  if (mode === 'group-race') {
    const size = input.groupSize ?? 50;
    const inserts = await raceGroups(input.bindings, size, async (indexes, attemptId) => {
      const results = await store.writeGroup(
        indexes.map((index) => ({ kind: 'create', record: createClaimed(input.bindings[index]!, { attemptId: attemptId(index), at: new Date().toISOString() }) })),
      );
      return results.map((r, i) => {
        if (r.kind !== 'create') throw new Error('a create answered as a cas');
        if (r.created !== (r.record.execution?.attemptId === attemptId(indexes[i]!)))
          throw new Error(`record ${indexes[i]}: created ${r.created} but the stored claim is ${r.record.execution?.attemptId}`);
        return r.created;
      });
    });
    const ready = input.readyBindings ?? [];
    const claims = await raceGroups(ready, size, async (indexes, attemptId) => {
      const records = await store.getMany(indexes.map((index) => ready[index]!));
      const claimable = indexes.flatMap((index, i) => (records[i]?.status === 'ready' ? [{ index, record: records[i] }] : []));
      const results = await store.writeGroup(
        claimable.map(({ index, record }) => {
          const t = claimExecution(record, { attemptId: attemptId(index), at: notBefore(record) });
          return { kind: 'cas', expectedRevision: t.expectedRevision, next: t.next, expected: record };
        }),
      );
      const won = new Set(claimable.filter((_, i) => results[i]?.kind === 'cas' && (results[i] as { swapped: boolean }).swapped).map((c) => c.index));
      return indexes.map((index) => won.has(index));
    });
    await store.close();
    process.stdout.write(`${JSON.stringify({ inserts, claims })}\n`, () => process.exit(0));
    return;
  }
  if (mode === 'churn') {
    const payload = { blob: 'x'.repeat(input.payloadBytes ?? 100_000) };
    const lane = async (index: number): Promise<void> => {
      let record = (await store.get(input.bindings[index]!)) as CheckpointRecord;
      for (;;) {
        const t = step(record, payload, index);
        if (!(await store.compareAndSwap(t.expectedRevision, t.next))) throw new Error(`lost a CAS on ${index} with no competitor`);
        process.stdout.write(`ack ${index} ${t.next.revision}\n`);
        record = t.next;
      }
    };
    await Promise.all(input.bindings.map((_, i) => lane(i)));
    return;
  }
  throw new Error(`unknown mode ${String(mode)}`);
}

/**
 * Runs `claimGroup` over `bindings` in groups of `size`: worker n starts n quarters into the list
 * with its group boundaries shifted by 7n, so groups of different workers overlap partly and run
 * at the same time. `claimGroup` answers, per index, whether this worker's claim won.
 */
async function raceGroups(
  bindings: readonly Binding[],
  size: number,
  claimGroup: (indexes: number[], attemptId: (index: number) => string) => Promise<boolean[]>,
): Promise<{ wins: number[]; lost: number }> {
  const wins: number[] = [];
  let lost = 0;
  const n = bindings.length;
  const worker = workerId ?? 'w0';
  const w = Number(worker.slice(1));
  const order = Array.from({ length: n }, (_, i) => (i + Math.floor((w * n) / 4) + 7 * w) % n);
  for (let g = 0; g < n; g += size) {
    const indexes = order.slice(g, g + size);
    const won = await claimGroup(indexes, (index) => `${worker}-${index}`);
    indexes.forEach((index, i) => (won[i] ? wins.push(index) : (lost += 1)));
  }
  return { wins, lost };
}

function step(record: CheckpointRecord, payload: unknown, index: number): TransitionResult {
  const at = notBefore(record);
  switch (record.status) {
    case 'ready':
      return claimExecution(record, { attemptId: `churn-${index}`, at });
    case 'executing':
      return completeExecution(record, { attemptId: `churn-${index}`, at, result: payload, maxPayloadBytes: 10 * 1024 * 1024 });
    case 'completed':
      return claimDelivery(record, { deliveryId: `d${record.revision}`, at });
    case 'delivering':
      return releaseDelivery(record, { deliveryId: record.delivery!.deliveryId, at });
    default:
      throw new Error(`unexpected status ${record.status}`);
  }
}

/** Now, or the record's updatedAt when that is later (test records may be dated in the future). */
function notBefore(record: CheckpointRecord): string {
  return new Date(Math.max(Date.now(), Date.parse(record.updatedAt))).toISOString();
}

function firstLine(): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin });
    rl.once('line', (line) => {
      rl.close();
      resolve(line);
    });
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${isCheckpointError(error) ? `${error.code} ` : ''}${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
