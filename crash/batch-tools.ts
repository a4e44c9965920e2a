/**
 * The crash harness's batch tools (the batch example: "send 100 notifications in batches"):
 * one call sends one notification per recipient through `ctx.forEachItem`, each item under its
 * own checkpoint and idempotency key.
 * - `send_notifications`: the provider deduplicates the item's key and the item can be looked
 *   up by it (an interrupted item is settled by its lookup);
 * - `send_notifications_by_key`: key dedupe only (an interrupted item is repeated with its key);
 * - `send_notifications_plain`: neither; the items are sent without a key, so every send is one
 *   more notification (an interrupted item pauses for a person).
 * A held item (`hold`): the first time this process applies item `index` (1-based) of `tool`, it
 * writes `<file>.held` and waits until `<file>` exists before sending; once the batch call's own
 * `ctx.signal` aborts (the activity learned of a cancellation) it writes `<file>.cancel-seen`.
 * The output counts where each item's outcome came from in this attempt (`sources`).
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '../src/activities';
import { classifyProviderError } from '../examples/demo-tools';
import { NotificationClient } from '../examples/provider/notification-client';

/** An item whose request the harness holds (see the header). */
export interface ItemHold {
  readonly tool: string;
  /** 1-based position of the item in the batch. */
  readonly index: number;
  readonly file: string;
}

/** The three batch tools against the provider at `url`. */
export function createBatchTools(url: string, hold: ItemHold | null): ToolDefinition<any>[] {
  const provider = new NotificationClient({ baseUrl: url, timeoutMs: 5_000 });
  const input = z.object({ recipients: z.array(z.string().min(1).max(200)).min(1).max(1_000), message: z.string().min(1).max(2_000) }).strict();
  const make = (name: string, mode: 'lookup' | 'by-key' | 'plain') => {
    let held = false;
    return defineTool({
      name,
      revision: 'v1',
      description: `Send one notification per recipient (${mode === 'plain' ? 'the provider has no idempotency support' : mode === 'lookup' ? 'keyed, looked up by key' : 'keyed, deduplicated by key'}).`,
      input,
      batch: true,
      ...(mode === 'plain' ? {} : { dedupesByKey: true, keyRetentionMs: 24 * 60 * 60 * 1_000 }),
      async execute(args: z.infer<typeof input>, ctx) {
        const report = await ctx.forEachItem!(
          args.recipients,
          (recipient) => recipient,
          async (recipient, item) => {
            if (!held && hold?.tool === name && item.item?.index === hold.index - 1) {
              held = true;
              await holdRequest(hold.file, ctx.signal);
            }
            try {
              const r = await provider.send({ recipient, message: args.message }, { signal: item.signal, ...(mode === 'plain' ? {} : { idempotencyKey: item.idempotencyKey }) });
              return { output: { notificationId: r.notificationId }, receipt: { notificationId: r.notificationId, sentAt: r.sentAt } };
            } catch (error) {
              throw classifyProviderError(error);
            }
          },
        );
        const sources: Record<string, number> = {};
        for (const r of report.items) sources[r.source] = (sources[r.source] ?? 0) + 1;
        return { output: { applied: report.applied, rejected: report.rejected, sources } };
      },
      ...(mode === 'lookup'
        ? {
            async lookup(ctx) {
              try {
                const r = await provider.findByKey(ctx.idempotencyKey, { signal: ctx.signal });
                return r === null
                  ? { found: false }
                  : { found: true, output: { notificationId: r.notificationId }, receipt: { notificationId: r.notificationId, sentAt: r.sentAt, foundBy: 'lookup' } };
              } catch (error) {
                throw classifyProviderError(error);
              }
            },
          }
        : {}),
    });
  };
  return [make('send_notifications', 'lookup'), make('send_notifications_by_key', 'by-key'), make('send_notifications_plain', 'plain')];
}

/** Holds an item's request until the harness releases it (see the header); marks when the batch call's signal aborted. */
async function holdRequest(file: string, callSignal: AbortSignal): Promise<void> {
  const mark = (suffix: string) => {
    writeFileSync(`${file}${suffix}.tmp`, JSON.stringify({ pid: process.pid, at: Date.now() }));
    renameSync(`${file}${suffix}.tmp`, `${file}${suffix}`); // never read half-written
  };
  const onAbort = () => mark('.cancel-seen');
  if (callSignal.aborted) onAbort();
  else callSignal.addEventListener('abort', onAbort, { once: true });
  mark('.held');
  while (!existsSync(file)) await sleep(10);
}

/** Parses `TTC_CRASH_ITEM_HOLD=<tool>#<item>:<file>` (item 1-based). @throws Error for any other shape. */
export function parseItemHold(value: string | undefined): ItemHold | null {
  if (!value) return null;
  const match = /^([^#:]+)#(\d+):(.+)$/.exec(value);
  if (!match || Number(match[2]) < 1) throw new Error(`TTC_CRASH_ITEM_HOLD=${value}: expected <tool>#<item>:<file>, item from 1`);
  return { tool: match[1]!, index: Number(match[2]), file: match[3]! };
}
