/**
 * `prune`: deletes delivered checkpoints older than the replay window (retention). Never
 * touches a record that is ready, executing, uncertain, completed or delivering.
 */
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { openCheckpointStore } from '../stores/open-checkpoint-store';
import { storeOptions } from '../worker';
import { printLine } from './terminal-safe';

export function registerPrune(program: Command): void {
  program
    .command('prune')
    .description('delete delivered checkpoints older than the replay window (TTC_REPLAY_WINDOW)')
    .action(async () => {
      const config = loadConfig();
      const store = await openCheckpointStore(config.store.url, storeOptions(config));
      try {
        const olderThan = new Date(Date.now() - config.retention.replayWindowMs).toISOString();
        const deleted = await store.prune({ olderThan });
        printLine(`pruned ${deleted} delivered checkpoint(s) last updated before ${olderThan}`);
      } finally {
        await store.close();
      }
    });
}
