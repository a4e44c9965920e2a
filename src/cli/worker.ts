/**
 * `worker`: runs one worker of the fleet (see src/worker.ts). SIGTERM or SIGINT starts a
 * graceful shutdown: running activities get the configured grace time to finish. The models it
 * offers come from `--models` or TTC_MODELS (see `models.ts`; the scripted model only when
 * named); its pins (tenants, tools, approval) from TTC_TENANTS, TTC_TOOLS, TTC_REQUIRE_APPROVAL.
 * With `--metrics-port`, its Temporal runtime serves Prometheus metrics (see `worker-metrics.ts`).
 */
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { loadTools } from './load-tools';
import { MODEL_ADAPTER_NAMES } from './model-names';
import { positiveInteger } from './options';
import { printLine } from './terminal-safe';
import { workerBanner } from './worker-banner';
import { DEFAULT_METRICS_HOST, metricsEndpoint, metricsHost, metricsPort, metricsUrl, prometheusMetrics } from './worker-metrics';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker: agent workflow, model turns and fenced tool activities')
    .option('--tools <module>', 'module exporting the tools (default: the demo tools, which need TTC_PROVIDER_URL)')
    .option('--identity <name>', 'worker identity shown in Temporal')
    .option(
      '--models <names>',
      `model adapters to offer, comma-separated, from ${MODEL_ADAPTER_NAMES.join(', ')} (default: TTC_MODELS, else the real adapters whose API keys are set)`,
    )
    .option('--max-concurrent-activities <n>', 'activities this worker runs at once (default: the SDK default, 100)', (v) => positiveInteger(v, '--max-concurrent-activities'))
    .option('--metrics-port <port>', "serve Prometheus metrics (Temporal's and the fence's ttc_*) at http://<metrics-host>:<port>/metrics", metricsPort)
    .option('--metrics-host <ip>', `IP address the metrics endpoint binds (default: ${DEFAULT_METRICS_HOST}; 0.0.0.0 for every interface)`, metricsHost)
    .action(async (opts: { tools?: string; identity?: string; models?: string; maxConcurrentActivities?: number; metricsPort?: number; metricsHost?: string }) => {
      const config = loadConfig();
      const metrics = metricsEndpoint(opts);
      // Loaded here, not at the top: every other command would pay for the worker runtime and the
      // model SDKs. `require`, not `import()`: under tsx's CommonJS hook a dynamic import goes to
      // Node's ESM resolver, which does not find extensionless TypeScript modules.
      const { Runtime } = require('@temporalio/worker') as typeof import('@temporalio/worker');
      const { createAgentWorker } = require('../worker') as typeof import('../worker');
      const { createWorkerLogger } = require('./worker-log') as typeof import('./worker-log');
      const { buildModels, parseModelNames } = require('./models') as typeof import('./models');
      // Worker logs quote tool and provider error text and model-chosen ids: escaped for the terminal.
      Runtime.install({
        shutdownSignals: ['SIGINT', 'SIGTERM'],
        logger: createWorkerLogger(),
        ...(metrics === undefined ? {} : { telemetryOptions: { metrics: prometheusMetrics(metrics) } }),
      });
      const tools = await loadTools(opts.tools);
      const models = buildModels(tools, process.env, opts.models !== undefined ? parseModelNames(opts.models) : config.pins.models);
      const worker = await createAgentWorker({ config, tools, models, identity: opts.identity, maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities });
      printLine(
        workerBanner({
          identity: opts.identity ?? process.pid,
          config,
          tools: tools.map((t) => t.name),
          models: models.map((m) => m.name),
          ...(metrics === undefined ? {} : { metricsUrl: metricsUrl(metrics) }),
        }),
      );
      await worker.run();
      printLine('worker stopped');
    });
}
