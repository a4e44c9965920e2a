/**
 * `temporal-tool-checkpoint/model`: the model side of the agent without any provider SDK: the
 * `ModelAdapter` interface a model implements, the scripted model that replays recorded
 * transcripts, and the tool specs a model is offered. The provider adapters sit on their own
 * subpaths, each needing its SDK (an optional peer): `temporal-tool-checkpoint/model/anthropic`
 * (`@anthropic-ai/sdk`) and `temporal-tool-checkpoint/model/openai` (`openai`). Node only.
 */
export type { ModelAdapter } from './model-adapter';
export type { ConversationMessage, ModelStopReason, ModelTurnInput, ModelTurnResult, ToolCallRequest, ToolInputError } from './types';
export { TRANSCRIPT_FORMATS, TRANSCRIPT_VERSION, loadTranscriptFile, parseTranscript, parseTranscriptJson } from './transcript';
export type { Transcript, TranscriptFile, TranscriptFormat } from './transcript';
export { ScriptedModel } from './scripted-model';
export type { ScriptedModelOptions, ScriptedRequest } from './scripted-model';
export { toolSpecFromZod } from './tool-specs';
export type { ToolSpec, ToolSpecs } from './tool-specs';
