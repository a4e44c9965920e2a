/**
 * Tool names and tool-call ids as the provider APIs accept them in a request ("model
 * responses as they really arrive").
 *
 * The conversation keeps what the model really sent (a made-up `multi_tool_use.parallel`, an
 * Ollama-style `list_dir:0` id repeated every turn, an id from another provider), because the
 * agent workflow answers those calls (UNKNOWN_TOOL, …) under their real names. The APIs refuse
 * such names and ids when they are sent back in history, and the run would fail with a 400 on
 * the next turn. So the SDK adapters convert the conversation through {@link toWireConversation}
 * just before building a request:
 *
 * - tool names must match {@link WIRE_TOOL_NAME_PATTERN} (`^[a-zA-Z0-9_-]{1,64}$`: Anthropic
 *   Messages `tools[].name` and OpenAI Chat Completions `function.name`, per their API references);
 * - Anthropic `tool_use.id` / `tool_result.tool_use_id` must match `^[a-zA-Z0-9_-]+$` (Messages API
 *   reference); OpenAI refuses `tool_calls[].id` longer than 40 characters
 *   (`string_above_max_length`, observed, undocumented), so ids use the same characters capped at
 *   {@link ANTHROPIC_ID_MAX_LENGTH} (64) and {@link OPENAI_ID_MAX_LENGTH} (40);
 * - ids must be unique within a request (both APIs pair a result with its call by id).
 *
 * What is valid passes unchanged ({@link wireToken} is the identity on it); what is not becomes
 * `<original with each other character replaced by _, cut>_<10 hex of SHA-256(original)>`, so
 * the result is deterministic, valid, and two different originals do not collide in practice
 * (40-bit hash). The same mapping is applied to an assistant's calls and to their tool results,
 * so pairs still match. Nothing is unpacked: `multi_tool_use.parallel` stays one call, renamed.
 *
 * Node only (`node:crypto`): used by the SDK adapters, never by workflow code.
 */
import { createHash } from 'node:crypto';
import type { ConversationMessage, ToolCallRequest } from './types';

/** Tool names both providers accept (Anthropic `tools[].name`, OpenAI `function.name`). */
export const WIRE_TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
/** Longest tool name the providers accept. */
export const TOOL_NAME_MAX_LENGTH = 64;
/** Characters of an Anthropic `tool_use.id` (Messages API reference); ids here also use it for OpenAI. */
export const WIRE_ID_PATTERN = /^[a-zA-Z0-9_-]+$/;
/** Cap of a tool-call id sent to Anthropic (no documented limit; real ids are about 30 characters). */
export const ANTHROPIC_ID_MAX_LENGTH = 64;
/** OpenAI refuses a `tool_calls[].id` over 40 characters (`string_above_max_length`). */
export const OPENAI_ID_MAX_LENGTH = 40;

const HASH_HEX = 10;
const ALLOWED = /^[a-zA-Z0-9_-]+$/;

/**
 * A token (tool name or call id) as the provider accepts it: `original` when it already
 * matches `^[a-zA-Z0-9_-]{1,maxLength}$`, else `sanitized + '_' + hash` where `sanitized` is
 * `original` with every other UTF-16 code unit replaced by `_`, cut to leave room for the hash,
 * and `hash` the first 10 hex digits of SHA-256 of `original` (UTF-8; `salt` appended after a
 * NUL when given, to derive further distinct tokens for one original).
 *
 * @param maxLength the provider's cap (≥ 12, room for `_` + the hash and one character).
 * @returns a string matching `^[a-zA-Z0-9_-]{1,maxLength}$`.
 */
export function wireToken(original: string, maxLength: number, salt?: string): string {
  if (salt === undefined && original.length <= maxLength && ALLOWED.test(original)) return original;
  const hash = createHash('sha256')
    .update(salt === undefined ? original : `${original}\u0000${salt}`, 'utf8')
    .digest('hex')
    .slice(0, HASH_HEX);
  const room = maxLength - HASH_HEX - 1;
  const sanitized = original.slice(0, room).replace(/[^a-zA-Z0-9_-]/g, '_');
  return `${sanitized}_${hash}`;
}

/** A tool name the providers accept (see {@link wireToken}); the identity on valid names. */
export function wireToolName(name: string): string {
  return wireToken(name, TOOL_NAME_MAX_LENGTH);
}

/** Which provider a conversation is converted for: it decides the id length cap. */
export type WireProvider = 'anthropic' | 'openai';

/** The id length cap of a provider. */
export function idMaxLength(provider: WireProvider): number {
  return provider === 'openai' ? OPENAI_ID_MAX_LENGTH : ANTHROPIC_ID_MAX_LENGTH;
}

/**
 * The conversation with every tool name and call id replaced by one the provider accepts, pairs
 * kept: an assistant's call and the tool result that answers it get the same wire id.
 *
 * Ids are made unique per conversation: the first use of an id gets {@link wireToken}(id), a
 * later assistant message reusing it (providers that number calls per turn: `ollama_0`,
 * `list_dir:0`) gets `wireToken(id, cap, '<n>')` for the n-th reuse, skipping any token already
 * used. Tool results are paired with calls first-in first-out per original id (the workflow
 * answers each turn's calls after that turn, in order); a result with no open call keeps the id of
 * the latest call with that original id, or `wireToken(id)` when there is none. The conversation
 * is append-only, so earlier messages map the same way in every later turn.
 *
 * Pure and deterministic; the input is not modified.
 */
export function toWireConversation(messages: readonly ConversationMessage[], provider: WireProvider): ConversationMessage[] {
  const cap = idMaxLength(provider);
  const used = new Set<string>();
  const open = new Map<string, string[]>();
  const latest = new Map<string, string>();
  const assign = (original: string): string => {
    let token = wireToken(original, cap);
    for (let n = 1; used.has(token); n++) token = wireToken(original, cap, String(n));
    used.add(token);
    const queue = open.get(original);
    if (queue === undefined) open.set(original, [token]);
    else queue.push(token);
    latest.set(original, token);
    return token;
  };
  return messages.map((message): ConversationMessage => {
    switch (message.role) {
      case 'user':
        return message;
      case 'assistant':
        return {
          ...message,
          toolCalls: message.toolCalls.map((call): ToolCallRequest => ({ ...call, callId: assign(call.callId), toolName: wireToolName(call.toolName) })),
        };
      case 'tool': {
        const queue = open.get(message.callId);
        const callId = queue?.shift() ?? latest.get(message.callId) ?? wireToken(message.callId, cap);
        return { ...message, callId, toolName: wireToolName(message.toolName) };
      }
    }
  });
}

/**
 * Maps tool names back from the wire: the names a turn offered (`offered`, the real names) are
 * sent as {@link wireToolName}s; a call that names one of those wire forms is given back its real
 * name, any other name (made up by the model) passes through unchanged for the workflow to answer
 * (UNKNOWN_TOOL).
 */
export function toolNameFromWire(offered: readonly string[]): (wireName: string) => string {
  const back = new Map<string, string>();
  for (const name of offered) {
    const wire = wireToolName(name);
    if (wire !== name) back.set(wire, name);
  }
  return (wireName) => back.get(wireName) ?? wireName;
}
