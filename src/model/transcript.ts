/**
 * Recorded model transcripts and the conversion of provider wire responses to
 * {@link ModelTurnResult}.
 *
 * A transcript is a JSON file holding the responses a provider returned, in that provider's
 * real wire format, one per model turn:
 *
 * ```json
 * {
 *   "version": 1,
 *   "id": "anthropic-ticket",
 *   "format": "anthropic-messages",          // or "openai-chat-completions"
 *   "description": "optional free text",
 *   "responses": [ <Messages API response>, <Messages API response>, … ]
 * }
 * ```
 *
 * - `anthropic-messages`: each response is a Messages API `Message` (`type: 'message'`,
 *   `role: 'assistant'`, `content` blocks `text` / `tool_use {id, name, input}` (several
 *   allowed) / `thinking` / `redacted_thinking` (ignored), `stop_reason`).
 * - `openai-chat-completions`: each response is a `chat.completion` object; `choices[0]` is used:
 *   `message.content`, `message.tool_calls[{id, type: 'function', function: {name, arguments}}]`
 *   with `arguments` a JSON string, `finish_reason`.
 *
 * Extra fields (usage, model, system_fingerprint, …) are allowed and ignored. The same
 * converters check live SDK responses (`anthropicMessageToTurnResult`,
 * `openAiCompletionToTurnResult`).
 *
 * Errors: {@link CheckpointError} `INVALID_TRANSCRIPT` for a malformed transcript (details: `transcript`,
 * `turn`, `path`), `MODEL_RESPONSE_INVALID` for a malformed live response. A tool call whose
 * input is refused (not JSON, not an object, a `__proto__`/`constructor`/`prototype` key, a
 * duplicate key, an unsafe integer, over `maxToolInputBytes`: see `checkpoint/model-input.ts`)
 * fails alone: it is returned with `input: {}` and `inputError` (INVALID_TOOL_INPUT and a reason),
 * and the rest of the turn stands. Uses `node:fs` in {@link loadTranscriptFile}: not for workflow code.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { CheckpointError, type CheckpointErrorDetails } from '../checkpoint/errors';
import { IDENTIFIER_MAX_LENGTH } from '../checkpoint/bounds';
import { checkToolInputValue, parseToolInputText, type ToolInputProblem } from '../checkpoint/model-input';
import type { JsonValue } from '../checkpoint/types';
import type { ModelTurnResult, ToolCallRequest } from './types';

/** The transcript format version this code reads and writes. */
export const TRANSCRIPT_VERSION = 1 as const;

/** The two wire formats a transcript can hold. */
export const TRANSCRIPT_FORMATS = ['anthropic-messages', 'openai-chat-completions'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

// ---------------------------------------------------------------------------------------------
// Wire schemas (the subset we read; unknown fields pass through)

const callIdSchema = z.string().min(1).max(IDENTIFIER_MAX_LENGTH.callId);
const toolNameSchema = z.string().min(1).max(IDENTIFIER_MAX_LENGTH.toolName);

const anthropicTextBlock = z.looseObject({ type: z.literal('text'), text: z.string() });
const anthropicToolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: callIdSchema,
  name: toolNameSchema,
  input: z.unknown(),
});
const anthropicThinkingBlock = z.looseObject({ type: z.literal('thinking') });
const anthropicRedactedThinkingBlock = z.looseObject({ type: z.literal('redacted_thinking') });

/** Anthropic stop reasons as of the installed SDK. */
const ANTHROPIC_STOP_REASONS = [
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
] as const;

/** Zod schema of an Anthropic Messages API response (non-streaming). */
export const anthropicMessageSchema = z.looseObject({
  id: z.string().optional(),
  type: z.literal('message'),
  role: z.literal('assistant'),
  model: z.string().optional(),
  content: z.array(
    z.discriminatedUnion('type', [anthropicTextBlock, anthropicToolUseBlock, anthropicThinkingBlock, anthropicRedactedThinkingBlock]),
  ),
  stop_reason: z.enum(ANTHROPIC_STOP_REASONS).nullable(),
});
/** An Anthropic Messages API response as this code reads it. */
export type AnthropicMessageWire = z.infer<typeof anthropicMessageSchema>;

