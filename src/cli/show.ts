/**
 * `show <workflowId> [--tenant t] [--json]`: a run's tenant, phase, budget and calls (status,
 * source, receipt) as a table. With `--tenant`, a run of another tenant is refused.
 */
import type { Command } from 'commander';
import { connectClient } from '../client';
import { loadConfig } from '../config';
import { runStatusQuery } from '../workflows/messages';
import { printTable, withCode } from './table';
import { WorkflowNotFoundError } from '@temporalio/client';
import { CheckpointError } from '../checkpoint/errors';
import { printJson, printLine } from './terminal-safe';
import { assertRunTenant } from './tenant';

export function registerShow(program: Command): void {
  program
    .command('show <workflowId>')
    .description('show a run: phase, budget, and every call with its status and receipt')
    .option('--json', 'print the status as JSON')
    .option('--tenant <tenant>', 'refuse unless the run belongs to this tenant')
    .action(async (workflowId: string, opts: { json?: boolean; tenant?: string }) => {
      const config = loadConfig();
      const { client, close } = await connectClient(config);
      try {
        const status = await client.workflow
          .getHandle(workflowId)
          .query(runStatusQuery)
          .catch((error: unknown) => {
            if (error instanceof WorkflowNotFoundError) throw new CheckpointError('INVALID_ARGUMENT', `no run with workflow id ${JSON.stringify(workflowId)} in namespace ${config.temporal.namespace}`, { field: 'workflowId' });
            throw error;
          });
        assertRunTenant(workflowId, status.tenant, opts.tenant);
        if (opts.json) {
          printJson(status);
          return;
        }
        const b = status.budget;
        printLine(`run ${workflowId} (tenant ${status.tenant ?? '?'}): phase ${status.phase}, state version ${status.stateVersion}, turns ${b.turnsUsed}/${b.maxTurns}, tool calls ${b.toolCallsUsed}/${b.maxToolCalls}, deadline ${b.deadlineAt}`);
        if (status.paused) printLine(`paused on ${status.paused.callId} (${status.paused.toolName}): ${withCode(status.paused.errorType, status.paused.reason)}`);
        printTable(
          ['call', 'tool', 'status', 'source', 'receipt', 'error'],
          status.calls.map((c) => [c.callId, c.toolName, c.status, c.source ?? '', c.receipt === null ? '' : JSON.stringify(c.receipt), c.errorType || c.reason ? withCode(c.errorType, c.reason) : '']),
        );
      } finally {
        await close();
      }
    });
}
