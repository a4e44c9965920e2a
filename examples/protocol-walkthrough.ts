/**
 * A walkthrough of the checkpoint protocol (docs/protocol.md) with no Temporal and no database: an
 * in-memory compare-and-swap cell stands in for the store. It prints each decision a retried
 * attempt makes at every point a worker could die. Run: `npx tsx examples/protocol-walkthrough.ts`.
 */
import { callBindingId } from '../src/checkpoint/call-identity';
import {
  claimDelivery,
  claimExecution,
  completeDelivery,
  completeExecution,
  createCheckpoint,
  decideCheckpoint,
  fingerprintInput,
  idempotencyKey,
  parseCheckpoint,
  serializeCheckpoint,
  type Binding,
  type CheckpointRecord,
  type TransitionResult,
} from '../src/protocol';
import { isCheckpointError } from '../src';

/** One stored record with an atomic compare-and-swap on its revision. */
class CasCell {
  private text: string;
  constructor(record: CheckpointRecord) {
    this.text = serializeCheckpoint(record);
  }
  get(): CheckpointRecord {
    return parseCheckpoint(this.text);
  }
  compareAndSwap(t: TransitionResult): boolean {
    if (this.get().revision !== t.expectedRevision) return false;
    this.text = serializeCheckpoint(t.next);
    return true;
  }
}

let clock = Date.parse('2026-01-01T00:00:00.000Z');
const now = (): string => new Date((clock += 1_000)).toISOString();

const input = { title: 'Printer on fire', queue: 'facilities' };
const binding: Binding = {
  namespace: 'default/acme',
  callId: callBindingId({ runChainId: 'run-1', workflowId: 'wf-42', callId: 'toolu_01A' }),
  toolName: 'create_ticket',
  toolRevision: 'v1',
  inputFingerprint: fingerprintInput(input),
};
const key = idempotencyKey({ namespace: binding.namespace, runChainId: 'run-1', workflowId: 'wf-42', callId: 'toolu_01A', toolName: 'create_ticket', toolRevision: 'v1' });
const cell = new CasCell(createCheckpoint(binding, { createdAt: now() }));
const show = (moment: string): void => {
  const d = decideCheckpoint(cell.get(), binding);
  console.log(`${moment.padEnd(52)} status=${d.status.padEnd(10)} revision=${d.revision}  → ${d.action}`);
};

console.log(`input fingerprint ${binding.inputFingerprint}`);
console.log(`idempotency key   ${key}\n`);
show('attempt 1 starts: nothing claimed yet');
const claim = claimExecution(cell.get(), { attemptId: 'attempt-1', at: now() });
console.log(`attempt 1 claims execution: CAS ${cell.compareAndSwap(claim) ? 'won' : 'lost'}`);
const rival = claimExecution(createCheckpoint(binding, { createdAt: '2026-01-01T00:00:00.000Z' }), { attemptId: 'attempt-x', at: now() });
console.log(`a racing attempt with a stale copy tries to claim: CAS ${cell.compareAndSwap(rival) ? 'won' : 'lost'}`);
show('worker dies after the claim (effect may have run)');
const done = completeExecution(cell.get(), { attemptId: 'attempt-1', at: now(), result: { ok: true, output: { ticketId: 'T-1' }, receipt: 'r-1' } });
cell.compareAndSwap(done);
show('worker dies after storing the result');
try {
  completeExecution(cell.get(), { attemptId: 'attempt-2', at: now(), result: { ok: true, output: { ticketId: 'T-2' }, receipt: 'r-2' } });
} catch (error) {
  if (!isCheckpointError(error)) throw error;
  console.log(`a stale attempt tries to store another result: ${error.message}`);
}
cell.compareAndSwap(claimDelivery(cell.get(), { deliveryId: 'delivery-2', at: now() }));
show('worker dies after claiming delivery');
cell.compareAndSwap(completeDelivery(cell.get(), { deliveryId: 'delivery-2', at: now() }));
show('delivery recorded');
try {
  decideCheckpoint(cell.get(), { ...binding, inputFingerprint: fingerprintInput({ ...input, queue: 'it' }) });
} catch (error) {
  if (!isCheckpointError(error)) throw error;
  console.log(`same call id, different input: ${error.message}`);
}
console.log(`\nstored result, redelivered byte for byte: ${JSON.stringify(cell.get().result?.payload)}`);