const openAiToolCall = z.looseObject({
  id: callIdSchema,
  type: z.literal('function'),
  function: z.looseObject({ name: toolNameSchema, arguments: z.string() }),
});
const openAiChoice = z.looseObject({
  index: z.number().int().nonnegative(),
  message: z.looseObject({
    role: z.literal('assistant'),
    content: z.string().nullable().optional(),
    refusal: z.string().nullable().optional(),
    tool_calls: z.array(openAiToolCall).nullable().optional(),
  }),
  finish_reason: z.enum(['stop', 'length', 'tool_calls', 'content_filter', 'function_call']),
});

/** Zod schema of an OpenAI Chat Completions response (non-streaming). */
export const openAiCompletionSchema = z.looseObject({
  id: z.string().optional(),
  object: z.literal('chat.completion'),
  model: z.string().optional(),
  choices: z.array(openAiChoice).min(1),
});
/** An OpenAI Chat Completions response as this code reads it. */
export type OpenAiCompletionWire = z.infer<typeof openAiCompletionSchema>;

/** Zod schema of a transcript file (see the module comment). */
export const transcriptSchema = z.discriminatedUnion('format', [
  z.strictObject({
    version: z.literal(TRANSCRIPT_VERSION),
    id: z.string().min(1).max(256),
    format: z.literal('anthropic-messages'),
    description: z.string().optional(),
    responses: z.array(anthropicMessageSchema).min(1),
  }),
  z.strictObject({
    version: z.literal(TRANSCRIPT_VERSION),
    id: z.string().min(1).max(256),
    format: z.literal('openai-chat-completions'),
    description: z.string().optional(),
    responses: z.array(openAiCompletionSchema).min(1),
  }),
]);
/** A transcript file as written on disk. */
export type TranscriptFile = z.infer<typeof transcriptSchema>;

/** A validated transcript: its responses already converted, one {@link ModelTurnResult} per turn. */
export interface Transcript {
  readonly id: string;
  readonly format: TranscriptFormat;
  readonly description: string | null;
  /** Where it came from (file path or a caller-given label), for error messages. */
  readonly source: string;
  /** `turns[n]` is the result of model turn `n` (0-based). Frozen. */
  readonly turns: readonly ModelTurnResult[];
}

// ---------------------------------------------------------------------------------------------
// Conversion

/** Where a response came from, for error messages and details. */
export interface ResponseContext {
  /** Human description, e.g. `transcript "x" response 2` or `anthropic response to turn 3`. */
  readonly where: string;
  /** true for a live provider response (`MODEL_RESPONSE_INVALID`), false for a transcript (`INVALID_TRANSCRIPT`). */
  readonly live: boolean;
  readonly details?: CheckpointErrorDetails;
  /** Bound of one call's input, UTF-8 bytes (as text and as canonical JSON). @default LIMITS.defaultMaxToolInputBytes (65,536) */
  readonly maxToolInputBytes?: number;
}

function formatIssues(error: z.ZodError): { text: string; path: string } {
  const first = error.issues[0];
  const pathOf = (issue: z.core.$ZodIssue): string =>
    '$' + issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  const text = error.issues
    .slice(0, 5)
    .map((issue) => `${pathOf(issue)}: ${issue.message}`)
    .join('; ');
  return { text: error.issues.length > 5 ? `${text}; …` : text, path: first ? pathOf(first) : '$' };
}

function structureError(ctx: ResponseContext, message: string, extra: CheckpointErrorDetails = {}): CheckpointError {
  return new CheckpointError(ctx.live ? 'MODEL_RESPONSE_INVALID' : 'INVALID_TRANSCRIPT', `${ctx.where}: ${message}`, {
    ...ctx.details,
    ...extra,
  });
}

/** A refused call: input `{}` and the refusal the model sees (issue 15 items 1 and 3). */
function refusedCall(callId: string, toolName: string, found: ToolInputProblem): ToolCallRequest {
  const message = `INVALID_TOOL_INPUT: tool call ${callId} (${toolName}) input refused (${found.reason}): ${found.message}; the call was not run`;
  return { callId, toolName, input: {}, inputError: Object.freeze({ type: 'INVALID_TOOL_INPUT', reason: found.reason, message }) };
}

/** A call whose input is already a value (Anthropic `tool_use.input`), checked by `checkToolInputValue`. */
function callFromValue(callId: string, toolName: string, value: unknown, ctx: ResponseContext): ToolCallRequest {
  const found = checkToolInputValue(value, { maxBytes: ctx.maxToolInputBytes });
  return found === null ? { callId, toolName, input: value as JsonValue } : refusedCall(callId, toolName, found);
}

