/**
 * A user's order workflows with compensations (`Compensations` from the workflow-safe entry):
 * reserve stock → charge the card → create the shipment, each step recording the activity that
 * undoes it. `orderSagaWorkflow`: the shipment is rejected, the workflow compensates and returns
 * the reports; with a compensation pending (outcome unknown), it waits for
 * `compensateAgainSignal` (a person resolved it in the store) and compensates again.
 * `cancellableOrderWorkflow`: waits after the charge; cancelled, it compensates and ends cancelled.
 */
import { condition, defineQuery, defineSignal, isCancellation, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import { activityFailureType, Compensations, type CompensationReport } from '../../src/workflow';
import type { SagaActivities, SagaOrder } from './saga-activities';

const acts = proxyActivities<SagaActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '50ms', backoffCoefficient: 1, maximumAttempts: 5 },
});

/** A person resolved a pending compensation in the store: compensate again. */
export const compensateAgainSignal = defineSignal('compensateAgain');
/** The compensations still to run (`Compensations.outstanding`) and the reports so far. */
export const sagaStateQuery = defineQuery<{ outstanding: readonly string[]; reports: CompensationReport[] }>('sagaState');

/** What `orderSagaWorkflow` returns. */
export interface OrderSagaResult {
  readonly shipmentError: string | null;
  readonly reports: CompensationReport[];
}

/** Records the two steps' compensations: release the stock, refund the charge (with `refundByAdd`, by `add` after the charge, as Temporal's saga samples do). */
async function reserveAndCharge(saga: Compensations, order: SagaOrder & { readonly refundByAdd?: boolean }): Promise<void> {
  await saga.step(() => acts.reserveStock(order), { name: 'release stock', compensate: (r) => acts.releaseStock(order, r.reservationId) });
  if (order.refundByAdd === true) {
    const charge = await acts.chargeCard(order);
    saga.add(() => acts.refundCharge(order, charge.chargeId), { name: 'refund charge' });
    return;
  }
  await saga.step(() => acts.chargeCard(order), { name: 'refund charge', compensate: (c) => acts.refundCharge(order, c.chargeId) });
}

/** reserve → charge → ship (rejected) → compensate; again after `compensateAgainSignal` while one is pending. */
export async function orderSagaWorkflow(order: SagaOrder & { readonly refundByAdd?: boolean }): Promise<OrderSagaResult> {
  const saga = new Compensations();
  const reports: CompensationReport[] = [];
  let again = false;
  setHandler(compensateAgainSignal, () => void (again = true));
  setHandler(sagaStateQuery, () => ({ outstanding: saga.outstanding, reports }));
  await reserveAndCharge(saga, order);
  try {
    await acts.createShipment(order);
    return { shipmentError: null, reports };
  } catch (error) {
    reports.push(await saga.compensate());
    if (reports[0]!.pending.length > 0) {
      await condition(() => again);
      reports.push(await saga.compensate());
    }
    return { shipmentError: activityFailureType(error), reports };
  }
}

/** reserve → charge → wait a day for the courier; cancelled while waiting, it compensates, then ends cancelled. */
export async function cancellableOrderWorkflow(order: SagaOrder): Promise<void> {
  const saga = new Compensations();
  const reports: CompensationReport[] = [];
  setHandler(sagaStateQuery, () => ({ outstanding: saga.outstanding, reports }));
  try {
    await reserveAndCharge(saga, order);
    await sleep('1 day');
  } catch (error) {
    if (!isCancellation(error)) throw error;
    reports.push(await saga.compensate());
    throw error;
  }
}
