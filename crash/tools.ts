/**
 * Tools of the crash-harness workers (test only; loaded with `ttc worker --tools crash/tools.ts`).
 * The demo tools (examples/demo-tools.ts) unchanged, plus:
 * - `create_ticket_by_key`: create_ticket *without* lookup, so reconciliation can only repeat
 *   the call with the same idempotency key (the provider deduplicates it);
 * - a gate (`TTC_CRASH_GATE=<file>`): the worker does not load its tools, and so does not
 *   connect or poll, until the file exists. The harness starts a standby worker ahead of time
 *   and opens the gate right after the kill, so the recovery time measures the protocol and
 *   Temporal's timeouts, not Node's start-up (`<file>.cancel` makes it exit instead);
 * - a stall (`TTC_CRASH_STALL_DIR=<dir>`): the first create_ticket this process runs blocks
 *   the whole process (event loop, heartbeats) right after its effect, writes
 *   `<dir>/stalled.json` (`{ pid, attemptId }`), and carries on once `<dir>/release` exists:
 *   a stale attempt, like a worker frozen by a GC pause or a suspended VM.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool, type ToolDefinition } from '../src/activities';
import { createDemoTools } from '../examples/demo-tools';

/** The worker's tools (waits for the gate first, when one is set). */
export default async function tools(): Promise<ToolDefinition<any>[]> {
  const gate = process.env.TTC_CRASH_GATE;
  while (gate && !existsSync(gate)) {
    if (existsSync(`${gate}.cancel`)) process.exit(0); // the repetition ended without needing this standby
    await sleep(25);
  }
  const url = process.env.TTC_PROVIDER_URL;
  if (!url) throw new Error('TTC_PROVIDER_URL must name the demo provider');
  const demo = createDemoTools(url);
  const createTicket = demo.find((t) => t.name === 'create_ticket')!;
  const byKey = defineTool({ ...createTicket, name: 'create_ticket_by_key', lookup: undefined, dedupesByKey: true });
  const stallDir = process.env.TTC_CRASH_STALL_DIR;
  const stalling = stallDir ? defineTool({ ...createTicket, execute: stallAfterEffect(createTicket, stallDir) }) : createTicket;
  return [stalling, byKey, ...demo.filter((t) => t !== createTicket)];
}

function stallAfterEffect(tool: ToolDefinition<any>, dir: string): ToolDefinition<any>['execute'] {
  let stalled = false;
  return async (input, ctx) => {
    const result = await tool.execute(input, ctx);
    if (stalled) return result;
    stalled = true;
    // Written aside and renamed, so the harness never reads a half-written file.
    writeFileSync(join(dir, 'stalled.json.tmp'), JSON.stringify({ pid: process.pid, attemptId: ctx.attemptId }));
    renameSync(join(dir, 'stalled.json.tmp'), join(dir, 'stalled.json'));
    const release = join(dir, 'release');
    const cell = new Int32Array(new SharedArrayBuffer(4));
    // Synchronous on purpose: nothing in this process runs meanwhile, heartbeats included.
    while (!existsSync(release)) Atomics.wait(cell, 0, 0, 20);
    return result;
  };
}
