/**
 * A worker-local cache of conversations read by reference, so a model turn reads
 * only the messages added since the last turn instead of the whole log. Safe because a log is
 * append-only and its entries immutable: an index, once written, holds the same message
 * forever (a different one is CONVERSATION_CONFLICT), and every output was checked against its
 * reference's digest when it was first read. Bounded by bytes (least recently used logs go
 * first); a miss just reads from the store. Node side.
 */
import type { ConversationMessage } from '../../model/types';

/** Default bound of a {@link ConversationCache}: 64 MiB of message JSON. */
export const DEFAULT_CONVERSATION_CACHE_BYTES = 64 * 1024 * 1024;

interface Cached {
  readonly messages: ConversationMessage[];
  bytes: number;
}

/** Resolved conversation prefixes by log id, least recently used evicted past `maxBytes`. */
export class ConversationCache {
  private readonly logs = new Map<string, Cached>();
  private total = 0;

  /** @param maxBytes bound on the UTF-16 length × 2 of the cached messages' JSON (≥ 0; 0 disables the cache). */
  constructor(readonly maxBytes: number = DEFAULT_CONVERSATION_CACHE_BYTES) {}

  /** The first `count` messages of the log if cached (else as many as are, possibly none), as a copy. */
  prefix(logId: string, count: number): ConversationMessage[] {
    const cached = this.logs.get(logId);
    if (cached === undefined) return [];
    this.logs.delete(logId);
    this.logs.set(logId, cached); // most recently used last
    return cached.messages.slice(0, count);
  }

  /** Records that the log's first `messages.length` messages are `messages` (replacing a shorter prefix). */
  store(logId: string, messages: readonly ConversationMessage[]): void {
    const old = this.logs.get(logId);
    if (old !== undefined && old.messages.length >= messages.length) return;
    const extra = messages.slice(old?.messages.length ?? 0);
    const bytes = (old?.bytes ?? 0) + extra.reduce((sum, m) => sum + 2 * JSON.stringify(m).length, 0);
    if (old !== undefined) this.total -= old.bytes;
    this.logs.delete(logId);
    if (bytes > this.maxBytes) return;
    this.logs.set(logId, { messages: [...(old?.messages ?? []), ...extra], bytes });
    this.total += bytes;
    for (const [id, entry] of this.logs) {
      if (this.total <= this.maxBytes) break;
      this.logs.delete(id);
      this.total -= entry.bytes;
    }
  }
}
