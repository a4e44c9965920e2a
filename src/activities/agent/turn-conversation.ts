/**
 * The conversation of a model turn by reference (claim check): write the messages the
 * workflow appends to the conversation log of the run (the run chain's log when the workflow
 * gives no segments), read the whole conversation back from the logs of the runs that wrote it,
 * and resolve every tool output kept by reference, so the adapter gets plain messages. Node side.
 *
 * Memory and time: the whole conversation is read every turn (every message, every output by
 * reference; a worker's cache spares the messages it read before), so a turn costs
 * O(conversation size) reads and memory, which the model needs anyway (it is sent to the
 * provider); nothing of it passes through workflow history.
 */
import { CheckpointError } from '../../checkpoint/errors';
import type { JsonValue } from '../../checkpoint/types';
import type { ConversationMessage, ConversationRef, LoggedMessage } from '../../model/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import type { OutputRef } from '../contract/contract';
import type { ConversationCache } from './conversation-cache';
import { assertMatchesRef, messageKey, type RunConversationLogs } from './conversation-log';

/** Messages [previous part's `until` (0 for the first), `until`) in log `logId`. */
interface LogPart {
  readonly logId: string;
  readonly until: number;
}

/**
 * Appends `ref.append` at `m/<ref.logged>`, `m/<ref.logged + 1>`, … (idempotently: a retried
 * turn writes the same entries again; a tool message with `contentRef` is stored with its
 * reference) and reads `m/0 … m/<logged + append.length - 1>`. Without `ref.segments` all of it
 * is in the run chain's log (`logs.chain`). With them, `append` goes to the log of run
 * `ref.writeTo` (else the activity's own run: {@link writerOf}), the `logged` messages are read segment by segment from the
 * logs of the runs that wrote them, and the appended ones from the own log: a run reset to an
 * earlier turn writes beside the discarded branch, never over it. Each `contentRef` is resolved
 * from the chain's log (where the tool activities deliver outputs) by reading the entry its `key`
 * names and checking its `bytes` and `digest`. With a cache, only the messages it does not hold
 * are read (one read per log part); its key is the branch (the own log and the earlier segments).
 *
 * @returns the conversation as the adapter receives it (no `contentRef` left), deeply frozen:
 *   with a cache, later turns of this worker are handed the same message objects.
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a malformed `ref` (`conversation.segments`
 *   among them) or stored message; CONVERSATION_CONFLICT (non-retryable) when an index already
 *   holds another message or an output does not match its reference; CONVERSATION_ENTRY_MISSING
 *   (non-retryable) when a log lacks a message or output (pruned, or `logged` or the segments are
 *   wrong); the store's codes (STORE_UNAVAILABLE is retryable).
 */
export async function loadConversation(store: CheckpointStore, logs: RunConversationLogs, ref: ConversationRef, cache?: ConversationCache): Promise<ConversationMessage[]> {
  assertConversationRef(ref);
  const own = ref.segments === undefined ? logs.chain : logs.logOf(writerOf(logs, ref));
  if (ref.append.length > 0) {
    await store.putConversationEntries(
      own,
      ref.append.map((message, i) => ({ key: messageKey(ref.logged + i), value: message as unknown as JsonValue })),
    );
  }
  const total = ref.logged + ref.append.length;
  const parts = logParts(logs, own, ref, total);
  const cacheKey = branchKey(logs, own, ref);
  // Only what this worker has not read before (entries are immutable: see ConversationCache).
  const known = cache?.prefix(cacheKey, total) ?? [];
  const logged: LoggedMessage[] = [];
  let from = 0;
  for (const part of parts) {
    const start = Math.max(from, known.length);
    if (start < part.until) {
      const keys = Array.from({ length: part.until - start }, (_, i) => messageKey(start + i));
      logged.push(...((await store.getConversationEntries(part.logId, keys)) as unknown as LoggedMessage[]));
    }
    from = part.until;
  }
  logged.forEach(assertStoredMessage);
  const refs = logged.flatMap((m) => ('contentRef' in m ? [m.contentRef] : []));
  const outputs =
    refs.length === 0
      ? []
      : await store.getConversationEntries(
          logs.chain,
          refs.map((r) => r.key),
        );
  let next = 0;
  const read = logged.map((message): ConversationMessage => {
    if (!('contentRef' in message)) return message as ConversationMessage;
    const { contentRef, ...rest } = message;
    const content = outputs[next++]!;
    assertMatchesRef(logs.chain, contentRef, content);
    return { ...rest, content };
  });
  // Read-only from here on: the same objects may serve later turns of this worker (ConversationCache).
  for (const message of read) deepFreeze(message);
  const messages = [...known, ...read];
  cache?.store(cacheKey, messages);
  return messages;
}

