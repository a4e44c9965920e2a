/**
 * A user's plain activity with a visible effect: it "sends" a welcome email into an in-memory
 * outbox (the provider), keyed by the fenced call's idempotency key, which it reads through
 * `fencedCallContext()` without a changed signature. `findSent` is the provider's lookup by key.
 */
import { fencedCallContext } from 'temporal-tool-checkpoint/plugin';
import type { LookupResult, ToolContext } from 'temporal-tool-checkpoint';

/** Every email sent, in order: the effects a test counts. */
export const outbox: Array<{ readonly to: string; readonly messageId: string; readonly idempotencyKey: string | null }> = [];

/** The provider's send: records the email under the request's idempotency key. */
export function send(to: string, idempotencyKey: string | null): { messageId: string } {
  const messageId = `msg-${outbox.length + 1}`;
  outbox.push({ to, messageId, idempotencyKey });
  return { messageId };
}

/** Sends a welcome email (once per call when fenced). */
export async function sendWelcomeEmail(to: string): Promise<{ messageId: string }> {
  return send(to, fencedCallContext()?.idempotencyKey ?? null);
}

/** The provider's lookup by idempotency key: proves whether an earlier attempt sent the email. */
export async function findSent(ctx: ToolContext): Promise<LookupResult> {
  const sent = outbox.find((m) => m.idempotencyKey === ctx.idempotencyKey);
  return sent === undefined ? { found: false } : { found: true, output: { messageId: sent.messageId } };
}
