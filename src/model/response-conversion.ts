/**
 * The conversion of provider wire responses (`./wire-responses`) to {@link ModelTurnResult}: for
 * recorded transcripts (`./transcript`) and live SDK responses (`anthropicMessageToTurnResult`,
 * `openAiCompletionToTurnResult`).
 *
 * - `anthropic-messages`: each response is a Messages API `Message` (`type: 'message'`,
 *   `role: 'assistant'`, `content` blocks `text` / `tool_use {id, name, input}` (several
 *   allowed); any other block type (`thinking`, `redacted_thinking`, server tool blocks such as
 *   `server_tool_use`, …) is ignored; `stop_reason`).
 * - `openai-chat-completions`: each response is a `chat.completion` object; `choices[0]` is used:
 *   `message.content`, `message.refusal`, `message.tool_calls[{id, type: 'function', function:
 *   {name, arguments}}]` with `arguments` a JSON string (`""` or blanks mean `{}`; a JSON object
 *   instead of a string, as some OpenAI-compatible servers send, is taken as the input),
 *   `finish_reason`.
 *
 * Every stop reason of {@link ModelTurnResult} is scripted in the provider's own terms (see the
 * converters for the whole mapping), and `droppedToolCalls` is the number of tool calls such a
 * response holds:
 *
 * | result `stopReason` | `anthropic-messages` `stop_reason`      | `openai-chat-completions`                          |
 * |---------------------|-----------------------------------------|----------------------------------------------------|
 * | `tool_use`          | `tool_use`                              | any `tool_calls` (finish `tool_calls` or `stop`)   |
 * | `end_turn`          | `end_turn`, `stop_sequence`             | finish `stop`, no `tool_calls`                     |
 * | `max_tokens`        | `max_tokens`, `model_context_window_exceeded` | finish `length`                              |
 * | `refusal`           | `refusal`                               | finish `content_filter`, or a non-null `refusal`   |
 * | `pause_turn`        | `pause_turn`                            | —                                                  |
 *
 * e.g. a refusal that dropped two calls: `{"type":"message","role":"assistant","content":[two
 * tool_use blocks],"stop_reason":"refusal"}` → `{stopReason:'refusal', toolCalls:[], droppedToolCalls:2}`.
 *
 * Extra fields (usage, model, system_fingerprint, …) are allowed and ignored.
 *
 * Errors: {@link CheckpointError} `INVALID_TRANSCRIPT` (not retryable) for a malformed transcript
 * response (details: `transcript`, `turn`, `path`); for a malformed live response (bad shape,
 * unknown stop reason, a call id twice in one turn, …) `MODEL_TRANSIENT` with `details.reason:
 * 'invalid-response'` (retryable: the next response may be fine). A tool call whose
 * input is refused (not JSON, not an object, a `__proto__`/`constructor`/`prototype` key, a
 * duplicate key, a number literal JSON reads changed, over `maxToolInputBytes`: see `checkpoint/model-input.ts`)
 * fails alone: it is returned with `input: {}` and `inputError` (INVALID_TOOL_INPUT and a reason),
 * and the rest of the turn stands. Tool names are passed through (an unknown or made-up one is the
 * workflow's to answer, UNKNOWN_TOOL).
 */
import type { z } from 'zod/v4';
import { CheckpointError, type CheckpointErrorDetails } from '../checkpoint/errors';
import { checkToolInputValue, parseToolInputText, textChecks, type ToolInputProblem } from '../checkpoint/model-input';
import { maxNestingDepth, scanJsonText, type JsonTextFinding } from '../checkpoint/json-text';
import type { JsonValue } from '../checkpoint/types';
import type { ModelStopReason, ModelTurnResult, ToolCallRequest } from './types';
import { anthropicMessageSchema, openAiCompletionSchema } from './wire-responses';

/** Where a response came from, for error messages and details. */
export interface ResponseContext {
  /** Human description, e.g. `transcript "x" response 2` or `anthropic response to turn 3`. */
  readonly where: string;
  /**
   * true for a live provider response (a malformed one is `MODEL_TRANSIENT`, `details.reason:
   * 'invalid-response'`: retryable), false for a transcript (`INVALID_TRANSCRIPT`: not retryable).
   */
  readonly live: boolean;
  readonly details?: CheckpointErrorDetails;
  /** Bound of one call's input, UTF-8 bytes (as text and as canonical JSON). @default LIMITS.defaultMaxToolInputBytes (65,536) */
  readonly maxToolInputBytes?: number;
  /**
   * Maps a tool name as the provider sent it back to the workflow's name (the SDK adapters send
   * offered tools under `wireToolName`s, see `wire-names.ts`). @default identity
   */
  readonly toolNameFromWire?: (name: string) => string;
  /**
   * What `JSON.parse` hid in the text this response was parsed from ({@link textFindingsOf}:
   * repeated member names, number literals it changed), paths relative to the response
   * (`$.content[1].input.amount`): a call whose input holds one is refused (`duplicate-key`,
   * `inexact-number`). A response that came as a value has none. @default none
   */
  readonly textFindings?: readonly JsonTextFinding[];
}