/** The logs the conversation's `total` messages are read from, in order; consecutive parts of one log merged. */
function logParts(logs: RunConversationLogs, own: string, ref: ConversationRef, total: number): LogPart[] {
  const parts: LogPart[] = [...(ref.segments ?? []).map((s) => ({ logId: logs.logOf(s.runId), until: s.until })), { logId: own, until: total }];
  return parts.reduce<LogPart[]>((merged, part) => {
    const last = merged[merged.length - 1];
    if (last?.logId === part.logId) merged[merged.length - 1] = part;
    else merged.push(part);
    return merged;
  }, []);
}

/**
 * The cache key of the conversation's branch: the chain's log without segments; with them, the
 * own log and every segment but a trailing one of the writing run (which grows turn by turn), so a
 * run's turns share a key and a run forked from another never shares one with it.
 */
function branchKey(logs: RunConversationLogs, own: string, ref: ConversationRef): string {
  if (ref.segments === undefined) return logs.chain;
  const segments = ref.segments.at(-1)?.runId === writerOf(logs, ref) ? ref.segments.slice(0, -1) : ref.segments;
  return JSON.stringify([own, ...segments.map((s) => [s.runId, s.until])]);
}

/**
 * Checks a `ConversationRef` from the workflow: a non-empty `runChainId`, `logged` a
 * non-negative integer, `append` an array of message objects (each `contentRef` well formed),
 * `segments` absent or covering exactly [0, logged) (non-empty run ids, `until` increasing, the
 * last equal to `logged`).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field.
 */
export function assertConversationRef(ref: ConversationRef): void {
  if (typeof ref !== 'object' || ref === null) throw invalid('conversation must be { runChainId, logged, append }', 'conversation');
  if (typeof ref.runChainId !== 'string' || ref.runChainId.length === 0) throw invalid('conversation.runChainId must be a non-empty string', 'conversation.runChainId');
  if (!Number.isSafeInteger(ref.logged) || ref.logged < 0) throw invalid(`conversation.logged must be a non-negative integer, got ${String(ref.logged)}`, 'conversation.logged');
  if (!Array.isArray(ref.append)) throw invalid('conversation.append must be an array of messages', 'conversation.append');
  ref.append.forEach(assertStoredMessage);
  if (ref.segments !== undefined) assertSegments(ref.segments, ref.logged);
}

function assertSegments(segments: ConversationRef['segments'], logged: number): void {
  const field = 'conversation.segments';
  if (!Array.isArray(segments)) throw invalid('conversation.segments must be an array of { runId, until }', field);
  let from = 0;
  for (const [i, segment] of segments.entries()) {
    if (typeof segment !== 'object' || segment === null || typeof segment.runId !== 'string' || segment.runId.length === 0)
      throw invalid(`conversation.segments[${i}] must be { runId, until } with a non-empty runId`, field);
    if (!Number.isSafeInteger(segment.until) || segment.until <= from)
      throw invalid(`conversation.segments[${i}].until must be an integer over ${from}, got ${String(segment.until)}`, field);
    from = segment.until;
  }
  if (from !== logged) throw invalid(`conversation.segments must end at logged (${logged}), they end at ${from}`, field);
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

/** The run whose log a turn given with segments writes to: `ref.writeTo`, else the activity's own run. */
export function writerOf(logs: RunConversationLogs, ref: ConversationRef): string {
  return ref.writeTo ?? logs.runId;
}
