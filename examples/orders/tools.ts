/**
 * The order example's tools (README "Effects that span steps"), against the demo
 * provider at `TTC_PROVIDER_URL`:
 * - the saga steps reserve_inventory → charge_payment → create_shipment, each declaring how its
 *   effect is undone (`compensation`: a function that releases the reservation; the
 *   refund_payment tool for a charge), from `../order-tools`;
 * - send_notifications, a batch tool: one notification per recipient through `ctx.forEachItem`,
 *   each under its own checkpoint and idempotency key, settled by the provider's lookup by key.
 * `npm run cli -- worker --models scripted --tools examples/orders/tools.ts`.
 */
import { z } from 'zod/v4';
import { defineTool, type ToolDefinition } from '../../src/activities';
import { classifyProviderError } from '../demo-tools';
import { createOrderTools } from '../order-tools';
import { NotificationClient } from '../provider/notification-client';

/** send_notifications against the provider at `url`. */
export function createNotificationTool(url: string): ToolDefinition<any> {
  const provider = new NotificationClient({ baseUrl: url, timeoutMs: 5_000 });
  const input = z.object({ recipients: z.array(z.string().min(1).max(200)).min(1).max(10_000), message: z.string().min(1).max(2_000) }).strict();
  const classified = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw classifyProviderError(error);
    }
  };
  return defineTool({
    name: 'send_notifications',
    revision: 'v1',
    description: 'Send one notification per recipient.',
    input,
    batch: true,
    dedupesByKey: true,
    keyRetentionMs: 24 * 60 * 60 * 1_000,
    async execute(args: z.infer<typeof input>, ctx) {
      const report = await ctx.forEachItem!(
        args.recipients,
        (recipient) => recipient,
        async (recipient, item) => {
          const sent = await classified(() => provider.send({ recipient, message: args.message }, { idempotencyKey: item.idempotencyKey, signal: item.signal }));
          return { output: { notificationId: sent.notificationId }, receipt: { notificationId: sent.notificationId, sentAt: sent.sentAt } };
        },
      );
      return { output: { applied: report.applied, rejected: report.rejected } };
    },
    async lookup(ctx) {
      const sent = await classified(() => provider.findByKey(ctx.idempotencyKey, { signal: ctx.signal }));
      return sent === null
        ? { found: false }
        : { found: true, output: { notificationId: sent.notificationId }, receipt: { notificationId: sent.notificationId, sentAt: sent.sentAt } };
    },
  });
}

/** The worker's tools (`ttc worker --tools examples/orders/tools.ts`). */
export default function tools(): ToolDefinition<any>[] {
  const url = process.env.TTC_PROVIDER_URL;
  if (!url) throw new Error('TTC_PROVIDER_URL must name the demo provider (for example http://127.0.0.1:4100) for the order example');
  return [...createOrderTools(url), createNotificationTool(url)];
}
