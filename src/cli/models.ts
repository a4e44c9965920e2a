/**
 * The model adapters a worker offers: the scripted model (recorded transcripts, also accepted
 * inline from a client) always, and the real Anthropic and OpenAI adapters when their API
 * keys are in the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`; model ids from
 * `TTC_ANTHROPIC_MODEL`, `TTC_OPENAI_MODEL`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ToolDefinition } from '../activities/define-tool';
import { AnthropicModel } from '../model/anthropic-model';
import type { ModelAdapter } from '../model/model-adapter';
import { OpenAiModel } from '../model/openai-model';
import { ScriptedModel } from '../model/scripted-model';
import { toolSpecFromZod } from '../model/tool-specs';
import { parseTranscriptJson, type Transcript } from '../model/transcript';

/** Where the recorded example transcripts live. */
export const TRANSCRIPTS_DIR = resolve(__dirname, '../../examples/transcripts');

/** Reads every `*.json` transcript in `dir`. */
export function loadTranscripts(dir: string = TRANSCRIPTS_DIR): Transcript[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => parseTranscriptJson(readFileSync(join(dir, f), 'utf8'), join(dir, f)));
}

/** Builds the adapters for `tools`. */
export function buildModels(tools: readonly ToolDefinition<any>[], env: NodeJS.ProcessEnv = process.env): ModelAdapter[] {
  const models: ModelAdapter[] = [new ScriptedModel({ transcripts: loadTranscripts() })];
  const specs = Object.fromEntries(tools.map((t) => [t.name, toolSpecFromZod(t.input, t.description)]));
  if (env.ANTHROPIC_API_KEY) models.push(new AnthropicModel({ model: env.TTC_ANTHROPIC_MODEL ?? 'claude-sonnet-4-5', tools: specs, baseURL: env.ANTHROPIC_BASE_URL }));
  if (env.OPENAI_API_KEY) models.push(new OpenAiModel({ model: env.TTC_OPENAI_MODEL ?? 'gpt-4.1', tools: specs, baseURL: env.OPENAI_BASE_URL }));
  return models;
}
