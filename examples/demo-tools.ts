/**
 * The three example tools of the demo, acting on the demo provider (examples/provider):
 * - `create_ticket`: the provider honours `Idempotency-Key` and can be looked up by key, so
 *   every crash window recovers without a duplicate;
 * - `close_ticket`: idempotent by nature (closing twice changes nothing), so it may repeat;
 * - `send_email`: no idempotency support and no lookup, so an unknown outcome pauses the run.
 */
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../src/activities';
import { ProviderClient } from './provider/client';

/** Builds the demo tools against the provider at `providerUrl` (e.g. `http://127.0.0.1:4100`). */
export function createDemoTools(providerUrl: string): ToolDefinition<any>[] {
  const provider = new ProviderClient({ baseUrl: providerUrl, timeoutMs: 5_000 });
  const createTicket = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    description: 'Open a ticket in a queue.',
    input: z.object({ title: z.string().min(1).max(200), body: z.string().min(1).max(5_000), queue: z.string().min(1).max(64) }).strict(),
    dedupesByKey: true,
    target: (input) => input.queue,
    async execute(input, ctx) {
      const r = await provider.createTicket(input, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal });
      return { output: { ticketId: r.ticketId }, receipt: { ticketId: r.ticketId, receipt: r.receipt, createdAt: r.createdAt } };
    },
    async lookup(ctx) {
      const r = await provider.findTicketByKey(ctx.idempotencyKey, { signal: ctx.signal });
      return r === null ? { found: false } : { found: true, output: { ticketId: r.ticketId }, receipt: { ticketId: r.ticketId, receipt: r.receipt, createdAt: r.createdAt } };
    },
  });
  const closeTicket = defineTool({
    name: 'close_ticket',
    revision: 'v1',
    description: 'Close a ticket by id.',
    input: z.object({ ticketId: z.string().min(1).max(64) }).strict(),
    dedupesByKey: true, // closing is idempotent by nature: a repeat changes nothing
    async execute(input, ctx) {
      const r = await provider.closeTicket(input.ticketId, { signal: ctx.signal });
      return { output: { ticketId: r.ticketId, status: r.status }, receipt: { closedAt: r.closedAt, changed: r.changed } };
    },
  });
  const sendEmail = defineTool({
    name: 'send_email',
    revision: 'v1',
    description: 'Send an email (the provider has no idempotency support).',
    input: z.object({ to: z.string().email(), subject: z.string().min(1).max(200), body: z.string().min(1).max(10_000) }).strict(),
    target: (input) => input.to,
    async execute(input, ctx) {
      const r = await provider.sendEmail(input, { signal: ctx.signal });
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