/** `details.reason` of the `MODEL_TRANSIENT` error a malformed live response raises. */
export const INVALID_RESPONSE_REASON = 'invalid-response';

/** The first issues of a zod error as one line (at most five), and the path of the first. */
export function formatIssues(error: z.ZodError): { text: string; path: string } {
  const first = error.issues[0];
  const pathOf = (issue: z.core.$ZodIssue): string => '$' + issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  const text = error.issues
    .slice(0, 5)
    .map((issue) => `${pathOf(issue)}: ${issue.message}`)
    .join('; ');
  return { text: error.issues.length > 5 ? `${text}; …` : text, path: first ? pathOf(first) : '$' };
}

function structureError(ctx: ResponseContext, message: string, extra: CheckpointErrorDetails = {}): CheckpointError {
  if (ctx.live) {
    // Retryable: a provider's next response to the same request may well be valid.
    return new CheckpointError('MODEL_TRANSIENT', `${ctx.where}: invalid response: ${message}`, {
      ...ctx.details,
      ...extra,
      reason: INVALID_RESPONSE_REASON,
    });
  }
  return new CheckpointError('INVALID_TRANSCRIPT', `${ctx.where}: ${message}`, { ...ctx.details, ...extra });
}

/** A refused call: input `{}` and the refusal the model sees. */
function refusedCall(callId: string, toolName: string, found: ToolInputProblem): ToolCallRequest {
  const message = `INVALID_TOOL_INPUT: tool call ${callId} (${toolName}) input refused (${found.reason}): ${found.message}; the call was not run`;
  return { callId, toolName, input: {}, inputError: Object.freeze({ type: 'INVALID_TOOL_INPUT', reason: found.reason, message }) };
}

/**
 * A call whose input is already a value (Anthropic `tool_use.input`), checked by
 * `checkToolInputValue` with what the response's text held under the input (`findings`, see
 * {@link findingsByInput}).
 */
function callFromValue(callId: string, toolName: string, value: unknown, ctx: ResponseContext, findings: readonly JsonTextFinding[]): ToolCallRequest {
  const found = checkToolInputValue(value, { maxBytes: ctx.maxToolInputBytes, ...textChecks(findings) });
  return found === null ? { callId, toolName, input: value as JsonValue } : refusedCall(callId, toolName, found);
}

/**
 * What the response's text held under each input (`inputPaths`: `$.content[1].input`), paths
 * made relative to it (`$.a`), found by walking each finding's path up (findings × nesting). A
 * repeated member outside every input (a second `input`, `name`, `arguments` or `tool_calls`) is a
 * structure error: JSON keeps the last, so what runs could differ from what another reader of the
 * same response sees.
 */
function findingsByInput(ctx: ResponseContext, inputPaths: readonly string[]): Map<string, JsonTextFinding[]> {
  const byInput = new Map<string, JsonTextFinding[]>(inputPaths.map((at) => [at, []]));
  for (const finding of ctx.textFindings ?? []) {
    let at = finding.path;
    while (at.length > 1 && !byInput.has(at)) at = at.slice(0, Math.max(at.lastIndexOf('.'), at.lastIndexOf('['), 1));
    const under = byInput.get(at);
    if (under !== undefined) under.push({ ...finding, path: `$${finding.path.slice(at.length)}` });
    else if (finding.kind === 'duplicate-key')
      throw structureError(ctx, `member name ${JSON.stringify(finding.key.slice(0, 64))} appears more than once in the object at ${finding.path.slice(0, 200)}`, {
        path: finding.path.slice(0, 200),
      });
  }
  return byInput;
}

/**
 * A call whose input is OpenAI `function.arguments`: JSON text checked by `parseToolInputText`;
 * an empty or blank string is `{}` (OpenAI sends `""` for a tool without parameters); a
 * non-string (some OpenAI-compatible servers send the object itself) is checked as a value.
 */
function callFromArguments(callId: string, toolName: string, args: unknown, ctx: ResponseContext, findings: readonly JsonTextFinding[]): ToolCallRequest {
  if (typeof args !== 'string') return callFromValue(callId, toolName, args, ctx, findings);
  if (args.trim() === '') return { callId, toolName, input: {} };
  const parsed = parseToolInputText(args, { maxBytes: ctx.maxToolInputBytes });
  return parsed.ok ? { callId, toolName, input: parsed.value } : refusedCall(callId, toolName, parsed.problem);
}

