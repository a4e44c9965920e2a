/**
 * `temporal-tool-checkpoint/model/openai`: the OpenAI adapter, on the official SDK (`openai`, an
 * optional peer). Importing this entry without the SDK installed throws INVALID_CONFIG naming the
 * `npm install` line, before anything loads it.
 */
import { assertPeersInstalled } from '../optional-peer';

assertPeersInstalled(['openai'], 'temporal-tool-checkpoint/model/openai');
const adapter = require('./openai-model') as typeof import('./openai-model');

/** The adapter class (src/model/openai-model.ts). */
export const OpenAiModel = adapter.OpenAiModel;
export type OpenAiModel = import('./openai-model').OpenAiModel;
export const toOpenAiMessages = adapter.toOpenAiMessages;
export type { OpenAiModelOptions } from './openai-model';
