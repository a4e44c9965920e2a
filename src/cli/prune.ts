/**
 * `prune`: deletes delivered checkpoints older than the replay window (retention). Never
 * touches a record that is ready, executing, uncertain, completed or delivering. With
 * `--conversations-older-than`, also deletes the conversation logs of agent runs (claim
 * check) whose newest entry is older than that: only for runs that are over, since a run
 * still going reads its whole log every turn (CONVERSATION_ENTRY_MISSING after a prune).
 */
import type { Command } from 'commander';
import { normalizeTimestamp } from '../stores/row-codec';
import { loadConfig } from '../config';
import { openCheckpointStore } from '../stores/open-checkpoint-store';
import { storeOptions } from '../store-options';
import { durationMs } from './options';
import { printLine } from './terminal-safe';

const OPTION = '--conversations-older-than';

export function registerPrune(program: Command): void {
  program
    .command('prune')
    .description('delete delivered checkpoints older than the replay window (TTC_REPLAY_WINDOW)')
    .option(
      `${OPTION} <duration or ISO time>`,
      'also delete conversation logs of agent runs whose newest entry is older than this (e.g. 30d, or 2026-01-31T00:00:00.000Z); without it logs are kept',
    )
    .action(async (opts: { conversationsOlderThan?: string }) => {
      const config = loadConfig();
      const conversationsOlderThan = opts.conversationsOlderThan === undefined ? undefined : cutoff(opts.conversationsOlderThan, Date.now());
      const store = await openCheckpointStore(config.store.url, storeOptions(config));
      try {
        const olderThan = new Date(Date.now() - config.retention.replayWindowMs).toISOString();
        const deleted = await store.prune({ olderThan, ...(conversationsOlderThan === undefined ? {} : { conversationsOlderThan }) });
        if (conversationsOlderThan === undefined) printLine(`pruned ${deleted} delivered checkpoint(s) last updated before ${olderThan}`);
        else
          printLine(`pruned ${deleted} delivered checkpoint(s) last updated before ${olderThan} and conversation log(s) last written before ${conversationsOlderThan} (together)`);
      } finally {
        await store.close();
      }
    });
}

/**
 * The cut-off time of `--conversations-older-than`: an ISO-8601 UTC time as given, or a
 * duration (`30d`, `12h`, ms digits) before `nowMs`.
 *
 * @returns ISO-8601 UTC (`toISOString` form).
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the option for anything else.
 */
export function cutoff(value: string, nowMs: number): string {
  if (/^\d{4}-\d{2}-\d{2}T/.test(value)) return normalizeTimestamp(value, OPTION);
  return new Date(nowMs - durationMs(value, OPTION)).toISOString();
}
