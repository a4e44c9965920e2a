// tools.ts: a tool declared once, for an agent run (`ttc worker --tools tools.js`, compiled) or `ToolCheckpointPlugin({ tools })`.
import { z } from 'zod/v4';
import { defineTool } from 'temporal-tool-checkpoint';

// Stand in for your system's API: a reading saved under its idempotency key, found by it.
const saved = new Map<string, { city: string; celsius: number }>();
const findByKey = (key: string) => saved.get(key);
const save = ({ key, ...reading }: { key: string; city: string; celsius: number }) => saved.set(key, reading);

export const recordReading = defineTool({
  name: 'record_reading',
  revision: 'v1',
  input: z.object({ city: z.string().min(1), celsius: z.number() }).strict(),
  async lookup(ctx) {
    // proves presence or absence of an earlier effect
    const found = findByKey(ctx.idempotencyKey);
    return found ? { found: true, output: { recorded: found.city } } : { found: false };
  },
  async execute(input, ctx) {
    // gets a frozen, validated copy of the input
    save({ key: ctx.idempotencyKey, ...input }); // send ctx.idempotencyKey to your provider
    return { output: { recorded: input.city }, receipt: { key: ctx.idempotencyKey } };
  },
});
export const tools = [recordReading];
