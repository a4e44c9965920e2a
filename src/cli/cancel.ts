/**
 * `cancel <workflowId> --reason <text> [--tenant t]`: asks a running agent run to stop (the
 * workflow's `cancelRun` signal). The run stops at its next step, and a run started with
 * `--compensate` / `--compensate-on` first undoes its applied effects in reverse (issue 14); its
 * result keeps the reason. (`temporal workflow cancel` also compensates, but the run then closes
 * as CANCELLED without a result.) A run that has closed is refused with exit 1.
 */
import type { Command } from 'commander';
import { connectClient } from '../client';
import { loadConfig } from '../config';
import { CheckpointError } from '../checkpoint/errors';
import { readRunStatus } from '../operator/run-decisions';
import { cancelRunSignal } from '../workflows/messages';
import { explainUndecodable } from './errors';
import { printLine } from './terminal-safe';
import { assertRunTenant } from './tenant';

export function registerCancel(program: Command): void {
  program
    .command('cancel <workflowId>')
    .description('stop a running agent run (compensating first when it was started with --compensate / --compensate-on)')
    .requiredOption('--reason <text>', 'why (kept in the run result)')
    .option('--tenant <tenant>', 'refuse unless the run belongs to this tenant')
    .action(async (workflowId: string, opts: { reason: string; tenant?: string }) => {
      const config = loadConfig();
      const { client, close } = await connectClient(config);
      try {
        const handle = client.workflow.getHandle(workflowId);
        const status = await readRunStatus(handle, config.temporal.namespace).catch((error: unknown) => {
          throw explainUndecodable(error, `run ${workflowId}'s status`);
        });
        assertRunTenant(workflowId, status.tenant, opts.tenant);
        const description = await handle.describe();
        if (description.status.name !== 'RUNNING') throw new CheckpointError('INVALID_ARGUMENT', `run ${workflowId} is ${description.status.name}; only a running run can be cancelled`, { field: 'workflowId' });
        await handle.signal(cancelRunSignal, { reason: opts.reason });
        printLine(`asked run ${workflowId} to stop (${status.phase} now); see \`show ${workflowId}\` or \`start --wait\` for its result`);
      } finally {
        await close();
      }
    });
}
