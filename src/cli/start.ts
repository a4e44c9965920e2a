/**
 * `start <transcript>`: starts an agent run that replays a recorded transcript (sent inline,
 * so workers need not have the file). Prints the workflow id.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { connectClient, scriptedRunInput, startAgentRun } from '../client';
import { loadConfig } from '../config';

export function registerStart(program: Command): void {
  program
    .command('start <transcript>')
    .description('start an agent run from a transcript file (Anthropic Messages or OpenAI Chat Completions responses); prints the workflow id')
    .option('--workflow-id <id>', 'workflow id (default: agent-<uuid>)')
    .option('--tenant <tenant>', 'tenant within the namespace', 'demo')
    .option('--prompt <text>', 'the user request', 'Handle the request in the transcript.')
    .option('--wait', 'wait for the run to finish and print its result')
    .action(async (file: string, opts: { workflowId?: string; tenant: string; prompt: string; wait?: boolean }) => {
      const config = loadConfig();
      const transcript = JSON.parse(readFileSync(file, 'utf8')) as unknown;
      const { client, close } = await connectClient(config);
      try {
        const handle = await startAgentRun(client, config, scriptedRunInput(config, transcript, { tenant: opts.tenant, prompt: opts.prompt }), opts.workflowId);
        console.log(handle.workflowId);
        if (opts.wait) console.log(JSON.stringify(await handle.result(), null, 2));
      } finally {
        await close();
      }
    });
}
