/**
 * `dev`: the embedded stack for one host: a Temporal dev server with a persistent database
 * file on the configured address, with the run search attributes registered (docs/visibility.md),
 * and the SQLite checkpoint store (created if absent). Runs until SIGINT/SIGTERM.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { startDevServer } from '../dev/dev-server';
import { maskUrl, openCheckpointStore } from '../stores/open-checkpoint-store';
import { searchAttributeCreateCommands } from '../visibility/namespace-search-attributes';
import { RUN_SEARCH_ATTRIBUTES } from '../workflows/agent/search-attributes';
import { storeOptions } from '../store-options';
import { stopOnSignals } from './stop-signals';
import { printLine } from './terminal-safe';

export function registerDev(program: Command): void {
  program
    .command('dev')
    .description('start the embedded Temporal dev server (persistent) and create the SQLite store')
    .option('--db <file>', 'Temporal dev server database file', '.data/temporal.db')
    .option('--ui-port <port>', 'serve the Temporal Web UI on this port')
    .action(async (opts: { db: string; uiPort?: string }) => {
      const config = loadConfig();
      const [host, port] = config.temporal.address.split(':');
      const dbFile = resolve(opts.db);
      mkdirSync(dirname(dbFile), { recursive: true });
      if (config.store.url.startsWith('sqlite:') && config.store.url !== 'sqlite::memory:') {
        mkdirSync(dirname(resolve(config.store.url.slice('sqlite:'.length))), { recursive: true });
      }
      const store = await openCheckpointStore(config.store.url, storeOptions(config));
      await store.close();
      const server = await startDevServer({ ip: host, port: Number(port), dbFile, namespace: config.temporal.namespace, uiPort: opts.uiPort ? Number(opts.uiPort) : undefined });
      stopOnSignals('dev', () => server.stop());
      printLine(`Temporal dev server on ${server.address} (namespace ${server.namespace}, database ${dbFile})${server.uiUrl ? `, UI ${server.uiUrl}` : ''}`);
      printLine(`Checkpoint store ${maskUrl(config.store.url)}`);
      printLine(`Search attributes ${RUN_SEARCH_ATTRIBUTES.map((key) => key.name).join(', ')} registered (\`pending\` lists waiting runs by visibility); on another server:`);
      for (const command of searchAttributeCreateCommands(server.namespace)) printLine(`  ${command}`);
      printLine('Press Ctrl-C to stop.');
      await server.exited;
    });
}
