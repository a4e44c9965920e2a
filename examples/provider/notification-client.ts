/**
 * Client of the demo provider's notifications (`notification-routes.ts`): the provider client
 * (`client.ts`, its error classes and their table) plus sending, looking up by key, listing and
 * reading the request log.
 */
import { ProviderClient, ProviderUnknownOutcomeError, toStructuredString, type CallOptions } from './client';
import type { Notification, NotificationReceipt, NotificationRequest, SendNotificationInput } from './types';

/** Options of {@link NotificationClient.send}. */
export interface SendNotificationOptions extends CallOptions {
  /** Sent as `Idempotency-Key`: the provider deduplicates. Without it every call sends one more notification. */
  readonly idempotencyKey?: string;
}

/** The provider client with the notification endpoints. */
export class NotificationClient extends ProviderClient {
  /** `POST /notifications`; `replayed` when the provider replayed an earlier send with the same key. */
  async send(input: SendNotificationInput, options: SendNotificationOptions = {}): Promise<NotificationReceipt & { readonly replayed: boolean }> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey !== undefined) headers['Idempotency-Key'] = toStructuredString(options.idempotencyKey);
    const res = await this.request('sendNotification', 'POST', '/notifications', { body: input, headers, ...options });
    return { ...receipt(res.body, 'sendNotification', res.status, options.idempotencyKey !== undefined), replayed: res.headers.get('idempotent-replayed') === 'true' };
  }

  /** `GET /notifications/by-idempotency-key/:key`: the receipt sent under `key`, or null when nothing was (proven absent). A key in flight is a transient error. */
  async findByKey(key: string, options: CallOptions = {}): Promise<NotificationReceipt | null> {
    const res = await this.request('findNotificationByKey', 'GET', `/notifications/by-idempotency-key/${encodeURIComponent(key)}`, { ...options, notFoundIsNull: true });
    return res.status === 404 ? null : receipt(res.body, 'findNotificationByKey', res.status);
  }

  /** `GET /notifications?recipientPrefix=`: notifications sent to recipients starting with `recipientPrefix`, oldest first. */
  async list(recipientPrefix: string, options: CallOptions = {}): Promise<Notification[]> {
    return (await this.request('listNotifications', 'GET', `/notifications?recipientPrefix=${encodeURIComponent(recipientPrefix)}`, options)).body as Notification[];
  }

  /** `GET /notifications/requests?recipientPrefix=`: the send and lookup requests for those recipients, in arrival order. */
  async requests(recipientPrefix: string, options: CallOptions = {}): Promise<NotificationRequest[]> {
    return (await this.request('notificationRequests', 'GET', `/notifications/requests?recipientPrefix=${encodeURIComponent(recipientPrefix)}`, options))
      .body as NotificationRequest[];
  }
}

function receipt(body: unknown, operation: string, status: number, keyed = false): NotificationReceipt {
  const b = body as Partial<NotificationReceipt> | undefined;
  if (typeof b?.notificationId !== 'string' || typeof b.recipient !== 'string' || typeof b.sentAt !== 'string') {
    throw new ProviderUnknownOutcomeError(`${operation}: ${status} response without a notification receipt`, { operation, status, sent: 'maybe', keyed });
  }
  return { notificationId: b.notificationId, recipient: b.recipient, sentAt: b.sentAt };
}
