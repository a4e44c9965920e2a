/**
 * Model adapter for the Anthropic Messages API through the official `@anthropic-ai/sdk` client.
 */
import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { resolveMaxToolInputBytes } from '../checkpoint/bounds';
import type { ModelAdapter } from './model-adapter';
import { sdkClientOptions, parseSdkTurnOptions, readSdkResponseText, requireMessages, toolResultText } from './sdk-common';
import { resolveToolSpecs, type ToolSpecs } from './tool-specs';
import { anthropicMessageToTurnResult, turnResultFromResponseText } from './response-conversion';
import type { ConversationMessage, ModelTurnInput, ModelTurnResult } from './types';
import { toolNameFromWire, toWireConversation, wireToolName } from './wire-names';

/** Options of {@link AnthropicModel}. */
export interface AnthropicModelOptions {
  /** Registry name matched against `ModelTurnInput.model`. @default 'anthropic' */
  readonly name?: string;
  /** Model id, e.g. `claude-sonnet-4-5`; a turn may override it with `modelOptions.model`. */
  readonly model: string;
  /** Tool name → description and input JSON Schema; every tool a turn offers needs one. */
  readonly tools: ToolSpecs;
  /** `max_tokens` of each request; a turn may override it with `modelOptions.maxTokens`. @default 1024 */
  readonly maxTokens?: number;
  /** Default system prompt when the turn has none. */
  readonly system?: string;
  /** Passed to `new Anthropic()`; when omitted the SDK reads `ANTHROPIC_API_KEY`. */
  readonly apiKey?: string;
  /** Passed to `new Anthropic()`, e.g. a loopback server. */
  readonly baseURL?: string;
  /** SDK retries (backoff with jitter, honouring Retry-After) before a `MODEL_TRANSIENT` error. @default 2 */
  readonly maxRetries?: number;
  /** Per-request timeout in ms. @default the SDK's (10 minutes) */
  readonly timeoutMs?: number;
  /**
   * Bound of one tool call's input in UTF-8 bytes (the arguments text and the canonical JSON);
   * a larger input fails only its call with INVALID_TOOL_INPUT (`too-large`). Use the same value
   * as the tool activities' `maxToolInputBytes`. @default 65,536
   */
  readonly maxToolInputBytes?: number;
  /** A ready client; `apiKey`, `baseURL`, `maxRetries` and `timeoutMs` are then ignored. */
  readonly client?: Anthropic;
}

/**
 * Converts the conversation to Anthropic `messages`:
 * user text → a `text` block in a user message; assistant → `text` (if non-empty) then one
 * `tool_use` block per call (an assistant message with neither is dropped: the API rejects
 * empty content); tool → a `tool_result` block (`tool_use_id`, text content, `is_error`).
 * Consecutive tool results share one user message, results first; a user text right after them
 * joins that message. Names and ids are copied as they are: {@link AnthropicModel.buildRequest}
 * first maps them to ones the API accepts (`toWireConversation`, `wire-names.ts`).
 */
export function toAnthropicMessages(messages: readonly ConversationMessage[]): Anthropic.MessageParam[] {
  const out: Array<{ role: 'user' | 'assistant'; content: Anthropic.ContentBlockParam[] }> = [];
  const lastUser = (): { role: 'user' | 'assistant'; content: Anthropic.ContentBlockParam[] } | undefined => {
    const last = out[out.length - 1];
    return last?.role === 'user' ? last : undefined;
  };
  for (const message of messages) {
    switch (message.role) {
      case 'user': {
        const block: Anthropic.ContentBlockParam = { type: 'text', text: message.text };
        const last = lastUser();
        if (last) last.content.push(block);
        else out.push({ role: 'user', content: [block] });
        break;
      }
      case 'assistant': {
        const content: Anthropic.ContentBlockParam[] = [];
        if (message.text !== '') content.push({ type: 'text', text: message.text });
        for (const call of message.toolCalls) {
          content.push({ type: 'tool_use', id: call.callId, name: call.toolName, input: call.input });
        }
        if (content.length > 0) out.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const block: Anthropic.ToolResultBlockParam = {
          type: 'tool_result',
          tool_use_id: message.callId,
          content: toolResultText(message.content),
          is_error: message.isError,
        };
        const last = lastUser();
        if (last && last.content.every((b) => b.type === 'tool_result')) last.content.push(block);
        else out.push({ role: 'user', content: [block] });
        break;
      }
    }
  }
  return out;
}

