/**
 * What a model turn returns to the agent workflow, independent of the provider format.
 * Type-only and sandbox-safe: workflow code imports this file.
 */
import type { JsonValue } from '../checkpoint/types';

/** One tool call the model asked for in a turn. */
export interface ToolCallRequest {
  /** The provider's tool-call id (Anthropic `toolu_…`, OpenAI `call_…`). */
  readonly callId: string;
  readonly toolName: string;
  /** Parsed JSON arguments (OpenAI's JSON-string arguments are parsed by the adapter); `{}` when `inputError` is set. */
  readonly input: JsonValue;
  /**
   * Set by the adapter when it refused this call's input (issue 15 items 1 and 3: not JSON, not
   * an object, a `__proto__`/`constructor`/`prototype` key, a duplicate key, an unsafe integer,
   * over `maxToolInputBytes`). Only this call fails: the agent workflow reports it to the model
   * as a tool error `{ type, message }` and runs the rest of the turn. What the model sent is not
   * kept (`input` is `{}`).
   */
  readonly inputError?: ToolInputError;
}

/** Why an adapter refused a tool call's input; `message` is what the model sees. */
export interface ToolInputError {
  readonly type: 'INVALID_TOOL_INPUT';
  /** One of `TOOL_INPUT_REFUSALS` (`src/checkpoint/model-input.ts`), e.g. `forbidden-key`. */
  readonly reason: string;
  /** `INVALID_TOOL_INPUT: tool call <id> (<tool>) input refused (<reason>): …; the call was not run`. */
  readonly message: string;
}

/** A message in the conversation the workflow keeps and hands to the next turn. */
export type ConversationMessage =
  | { readonly role: 'user'; readonly text: string }
  | { readonly role: 'assistant'; readonly text: string; readonly toolCalls: readonly ToolCallRequest[] }
  | { readonly role: 'tool'; readonly callId: string; readonly toolName: string; readonly content: JsonValue; readonly isError: boolean };

/** Input of one model turn (the `runModelTurn` activity). */
export interface ModelTurnInput {
  /** The run's tenant (the agent workflow passes it), so a worker pinned to tenants refuses other turns before calling the model. */
  readonly tenant?: string;
  /** Which model adapter the worker uses, e.g. `scripted`, `anthropic`, `openai`. */
  readonly model: string;
  /** Opaque adapter options, e.g. the transcript id of the scripted model. */
  readonly modelOptions?: JsonValue;
  /** 0-based index of this turn within the run. */
  readonly turn: number;
  readonly messages: readonly ConversationMessage[];
  /** Names of the tools the model may call. */
  readonly tools: readonly string[];
  /**
   * Optional system prompt. Anthropic adapters send it as `system`, OpenAI adapters as a
   * leading `role: 'system'` message; the scripted model ignores it.
   */
  readonly system?: string;
}

/**
 * Output of one model turn: final text, tool calls, or both.
 *
 * Invariant (enforced by every adapter): `stopReason === 'tool_use'` exactly when
 * `toolCalls` is non-empty; call ids are unique within the turn and every `input` is a JSON
 * object. A turn cut off by the token limit is `max_tokens` with no tool calls (a truncated
 * call is never handed out).
 */
export interface ModelTurnResult {
  /**
   * `tool_use` when the model asked for tools; `end_turn` when it is done (Anthropic
   * `end_turn`/`stop_sequence`/`refusal`, OpenAI `stop`/`content_filter`); `max_tokens` when
   * it was cut off (Anthropic `max_tokens`/`model_context_window_exceeded`, OpenAI `length`).
   */
  readonly stopReason: 'tool_use' | 'end_turn' | 'max_tokens';
  readonly text: string;
  readonly toolCalls: readonly ToolCallRequest[];
}
