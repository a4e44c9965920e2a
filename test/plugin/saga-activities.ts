/**
 * A user's order activities for the compensation tests (reserve → charge → ship, and the
 * compensations release and refund), each applied effect a line in a ledger file (the
 * "provider"), keyed by the fenced call's idempotency key (`fencedCallContext()`). An order's
 * `faults` make a compensation misbehave: `drop-after-effect` applies the effect then fails as a
 * dropped connection would (a plain Error: outcome unknown), `decline` refuses it for good.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import { fencedCallContext } from '../../src/plugin';
import type { LookupResult, ToolContext } from '../../src/activities';

/** How a compensation of the order misbehaves. */
export type SagaFault = 'drop-after-effect' | 'decline';

/** An order as the workflow passes it to every activity. */
export interface SagaOrder {
  readonly id: string;
  readonly faults?: { readonly refundCharge?: SagaFault; readonly releaseStock?: SagaFault };
}

/** One applied effect in the ledger. */
export interface SagaLedgerEntry {
  readonly kind: 'reserve' | 'charge' | 'refund' | 'release';
  readonly orderId: string;
  readonly idempotencyKey: string | null;
}

/** The activities of the order worker. */
export interface SagaActivities {
  reserveStock(order: SagaOrder): Promise<{ reservationId: string }>;
  chargeCard(order: SagaOrder): Promise<{ chargeId: string }>;
  /** Always refused by the carrier: a non-retryable ShipmentRejected. */
  createShipment(order: SagaOrder): Promise<{ shipmentId: string }>;
  refundCharge(order: SagaOrder, chargeId: string): Promise<{ refundId: string }>;
  releaseStock(order: SagaOrder, reservationId: string): Promise<{ releaseId: string }>;
}

/** Reads a ledger file: one JSON entry a line. */
export function readSagaLedger(file: string): SagaLedgerEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as SagaLedgerEntry);
}

/** The activities, writing to the ledger at `file`; `executions` counts the runs of each activity. */
export function sagaActivities(file: string, executions: Map<string, number>): SagaActivities {
  const apply = (kind: SagaLedgerEntry['kind'], order: SagaOrder): string => {
    executions.set(`${kind}:${order.id}`, (executions.get(`${kind}:${order.id}`) ?? 0) + 1);
    appendFileSync(file, `${JSON.stringify({ kind, orderId: order.id, idempotencyKey: fencedCallContext()?.idempotencyKey ?? null } satisfies SagaLedgerEntry)}\n`);
    return `${kind}-${order.id}`;
  };
  const compensation = (kind: 'refund' | 'release', order: SagaOrder, fault: SagaFault | undefined): string => {
    if (fault === 'decline') {
      executions.set(`${kind}:${order.id}`, (executions.get(`${kind}:${order.id}`) ?? 0) + 1);
      throw ApplicationFailure.nonRetryable(`${kind} of order ${order.id} declined by the provider`, `${kind === 'refund' ? 'Refund' : 'Release'}Declined`);
    }
    const id = apply(kind, order);
    if (fault === 'drop-after-effect' && executions.get(`${kind}:${order.id}`) === 1) throw new Error(`connection reset after the ${kind} request was sent`);
    return id;
  };
  return {
    async reserveStock(order) {
      return { reservationId: apply('reserve', order) };
    },
    async chargeCard(order) {
      return { chargeId: apply('charge', order) };
    },
    async createShipment(order) {
      throw ApplicationFailure.nonRetryable(`carrier rejected the address of order ${order.id}`, 'ShipmentRejected');
    },
    async refundCharge(order) {
      return { refundId: compensation('refund', order, order.faults?.refundCharge) };
    },
    async releaseStock(order) {
      return { releaseId: compensation('release', order, order.faults?.releaseStock) };
    },
  };
}

/** A lookup of refunds by idempotency key in the ledger at `file` (the provider's "GET by key"). */
export function refundLookup(file: string): (ctx: ToolContext) => Promise<LookupResult> {
  return async (ctx) => {
    const entry = readSagaLedger(file).find((e) => e.kind === 'refund' && e.idempotencyKey === ctx.idempotencyKey);
    return entry === undefined ? { found: false } : { found: true, output: { refundId: `refund-${entry.orderId}` } };
  };
}
