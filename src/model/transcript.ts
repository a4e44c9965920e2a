/**
 * Recorded model transcripts: files of the responses a provider returned, each converted to a
 * {@link ModelTurnResult} by `./response-conversion`.
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
 *   "allowCallIdReuse": false,               // optional, see below
 *   "responses": [ <Messages API response>, <Messages API response>, … ]
 * }
 * ```
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
 * - `allowCallIdReuse` (optional, default `false`): when `true`, a tool-call id may appear again
 *   in a later response, as providers that number calls per turn do (`ollama_0`, `list_dir:0`);
 *   when `false` such a transcript is refused (a typo in a hand-written transcript, usually).
 *   Ids stay unique within one response either way.
 *
 * The stop reasons each format scripts, and how a malformed response or tool input is treated,
 * are those of the converters (`./response-conversion`). Errors: {@link CheckpointError}
 * `INVALID_TRANSCRIPT` (not retryable) for a malformed transcript (details: `transcript`, `turn`,
 * `path`). Uses `node:fs` in {@link loadTranscriptFile}: not for workflow code.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod/v4';
import { CheckpointError } from '../checkpoint/errors';
import type { JsonTextFinding } from '../checkpoint/json-text';
import type { ModelTurnResult } from './types';
import {
  anthropicMessageToTurnResult,
  findingsUnder,
  formatIssues,
  MAX_SCANNED_DEPTH,
  openAiCompletionToTurnResult,
  textFindingsOf,
  type ResponseContext,
} from './response-conversion';
import { anthropicMessageSchema, openAiCompletionSchema } from './wire-responses';

export { anthropicMessageSchema, openAiCompletionSchema } from './wire-responses';
export type { AnthropicMessageWire, OpenAiCompletionWire } from './wire-responses';
export {
  anthropicMessageToTurnResult,
  findingsUnder,
  INVALID_RESPONSE_REASON,
  MAX_SCANNED_DEPTH,
  openAiCompletionToTurnResult,
  textFindingsOf,
  turnResultFromResponseText,
} from './response-conversion';
export type { ResponseContext } from './response-conversion';

/** The transcript format version this code reads and writes. */
export const TRANSCRIPT_VERSION = 1 as const;

/** The two wire formats a transcript can hold. */
export const TRANSCRIPT_FORMATS = ['anthropic-messages', 'openai-chat-completions'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

/** Zod schema of a transcript file (see the module comment). */
export const transcriptSchema = z.discriminatedUnion('format', [
  z.strictObject({
    version: z.literal(TRANSCRIPT_VERSION),
    id: z.string().min(1).max(256),
    format: z.literal('anthropic-messages'),
    description: z.string().optional(),
    allowCallIdReuse: z.boolean().optional(),
    responses: z.array(anthropicMessageSchema).min(1),
  }),
  z.strictObject({
    version: z.literal(TRANSCRIPT_VERSION),
    id: z.string().min(1).max(256),
    format: z.literal('openai-chat-completions'),
    description: z.string().optional(),
    allowCallIdReuse: z.boolean().optional(),
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

/**
 * Validates a transcript value (already JSON-parsed) and converts every response.
 * Checks, beyond each response's shape: tool-call ids are unique within each response, and
 * across the whole transcript unless the file says `allowCallIdReuse: true` (a provider that
 * numbers calls per turn; the agent workflow must then scope a call's checkpoint by turn).
 *
 * @param source names the transcript in errors (a file path or a label); defaults to its id.
 * @param textFindings what `JSON.parse` hid in the text `value` was parsed from ({@link textFindingsOf}), paths from the transcript root; a call whose input holds one is refused (`duplicate-key`, `inexact-number`). A value with no text has none.
 * Refused tool inputs are per call (`inputError`), as in the converters.
 *
 * @throws CheckpointError INVALID_TRANSCRIPT (details: `transcript`, `turn`, `path`).
 */
export function parseTranscript(value: unknown, source?: string, textFindings?: readonly JsonTextFinding[]): Transcript {
  const parsed = transcriptSchema.safeParse(value);
  const label = source ?? (typeof value === 'object' && value !== null && typeof (value as { id?: unknown }).id === 'string' ? (value as { id: string }).id : 'transcript');
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
      textFindings: findingsUnder(textFindings, `$.responses[${turn}]`),
    };
    const result = file.format === 'anthropic-messages' ? anthropicMessageToTurnResult(response, ctx) : openAiCompletionToTurnResult(response, ctx);
    for (const call of result.toolCalls) {
      const earlier = seen.get(call.callId);
      if (earlier !== undefined && file.allowCallIdReuse !== true) {
        throw new CheckpointError('INVALID_TRANSCRIPT', `${ctx.where}: tool call id ${call.callId} was already used in response ${earlier}`, {
          transcript: name,
          turn,
          callId: call.callId,
        });
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
    throw new CheckpointError(
      'INVALID_TRANSCRIPT',
      `transcript ${JSON.stringify(source)} is not JSON: ${(err as Error).message}`,
      {
        transcript: source,
        path: '$',
      },
      { cause: err },
    );
  }
  const findings = textFindingsOf(text);
  if (findings === null)
    throw new CheckpointError('INVALID_TRANSCRIPT', `transcript ${JSON.stringify(source)} nests deeper than ${MAX_SCANNED_DEPTH} levels`, { transcript: source, path: '$' });
  return parseTranscript(value, source, findings);
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
