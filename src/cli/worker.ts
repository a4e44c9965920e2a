/**
 * `worker`: runs one worker of the fleet (see src/worker.ts). SIGTERM or SIGINT starts a
 * graceful shutdown: running activities get the configured grace time to finish. The models it
 * offers come from `--models` or TTC_MODELS (see `models.ts`; the scripted model only when
 * named); its pins (tenants, tools, approval) from TTC_TENANTS, TTC_TOOLS, TTC_REQUIRE_APPROVAL.
 */
import type { Command } from 'commander';
import { Runtime } from '@temporalio/worker';
import { loadConfig } from '../config';
import { createAgentWorker } from '../worker';
import { loadTools } from './load-tools';
import { buildModels, MODEL_ADAPTER_NAMES, parseModelNames } from './models';
import { positiveInteger } from './options';
import { printLine } from './terminal-safe';
import { workerBanner } from './worker-banner';
import { createWorkerLogger } from './worker-log';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker: agent workflow, model turns and fenced tool activities')
    .option('--tools <module>', 'module exporting the tools (default: the demo tools, which need TTC_PROVIDER_URL)')
    .option('--identity <name>', 'worker identity shown in Temporal')
    .option('--models <names>', `model adapters to offer, comma-separated, from ${MODEL_ADAPTER_NAMES.join(', ')} (default: TTC_MODELS, else the real adapters whose API keys are set)`)
    .option('--max-concurrent-activities <n>', 'activities this worker runs at once (default: the SDK default, 100)', (v) => positiveInteger(v, '--max-concurrent-activities'))
    .action(async (opts: { tools?: string; identity?: string; models?: string; maxConcurrentActivities?: number }) => {
      const config = loadConfig();
      // Worker logs quote tool and provider error text and model-chosen ids: escaped for the terminal.
      Runtime.install({ shutdownSignals: ['SIGINT', 'SIGTERM'], logger: createWorkerLogger() });
      const tools = await loadTools(opts.tools);
      const models = buildModels(tools, process.env, opts.models !== undefined ? parseModelNames(opts.models) : config.pins.models);
      const worker = await createAgentWorker({ config, tools, models, identity: opts.identity, maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities });
      printLine(workerBanner({ identity: opts.identity ?? process.pid, config, tools: tools.map((t) => t.name), models: models.map((m) => m.name) }));
      await worker.run();
      printLine('worker stopped');
    });
}