/** The findings of `found` under `at`, their paths made relative to it (`$.content[1].input.a` under `$.content[1].input` → `$.a`). */
export function findingsUnder(found: readonly JsonTextFinding[] | undefined, at: string): JsonTextFinding[] {
  if (found === undefined || found.length === 0) return [];
  return found.filter((f) => f.path === at || f.path.startsWith(`${at}.`) || f.path.startsWith(`${at}[`)).map((f) => ({ ...f, path: `$${f.path.slice(at.length)}` }));
}

/** Deepest nesting of a response's text that is scanned for literals (the scan's parser recurses). */
export const MAX_SCANNED_DEPTH = 128;

/**
 * What `JSON.parse` hides in valid JSON `text`: every repeated member name and every number
 * literal it changes (`scanJsonText`).
 *
 * @returns null when the text nests deeper than {@link MAX_SCANNED_DEPTH} (not scanned: the
 * caller refuses the response).
 */
export function textFindingsOf(text: string): JsonTextFinding[] | null {
  if (maxNestingDepth(text) > MAX_SCANNED_DEPTH) return null;
  return scanJsonText(text, { numbers: true, everyDuplicate: true });
}

/**
 * The frozen result. Call ids must be unique within the turn (else a structure error: the
 * tool results could not be paired); `dropped` > 0 is reported as `droppedToolCalls`.
 */
function finish(stopReason: ModelStopReason, text: string, toolCalls: ToolCallRequest[], ctx: ResponseContext, dropped = 0): ModelTurnResult {
  const seen = new Set<string>();
  for (const call of toolCalls) {
    if (seen.has(call.callId)) throw structureError(ctx, `tool call id ${call.callId} appears twice`, { callId: call.callId });
    seen.add(call.callId);
  }
  return Object.freeze({
    stopReason,
    text,
    toolCalls: Object.freeze(toolCalls.map((c) => Object.freeze(c))),
    ...(dropped > 0 ? { droppedToolCalls: dropped } : {}),
  });
}

/**
 * Converts one Anthropic Messages API response to a {@link ModelTurnResult}.
 *
 * `stop_reason` mapping (Messages API reference, "stop reasons"):
 * - `tool_use` → `tool_use` (needs at least one `tool_use` block);
 * - `end_turn`/`stop_sequence` → `end_turn` (no `tool_use` blocks allowed);
 * - `max_tokens`/`model_context_window_exceeded` → `max_tokens`: `tool_use` blocks dropped (they
 *   may be truncated) and counted in `droppedToolCalls`;
 * - `refusal` → `refusal`: `tool_use` blocks dropped and counted (nothing of a refused answer runs);
 * - `pause_turn` → `pause_turn`: text kept, `tool_use` blocks dropped and counted; the caller sends
 *   the conversation back and the model continues;
 * - `null` (streaming only) → rejected.
 * Text blocks are concatenated; every other block type is ignored. Tool names pass through
 * `ctx.toolNameFromWire`.
 *
 * @throws CheckpointError INVALID_TRANSCRIPT (transcript) / MODEL_TRANSIENT with `details.reason:
 * 'invalid-response'` (live) for a malformed response, including a call id twice in the turn.
 * A `tool_use.input` that `checkToolInputValue` refuses becomes that call's `inputError` (not a
 * throw); repeated keys and changed number literals are seen only in the text
 * (`ctx.textFindings`, see {@link turnResultFromResponseText}).
 */
export function anthropicMessageToTurnResult(raw: unknown, ctx: ResponseContext): ModelTurnResult {
  const parsed = anthropicMessageSchema.safeParse(raw);
  if (!parsed.success) {
    const { text, path } = formatIssues(parsed.error);
    throw structureError(ctx, `not an Anthropic Messages response: ${text}`, { path });
  }
  const message = parsed.data;
  const nameOf = ctx.toolNameFromWire ?? ((name: string) => name);
  let text = '';
  const blocks: Array<{ id: string; name: string; input: unknown; at: string }> = [];
  message.content.forEach((block, i) => {
    // The schema checked text and tool_use blocks (anthropicContent).
    if (block.type === 'text') text += block['text'] as string;
    else if (block.type === 'tool_use') blocks.push({ id: block['id'] as string, name: block['name'] as string, input: block['input'], at: `$.content[${i}].input` });
  });
  const findings = findingsByInput(
    ctx,
    blocks.map((b) => b.at),
  );
  const calls = (): ToolCallRequest[] => blocks.map((b) => callFromValue(b.id, nameOf(b.name), b.input, ctx, findings.get(b.at)!));
  switch (message.stop_reason) {
    case 'tool_use':
      if (blocks.length === 0) throw structureError(ctx, `stop_reason is tool_use but there is no tool_use block`);
      return finish('tool_use', text, calls(), ctx);
    case 'end_turn':
    case 'stop_sequence':
      if (blocks.length > 0) {
        throw structureError(ctx, `stop_reason is ${message.stop_reason} but there are ${blocks.length} tool_use blocks`);
      }
      return finish('end_turn', text, [], ctx);
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return finish('max_tokens', text, [], ctx, blocks.length);
    case 'refusal':
      return finish('refusal', text, [], ctx, blocks.length);
    case 'pause_turn':
      return finish('pause_turn', text, [], ctx, blocks.length);
    default:
      throw structureError(ctx, `unsupported stop_reason ${JSON.stringify(message.stop_reason)}`);
  }
}