/** A call whose input is JSON text (OpenAI `function.arguments`), checked by `parseToolInputText`. */
function callFromText(callId: string, toolName: string, text: string, ctx: ResponseContext): ToolCallRequest {
  const parsed = parseToolInputText(text, { maxBytes: ctx.maxToolInputBytes });
  return parsed.ok ? { callId, toolName, input: parsed.value } : refusedCall(callId, toolName, parsed.problem);
}

function finish(stopReason: ModelTurnResult['stopReason'], text: string, toolCalls: ToolCallRequest[], ctx: ResponseContext): ModelTurnResult {
  const seen = new Set<string>();
  for (const call of toolCalls) {
    if (seen.has(call.callId)) throw structureError(ctx, `tool call id ${call.callId} appears twice`, { callId: call.callId });
    seen.add(call.callId);
  }
  return Object.freeze({ stopReason, text, toolCalls: Object.freeze(toolCalls.map((c) => Object.freeze(c))) });
}

/**
 * Converts one Anthropic Messages API response to a {@link ModelTurnResult}.
 *
 * `stop_reason` mapping: `tool_use` → `tool_use` (needs at least one `tool_use` block);
 * `end_turn`/`stop_sequence`/`refusal` → `end_turn` (no `tool_use` blocks allowed);
 * `max_tokens`/`model_context_window_exceeded` → `max_tokens` (tool_use blocks dropped: they may
 * be truncated); `pause_turn` and `null` are rejected (no server tools, no streaming here).
 * Text blocks are concatenated; thinking blocks are ignored.
 *
 * @throws CheckpointError INVALID_TRANSCRIPT / MODEL_RESPONSE_INVALID (per `ctx.live`) for a malformed response.
 * A `tool_use.input` that `checkToolInputValue` refuses becomes that call's `inputError` (not a
 * throw); duplicate keys cannot be seen here (the SDK or transcript parser already dropped them).
 */
export function anthropicMessageToTurnResult(raw: unknown, ctx: ResponseContext): ModelTurnResult {
  const parsed = anthropicMessageSchema.safeParse(raw);
  if (!parsed.success) {
    const { text, path } = formatIssues(parsed.error);
    throw structureError(ctx, `not an Anthropic Messages response: ${text}`, { path });
  }
  const message = parsed.data;
  let text = '';
  const calls: ToolCallRequest[] = [];
  for (const block of message.content) {
    if (block.type === 'text') text += block.text;
    else if (block.type === 'tool_use') {
      calls.push(callFromValue(block.id, block.name, block.input, ctx));
    }
  }
  switch (message.stop_reason) {
    case 'tool_use':
      if (calls.length === 0) throw structureError(ctx, `stop_reason is tool_use but there is no tool_use block`);
      return finish('tool_use', text, calls, ctx);
    case 'end_turn':
    case 'stop_sequence':
    case 'refusal':
      if (calls.length > 0) {
        throw structureError(ctx, `stop_reason is ${message.stop_reason} but there are ${calls.length} tool_use blocks`);
      }
      return finish('end_turn', text, [], ctx);
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return finish('max_tokens', text, [], ctx);
    default:
      throw structureError(ctx, `unsupported stop_reason ${JSON.stringify(message.stop_reason)}`);
  }
}

/**
 * Converts one OpenAI Chat Completions response to a {@link ModelTurnResult}, reading
 * `choices[0]`. Each `function.arguments` JSON string is parsed and must be a JSON object.
 *
 * `finish_reason` mapping: `length` → `max_tokens` (tool calls dropped, their arguments may be
 * truncated); any tool calls present → `tool_use` (OpenAI answers `stop` with tool calls when
 * `tool_choice` forces a function); `tool_calls` without calls → rejected; `stop` and
 * `content_filter` → `end_turn`; legacy `function_call` → rejected. Text is `content`, or
 * `refusal` when there is no content.
 *
 * @throws CheckpointError INVALID_TRANSCRIPT / MODEL_RESPONSE_INVALID (per `ctx.live`) for a malformed response.
 * Arguments that `parseToolInputText` refuses (not JSON, not an object, forbidden or duplicate
 * keys, an unsafe integer token, over `ctx.maxToolInputBytes`) become that call's `inputError`.
 */
