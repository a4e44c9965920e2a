/**
 * `start <transcript>`: starts an agent run that replays a recorded transcript (sent inline,
 * so workers need not have the file). Prints the workflow id.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { connectClient, scriptedRunInput, startAgentRun } from '../client';
import { loadConfig } from '../config';
import { CheckpointError } from '../checkpoint/errors';
import { durationMs, positiveInteger } from './options';
import { printError, printJson, printLine } from './terminal-safe';

/** Reads and parses a transcript file. @throws {@link CheckpointError} INVALID_ARGUMENT naming the file. */
function readTranscriptFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CheckpointError('INVALID_ARGUMENT', `cannot read transcript file ${file}: ${(error as Error).message}`, { field: 'transcript' }, { cause: error });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CheckpointError('INVALID_TRANSCRIPT', `transcript file ${file} is not valid JSON: ${(error as Error).message}`, { field: 'transcript' }, { cause: error });
  }
}

export function registerStart(program: Command): void {
  program
    .command('start <transcript>')
    .description('start an agent run from a transcript file (Anthropic Messages or OpenAI Chat Completions responses); prints the workflow id')
    .option('--workflow-id <id>', 'workflow id (default: agent-<uuid>)')
    .option('--tenant <tenant>', 'tenant within the namespace', 'demo')
    .option('--prompt <text>', 'the user request', 'Handle the request in the transcript.')
    .option('--max-turns <n>', 'budget: model turns', (v) => positiveInteger(v, '--max-turns'), 8)
    .option('--max-tool-calls <n>', 'budget: tool calls', (v) => positiveInteger(v, '--max-tool-calls'), 16)
    .option('--deadline <duration>', 'budget: total run deadline, e.g. 10m or 24h (a paused call must be resolved within it)', '10m')
    .option('--wait', 'wait for the run to finish and print its result')
    .action(async (file: string, opts: { workflowId?: string; tenant: string; prompt: string; maxTurns: number; maxToolCalls: number; deadline: string; wait?: boolean }) => {
      const config = loadConfig();
      const transcript = readTranscriptFile(file);
      const deadlineMs = durationMs(opts.deadline, '--deadline');
      const input = scriptedRunInput(config, transcript, { tenant: opts.tenant, prompt: opts.prompt, budget: { maxTurns: opts.maxTurns, maxToolCalls: opts.maxToolCalls, deadlineMs } }, file);
      const { client, close } = await connectClient(config);
      try {
        const handle = await startAgentRun(client, config, input, opts.workflowId);
        printLine(handle.workflowId);
        if (opts.wait) {
          printError(`waiting for run ${handle.workflowId} (a paused call waits for \`resolve\`; see \`show ${handle.workflowId}\`)`);
          printJson(await handle.result());
        }
      } finally {
        await close();
      }
    });
}
