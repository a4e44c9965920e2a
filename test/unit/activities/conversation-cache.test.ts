// The worker-local conversation cache: prefixes by log, bounded by bytes, least
// recently used evicted first; a miss or a too-large conversation just reads from the store.
import { ConversationCache } from '../../../src/activities/agent/conversation-cache';
import type { ConversationMessage } from '../../../src/model/types';

const user = (text: string): ConversationMessage => ({ role: 'user', text });

describe('ConversationCache', () => {
  it('returns the cached prefix up to the count asked, as a copy, and grows with longer prefixes', () => {
    const cache = new ConversationCache(1_000_000);
    cache.store('log-a', [user('a0'), user('a1')]);
    expect(cache.prefix('log-a', 1)).toEqual([user('a0')]);
    const copy = cache.prefix('log-a', 5);
    expect(copy).toEqual([user('a0'), user('a1')]);
    copy.push(user('not mine'));
    expect(cache.prefix('log-a', 5)).toHaveLength(2);
    cache.store('log-a', [user('a0'), user('a1'), user('a2')]);
    cache.store('log-a', [user('a0')]); // a shorter prefix never shrinks what is known
    expect(cache.prefix('log-a', 5)).toEqual([user('a0'), user('a1'), user('a2')]);
    expect(cache.prefix('log-b', 5)).toEqual([]);
  });

  it('evicts the least recently used log past its bound, and keeps nothing larger than the bound', () => {
    const one = 2 * JSON.stringify(user('x'.repeat(100))).length;
    const cache = new ConversationCache(2 * one);
    cache.store('a', [user('x'.repeat(100))]);
    cache.store('b', [user('x'.repeat(100))]);
    cache.prefix('a', 1); // a is now the most recently used
    cache.store('c', [user('x'.repeat(100))]);
    expect(cache.prefix('b', 1)).toEqual([]);
    expect(cache.prefix('a', 1)).toHaveLength(1);
    expect(cache.prefix('c', 1)).toHaveLength(1);
    cache.store('d', [user('x'.repeat(1_000))]);
    expect(cache.prefix('d', 1)).toEqual([]);
    expect(new ConversationCache(0).prefix('a', 1)).toEqual([]);
  });
});
