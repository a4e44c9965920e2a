/**
 * The conversation of a model turn by reference (claim check): write the messages the
 * workflow appends to the run chain's conversation log, read the whole conversation back, and
 * resolve every tool output kept by reference, so the adapter gets plain messages. Node side.
 *
 * Memory and time: the whole log is read every turn (every message, every output by reference),
 * so a turn costs O(conversation size) reads and memory, which the model needs anyway (it is
 * sent to the provider); nothing of it passes through workflow history.
 */
import { CheckpointError } from '../../checkpoint/errors';
import type { JsonValue } from '../../checkpoint/types';
import type { ConversationMessage, ConversationRef, LoggedMessage } from '../../model/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import type { OutputRef } from '../contract/contract';
import type { ConversationCache } from './conversation-cache';
import { assertMatchesRef, messageKey } from './conversation-log';

/**
 * Appends `ref.append` at `m/<ref.logged>`, `m/<ref.logged + 1>`, … (idempotently: a retried
 * turn writes the same entries again; a tool message with `contentRef` is stored with its
 * reference), reads `m/0 … m/<logged + append.length - 1>`, and resolves each `contentRef` by
 * reading the entry its `key` names and checking its `bytes` and `digest`.
 *
 * @returns the conversation as the adapter receives it (no `contentRef` left), deeply frozen:
 *   with a cache, later turns of this worker are handed the same message objects.
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a malformed `ref` or stored message;
 *   CONVERSATION_CONFLICT (non-retryable) when an index already holds another message or an
 *   output does not match its reference; CONVERSATION_ENTRY_MISSING (non-retryable) when the log
 *   lacks a message or output (pruned, or `logged` is wrong); the store's codes (STORE_UNAVAILABLE
 *   is retryable).
 */
export async function loadConversation(store: CheckpointStore, logId: string, ref: ConversationRef, cache?: ConversationCache): Promise<ConversationMessage[]> {
  assertConversationRef(ref);
  if (ref.append.length > 0) {
    await store.putConversationEntries(
      logId,
      ref.append.map((message, i) => ({ key: messageKey(ref.logged + i), value: message as unknown as JsonValue })),
    );
  }
  const total = ref.logged + ref.append.length;
  // Only what this worker has not read before (entries are immutable: see ConversationCache).
  const known = cache?.prefix(logId, total) ?? [];
  const logged = (await store.getConversationEntries(
    logId,
    Array.from({ length: total - known.length }, (_, i) => messageKey(known.length + i)),
  )) as unknown as LoggedMessage[];
  logged.forEach(assertStoredMessage);
  const refs = logged.flatMap((m) => ('contentRef' in m ? [m.contentRef] : []));
  const outputs =
    refs.length === 0
      ? []
      : await store.getConversationEntries(
          logId,
          refs.map((r) => r.key),
        );
  let next = 0;
  const read = logged.map((message): ConversationMessage => {
    if (!('contentRef' in message)) return message as ConversationMessage;
    const { contentRef, ...rest } = message;
    const content = outputs[next++]!;
    assertMatchesRef(logId, contentRef, content);
    return { ...rest, content };
  });
  // Read-only from here on: the same objects may serve later turns of this worker (ConversationCache).
  for (const message of read) deepFreeze(message);
  const messages = [...known, ...read];
  cache?.store(logId, messages);
  return messages;
}

/**
 * Checks a `ConversationRef` from the workflow: a non-empty `runChainId`, `logged` a
 * non-negative integer, `append` an array of message objects (each `contentRef` well formed).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field.
 */
export function assertConversationRef(ref: ConversationRef): void {
  if (typeof ref !== 'object' || ref === null) throw invalid('conversation must be { runChainId, logged, append }', 'conversation');
  if (typeof ref.runChainId !== 'string' || ref.runChainId.length === 0) throw invalid('conversation.runChainId must be a non-empty string', 'conversation.runChainId');
  if (!Number.isSafeInteger(ref.logged) || ref.logged < 0) throw invalid(`conversation.logged must be a non-negative integer, got ${String(ref.logged)}`, 'conversation.logged');
  if (!Array.isArray(ref.append)) throw invalid('conversation.append must be an array of messages', 'conversation.append');
  ref.append.forEach(assertStoredMessage);
}

function assertStoredMessage(message: LoggedMessage, index: number): void {
  if (typeof message !== 'object' || message === null || Array.isArray(message) || typeof (message as { role?: unknown }).role !== 'string') {
    throw invalid(`conversation message ${index} must be an object with a role`, 'conversation.append');
  }
  if ('contentRef' in message) {
    const ref = message.contentRef as Partial<OutputRef> | null;
    if (
      message.role !== 'tool' ||
      'content' in message ||
      typeof ref !== 'object' ||
      ref === null ||
      typeof ref.key !== 'string' ||
      typeof ref.digest !== 'string' ||
      !Number.isSafeInteger(ref.bytes) ||
      ref.bytes! < 0
    ) {
      throw invalid(`conversation message ${index}: contentRef must be { key, bytes, digest } on a tool message without content`, 'contentRef');
    }
  }
}

/** Freezes a JSON value and everything in it (strings need nothing), so no adapter can edit what later turns read. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

function invalid(message: string, field: string): CheckpointError {
  return new CheckpointError('INVALID_ARGUMENT', message, { field });
}
