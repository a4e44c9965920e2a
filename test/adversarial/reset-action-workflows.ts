/**
 * Workflows for plugin-reset-actions.test.ts: a user's plain workflows, fenced by the
 * plugin, each reset with `temporal workflow reset`.
 */
import { ApplicationFailure, continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';

export interface ResetActionActivities {
  chargeCard(customer: string, amountCents: number): Promise<{ chargeId: string; amountCents: number }>;
  /** One order object argument: a member may be `undefined` (a common optional field). */
  chargeOrder(order: { customer: string; amountCents: number; note?: string }): Promise<{ chargeId: string; amountCents: number }>;
  /** A `Date` argument (the JSON payload converter sends it as an ISO string). */
  chargeAt(customer: string, amountCents: number, at: Date): Promise<{ chargeId: string; amountCents: number }>;
}

const retry = { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 3 } as const;
const { chargeCard, chargeOrder, chargeAt } = proxyActivities<ResetActionActivities>({ startToCloseTimeout: '30s', retry });

/** Charges the order once; the order object has an optional field left undefined (`note: undefined`). */
export async function chargeWithOptionalField(customer: string): Promise<string> {
  const note: string | undefined = undefined;
  const charged = await chargeOrder({ customer, amountCents: 100, note });
  return charged.chargeId;
}

/** Charges once, passing the billing date as a `Date`. */
export async function chargeWithDate(customer: string): Promise<string> {
  const charged = await chargeAt(customer, 100, new Date(Date.UTC(2026, 0, 1)));
  return charged.chargeId;
}

/**
 * Tries the charge on a fast path (scheduleToStartTimeout 1 s); if no worker picked it up in time
 * (it never started: nothing was applied), charges again without that bound. Same activity, same
 * arguments: the same action.
 */
export async function chargeWithFallback(customer: string, activityQueue: string): Promise<string> {
  const fast = proxyActivities<ResetActionActivities>({ taskQueue: activityQueue, scheduleToStartTimeout: '1s', startToCloseTimeout: '30s', retry });
  const patient = proxyActivities<ResetActionActivities>({ taskQueue: activityQueue, startToCloseTimeout: '30s', retry });
  try {
    return (await fast.chargeCard(customer, 100)).chargeId;
  } catch {
    return (await patient.chargeCard(customer, 100)).chargeId;
  }
}

/** A polling-style workflow: charges `amountCents`, then continues as new `left` more times (the same charge each segment). */
export async function chargeEverySegment(customer: string, left: number): Promise<string> {
  const charged = await chargeCard(customer, 100);
  if (left > 0) await continueAsNew<typeof chargeEverySegment>(customer, left - 1);
  return charged.chargeId;
}

/** Charges a different amount in each segment (100 + left), then continues as new `left` more times. */
export async function chargeDistinctPerSegment(customer: string, left: number): Promise<string> {
  const charged = await chargeCard(customer, 100 + left);
  if (left > 0) await continueAsNew<typeof chargeDistinctPerSegment>(customer, left - 1);
  return charged.chargeId;
}

/** Charges, then fails the run until its third attempt (the workflow's retry policy starts a new run each time). */
export async function chargeThenFail(customer: string): Promise<string> {
  const charged = await chargeCard(customer, 100);
  if (workflowInfo().attempt < 3) throw ApplicationFailure.retryable(`attempt ${workflowInfo().attempt} fails after the charge`);
  return charged.chargeId;
}
