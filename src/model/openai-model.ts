/**
 * Model adapter for the OpenAI Chat Completions API through the official `openai` client.
 */
import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import { resolveMaxToolInputBytes } from '../checkpoint/bounds';
import type { ModelAdapter } from './model-adapter';
import { sdkClientOptions, parseSdkTurnOptions, readSdkResponseText, requireMessages, toolResultText } from './sdk-common';
import { resolveToolSpecs, type ToolSpecs } from './tool-specs';
import { openAiCompletionToTurnResult, turnResultFromResponseText } from './response-conversion';
import type { ConversationMessage, ModelTurnInput, ModelTurnResult } from './types';
import { toolNameFromWire, toWireConversation, wireToolName } from './wire-names';

/** Options of {@link OpenAiModel}. */
export interface OpenAiModelOptions {
  /** Registry name matched against `ModelTurnInput.model`. @default 'openai' */
  readonly name?: string;
  /** Model id, e.g. `gpt-4.1`; a turn may override it with `modelOptions.model`. */
  readonly model: string;
  /** Tool name → description and input JSON Schema; every tool a turn offers needs one. */
  readonly tools: ToolSpecs;
  /** `max_completion_tokens`; a turn may override it with `modelOptions.maxTokens`. @default unset (model default) */
  readonly maxTokens?: number;
  /** Default system prompt when the turn has none. */
  readonly system?: string;
  /** Passed to `new OpenAI()`; when omitted the SDK reads `OPENAI_API_KEY`. */
  readonly apiKey?: string;
  /** Passed to `new OpenAI()`, including the `/v1` suffix, e.g. `http://127.0.0.1:8080/v1`. */
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
  readonly client?: OpenAI;
}

/**
 * Converts the conversation to Chat Completions `messages` (after an optional system message):
 * user → `{role: 'user', content}`; assistant → `{role: 'assistant', content (null when empty),
 * tool_calls[{id, type: 'function', function: {name, arguments: JSON text}}]}`; tool →
 * `{role: 'tool', tool_call_id, content}`. OpenAI has no error flag on tool messages, so an
 * error result whose content is a string is sent as `Error: <text>`. Names and ids are copied as
 * they are: {@link OpenAiModel.buildRequest} first maps them to ones the API accepts
 * (`toWireConversation`, `wire-names.ts`).
 */
export function toOpenAiMessages(messages: readonly ConversationMessage[], system?: string): OpenAI.ChatCompletionMessageParam[] {
  const out: OpenAI.ChatCompletionMessageParam[] = system === undefined ? [] : [{ role: 'system', content: system }];
  for (const message of messages) {
    switch (message.role) {
      case 'user':
        out.push({ role: 'user', content: message.text });
        break;
      case 'assistant':
        out.push({
          role: 'assistant',
          content: message.text === '' ? null : message.text,
          ...(message.toolCalls.length === 0
            ? {}
            : {
                tool_calls: message.toolCalls.map((call) => ({
                  id: call.callId,
                  type: 'function' as const,
                  function: { name: call.toolName, arguments: JSON.stringify(call.input) },
                })),
              }),
        });
        break;
      case 'tool': {
        const text = toolResultText(message.content);
        out.push({
          role: 'tool',
          tool_call_id: message.callId,
          content: message.isError && typeof message.content === 'string' ? `Error: ${text}` : text,
        });
        break;
      }
    }
  }
  return out;
}

/**
 * {@link ModelAdapter} over `client.chat.completions.create` (non-streaming). Sends the turn's
 * tools as `{type: 'function', function: {name, description, parameters}}`, converts the
 * response body, read as text (`turnResultFromResponseText`: number literals checked as written),
 * with `openAiCompletionToTurnResult` reading `choices[0]` (arguments parsed from JSON text).
 *
 * Errors: `CheckpointError` INVALID_ARGUMENT (no resolved `messages`), MISSING_TOOL_SPEC,
 * INVALID_MODEL_OPTIONS, MODEL_TRANSIENT with `details.reason: 'invalid-response'` for a malformed
 * response (retryable: the next response may be fine; a call id twice in one turn included),
 * MODEL_TRANSIENT (408, 429, 5xx, connection — after the SDK's retries; carries `details.retryAfterMs`),
 * MODEL_REJECTED (other 4xx, 409 included), as `classifyHttpFailure` classifies them (see
 * `mapSdkError`). Refused tool arguments fail only their call (`inputError`).
 * Aborting `signal` cancels the HTTP request and rejects with `signal.reason`.
 */
export class OpenAiModel implements ModelAdapter {
  readonly name: string;
  /** The SDK client (exposed for tests and custom calls). */
  readonly client: OpenAI;
  private readonly options: OpenAiModelOptions;

  /** @throws CheckpointError INVALID_ARGUMENT for a bad `maxToolInputBytes`. */
  constructor(options: OpenAiModelOptions) {
    resolveMaxToolInputBytes(options.maxToolInputBytes);
    this.options = options;
    this.name = options.name ?? 'openai';
    this.client = options.client ?? new OpenAI(sdkClientOptions(options));
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
  buildRequest(input: ModelTurnInput): OpenAI.ChatCompletionCreateParamsNonStreaming {
    const turnOptions = parseSdkTurnOptions(input.modelOptions, this.name);
    const tools = resolveToolSpecs(input.tools, this.options.tools, this.name).map(({ name, spec }): OpenAI.ChatCompletionFunctionTool => ({
      type: 'function',
      function: {
        name: wireToolName(name),
        ...(spec.description === undefined ? {} : { description: spec.description }),
        parameters: spec.inputSchema as OpenAI.FunctionParameters,
      },
    }));
    const maxTokens = turnOptions.maxTokens ?? this.options.maxTokens;
    return {
      model: turnOptions.model ?? this.options.model,
      messages: toOpenAiMessages(toWireConversation(requireMessages(input, this.name), 'openai'), input.system ?? this.options.system),
      ...(tools.length === 0 ? {} : { tools }),
      ...(maxTokens === undefined ? {} : { max_completion_tokens: maxTokens }),
    };
  }

  async turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnResult> {
    if (signal?.aborted) throw signal.reason;
    const body = this.buildRequest(input);
    // The body as text, not as the SDK's parsed object: number literals are checked as written,
    // also in `arguments` an OpenAI-compatible server sends as an object.
    const text = await readSdkResponseText(
      this.client.chat.completions.create(body, signal === undefined ? {} : { signal }),
      'openai',
      { APIError, APIConnectionError, APIUserAbortError },
      signal,
    );
    return turnResultFromResponseText(text, openAiCompletionToTurnResult, {
      where: `openai response to turn ${input.turn}`,
      live: true,
      details: { provider: 'openai', turn: input.turn },
      maxToolInputBytes: this.options.maxToolInputBytes,
      toolNameFromWire: toolNameFromWire(input.tools),
    });
  }
}