export function openAiCompletionToTurnResult(raw: unknown, ctx: ResponseContext): ModelTurnResult {
  const parsed = openAiCompletionSchema.safeParse(raw);
  if (!parsed.success) {
    const { text, path } = formatIssues(parsed.error);
    throw structureError(ctx, `not an OpenAI chat.completion response: ${text}`, { path });
  }
  const choice = parsed.data.choices[0]!;
  const text = choice.message.content ?? choice.message.refusal ?? '';
  const rawCalls = choice.message.tool_calls ?? [];
  if (choice.finish_reason === 'function_call') throw structureError(ctx, `legacy finish_reason function_call is not supported`);
  if (choice.finish_reason === 'length') return finish('max_tokens', text, [], ctx);
  const calls = rawCalls.map((call) => callFromText(call.id, call.function.name, call.function.arguments, ctx));
  if (calls.length > 0) return finish('tool_use', text, calls, ctx);
  if (choice.finish_reason === 'tool_calls') throw structureError(ctx, `finish_reason is tool_calls but there are no tool_calls`);
  return finish('end_turn', text, [], ctx);
}

// ---------------------------------------------------------------------------------------------
// Transcripts

/**
 * Validates a transcript value (already JSON-parsed) and converts every response.
 * Checks, beyond each response's shape: tool-call ids are unique across the whole transcript
 * (the agent binds checkpoints to `<workflow id>/<call id>`, so a repeated id would collide).
 *
 * @param source names the transcript in errors (a file path or a label); defaults to its id.
 * Refused tool inputs are per call (`inputError`), as in the converters.
 *
 * @throws CheckpointError INVALID_TRANSCRIPT (details: `transcript`, `turn`, `path`).
 */
export function parseTranscript(value: unknown, source?: string): Transcript {
  const parsed = transcriptSchema.safeParse(value);
  const label = source ?? (typeof value === 'object' && value !== null && typeof (value as { id?: unknown }).id === 'string'
    ? (value as { id: string }).id
    : 'transcript');
  if (!parsed.success) {
    const { text, path } = formatIssues(parsed.error);
    const turnMatch = /^\$\.responses\[(\d+)\]/.exec(path);
    throw new CheckpointError('INVALID_TRANSCRIPT', `transcript ${JSON.stringify(label)} is malformed: ${text}`, {
      transcript: label,
      path,
      turn: turnMatch ? Number(turnMatch[1]) : null,
    });
  }
  const file = parsed.data;
  const name = source ?? file.id;
  const seen = new Map<string, number>();
  const turns = file.responses.map((response, turn) => {
    const ctx: ResponseContext = {
      where: `transcript ${JSON.stringify(name)} response ${turn}`,
      live: false,
      details: { transcript: name, turn },
    };
    const result =
      file.format === 'anthropic-messages' ? anthropicMessageToTurnResult(response, ctx) : openAiCompletionToTurnResult(response, ctx);
    for (const call of result.toolCalls) {
      const earlier = seen.get(call.callId);
      if (earlier !== undefined) {
        throw new CheckpointError(
          'INVALID_TRANSCRIPT',
          `${ctx.where}: tool call id ${call.callId} was already used in response ${earlier}`,
          { transcript: name, turn, callId: call.callId },
        );
      }
      seen.set(call.callId, turn);
    }
    return result;
  });
  return Object.freeze({
    id: file.id,
    format: file.format,
    description: file.description ?? null,
    source: name,
    turns: Object.freeze(turns),
  });
}

/**
 * Parses transcript JSON text.
 * @throws CheckpointError INVALID_TRANSCRIPT when the text is not JSON or not a transcript.
 */
export function parseTranscriptJson(text: string, source: string): Transcript {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new CheckpointError('INVALID_TRANSCRIPT', `transcript ${JSON.stringify(source)} is not JSON: ${(err as Error).message}`, {
      transcript: source,
      path: '$',
    }, { cause: err });
  }
  return parseTranscript(value, source);
}

/**
 * Reads and validates a transcript file (UTF-8 JSON).
 * @throws CheckpointError INVALID_TRANSCRIPT (also when the file cannot be read).
 */
export async function loadTranscriptFile(path: string): Promise<Transcript> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new CheckpointError('INVALID_TRANSCRIPT', `cannot read transcript file ${path}: ${(err as Error).message}`, { transcript: path }, { cause: err });
  }
  return parseTranscriptJson(text, path);
}
