/**
 * `start <transcript>`: starts an agent run that replays a recorded transcript (sent inline,
 * so workers need not have the file). Prints the workflow id. `--require-approval <tool,…>`
 * makes each call of those tools wait for `approve` / `reject`. With `--wait`, prints
 * the run's result as JSON (whatever its status: completed, incomplete, budget, abandoned…) or,
 * when the run failed, its cause chain on stderr (see `failure-chain.ts`) and exits 1.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { WorkflowFailedError } from '@temporalio/client';
import { connectClient, scriptedRunInput, startAgentRun } from '../client';
import { loadConfig } from '../config';
import { CheckpointError } from '../checkpoint/errors';
import { MAX_SCANNED_DEPTH, textFindingsOf } from '../model/response-conversion';
import { explainUndecodable } from './errors';
import { failureChainLines, failureChainOf } from './failure-chain';
import { durationMs, positiveInteger } from './options';
import { approvalRequiredOption, DEFAULT_APPROVAL_TTL } from './require-approval';
import { printError, printJson, printLine } from './terminal-safe';

/** Reads and parses a transcript file. @throws {@link CheckpointError} INVALID_ARGUMENT naming the file; INVALID_TRANSCRIPT for text that is not JSON or holds a number literal JSON reads changed. */
function readTranscriptFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CheckpointError('INVALID_ARGUMENT', `cannot read transcript file ${file}: ${(error as Error).message}`, { field: 'transcript' }, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    throw new CheckpointError('INVALID_TRANSCRIPT', `transcript file ${file} is not valid JSON: ${(error as Error).message}`, { field: 'transcript' }, { cause: error });
  }
  // The run gets the parsed value: a literal parsing changed, or a key it dropped, would reach a tool changed.
  const findings = textFindingsOf(text);
  const [first] = findings ?? [];
  if (findings === null || first !== undefined) {
    const what =
      first === undefined
        ? `nests deeper than ${MAX_SCANNED_DEPTH} levels`
        : first.kind === 'inexact-number'
          ? `has number ${first.token} at ${first.path}, which JSON reads as ${Number(first.token)} (write it as a string)`
          : `repeats member name ${JSON.stringify(first.key)} in the object at ${first.path} (JSON keeps only the last)`;
    throw new CheckpointError('INVALID_TRANSCRIPT', `transcript file ${file} ${what}`, { field: 'transcript' });
  }
  return value;
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
    .option('--require-approval <tools>', "comma-separated tools whose calls wait for a person's `approve` / `reject`")
    .option('--approval-ttl <duration>', `with --require-approval: how long a call waits for a decision before it is rejected, e.g. 30m (default ${DEFAULT_APPROVAL_TTL})`)
    .option('--compensate', "undo the run's applied effects (the compensations its tools declare) in reverse when it is cancelled or abandoned by a person")
    .option(
      '--compensate-on <types>',
      'with or without --compensate: also stop and compensate when a tool result is an error of one of these comma-separated types, e.g. BUSINESS_REJECTION',
    )
    .option('--wait', 'wait for the run to finish and print its result (a failed run: its cause chain, exit 1)')
    .action(async (file: string, opts: StartOptions) => {
      const config = loadConfig();
      const transcript = readTranscriptFile(file);
      const deadlineMs = durationMs(opts.deadline, '--deadline');
      const input = scriptedRunInput(
        config,
        transcript,
        { tenant: opts.tenant, prompt: opts.prompt, budget: { maxTurns: opts.maxTurns, maxToolCalls: opts.maxToolCalls, deadlineMs } },
        file,
      );
      const approvalRequired = approvalRequiredOption(opts, input.tools);
      const compensateOn = compensateOnOption(opts);
      const { client, close } = await connectClient(config);
      try {
        const handle = await startAgentRun(
          client,
          config,
          { ...input, ...(approvalRequired === undefined ? {} : { approvalRequired }), ...(compensateOn === undefined ? {} : { compensateOn }) },
          opts.workflowId,
        );
        printLine(handle.workflowId);
        if (opts.wait) {
          printError(
            `waiting for run ${handle.workflowId} (a call awaiting approval waits for \`approve\` / \`reject\`, a paused call for \`resolve\`; see \`show ${handle.workflowId}\`)`,
          );
          const result = await handle.result().catch((error: unknown) => {
            const explained = explainUndecodable(error, `run ${handle.workflowId}'s failure`);
            if (explained !== error || !(error instanceof WorkflowFailedError)) throw explained;
            return failed(handle.workflowId, error);
          });
          if (result !== null) printJson(result);
        }
      } finally {
        await close();
      }
    });
}

/** The options of `start`, as commander parses them. */
interface StartOptions {
  readonly workflowId?: string;
  readonly tenant: string;
  readonly prompt: string;
  readonly maxTurns: number;
  readonly maxToolCalls: number;
  readonly deadline: string;
  readonly requireApproval?: string;
  readonly approvalTtl?: string;
  readonly compensate?: boolean;
  readonly compensateOn?: string;
  readonly wait?: boolean;
}

/**
 * The run's `compensateOn` policy from `--compensate` / `--compensate-on`: absent
 * without either (no compensation), `[]` with `--compensate` alone (on cancel and abandon), the
 * listed error types otherwise (the workflow's input validation refuses bad ones).
 * @throws {@link CheckpointError} INVALID_ARGUMENT for an empty type in the list.
 */
export function compensateOnOption(opts: Pick<StartOptions, 'compensate' | 'compensateOn'>): string[] | undefined {
  if (opts.compensateOn === undefined) return opts.compensate === true ? [] : undefined;
  const types = opts.compensateOn.split(',').map((t) => t.trim());
  if (types.some((t) => t.length === 0))
    throw new CheckpointError('INVALID_ARGUMENT', `--compensate-on takes comma-separated error types, got ${JSON.stringify(opts.compensateOn)}`, { field: 'compensateOn' });
  return types;
}

/** Prints a failed run's cause chain on stderr and sets exit code 1. */
function failed(workflowId: string, error: WorkflowFailedError): null {
  printError(`run ${workflowId} failed; cause chain:`);
  for (const line of failureChainLines(failureChainOf(error), 2)) printError(line);
  process.exitCode = 1;
  return null;
}
