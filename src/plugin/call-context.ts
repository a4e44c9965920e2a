/**
 * What a fenced activity can learn about its call without a changed signature
 * (docs/protocol.md#worker-plugin): the idempotency key, intent digest, call id and abort signal of
 * the call it runs under, through an accessor backed by AsyncLocalStorage, as `Context.current()`
 * is.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ToolContext } from '../activities/tools/define-tool';

const storage = new AsyncLocalStorage<ToolContext>();

/**
 * The fenced call the current activity runs under, or undefined outside a fenced activity.
 * Send `idempotencyKey` to the provider; pass `signal` to its client (aborted at the call deadline).
 */
export function fencedCallContext(): ToolContext | undefined {
  return storage.getStore();
}

/** Runs `work` with `context` as the {@link fencedCallContext}. */
export function runWithCallContext<T>(context: ToolContext, work: () => Promise<T>): Promise<T> {
  return storage.run(context, work);
}
