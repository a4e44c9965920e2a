/**
 * `resolve-in-store <workflowId> <callId> (--applied <json> | --not-applied <message>) --reason
 * <text>`: resolves, in the store, a fenced activity of a user's own workflow whose outcome is
 * unknown (docs/protocol.md#worker-plugin; see `plugin/resolve-in-store.ts`). The activity waits
 * and re-reads the store on every attempt; its next attempt delivers what is stored here. For
 * `agentWorkflow` runs use `resolve` (a Temporal update). Needs only the store (TTC_STORE_URL and
 * its keys), not Temporal. Prints what it resolved (tool, revision, status, idempotency key, claim
 * time, reason) through `terminal-safe.ts`; a refusal exits 1 with its reason, and nothing is
 * written.
 */
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import { DEFAULT_PLUGIN_TENANT } from '../plugin/options';
import { RESOLVED_NOT_APPLIED, resolveCallInStore, type ResolvedInStore, type StoreResolution } from '../plugin/resolve-in-store';
import { openCheckpointStore } from '../stores/open-checkpoint-store';
import { storeOptions } from '../store-options';
import { printLine } from './terminal-safe';

/** Options of `resolve-in-store`, as commander parses them. */
interface ResolveInStoreOptions {
  readonly applied?: string;
  readonly notApplied?: string;
  readonly type?: string;
  readonly reason: string;
  readonly tenant: string;
  readonly namespace?: string;
  readonly runChain: string;
  readonly by?: string;
  readonly revision: string;
}

/** Registers `resolve-in-store` on `program`. */
export function registerResolveInStore(program: Command): void {
  program
    .command('resolve-in-store <workflowId> <callId>')
    .description(
      'resolve a fenced activity of your own workflow whose outcome is unknown, in the store: --applied <json result> | --not-applied <message>, with --reason (agent runs: use resolve)',
    )
    .option('--applied <json>', "the effect happened; this JSON is the activity's result the workflow receives")
    .option('--not-applied <message>', 'the effect did not happen (or must not count as a success); the workflow receives a non-retryable failure with this message')
    .option('--type <type>', `with --not-applied: the failure type the workflow receives (default ${RESOLVED_NOT_APPLIED})`)
    .requiredOption('--reason <text>', 'why (kept in the checkpoint for audit)')
    .option('--tenant <tenant>', "the plugin's tenant option", DEFAULT_PLUGIN_TENANT)
    .option('--namespace <namespace>', 'the Temporal namespace of the workflow (default: the configured namespace)')
    .requiredOption('--run-chain <runId>', "the workflow's first execution run id, as `ttc pending` shows it (with --revision it names the checkpoint you decided on)")
    .option('--by <name>', 'who resolves (kept in the checkpoint; default: <OS user>@<host>)')
    .requiredOption('--revision <n>', 'the checkpoint revision you decided on, as `ttc pending` shows it; refused if the checkpoint moved on since')
    .action(async (workflowId: string, callId: string, opts: ResolveInStoreOptions) => {
      const resolution = resolutionOf(opts);
      if (!/^\d{1,15}$/.test(opts.revision))
        throw new CheckpointError('INVALID_ARGUMENT', `--revision must be the checkpoint revision (a non-negative integer), got ${JSON.stringify(opts.revision)}`, {
          field: '--revision',
        });
      const config = loadConfig();
      const store = await openCheckpointStore(config.store.url, storeOptions(config));
      try {
        const resolved = await resolveCallInStore(
          store,
          {
            namespace: opts.namespace ?? config.temporal.namespace,
            workflowId,
            callId,
            tenant: opts.tenant,
            resolution,
            reason: opts.reason,
            runChainId: opts.runChain,
            ...(opts.by === undefined ? {} : { resolvedBy: opts.by }),
            expectedRevision: Number(opts.revision),
          },
          config.keys.idempotencyKeySecret ? { idempotencyKeySecret: config.keys.idempotencyKeySecret } : {},
        );
        for (const line of describeResolved(resolved)) printLine(line);
      } finally {
        await store.close();
      }
    });
}

/** The resolution the flags ask for. @throws {@link CheckpointError} INVALID_ARGUMENT unless exactly one of --applied, --not-applied is given, or for --applied that is not JSON. */
function resolutionOf(opts: ResolveInStoreOptions): StoreResolution {
  if ((opts.applied === undefined) === (opts.notApplied === undefined)) {
    throw new CheckpointError('INVALID_ARGUMENT', 'choose exactly one of --applied <json>, --not-applied <message>', { field: 'resolution' });
  }
  if (opts.type !== undefined && opts.notApplied === undefined) throw new CheckpointError('INVALID_ARGUMENT', '--type goes with --not-applied', { field: '--type' });
  if (opts.notApplied !== undefined) return { failed: { message: opts.notApplied, ...(opts.type === undefined ? {} : { type: opts.type }) } };
  try {
    return { applied: JSON.parse(opts.applied!) as JsonValue };
  } catch {
    throw new CheckpointError('INVALID_ARGUMENT', `--applied must be JSON, got ${JSON.stringify(opts.applied)}`, { field: '--applied' });
  }
}

/** What the operator reads: the call, the claim that never finished, what is stored and why. */
function describeResolved(r: ResolvedInStore): string[] {
  const audit = r.outcome.resolvedInStore;
  const delivers = r.outcome.ok ? `result ${JSON.stringify(r.outcome.output)}` : `a non-retryable failure ${r.outcome.error.type}: ${r.outcome.error.message}`;
  return [
    `resolved ${r.workflowId}/${r.callId} in the store as ${audit.kind}`,
    `  tool: ${r.toolName} revision ${r.toolRevision}`,
    `  status: ${r.previous.status} → ${r.record.status} (revision ${r.previous.revision} → ${r.record.revision})`,
    `  run chain: ${r.runChainId}`,
    `  idempotency key: ${r.idempotencyKey}`,
    `  claimed at: ${r.claimedAt} by ${audit.attemptId}`,
    ...(r.uncertainReason === null ? [] : [`  outcome unknown because: ${r.uncertainReason}`]),
    `  reason: ${audit.reason}`,
    `  resolved by: ${audit.by} at ${audit.at}`,
    `  the activity's next attempt delivers ${delivers}`,
  ];
}
