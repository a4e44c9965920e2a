/**
 * Tools of the crash-harness workers (test only; loaded with `ttc worker --tools crash/tools.ts`).
 * The demo tools (examples/demo-tools.ts), each with a short call deadline
 * ({@link CRASH_CALL_DEADLINE_MS}, or `TTC_CRASH_CALL_DEADLINE_MS`; an unfinished claim settles,
 * and recovery after a crash ends, that deadline + the fence's margin after the claim), plus:
 * - `create_ticket_by_key`: create_ticket *without* lookup, so reconciliation can only repeat
 *   the call with the same idempotency key (the provider deduplicates it);
 * - `create_ticket_lookup`: a ticket *with* lookup and *without* key dedupe: it creates the
 *   ticket without an `Idempotency-Key` (every request is one more ticket) and writes the key
 *   into the body as a reference, which `lookup` searches for. A second execution shows up as
 *   a second ticket with the same title;
 * - a gate (`TTC_CRASH_GATE=<file>`): the worker does not load its tools, and so does not
 *   connect or poll, until the file exists. The harness starts a standby worker ahead of time
 *   and opens the gate right after the kill, so the recovery time measures the protocol and
 *   Temporal's timeouts, not Node's start-up (`<file>.cancel` makes it exit instead);
 * - a stall (`TTC_CRASH_STALL_DIR=<dir>`, tool `TTC_CRASH_STALL_TOOL`, default create_ticket):
 *   the first call of that tool this process runs blocks the whole process (event loop,
 *   heartbeats) right after its effect, writes `<dir>/stalled.json` (`{ pid, attemptId }`), and
 *   carries on once `<dir>/release` exists: a stale attempt, like a worker frozen by a GC pause
 *   or a suspended VM;
 * - a slow request (`TTC_CRASH_REQUEST_DELAY=<tool>:<ms>`): every `execute` of that tool holds
 *   its request `ms` before sending it (a slow network or a provider queue), so the effect lands
 *   that long after the claim; the wait ends early, without sending, when `ctx.signal` aborts;
 * - a held request (`TTC_CRASH_REQUEST_HOLD=<tool>:<file>`): the first `execute` of that tool in
 *   this process writes `<file>.held` and holds its request until `<file>` exists (the harness
 *   releases it once the window it wants is open, e.g. the next attempt has arrived); the wait
 *   ends early, without sending, when `ctx.signal` aborts;
 * - the batch tools (`./batch-tools`: `send_notifications`, `…_by_key`, `…_plain`),
 *   with a held item (`TTC_CRASH_ITEM_HOLD=<tool>#<item>:<file>`: item `<item>`, 1-based, holds its
 *   request until `<file>` exists; see there), and the order tools with their compensations
 *   (`examples/order-tools.ts`: `reserve_inventory`, `charge_payment`, `refund_payment`, `create_shipment`);
 * - a deploy (`TTC_CRASH_TOOL_REVISIONS=<tool>=<revision>,…` and `TTC_CRASH_REMOVE_TOOLS=<tool>,…`):
 *   this worker runs the named tools under another revision, or does not have them at all.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool, type ToolDefinition } from '../src/activities';
import { classifyProviderError, createDemoTools } from '../examples/demo-tools';
import { ProviderClient } from '../examples/provider/client';
import { createBatchTools, parseItemHold } from './batch-tools';
import { createOrderTools } from '../examples/order-tools';

/** `callDeadlineMs` of every crash tool, ms, unless the worker's `TTC_CRASH_CALL_DEADLINE_MS` says otherwise. */
export const CRASH_CALL_DEADLINE_MS = 3_000;

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
  const all = [
    createTicket,
    byKey,
    createTicketLookup(url),
    ...demo.filter((t) => t !== createTicket),
    ...createBatchTools(url, parseItemHold(process.env.TTC_CRASH_ITEM_HOLD)),
    ...createOrderTools(url),
  ];
  const removed = list(process.env.TTC_CRASH_REMOVE_TOOLS);
  const revisions = new Map(list(process.env.TTC_CRASH_TOOL_REVISIONS).map((entry) => entry.split('=') as [string, string]));
  const delay = parseDelay(process.env.TTC_CRASH_REQUEST_DELAY);
  const hold = parseHold(process.env.TTC_CRASH_REQUEST_HOLD);
  const stallDir = process.env.TTC_CRASH_STALL_DIR;
  const stallTool = process.env.TTC_CRASH_STALL_TOOL || 'create_ticket';
  const callDeadlineMs = Number(process.env.TTC_CRASH_CALL_DEADLINE_MS || CRASH_CALL_DEADLINE_MS);
  return all
    .filter((tool) => !removed.includes(tool.name))
    .map((tool) => {
      let execute = tool.execute;
      if (delay?.tool === tool.name) execute = delayed(execute, delay.ms);
      if (hold?.tool === tool.name) execute = held(execute, hold.file);
      if (stallDir && tool.name === stallTool) execute = stallAfterEffect(execute, stallDir);
      return defineTool({ ...tool, revision: revisions.get(tool.name) ?? tool.revision, execute, callDeadlineMs });
    });
}

