/**
 * `cancel <workflowId> --reason <text> [--tenant t]`: asks a running agent run to stop (the
 * workflow's `cancelRun` signal). The run stops at its next step, and a run started with
 * `--compensate` / `--compensate-on` first undoes its applied effects in reverse; its
 * result keeps the reason. (`temporal workflow cancel` also compensates, but the run then closes
 * as CANCELLED without a result.) A run that has closed is refused with exit 1.
 */
import type { Command } from 'commander';
import { CheckpointError } from '../checkpoint/errors';
import { cancelRunSignal } from '../workflows/agent/messages';
import { printLine } from './terminal-safe';
import { withRun } from './with-run';

export function registerCancel(program: Command): void {
  program
    .command('cancel <workflowId>')
    .description('stop a running agent run (compensating first when it was started with --compensate / --compensate-on)')
    .requiredOption('--reason <text>', 'why (kept in the run result)')
    .option('--tenant <tenant>', 'refuse unless the run belongs to this tenant')
    .action(async (workflowId: string, opts: { reason: string; tenant?: string }) => {
      await withRun(workflowId, opts.tenant, async (handle, status) => {
        const description = await handle.describe();
        if (description.status.name !== 'RUNNING')
          throw new CheckpointError('INVALID_ARGUMENT', `run ${workflowId} is ${description.status.name}; only a running run can be cancelled`, { field: 'workflowId' });
        await handle.signal(cancelRunSignal, { reason: opts.reason });
        printLine(`asked run ${workflowId} to stop (${status.phase} now); see \`show ${workflowId}\` or \`start --wait\` for its result`);
      });
    });
}
