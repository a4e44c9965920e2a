/**
 * `npm run bench:soak`: one production worker (`createAgentWorker`, the
 * models `ttc worker --models scripted` offers, a SQLite store) on a real Temporal dev server
 * serves 2,000 model turns: runs of a short inline transcript (9 tool turns calling `echo`,
 * then the end) with a 20 KB prompt, so every turn's input carries a growing conversation.
 * After every 100 turns it collects garbage and prints the heap used; it must stay flat.
 *
 * Options: SOAK_TURNS (default 2000), SOAK_PARALLEL runs at once (default 4), SOAK_PROMPT_BYTES
 * (default 20,000). SOAK_RECORD_REQUESTS=1 swaps in a scripted model built with
 * `recordRequests: true` (what every worker did before item 10), for comparison.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { z } from 'zod';
import { defineTool } from '../src/activities';
import { buildModels } from '../src/cli/models';
import { startBenchStack } from './bench-stack';
import { printTable } from '../src/cli/table';
import type { ModelAdapter } from '../src/model/model-adapter';
import { ScriptedModel } from '../src/model/scripted-model';
import { parseTranscript } from '../src/model/transcript';
import type { AgentWorkflowInput } from '../src/workflows/agent/types';

const TURNS = Number(process.env.SOAK_TURNS ?? 2_000);
const PARALLEL = Number(process.env.SOAK_PARALLEL ?? 4);
const PROMPT_BYTES = Number(process.env.SOAK_PROMPT_BYTES ?? 20_000);
const RECORD = process.env.SOAK_RECORD_REQUESTS === '1';
const TOOL_TURNS = 9;
const TURNS_PER_RUN = TOOL_TURNS + 1;

/** A full garbage collection (`--expose-gc` switched on at run time when node was not started with it). */
function collectGarbage(): void {
  const g = globalThis as { gc?: () => void };
  if (g.gc === undefined) {
    setFlagsFromString('--expose-gc');
    g.gc = runInNewContext('gc') as () => void;
  }
  g.gc();
  g.gc();
}

/** An OpenAI Chat Completions transcript: 9 turns each calling `echo`, then a final answer. */
function soakTranscript(): unknown {
  const toolTurn = (n: number): unknown => ({
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        finish_reason: 'tool_calls',
        message: { role: 'assistant', content: `step ${n}`, tool_calls: [{ id: `call_${n}`, type: 'function', function: { name: 'echo', arguments: JSON.stringify({ i: n }) } }] },
      },
    ],
  });
  const last = { object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'done' } }] };
  return { version: 1, id: 'soak', format: 'openai-chat-completions', responses: [...Array.from({ length: TOOL_TURNS }, (_, n) => toolTurn(n)), last] };
}

interface Sample {
  readonly turns: number;
  readonly heapUsedMb: number;
  readonly rssMb: number;
}

/** Counts turns and samples the heap after every 100th (after a full collection). */
function sampling(adapter: ModelAdapter, samples: Sample[]): ModelAdapter {
  let turns = 0;
  return {
    name: adapter.name,
    async turn(input, signal) {
      const result = await adapter.turn(input, signal);
      turns += 1;
      if (turns % 100 === 0) {
        collectGarbage();
        const { heapUsed, rss } = process.memoryUsage();
        samples.push({ turns, heapUsedMb: heapUsed / 2 ** 20, rssMb: rss / 2 ** 20 });
      }
      return result;
    },
  };
}

async function main(): Promise<void> {
  const echo = defineTool({
    name: 'echo',
    revision: 'v1',
    input: z.object({ i: z.number().int() }),
    async execute(input) {
      return { output: { i: input.i } };
    },
  });
  const samples: Sample[] = [];
  const stack = await startBenchStack('soak', (env) => {
    const scripted = RECORD ? new ScriptedModel({ transcripts: [], recordRequests: true }) : buildModels([echo], env, ['scripted'])[0]!;
    return { tools: [echo], models: [sampling(scripted, samples)] };
  });
  const { client } = stack;
  const transcript = soakTranscript();
  parseTranscript(transcript, 'soak');
  const input: AgentWorkflowInput = {
    tenant: 'soak',
    model: 'scripted',
    modelOptions: { transcript: transcript as never },
    prompt: `Handle the request. ${'x'.repeat(PROMPT_BYTES)}`,
    tools: ['echo'],
    budget: { maxTurns: TURNS_PER_RUN, maxToolCalls: TOOL_TURNS, deadlineMs: 10 * 60_000 },
  };
  const runs = Math.ceil(TURNS / TURNS_PER_RUN);
  const started = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < runs) {
      const n = next++;
      const result = await client.workflow.execute('agentWorkflow', { taskQueue: 'soak', workflowId: `soak-${n}-${Date.now()}`, args: [input] });
      if ((result as { status: string }).status !== 'completed') throw new Error(`run ${n} ended ${JSON.stringify(result)}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: PARALLEL }, lane));
  } finally {
    await stack.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `soak: ${runs} runs × ${TURNS_PER_RUN} turns = ${runs * TURNS_PER_RUN} model turns (and ${runs * TOOL_TURNS} fenced tool calls) on one worker in ${seconds.toFixed(0)} s; prompt ${PROMPT_BYTES} bytes; ${PARALLEL} runs at once; scripted model ${RECORD ? 'WITH recordRequests (the pre-item-10 behaviour)' : 'as `ttc worker --models scripted` builds it'}`,
  );
  printTable(
    ['turns', 'heap used MB', 'rss MB'],
    samples.map((s) => [s.turns, s.heapUsedMb.toFixed(1), s.rssMb.toFixed(1)]),
  );
  // Growth over the second half (the first half includes warm-up: JIT, the workflow bundle, caches).
  const half = samples.slice(Math.floor(samples.length / 2));
  const slope = half.length >= 2 ? (half.at(-1)!.heapUsedMb - half[0]!.heapUsedMb) / ((half.at(-1)!.turns - half[0]!.turns) / 1_000) : 0;
  console.log(`heap growth over the second half: ${slope.toFixed(2)} MB per 1,000 turns`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