/** create_ticket with lookup and without key dedupe (see the header). */
function createTicketLookup(url: string): ToolDefinition<any> {
  const provider = new ProviderClient({ baseUrl: url, timeoutMs: 5_000 });
  const createTicket = createDemoTools(url).find((t) => t.name === 'create_ticket')!;
  const reference = (key: string) => `[ref ${key}]`;
  return defineTool({
    name: 'create_ticket_lookup',
    revision: 'v1',
    description: 'Open a ticket in a queue (the provider does not deduplicate; the key is written into the body and looked up there).',
    input: createTicket.input,
    target: createTicket.target,
    async execute(input: { title: string; body: string; queue: string }, ctx) {
      try {
        const r = await provider.createTicket({ ...input, body: `${input.body}\n${reference(ctx.idempotencyKey)}` }, { signal: ctx.signal });
        return { output: { ticketId: r.ticketId }, receipt: { ticketId: r.ticketId, receipt: r.receipt, createdAt: r.createdAt } };
      } catch (error) {
        throw classifyProviderError(error);
      }
    },
    async lookup(ctx) {
      try {
        const found = (await provider.listTickets({ signal: ctx.signal })).filter((t) => t.body.endsWith(reference(ctx.idempotencyKey)));
        if (found.length === 0) return { found: false };
        const t = found[0]!;
        return { found: true, output: { ticketId: t.ticketId }, receipt: { ticketId: t.ticketId, createdAt: t.createdAt, foundBy: 'lookup' } };
      } catch (error) {
        throw classifyProviderError(error);
      }
    },
  });
}

function delayed(execute: ToolDefinition<any>['execute'], ms: number): ToolDefinition<any>['execute'] {
  return async (input, ctx) => {
    // Aborted at the call deadline: nothing was sent, but the fence treats it as unknown anyway.
    await sleep(ms, undefined, { signal: ctx.signal });
    return execute(input, ctx);
  };
}

function held(execute: ToolDefinition<any>['execute'], file: string): ToolDefinition<any>['execute'] {
  let first = true;
  return async (input, ctx) => {
    if (first) {
      first = false;
      writeFileSync(`${file}.held.tmp`, JSON.stringify({ pid: process.pid, attemptId: ctx.attemptId, at: Date.now() }));
      renameSync(`${file}.held.tmp`, `${file}.held`); // never read half-written
      while (!existsSync(file)) await sleep(10, undefined, { signal: ctx.signal });
    }
    return execute(input, ctx);
  };
}

function stallAfterEffect(execute: ToolDefinition<any>['execute'], dir: string): ToolDefinition<any>['execute'] {
  let stalled = false;
  return async (input, ctx) => {
    const result = await execute(input, ctx);
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

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function parseHold(value: string | undefined): { tool: string; file: string } | null {
  if (!value) return null;
  const colon = value.indexOf(':');
  if (colon <= 0 || colon === value.length - 1) throw new Error(`TTC_CRASH_REQUEST_HOLD=${value}: expected <tool>:<file>`);
  return { tool: value.slice(0, colon), file: value.slice(colon + 1) };
}

function parseDelay(value: string | undefined): { tool: string; ms: number } | null {
  if (!value) return null;
  const [tool = '', ms = ''] = value.split(':');
  const n = Number(ms);
  if (tool === '' || !Number.isSafeInteger(n) || n < 0) throw new Error(`TTC_CRASH_REQUEST_DELAY=${value}: expected <tool>:<ms>`);
  return { tool, ms: n };
}
