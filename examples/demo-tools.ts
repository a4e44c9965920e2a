/**
 * The three example tools of the demo, acting on the demo provider (examples/provider):
 * - `create_ticket`: the provider honours `Idempotency-Key` and can be looked up by key, so
 *   every crash window recovers without a duplicate;
 * - `close_ticket`: idempotent by nature (closing twice changes nothing), so it may repeat;
 * - `send_email`: no idempotency support and no lookup, so an unknown outcome pauses the run.
 *
 * Provider failures are classified once, by {@link classifyProviderError}, into the error
 * classes of the retry policy (`TOOL_ERROR_CLASSES`): the stored error result's `error.type`
 * names the class (PERMISSION_DENIED, IDEMPOTENCY_CONFLICT, …).
 */
import { z } from 'zod/v4';
import { classifyHttpFailure, defineTool, ToolError, type ToolDefinition } from '../src/activities';
import { isProviderError, ProviderClient } from './provider/client';

/** Options of {@link createDemoTools}. */
export interface DemoToolsOptions {
  /** The `fetch` the provider client uses (tests record requests with it). @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** Declare `create_ticket` and `send_email` with `dedupeByIntent` (a re-planned identical call is answered from the first call's checkpoint). @default false */
  readonly dedupeByIntent?: boolean;
}

/**
 * Turns a provider error into a {@link ToolError} whose `kind` drives the fenced activity and
 * whose `type` names the error class (see `classifyHttpFailure`); an unknown outcome keeps its
 * kind (never "failed, safe to resend"). Any other error passes through unchanged.
 */
export function classifyProviderError(error: unknown): unknown {
  if (!isProviderError(error)) return error;
  const { kind, type } = classifyHttpFailure({ status: error.status, problemType: error.problem?.type, sent: error.sent, keyed: error.keyed });
  // The client's own verdict that the request may have been applied always wins.
  if (error.kind === 'unknown-outcome' || kind === 'unknown-outcome') return new ToolError('unknown-outcome', error.message, undefined, 'OUTCOME_UNKNOWN');
  return new ToolError(kind, error.message, 'retryAfterMs' in error ? (error.retryAfterMs as number | undefined) : undefined, type);
}

async function classified<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw classifyProviderError(error);
  }
}

/** Builds the demo tools against the provider at `providerUrl` (e.g. `http://127.0.0.1:4100`). */
export function createDemoTools(providerUrl: string, options: DemoToolsOptions = {}): ToolDefinition<any>[] {
  const provider = new ProviderClient({ baseUrl: providerUrl, timeoutMs: 5_000, ...(options.fetch ? { fetch: options.fetch } : {}) });
  const dedupeByIntent = options.dedupeByIntent ?? false;
  const createTicket = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    description: 'Open a ticket in a queue.',
    input: z.object({ title: z.string().min(1).max(200), body: z.string().min(1).max(5_000), queue: z.string().min(1).max(64) }).strict(),
    dedupesByKey: true,
    keyRetentionMs: 24 * 60 * 60 * 1_000, // the demo provider remembers keys for a day, like Stripe
    dedupeByIntent,
    target: (input) => input.queue,
    async execute(input, ctx) {
      const r = await classified(() => provider.createTicket(input, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }));
      return { output: { ticketId: r.ticketId }, receipt: { ticketId: r.ticketId, receipt: r.receipt, createdAt: r.createdAt } };
    },
    async lookup(ctx) {
      const r = await classified(() => provider.findTicketByKey(ctx.idempotencyKey, { signal: ctx.signal }));
      return r === null ? { found: false } : { found: true, output: { ticketId: r.ticketId }, receipt: { ticketId: r.ticketId, receipt: r.receipt, createdAt: r.createdAt } };
    },
  });
  const closeTicket = defineTool({
    name: 'close_ticket',
    revision: 'v1',
    description: 'Close a ticket by id.',
    input: z.object({ ticketId: z.string().min(1).max(64) }).strict(),
    dedupesByKey: true, // closing is idempotent by nature: a repeat changes nothing, at any age
    keyRetentionMs: Number.MAX_SAFE_INTEGER,
    async execute(input, ctx) {
      const r = await classified(() => provider.closeTicket(input.ticketId, { signal: ctx.signal }));
      return { output: { ticketId: r.ticketId, status: r.status }, receipt: { closedAt: r.closedAt, changed: r.changed } };
    },
  });
  const sendEmail = defineTool({
    name: 'send_email',
    revision: 'v1',
    description: 'Send an email (the provider has no idempotency support).',
    input: z.object({ to: z.string().email(), subject: z.string().min(1).max(200), body: z.string().min(1).max(10_000) }).strict(),
    dedupeByIntent,
    target: (input) => input.to,
    async execute(input, ctx) {
      const r = await classified(() => provider.sendEmail(input, { signal: ctx.signal }));
      return { output: { messageId: r.messageId }, receipt: { messageId: r.messageId, sentAt: r.sentAt } };
    },
  });
  return [createTicket, closeTicket, sendEmail];
}

/** The worker's default tools: the demo tools against `TTC_PROVIDER_URL`. */
export default function tools(): ToolDefinition<any>[] {
  const url = process.env.TTC_PROVIDER_URL;
  if (!url) throw new Error('TTC_PROVIDER_URL must name the demo provider (for example http://127.0.0.1:4100) for the demo tools');
  return createDemoTools(url);
}
