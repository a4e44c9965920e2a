/**
 * `worker`: runs one worker of the fleet (see src/worker.ts). SIGTERM or SIGINT starts a
 * graceful shutdown: running activities get the configured grace time to finish.
 */
import type { Command } from 'commander';
import { Runtime } from '@temporalio/worker';
import { loadConfig } from '../config';
import { createAgentWorker } from '../worker';
import { loadTools } from './load-tools';
import { buildModels } from './models';
import { positiveInteger } from './options';
import { printLine } from './terminal-safe';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker: agent workflow, model turns and fenced tool activities')
    .option('--tools <module>', 'module exporting the tools (default: the demo tools, which need TTC_PROVIDER_URL)')
    .option('--identity <name>', 'worker identity shown in Temporal')
    .option('--max-concurrent-activities <n>', 'activities this worker runs at once (default: the SDK default, 100)', (v) => positiveInteger(v, '--max-concurrent-activities'))
    .action(async (opts: { tools?: string; identity?: string; maxConcurrentActivities?: number }) => {
      const config = loadConfig();
      Runtime.install({ shutdownSignals: ['SIGINT', 'SIGTERM'] });
      const tools = await loadTools(opts.tools);
      const worker = await createAgentWorker({ config, tools, models: buildModels(tools), identity: opts.identity, maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities });
      printLine(`worker ${opts.identity ?? process.pid} polling task queue ${config.temporal.taskQueue} on ${config.temporal.address}; tools: ${tools.map((t) => t.name).join(', ')}`);
      await worker.run();
      printLine('worker stopped');
    });
}
