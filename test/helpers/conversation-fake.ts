// For workflow tests whose model-turn activity is a stub: what the real activity does with a
// conversation by reference, in memory. Appends each turn's `append` at `logged`
// (refusing a different message at an index already written, as the store does) and returns
// the whole conversation. Outputs by reference are resolved from `outputs` (key → value).
import type { JsonValue } from '../../src/checkpoint/types';
import type { ConversationMessage, LoggedMessage, ModelTurnInput } from '../../src/model/types';

export function conversationFake(outputs: ReadonlyMap<string, JsonValue> = new Map()) {
  const logs = new Map<string, LoggedMessage[]>();
  return {
    logs,
    /** The conversation a turn sees: `input.messages`, or the log after writing `input.conversation.append`. */
    messagesOf(input: ModelTurnInput): ConversationMessage[] {
      if (input.messages !== undefined) return [...input.messages];
      const ref = input.conversation!;
      const log = logs.get(ref.runChainId) ?? [];
      logs.set(ref.runChainId, log);
      if (log.length < ref.logged) throw new Error(`conversation log of ${ref.runChainId} holds ${log.length} messages, the turn says ${ref.logged}`);
      ref.append.forEach((message, i) => {
        const at = ref.logged + i;
        if (at < log.length && JSON.stringify(log[at]) !== JSON.stringify(message)) throw new Error(`CONVERSATION_CONFLICT at ${at}`);
        log[at] = message;
      });
      return log.slice(0, ref.logged + ref.append.length).map((m) => {
        if (m.role !== 'tool' || !('contentRef' in m)) return m as ConversationMessage;
        const content = outputs.get(m.contentRef.key);
        if (content === undefined) throw new Error(`CONVERSATION_ENTRY_MISSING ${m.contentRef.key}`);
        return { role: 'tool', callId: m.callId, toolName: m.toolName, content, isError: m.isError };
      });
    },
  };
}