/**
 * {@link ModelAdapter} over `client.messages.create` (non-streaming). Sends the turn's tools
 * (`name`, `description`, `input_schema` from {@link ToolSpecs}), the converted conversation and
 * the system prompt; converts the response with `anthropicMessageToTurnResult`.
 *
 * Errors: `CheckpointError` INVALID_ARGUMENT (no resolved `messages`), MISSING_TOOL_SPEC,
 * INVALID_MODEL_OPTIONS, MODEL_TRANSIENT with `details.reason: 'invalid-response'` for a malformed
 * response (retryable: the next response may be fine; a call id twice in one turn included),
 * MODEL_TRANSIENT (408, 429, 529 overloaded, 5xx, connection — after the SDK's retries; carries
 * `details.retryAfterMs`), MODEL_REJECTED (other 4xx, 409 included), as `classifyHttpFailure`
 * classifies them (see `mapSdkError`). A refused tool input fails only its call (`inputError`).
 * Aborting `signal` cancels the HTTP request and rejects with `signal.reason`.
 */
export class AnthropicModel implements ModelAdapter {
  readonly name: string;
  /** The SDK client (exposed for tests and custom calls). */
  readonly client: Anthropic;
  private readonly options: AnthropicModelOptions;

  /** @throws CheckpointError INVALID_ARGUMENT for a bad `maxToolInputBytes`. */
  constructor(options: AnthropicModelOptions) {
    resolveMaxToolInputBytes(options.maxToolInputBytes);
    this.options = options;
    this.name = options.name ?? 'anthropic';
    this.client = options.client ?? new Anthropic(sdkClientOptions(options));
  }

  /**
   * The request body a turn sends (exposed for tests and logging). Tool names (offered and in
   * history) and call ids go through `wire-names.ts` so the API accepts them: valid ones are sent
   * unchanged, others as a deterministic valid form, ids unique per conversation, pairs kept.
   *
   * @throws CheckpointError INVALID_ARGUMENT when `input.messages` is absent (the model-turn
   * activity resolves the conversation before calling an adapter), MISSING_TOOL_SPEC,
   * INVALID_MODEL_OPTIONS.
   */
  buildRequest(input: ModelTurnInput): Anthropic.MessageCreateParamsNonStreaming {
    const turnOptions = parseSdkTurnOptions(input.modelOptions, this.name);
    const tools = resolveToolSpecs(input.tools, this.options.tools, this.name).map(({ name, spec }): Anthropic.Tool => ({
      name: wireToolName(name),
      ...(spec.description === undefined ? {} : { description: spec.description }),
      input_schema: spec.inputSchema as Anthropic.Tool.InputSchema,
    }));
    const system = input.system ?? this.options.system;
    return {
      model: turnOptions.model ?? this.options.model,
      max_tokens: turnOptions.maxTokens ?? this.options.maxTokens ?? 1024,
      messages: toAnthropicMessages(toWireConversation(requireMessages(input, this.name), 'anthropic')),
      ...(system === undefined ? {} : { system }),
      ...(tools.length === 0 ? {} : { tools }),
    };
  }

  async turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnResult> {
    if (signal?.aborted) throw signal.reason;
    const body = this.buildRequest(input);
    // The body as text, not as the SDK's parsed object: number literals are checked as written.
    const text = await readSdkResponseText(
      this.client.messages.create(body, signal === undefined ? {} : { signal }),
      'anthropic',
      { APIError, APIConnectionError, APIUserAbortError },
      signal,
    );
    return turnResultFromResponseText(text, anthropicMessageToTurnResult, {
      where: `anthropic response to turn ${input.turn}`,
      live: true,
      details: { provider: 'anthropic', turn: input.turn },
      maxToolInputBytes: this.options.maxToolInputBytes,
      toolNameFromWire: toolNameFromWire(input.tools),
    });
  }
}
