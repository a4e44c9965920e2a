/**
 * The provider responses as this code reads them: zod schemas of an Anthropic Messages API
 * response and an OpenAI Chat Completions response (non-streaming), the subset read; unknown
 * fields pass through. Recorded transcripts (`./transcript`) hold responses of these shapes, and
 * `./response-conversion` checks live SDK responses against them.
 */
import { z } from 'zod/v4';
import { IDENTIFIER_MAX_LENGTH } from '../checkpoint/bounds';

const callIdSchema = z.string().min(1).max(IDENTIFIER_MAX_LENGTH.callId);
const toolNameSchema = z.string().min(1).max(IDENTIFIER_MAX_LENGTH.toolName);

const anthropicTextBlock = z.looseObject({ type: z.literal('text'), text: z.string() });
const anthropicToolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: callIdSchema,
  name: toolNameSchema,
  input: z.unknown(),
});
/**
 * Content blocks: `text` and `tool_use` are checked by their schemas; any other block type
 * (`thinking`, `redacted_thinking`, server tool blocks, future types) is allowed and ignored.
 */
const anthropicContent = z.array(z.looseObject({ type: z.string() })).superRefine((blocks, refine) => {
  blocks.forEach((block, index) => {
    const schema = block.type === 'text' ? anthropicTextBlock : block.type === 'tool_use' ? anthropicToolUseBlock : null;
    const checked = schema?.safeParse(block);
    for (const issue of checked?.error?.issues ?? []) {
      refine.addIssue({ code: 'custom', message: issue.message, path: [index, ...issue.path] });
    }
  });
});

/** Anthropic stop reasons as of the installed SDK. */
const ANTHROPIC_STOP_REASONS = ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal', 'model_context_window_exceeded'] as const;

/** Zod schema of an Anthropic Messages API response (non-streaming). */
export const anthropicMessageSchema = z.looseObject({
  id: z.string().optional(),
  type: z.literal('message'),
  role: z.literal('assistant'),
  model: z.string().optional(),
  content: anthropicContent,
  stop_reason: z.enum(ANTHROPIC_STOP_REASONS).nullable(),
});
/** An Anthropic Messages API response as this code reads it. */
export type AnthropicMessageWire = z.infer<typeof anthropicMessageSchema>;

const openAiToolCall = z.looseObject({
  id: callIdSchema,
  type: z.literal('function'),
  /** `arguments` is JSON text per the API; anything else is judged per call (see `callFromArguments`). */
  function: z.looseObject({ name: toolNameSchema, arguments: z.unknown() }),
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
