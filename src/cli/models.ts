/**
 * The model adapters a worker offers (the scripted model is opt-in).
 *
 * Which ones: the names given by `ttc worker --models a,b` or `TTC_MODELS` (see `config.ts`),
 * from {@link MODEL_ADAPTER_NAMES}; when neither is set, the real adapters whose API keys are in
 * the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`; model ids from `TTC_ANTHROPIC_MODEL`,
 * `TTC_OPENAI_MODEL`). `scripted` replays recorded transcripts (also accepted inline from a
 * client); it keeps no per-turn state, but anyone who can start a workflow can run it, so a
 * production worker offers it only when asked.
 */
import { assertPeersInstalled } from '../optional-peer';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ToolDefinition } from '../activities/tools/define-tool';
import { CheckpointError } from '../checkpoint/errors';
import type { ModelAdapter } from '../model/model-adapter';
import { ScriptedModel } from '../model/scripted-model';
import { toolSpecFromZod } from '../model/tool-specs';
import { parseTranscriptJson, type Transcript } from '../model/transcript';

/** Where the recorded example transcripts live. */
export const TRANSCRIPTS_DIR = resolve(__dirname, '../../examples/transcripts');

import { MODEL_ADAPTER_NAMES, type ModelAdapterName } from './model-names';

export { MODEL_ADAPTER_NAMES, type ModelAdapterName };

/** Reads every `*.json` transcript in `dir`. */
export function loadTranscripts(dir: string = TRANSCRIPTS_DIR): Transcript[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => parseTranscriptJson(readFileSync(join(dir, f), 'utf8'), join(dir, f)));
}

/** The names in a `--models` value: comma-separated, whitespace around names ignored. */
export function parseModelNames(value: string): string[] {
  return value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/**
 * Builds the adapters for `tools`.
 *
 * @param names the adapters to offer (see the module comment); null or undefined: the real
 *   adapters whose API keys are set.
 * @throws {@link CheckpointError} INVALID_CONFIG (field `TTC_MODELS`) for an unknown name, a real
 *   adapter named without its API key, or when the worker would offer no model at all.
 */
export function buildModels(tools: readonly ToolDefinition<any>[], env: NodeJS.ProcessEnv = process.env, names?: readonly string[] | null): ModelAdapter[] {
  const keyOf: Record<Exclude<ModelAdapterName, 'scripted'>, string> = { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_API_KEY' };
  const chosen = new Set<string>(names ?? (['anthropic', 'openai'] as const).filter((name) => env[keyOf[name]]));
  for (const name of chosen) {
    if (!(MODEL_ADAPTER_NAMES as readonly string[]).includes(name)) {
      throw new CheckpointError('INVALID_CONFIG', `TTC_MODELS / --models names ${JSON.stringify(name)}; a worker offers ${MODEL_ADAPTER_NAMES.join(', ')}`, {
        field: 'TTC_MODELS',
      });
    }
    if (name !== 'scripted' && !env[keyOf[name as keyof typeof keyOf]]) {
      throw new CheckpointError('INVALID_CONFIG', `TTC_MODELS / --models names ${name}, but ${keyOf[name as keyof typeof keyOf]} is not set`, { field: 'TTC_MODELS' });
    }
  }
  if (chosen.size === 0) {
    throw new CheckpointError(
      'INVALID_CONFIG',
      'this worker would offer no model: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or offer recorded transcripts with --models scripted (TTC_MODELS=scripted)',
      { field: 'TTC_MODELS' },
    );
  }
  const specs = Object.fromEntries(tools.map((t) => [t.name, toolSpecFromZod(t.input, t.description)]));
  const models: ModelAdapter[] = [];
  if (chosen.has('scripted')) models.push(new ScriptedModel({ transcripts: loadTranscripts() }));
  // The SDKs load only for a worker that offers them (a scripted worker starts without them).
  if (chosen.has('anthropic')) {
    assertPeersInstalled(['@anthropic-ai/sdk'], 'the anthropic model');
    const { AnthropicModel } = require('../model/anthropic-model') as typeof import('../model/anthropic-model');
    models.push(new AnthropicModel({ model: env.TTC_ANTHROPIC_MODEL ?? 'claude-sonnet-4-5', tools: specs, apiKey: env.ANTHROPIC_API_KEY, baseURL: env.ANTHROPIC_BASE_URL }));
  }
  if (chosen.has('openai')) {
    assertPeersInstalled(['openai'], 'the openai model');
    const { OpenAiModel } = require('../model/openai-model') as typeof import('../model/openai-model');
    models.push(new OpenAiModel({ model: env.TTC_OPENAI_MODEL ?? 'gpt-4.1', tools: specs, apiKey: env.OPENAI_API_KEY, baseURL: env.OPENAI_BASE_URL }));
  }
  return models;
}
