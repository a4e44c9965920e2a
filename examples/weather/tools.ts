/**
 * A minimal fenced tool for the README's "write your own tool" walkthrough: `record_reading`
 * appends a weather reading to a local JSON-lines file, keyed by the idempotency key, and can
 * look a reading up by key, so a retried attempt never records a reading twice.
 *
 *   npm run cli -- worker --tools examples/weather/tools.ts
 *   npm run cli -- start examples/weather/transcript.json --wait
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod/v4';
import { defineTool } from '../../src/activities';

const LOG = process.env.WEATHER_LOG ?? '.data/weather-readings.jsonl';

function readings(): Array<{ key: string; city: string; celsius: number }> {
  return existsSync(LOG)
    ? readFileSync(LOG, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
}

export const recordReading = defineTool({
  name: 'record_reading',
  revision: 'v1',
  description: 'Record a temperature reading for a city.',
  input: z.object({ city: z.string().min(1), celsius: z.number().min(-90).max(60) }).strict(),
  // Finds an earlier effect by the stable idempotency key: proves presence or absence.
  async lookup(ctx) {
    const found = readings().find((r) => r.key === ctx.idempotencyKey);
    return found ? { found: true, output: { recorded: found.city }, receipt: { key: found.key } } : { found: false };
  },
  async execute(input, ctx) {
    appendFileSync(LOG, `${JSON.stringify({ key: ctx.idempotencyKey, ...input })}\n`);
    return { output: { recorded: input.city }, receipt: { key: ctx.idempotencyKey } };
  },
});

export const tools = [recordReading];
