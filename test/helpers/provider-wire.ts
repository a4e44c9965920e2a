// Provider responses as the real APIs send them (OpenAI Chat Completions `chat.completion`,
// Anthropic Messages `message`), for loopback servers and transcript-free adapter tests.

/** One OpenAI function call; `arguments` is normally a JSON string (anything else tests the adapter). */
export interface FnCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: unknown;
}

/** A `chat.completion` with one choice: text, refusal and/or tool calls, and its finish reason. */
export function completion(message: { content?: string | null; refusal?: string | null; calls?: readonly FnCall[] }, finish_reason: string): unknown {
  return {
    id: 'chatcmpl-quirk',
    object: 'chat.completion',
    created: 1767261600,
    model: 'gpt-4o-2024-08-06',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: message.content ?? null,
          refusal: message.refusal ?? null,
          ...(message.calls ? { tool_calls: message.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
          annotations: [],
        },
        logprobs: null,
        finish_reason,
      },
    ],
    usage: { prompt_tokens: 80, completion_tokens: 20, total_tokens: 100 },
    system_fingerprint: 'fp_loopback',
  };
}

/** An Anthropic Messages `message` with these content blocks and stop reason. */
export function message(content: readonly unknown[], stop_reason: string): unknown {
  return {
    id: 'msg_01QuirkLoopback',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-6',
    content,
    stop_reason,
    stop_sequence: null,
    usage: { input_tokens: 80, output_tokens: 20 },
  };
}

/** An Anthropic `tool_use` block. */
export const toolUse = (id: string, name: string, input: unknown) => ({ type: 'tool_use', id, name, input });
