/**
 * Workflows for the adversarial plugin tests (plugin-*.test.ts): a user's plain workflows.
 */
import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';

export interface AdvActivities {
  chargeCard(customer: string, amountCents: number): Promise<{ chargeId: string; amountCents: number }>;
  refundCard(customer: string, amountCents: number): Promise<{ refundId: string; amountCents: number }>;
}

const { chargeCard, refundCard } = proxyActivities<AdvActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 3 },
});

export const amountSignal = defineSignal<[number]>('amount');
export const actionSignal = defineSignal<['charge' | 'refund']>('action');

/** Waits for the amount to charge, then charges it. */
export async function chargeSignalledAmount(customer: string): Promise<{ chargeId: string; amountCents: number }> {
  let amount: number | undefined;
  setHandler(amountSignal, (a) => {
    amount = a;
  });
  await condition(() => amount !== undefined);
  return chargeCard(customer, amount!);
}

/** Waits for what to do (charge or refund 100), then does it. */
export async function chargeOrRefund(customer: string): Promise<unknown> {
  let action: 'charge' | 'refund' | undefined;
  setHandler(actionSignal, (a) => {
    action = a;
  });
  await condition(() => action !== undefined);
  return action === 'charge' ? chargeCard(customer, 100) : refundCard(customer, 100);
}

export interface ShapeActivities {
  thumbnail(id: string): Promise<Uint8Array>;
  deleteFile(id: string): Promise<void>;
}

/** What the workflow sees of an activity returning bytes and one returning nothing. */
export async function resultShapes(id: string): Promise<{ bytesIsUint8Array: boolean; bytesType: string; deleteIsUndefined: boolean; deleteValue: string }> {
  const { thumbnail, deleteFile } = proxyActivities<ShapeActivities>({ startToCloseTimeout: '30s', retry: { initialInterval: '100ms', maximumAttempts: 3 } });
  const bytes = await thumbnail(id);
  const deleted = await deleteFile(id);
  return {
    bytesIsUint8Array: bytes instanceof Uint8Array,
    bytesType: Object.prototype.toString.call(bytes),
    deleteIsUndefined: deleted === undefined,
    deleteValue: String(deleted),
  };
}
