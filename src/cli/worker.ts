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

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker: agent workflow, model turns and fenced tool activities')
    .option('--tools <module>', 'module exporting the tools (default: the demo tools, which need TTC_PROVIDER_URL)')
    .option('--identity <name>', 'worker identity shown in Temporal')
    .action(async (opts: { tools?: string; identity?: string }) => {
      const config = loadConfig();
      Runtime.install({ shutdownSignals: ['SIGINT', 'SIGTERM'] });
      const tools = await loadTools(opts.tools);
      const worker = await createAgentWorker({ config, tools, models: buildModels(tools), identity: opts.identity });
      console.log(`worker ${opts.identity ?? process.pid} polling task queue ${config.temporal.taskQueue} on ${config.temporal.address}; tools: ${tools.map((t) => t.name).join(', ')}`);
      await worker.run();
      console.log('worker stopped');
    });
}
