/**
 * A user's activities with a visible effect: each charge appends a line to a ledger file (the
 * "provider"), keyed by the fenced call's idempotency key, which the activity reads through
 * `fencedCallContext()` without a changed signature.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { fencedCallContext } from '../../src/plugin';
import type { LookupResult, ToolContext } from '../../src/activities';
import type { FencedLookupContext } from '../../src/plugin';

/** One applied effect. */
export interface LedgerEntry {
  readonly kind: 'charge' | 'invoice';
  readonly customer: string;
  readonly id: string;
  readonly idempotencyKey: string | null;
  readonly pid: number;
}

/** The activities of the user's worker (`sendInvoice` is registered by another plugin). */
export interface PaymentActivities {
  chargeCard(customer: string, amountCents: number): Promise<{ chargeId: string }>;
  sendInvoice(customer: string): Promise<{ invoiceId: string }>;
}

/** Reads a ledger file: one JSON entry a line. */
export function readLedger(file: string): LedgerEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LedgerEntry);
}

/** Activities writing to the ledger at `file`. */
export function paymentActivities(file: string): PaymentActivities {
  const apply = (kind: LedgerEntry['kind'], customer: string): LedgerEntry => {
    const entry: LedgerEntry = {
      kind,
      customer,
      id: `${kind}-${readLedger(file).length + 1}-${process.pid}`,
      idempotencyKey: fencedCallContext()?.idempotencyKey ?? null,
      pid: process.pid,
    };
    appendFileSync(file, `${JSON.stringify(entry)}\n`);
    return entry;
  };
  return {
    async chargeCard(customer) {
      return { chargeId: apply('charge', customer).id };
    },
    async sendInvoice(customer) {
      return { invoiceId: apply('invoice', customer).id };
    },
  };
}

/** A lookup of charges by idempotency key in the ledger at `file` (the provider's "GET by key"). */
export function chargeLookup(file: string): (ctx: ToolContext) => Promise<LookupResult> {
  return async (ctx) => {
    const entry = readLedger(file).find((e) => e.kind === 'charge' && e.idempotencyKey === ctx.idempotencyKey);
    return entry === undefined ? { found: false } : { found: true, output: { chargeId: entry.id } };
  };
}

/**
 * A lookup of charges by the activity's arguments (`chargeCard(customer, amountCents)`), never by
 * key: the provider of a user who can search only by their own order data. Throws when `ctx.args`
 * is not the activity's two arguments, which proves nothing (the attempt fails RECONCILE_PENDING).
 */
export function chargeLookupByArgs(file: string): (ctx: FencedLookupContext) => Promise<LookupResult> {
  return async (ctx) => {
    if (!Array.isArray(ctx.args) || ctx.args.length !== 2) throw new Error(`lookup by arguments got ${JSON.stringify(ctx.args)}`);
    const [customer, amountCents] = ctx.args;
    if (typeof customer !== 'string' || typeof amountCents !== 'number') throw new Error(`lookup by arguments got ${JSON.stringify(ctx.args)}`);
    const entry = readLedger(file).find((e) => e.kind === 'charge' && e.customer === customer);
    return entry === undefined ? { found: false } : { found: true, output: { chargeId: entry.id } };
  };
}