/**
 * Converts one provider response from its JSON text (the body as received) with `convert`
 * ({@link anthropicMessageToTurnResult}, {@link openAiCompletionToTurnResult}), passing what
 * `JSON.parse` hid ({@link textFindingsOf}), so a call input holding a repeated key or a number
 * literal read as another number is refused (`duplicate-key`, `inexact-number`), whether it came
 * as a value or as an object where text was expected.
 *
 * @throws CheckpointError as `convert`, also for text that is not JSON or nests deeper than
 * {@link MAX_SCANNED_DEPTH}.
 */
export function turnResultFromResponseText(text: string, convert: (raw: unknown, ctx: ResponseContext) => ModelTurnResult, ctx: ResponseContext): ModelTurnResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw structureError(ctx, `not JSON: ${(error as Error).message}`);
  }
  const textFindings = textFindingsOf(text);
  if (textFindings === null) throw structureError(ctx, `nests deeper than ${MAX_SCANNED_DEPTH} levels`);
  return convert(raw, { ...ctx, textFindings });
}

/**
 * Converts one OpenAI Chat Completions response to a {@link ModelTurnResult}, reading
 * `choices[0]`.
 *
 * Mapping (Chat Completions reference, `finish_reason` and `message.refusal`), in this order:
 * - `function_call` (legacy) → rejected;
 * - `length` → `max_tokens`: tool calls dropped (their arguments may be cut) and counted in
 *   `droppedToolCalls`;
 * - `content_filter`, or a non-null `message.refusal` → `refusal`: tool calls dropped and counted;
 * - any tool calls → `tool_use` (OpenAI answers `stop` with tool calls when `tool_choice`
 *   forces a function); `tool_calls` without calls → rejected;
 * - `stop` → `end_turn`.
 * Text is `content`, or `refusal` when there is no content. Tool names pass through
 * `ctx.toolNameFromWire`.
 *
 * Per call, never for the whole turn: `arguments` `""` or blank → `{}` (a tool without
 * parameters); arguments that `parseToolInputText` refuses (not JSON, not an object, forbidden or
 * duplicate keys, an inexact number literal, over `ctx.maxToolInputBytes`) → that call's
 * `inputError`; a non-string `arguments` is checked as a value (an object is accepted, anything
 * else is `not-object`).
 *
 * @throws CheckpointError INVALID_TRANSCRIPT (transcript) / MODEL_TRANSIENT with `details.reason:
 * 'invalid-response'` (live) for a malformed response, including a call id twice in the turn.
 */
export function openAiCompletionToTurnResult(raw: unknown, ctx: ResponseContext): ModelTurnResult {
  const parsed = openAiCompletionSchema.safeParse(raw);
  if (!parsed.success) {
    const { text, path } = formatIssues(parsed.error);
    throw structureError(ctx, `not an OpenAI chat.completion response: ${text}`, { path });
  }
  const choice = parsed.data.choices[0]!;
  const nameOf = ctx.toolNameFromWire ?? ((name: string) => name);
  const text = choice.message.content ?? choice.message.refusal ?? '';
  const rawCalls = choice.message.tool_calls ?? [];
  const inputPath = (i: number) => `$.choices[0].message.tool_calls[${i}].function.arguments`;
  const findings = findingsByInput(
    ctx,
    rawCalls.map((_, i) => inputPath(i)),
  );
  if (choice.finish_reason === 'function_call') throw structureError(ctx, `legacy finish_reason function_call is not supported`);
  if (choice.finish_reason === 'length') return finish('max_tokens', text, [], ctx, rawCalls.length);
  const refused = choice.message.refusal !== undefined && choice.message.refusal !== null;
  if (choice.finish_reason === 'content_filter' || refused) return finish('refusal', text, [], ctx, rawCalls.length);
  const calls = rawCalls.map((call, i) => callFromArguments(call.id, nameOf(call.function.name), call.function.arguments, ctx, findings.get(inputPath(i))!));
  if (calls.length > 0) return finish('tool_use', text, calls, ctx);
  if (choice.finish_reason === 'tool_calls') throw structureError(ctx, `finish_reason is tool_calls but there are no tool_calls`);
  return finish('end_turn', text, [], ctx);
}
