/**
 * `pending`: every call that needs a person (README.md#command-line): from the store, records
 * uncertain, delivering, or executing longer than the tool start-to-close timeout; from Temporal,
 * running agent runs that are paused or awaiting approval (`listWaitingRuns`: by the
 * `TtcNeedsPerson` search attribute when the namespace has it, docs/visibility.md; `--scan` asks
 * every running agent run instead). A paused call both list is shown once (`temporal+store`, with
 * the checkpoint's `updatedAt`), with the revision and idempotency key it was claimed under. Each
 * row shows its tenant; `--tenant` lists one tenant's rows (plus runs that did not answer, tenant
 * `?`). A run whose status is encrypted by the payload codec while no key is set is listed as
 * `encrypted` with the hint to set TTC_PAYLOAD_CODEC_KEY.
 */
import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import { connectClient } from '../client';
import { loadConfig } from '../config';
import { bindingLabel, checkpointOwner, type CheckpointOwner } from '../checkpoint/binding-label';
import { describeItem } from '../checkpoint/item-position';
import { listWaitingRuns } from '../operator/waiting-runs';
import { openCheckpointStore } from '../stores/open-checkpoint-store';
import type { PendingCallView } from '../workflows/agent/types';
import { storeOptions } from '../store-options';
import { printTable, withCode } from './table';
import { explainUndecodable } from './errors';
import { hiddenCharacterWarning, printLine } from './terminal-safe';
import { tenantOfNamespace } from './tenant';

export function registerPending(program: Command): void {
  program
    .command('pending')
    .description('list calls that need a person: uncertain, executing too long, delivering (store) and paused or awaiting approval (Temporal)')
    .option('--no-temporal', 'only read the store')
    .option('--tenant <tenant>', "only this tenant's calls")
    .option('--scan', 'ask every running agent run, not only those the TtcNeedsPerson search attribute lists')
    .action(async (opts: { temporal: boolean; tenant?: string; scan?: boolean }) => {
      const config = loadConfig();
      const store = await openCheckpointStore(config.store.url, storeOptions(config));
      const rows: (string | number)[][] = [];
      /** The store's rows, with whose checkpoint each is, so a call Temporal also lists is shown once. */
      const storeRows: { readonly owner: CheckpointOwner | null; readonly updatedAt: string; readonly row: (string | number)[] }[] = [];
      /** Per call awaiting approval: what will run (validated arguments, target) and, labelled, what the model sent. */
      const approvals: string[] = [];
      try {
        const staleBefore = new Date(Date.now() - config.timeouts.toolStartToCloseMs).toISOString();
        const records = [
          ...(await store.listByStatus(['uncertain', 'delivering'], { limit: 1_000 })),
          ...(await store.listByStatus(['executing'], { olderThan: staleBefore, limit: 1_000 })),
        ];
        for (const r of records) {
          const tenant = tenantOfNamespace(r.binding.namespace);
          if (opts.tenant !== undefined && tenant !== opts.tenant) continue;
          const owner = checkpointOwner(r.binding.callId);
          const row = [
            'store',
            tenant,
            r.status,
            bindingLabel(r.binding.callId),
            r.binding.toolName,
            r.updatedAt,
            `${r.execution?.uncertainReason ?? (r.status === 'executing' ? 'executing longer than the start-to-close timeout' : 'delivery claimed, not recorded')} (revision ${r.revision}, run chain ${owner?.runChainId ?? 'unknown'})`,
          ];
          storeRows.push({ owner, updatedAt: r.updatedAt, row });
          rows.push(row);
        }
      } finally {
        await store.close();
      }
      if (opts.temporal) {
        const { client, close } = await connectClient(config);
        try {
          const runs = await listWaitingRuns(client, { limit: 1_000, ...(opts.scan ? { searchAttributes: false } : {}) });
          for (const run of runs) {
            if ('error' in run) {
              // One run that cannot answer (no worker polls its task queue) must not hide the others.
              const explained = explainUndecodable(run.error, 'its status');
              if (explained !== run.error) rows.push(['temporal', '?', 'encrypted', run.workflowId, '', '', (explained as Error).message]);
              else
                rows.push([
                  'temporal',
                  '?',
                  'no-answer',
                  run.workflowId,
                  '',
                  '',
                  `the run did not answer the status query: ${run.error instanceof Error ? run.error.message : String(run.error)}`,
                ]);
              continue;
            }
            const { status } = run;
            if (opts.tenant !== undefined && status.tenant !== opts.tenant) continue;
            const runChainId = run.waiting.some((call) => call.status === 'paused') ? await runChainOf(client, run.workflowId) : undefined;
            for (const call of run.waiting) {
              const why =
                call.status === 'paused'
                  ? `${withCode(call.errorType, call.reason)} (${claimedUnder(call)})`
                  : `approve by ${call.approvalExpiresAt} (intent ${call.intentDigest}, state version ${status.stateVersion})`;
              // The store's rows of this paused call (its own checkpoint, the paused item's or compensation's) merge into this one.
              const same = call.status === 'paused' ? storeRows.filter((r) => isCheckpointOf(r.owner, runChainId, run.workflowId, call)) : [];
              for (const r of same) rows.splice(rows.indexOf(r.row), 1);
              const updatedAt =
                same
                  .map((r) => r.updatedAt)
                  .sort()
                  .at(-1) ?? '';
              rows.push([
                same.length > 0 ? 'temporal+store' : 'temporal',
                status.tenant ?? '?',
                call.status,
                `${run.workflowId}/${call.callId}`,
                call.toolName,
                updatedAt,
                why ?? '',
              ]);
              if (call.status === 'awaiting-approval') approvals.push(...approvalLines(`${run.workflowId}/${call.callId}`, call));
            }
          }
        } finally {
          await close();
        }
      }
      if (rows.length === 0) {
        printLine('nothing needs a person');
        return;
      }
      printTable(['from', 'tenant', 'status', 'call', 'tool', 'updatedAt', 'why'], rows);
      if (approvals.length > 0) printLine('');
      for (const line of approvals) printLine(line);
    });
}

