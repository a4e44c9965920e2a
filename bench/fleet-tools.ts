/**
 * Tools of `npm run bench:fleet`, loaded by the worker processes with `ttc worker --tools
 * bench/fleet-tools.ts`: three small tools with small outputs, so the figures show what the
 * checkpoint, the agent loop and Temporal cost, not the tools. FLEET_TOOL_MS (default 0) makes
 * each tool wait that long, as a tool calling a service would.
 */
import { z } from 'zod';
import { defineTool } from '../src/activities';

const TOOL_MS = Number(process.env.FLEET_TOOL_MS ?? 0);
const work = (): Promise<void> => (TOOL_MS > 0 ? new Promise((r) => setTimeout(r, TOOL_MS)) : Promise.resolve());

/** The tool names, in the order the fleet transcript calls them. */
export const FLEET_TOOL_NAMES = ['lookup_order', 'create_ticket', 'notify_customer'] as const;

export const tools = [
  defineTool({
    name: 'lookup_order',
    revision: 'v1',
    input: z.object({ orderId: z.string() }),
    async execute(input) {
      await work();
      return { output: { orderId: input.orderId, status: 'shipped', items: 2 } };
    },
  }),
  defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: z.object({ title: z.string(), queue: z.string() }),
    async execute(input, context) {
      await work();
      return { output: { ticketId: `T-${context.idempotencyKey.slice(0, 12)}`, queue: input.queue } };
    },
  }),
  defineTool({
    name: 'notify_customer',
    revision: 'v1',
    input: z.object({ to: z.string(), text: z.string() }),
    async execute(input) {
      await work();
      return { output: { queued: true, to: input.to } };
    },
  }),
];
