/**
 * A separate OS process that works on a store for the conformance suite (run with
 * `node -r tsx/cjs test/conformance/store-worker.ts <mode>`). Input comes as one JSON line on
 * stdin after the worker printed `ready`; output is one line per event on stdout.
 *
 * - `claim`: `{ url, options, bindings, workerId, concurrency }`. Claims every binding it can
 *   (get → claimExecution → compareAndSwap), all workers in the same order so they collide;
 *   prints `{"wins":[index…],"lost":n}` at the end.
 * - `insert-claim`: as `claim`, but each claim is the insert of a record already claimed
 *   (`createClaimed`, SPEC §9), with no record there before; a win is an insert that created.
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

async function main(): Promise<void> {
  const mode = process.argv[2];
  process.stdout.write('ready\n');
  const line = await firstLine();
  const input = JSON.parse(line) as Input;
  const store = await openCheckpointStore(input.url, deserializeOptions(input.options));
  if (mode === 'claim' || mode === 'insert-claim') {
    const wins: number[] = [];
    let lost = 0;
    let next = 0;
    /** Whether this worker's claim of binding `index` won. */
    const claim = async (index: number): Promise<boolean> => {
      const attemptId = `${input.workerId}-${index}`;
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
