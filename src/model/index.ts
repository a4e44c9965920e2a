/**
 * The model side of the agent (Node only: it reaches `node:fs` and the provider SDKs; workflow
 * code imports `./types` alone): adapters, transcripts and tool specs. Errors are
 * `CheckpointError`s (`checkpoint/errors.ts`).
 */
export type { ModelAdapter } from './model-adapter';
export type { ConversationMessage, ModelTurnInput, ModelTurnResult, ToolCallRequest, ToolInputError } from './types';
export {
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
export { isTransientStatus, mapSdkError, parseSdkTurnOptions, retryAfterMs, toolResultText } from './sdk-common';
export type { ModelProvider, SdkErrorClasses } from './sdk-common';
export { resolveToolSpecs, toolSpecFromZod } from './tool-specs';
export type { ToolSpec, ToolSpecs } from './tool-specs';
