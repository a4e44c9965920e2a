/**
 * A worker-local cache of conversations read by reference, so a model turn reads
 * only the messages added since the last turn instead of the whole log. Safe because a log is
 * append-only and its entries immutable: an index, once written, holds the same message
 * forever (a different one is CONVERSATION_CONFLICT), and every output was checked against its
 * reference's digest when it was first read; and because a conversation is cached under the key
 * of its branch (`loadConversation`: the logs its messages are read from), so a run forked by a
 * reset is never served the other branch's messages. Bounded by bytes (least recently used
 * conversations go first); a miss just reads from the store. Node side.
 */
import type { ConversationMessage } from '../../model/types';

/** Default bound of a {@link ConversationCache}: 64 MiB of message JSON. */
export const DEFAULT_CONVERSATION_CACHE_BYTES = 64 * 1024 * 1024;

interface Cached {
  readonly messages: ConversationMessage[];
  bytes: number;
}

/** Resolved conversation prefixes by key (a log id, or a branch's key), least recently used evicted past `maxBytes`. */
export class ConversationCache {
  private readonly logs = new Map<string, Cached>();
  private total = 0;

  /** @param maxBytes bound on the UTF-16 length × 2 of the cached messages' JSON (≥ 0; 0 disables the cache). */
  constructor(readonly maxBytes: number = DEFAULT_CONVERSATION_CACHE_BYTES) {}

  /** The first `count` messages under `key` if cached (else as many as are, possibly none), as a copy. */
  prefix(key: string, count: number): ConversationMessage[] {
    const cached = this.logs.get(key);
    if (cached === undefined) return [];
    this.logs.delete(key);
    this.logs.set(key, cached); // most recently used last
    return cached.messages.slice(0, count);
  }

  /** Records that the first `messages.length` messages under `key` are `messages` (replacing a shorter prefix). */
  store(key: string, messages: readonly ConversationMessage[]): void {
    const old = this.logs.get(key);
    if (old !== undefined && old.messages.length >= messages.length) return;
    const extra = messages.slice(old?.messages.length ?? 0);
    const bytes = (old?.bytes ?? 0) + extra.reduce((sum, m) => sum + 2 * JSON.stringify(m).length, 0);
    if (old !== undefined) this.total -= old.bytes;
    this.logs.delete(key);
    if (bytes > this.maxBytes) return;
    this.logs.set(key, { messages: [...(old?.messages ?? []), ...extra], bytes });
    this.total += bytes;
    for (const [id, entry] of this.logs) {
      if (this.total <= this.maxBytes) break;
      this.logs.delete(id);
      this.total -= entry.bytes;
    }
  }
}
