/**
 * The profile behind bench:fleet's CPU columns (`npm run bench:profile`): one agent worker in this
 * process (`createAgentWorker`, the fleet tools of bench/fleet-tools.ts, the scripted model, a
 * SQLite store) on an in-memory dev server serves PROFILE_RUNS (default 200) concurrent runs of
 * the fleet transcript (one turn calling 3 tools, then the answer). Run under
 * `node --cpu-prof` (the npm script does), then bench/cpuprofile-summary.ts reads the profiles of
 * the main thread and the workflow thread over the measured window.
 */
import { writeFileSync } from 'node:fs';
import { buildModels } from '../src/cli/models';
import { startBenchStack } from './bench-stack';
import type { AgentWorkflowInput } from '../src/workflows/agent/types';
import { fleetTranscript } from './fleet-transcript';
import { FLEET_TOOL_NAMES, tools } from './fleet-tools';
import { printHeaderLines, runHeader } from './report';

const RUNS = Number(process.env.PROFILE_RUNS ?? 200);
/** Where the window of the measured runs is written: monotonic µs (process.hrtime, the clock of a .cpuprofile on Linux), read by cpuprofile-summary.ts. */
const WINDOW_FILE = process.env.PROFILE_WINDOW_FILE;

async function main(): Promise<void> {
  const header = runHeader(`PROFILE_RUNS=${RUNS} npm run bench:profile`);
  const stack = await startBenchStack('fleet-profile', (env) => ({ tools, models: buildModels(tools, env, ['scripted']) }));
  const { client } = stack;
  const input: AgentWorkflowInput = {
    tenant: 'fleet',
    model: 'scripted',
    modelOptions: { transcript: fleetTranscript() as never },
    prompt: 'Order O-1001 arrived damaged: open a ticket and tell the customer.',
    tools: [...FLEET_TOOL_NAMES],
    budget: { maxTurns: 2, maxToolCalls: FLEET_TOOL_NAMES.length, deadlineMs: 30 * 60_000 },
  };
  try {
    await client.workflow.execute('agentWorkflow', { taskQueue: 'fleet-profile', workflowId: `profile-warmup-${Date.now()}`, args: [input] });
    const started = performance.now();
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const cpu = process.cpuUsage();
    await Promise.all(
      Array.from({ length: RUNS }, (_, i) => client.workflow.execute('agentWorkflow', { taskQueue: 'fleet-profile', workflowId: `profile-${i}-${Date.now()}`, args: [input] })),
    );
    const used = process.cpuUsage(cpu);
    const ms = performance.now() - started;
    if (WINDOW_FILE) writeFileSync(WINDOW_FILE, JSON.stringify({ fromUs, toUs: Number(process.hrtime.bigint() / 1000n) }));
    const calls = RUNS * FLEET_TOOL_NAMES.length;
    printHeaderLines(header);
    console.log('');
    console.log(
      `profile: ${RUNS} runs (${calls} tool calls) on one in-process agent worker in ${(ms / 1000).toFixed(1)} s: ${(calls / (ms / 1000)).toFixed(1)} tool calls/s; this process used ${((used.user + used.system) / 1000 / calls).toFixed(1)} ms CPU per tool call (all its threads)`,
    );
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
