/**
 * The model side of the agent (Node only: it reaches `node:fs` and the provider SDKs; workflow
 * code imports `./types` alone): adapters, transcripts and tool specs. Errors are
 * `CheckpointError`s (`checkpoint/errors.ts`).
 */
export type { ModelAdapter } from './model-adapter';
export type { ConversationMessage, ModelStopReason, ModelTurnInput, ModelTurnResult, ToolCallRequest, ToolInputError } from './types';
export {
  INVALID_RESPONSE_REASON,
  TRANSCRIPT_FORMATS,
  TRANSCRIPT_VERSION,
  anthropicMessageSchema,
  anthropicMessageToTurnResult,
  loadTranscriptFile,
  openAiCompletionSchema,
  openAiCompletionToTurnResult,
  parseTranscript,
  parseTranscriptJson,
  transcriptSchema,
} from './transcript';
export type { AnthropicMessageWire, OpenAiCompletionWire, ResponseContext, Transcript, TranscriptFile, TranscriptFormat } from './transcript';
export { ScriptedModel } from './scripted-model';
export type { ScriptedModelOptions, ScriptedRequest } from './scripted-model';
export { AnthropicModel, toAnthropicMessages } from './anthropic-model';
export type { AnthropicModelOptions } from './anthropic-model';
export { OpenAiModel, toOpenAiMessages } from './openai-model';
export type { OpenAiModelOptions } from './openai-model';
export { isTransientStatus, mapSdkError, parseSdkTurnOptions, requireMessages, retryAfterMs, toolResultText } from './sdk-common';
export type { ModelProvider, SdkErrorClasses } from './sdk-common';
export { resolveToolSpecs, toolSpecFromZod } from './tool-specs';
export {
  ANTHROPIC_ID_MAX_LENGTH,
  OPENAI_ID_MAX_LENGTH,
  TOOL_NAME_MAX_LENGTH,
  WIRE_ID_PATTERN,
  WIRE_TOOL_NAME_PATTERN,
  toWireConversation,
  toolNameFromWire,
  wireToken,
  wireToolName,
} from './wire-names';
export type { WireProvider } from './wire-names';
export type { ToolSpec, ToolSpecs } from './tool-specs';
