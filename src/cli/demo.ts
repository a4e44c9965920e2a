/**
 * `demo`: the main job (see src/demo/main-job.ts). Exits 1 if any effect was applied twice or a delivered result differs from the provider's.
 */
import { assertPeersInstalled } from '../optional-peer';
import type { Command } from 'commander';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the main job: dev server, provider, a worker killed right after an effect, a fleet of two, three runs, a report')
    .option('--work-dir <dir>', 'folder for the databases (default: a new folder under .data/)')
    .action(async (opts: { workDir?: string }) => {
      assertPeersInstalled(['better-sqlite3'], '`ttc demo` (its provider and the SQLite store)');
      // Loaded here, not at the top: every other command would pay for the demo's worker and model SDKs.
      const { runMainJob } = require('../demo/main-job') as typeof import('../demo/main-job');
      const reports = await runMainJob({ workDir: opts.workDir });
      if (reports.some((r) => r.duplicates > 0 || r.wrongResults > 0)) process.exitCode = 1;
    });
}
