/**
 * `temporal-tool-checkpoint/model/anthropic`: the Anthropic adapter, on the official SDK (`@anthropic-ai/sdk`, an
 * optional peer). Importing this entry without the SDK installed throws INVALID_CONFIG naming the
 * `npm install` line, before anything loads it.
 */
import { assertPeersInstalled } from '../optional-peer';

assertPeersInstalled(['@anthropic-ai/sdk'], 'temporal-tool-checkpoint/model/anthropic');
const adapter = require('./anthropic-model') as typeof import('./anthropic-model');

/** The adapter class (src/model/anthropic-model.ts). */
export const AnthropicModel = adapter.AnthropicModel;
export type AnthropicModel = import('./anthropic-model').AnthropicModel;
export const toAnthropicMessages = adapter.toAnthropicMessages;
export type { AnthropicModelOptions } from './anthropic-model';