/**
 * The revision and idempotency key a paused call (or its compensation, or its paused batch item)
 * was claimed under, what a person looks it up by in the provider's log: `revision v1, key ttc2-…`
 * (`item key ttci-…` for an item), `not reported` when the run's failure named none.
 * Ends with the pause's identity, what `ttc resolve --pause` takes.
 */
function claimedUnder(call: PendingCallView): string {
  const shown = call.role === 'compensation' ? { toolRevision: call.compensation?.toolRevision ?? null, idempotencyKey: call.compensation?.idempotencyKey ?? null } : call;
  const item = call.item === undefined ? '' : `, ${describeItem(call.item)}, item key ${call.item.idempotencyKey ?? 'not reported'}`;
  const pause = call.pauseId === undefined ? '' : `, pause ${call.pauseId}`;
  return `${call.role === 'compensation' ? 'compensation ' : ''}revision ${shown.toolRevision ?? 'not reported'}, key ${shown.idempotencyKey ?? 'not reported'}${item}${pause}`;
}

/**
 * The run chain (first run id) of the running execution of `workflowId`, which its checkpoints
 * are bound to; undefined when the server does not say or the run cannot be described.
 */
async function runChainOf(client: Client, workflowId: string): Promise<string | undefined> {
  try {
    const description = await client.workflow.getHandle(workflowId).describe();
    const first = description.raw.workflowExecutionInfo?.firstRunId;
    return typeof first === 'string' && first.length > 0 ? first : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the store checkpoint of `owner` belongs to the paused call `call` of the run
 * (`runChainId`, `workflowId`): the call's own checkpoint, the paused item's, or the paused
 * compensation's. Without the run chain (a server that does not list it) nothing matches: a
 * checkpoint of an earlier chain that reused the workflow id must stay listed.
 */
function isCheckpointOf(owner: CheckpointOwner | null, runChainId: string | undefined, workflowId: string, call: PendingCallView): boolean {
  if (owner === null || runChainId === undefined || owner.runChainId !== runChainId || owner.workflowId !== workflowId || owner.callId !== call.callId) return false;
  if (owner.item !== undefined) return call.item !== undefined && owner.item.key === call.item.key && owner.item.generation === call.item.generation;
  if (owner.compensationGeneration !== undefined) return call.role === 'compensation' && owner.compensationGeneration === call.compensation?.generation;
  return true;
}

/**
 * What an approver reads for one call awaiting approval: the validated arguments the intent
 * digest covers and the tool will receive, the target, and the model's input, marked as not
 * what runs. The `approveCall` update must name the digest printed here.
 */
/** The hidden-character warning about `value` (`hiddenCharacterWarning`) as an indented line, or none. */
function warningLine(what: string, value: unknown): string[] {
  const warning = hiddenCharacterWarning(what, value);
  return warning === null ? [] : [`  ${warning}`];
}

function approvalLines(call: string, view: PendingCallView): string[] {
  const json = (value: unknown): string => JSON.stringify(value) ?? 'null';
  return [
    `approval of ${call}: ${view.toolName} revision ${view.toolRevision ?? '?'}, intent ${view.intentDigest ?? '?'}`,
    `  arguments (validated; these run): ${view.arguments === null ? 'not reported by the worker (older code): what runs may differ from what the model sent' : json(view.arguments)}`,
    ...warningLine('the arguments', view.arguments),
    ...(view.target === null ? [] : [`  target: ${json(view.target)}`]),
    ...warningLine('the target', view.target),
    `  model sent (not run as sent): ${json(view.modelInput)}`,
    ...warningLine("the model's input", view.modelInput),
  ];
}
