/**
 * `approve <workflowId> <callId>` and `reject <workflowId> <callId> --reason <text>`: a person's
 * decision on a call awaiting approval. Each reads the call from the run (refused with
 * CALL_NOT_AWAITING_APPROVAL when it does not wait for a decision, and, with `--tenant`, when the
 * run is another tenant's), prints what is decided on — tool, revision, the validated arguments
 * that will run, target, intent digest, expiry, the run's state version — and sends the
 * workflow's validated update (`src/operator/run-decisions.ts`).
 *
 * An approval carries the intent digest and state version it read, or those given by `--intent`
 * / `--state-version` (what the person reviewed, e.g. in `pending`), so the run refuses a changed
 * intent (APPROVAL_MISMATCH) or a run that moved on (STALE_STATE_VERSION). A refusal prints its
 * type and the run's reason and exits 1 (see `errors.ts`); nothing runs. All output is escaped
 * (`terminal-safe.ts`): call ids, tool names and arguments come from the model.
 */
import type { Command } from 'commander';
import type { WorkflowHandle } from '@temporalio/client';
import { connectClient } from '../client';
import { loadConfig, type Config } from '../config';
import { CheckpointError } from '../checkpoint/errors';
import { approveCall, readWaitingCall, rejectCall, type WaitingCall } from '../operator/run-decisions';
import { describedRunChain, signAgentApproval } from '../operator/approval-grants';
import { explainUndecodable } from './errors';
import { nonNegativeInteger } from './options';
import { defaultResolvedBy } from '../plugin/resolve-in-store';
import { hiddenCharacterWarning, printLine } from './terminal-safe';
import { assertRunTenant } from './tenant';

/** Options of `approve`. */
interface ApproveOptions {
  readonly intent?: string;
  readonly stateVersion?: number;
  readonly tenant?: string;
  readonly by?: string;
}

/** Options of `reject`. */
interface RejectOptions {
  readonly reason: string;
  readonly tenant?: string;
  readonly by?: string;
}

/** Adds `approve` and `reject` to the command line. */
export function registerApprove(program: Command): void {
  program
    .command('approve <workflowId> <callId>')
    .description('approve a call awaiting approval: prints what will run, then sends the approval bound to its intent digest and the run state version')
    .option('--intent <digest>', 'the intent digest you reviewed (default: the one the run shows now)')
    .option('--state-version <n>', "the run state version you reviewed (default: the run's current one)", (v) => nonNegativeInteger(v, '--state-version'))
    .option('--tenant <tenant>', 'refuse unless the run belongs to this tenant')
    .option('--by <name>', 'who approves (kept with the decision in the run; default: <OS user>@<host>)')
    .action(async (workflowId: string, callId: string, opts: ApproveOptions) => {
      await withWaitingCall(workflowId, callId, opts.tenant, async (handle, waiting, config) => {
        const request = {
          callId,
          intentDigest: opts.intent ?? waiting.call.intentDigest ?? '',
          stateVersion: opts.stateVersion ?? waiting.status.stateVersion,
          by: opts.by ?? defaultResolvedBy(),
        };
        if (request.intentDigest === '') {
          throw new CheckpointError('INVALID_ARGUMENT', `call ${callId} of run ${workflowId} shows no intent digest (not described by a worker yet); nothing was sent`, {
            field: 'intentDigest',
          });
        }
        printReview('approve', waiting);
        if (opts.intent !== undefined || opts.stateVersion !== undefined)
          printLine(`sending the approval with intent ${request.intentDigest} and state version ${request.stateVersion} (as given)`);
        // With a signing key the approval carries a grant the workers verify (docs/protocol.md#approval-grants).
        const key = config.keys.approvalSigningKey;
        const grant =
          key === null
            ? undefined
            : signAgentApproval(waiting, {
                namespace: config.temporal.namespace,
                runChainId: await describedRunChain(handle),
                intentDigest: request.intentDigest,
                approver: request.by,
                key,
              });
        printLine(
          grant !== undefined
            ? `signed an approval grant with key ${JSON.stringify(key!.keyId)} for ${request.by}`
            : 'sending an unsigned approval (TTC_APPROVAL_SIGNING_KEY unset): a worker that holds grant keys refuses the call (APPROVAL_REQUIRED)',
        );
        const decided = await approveCall(handle, { ...request, ...(grant === undefined ? {} : { grant }) });
        printLine(`approved ${callId} at ${decided.decidedAt}; it must start running before ${decided.approvalExpiresAt}`);
      });
    });

  program
    .command('reject <workflowId> <callId>')
    .description('reject a call awaiting approval: nothing runs, the model reads the reason')
    .requiredOption('--reason <text>', 'why (the model reads it; kept in the run for audit)')
    .option('--tenant <tenant>', 'refuse unless the run belongs to this tenant')
    .option('--by <name>', 'who rejects (kept with the decision in the run; default: <OS user>@<host>)')
    .action(async (workflowId: string, callId: string, opts: RejectOptions) => {
      if (opts.reason.trim() === '') throw new CheckpointError('INVALID_ARGUMENT', '--reason must not be empty: the model reads it', { field: '--reason' });
      await withWaitingCall(workflowId, callId, opts.tenant, async (handle, waiting) => {
        printReview('reject', waiting);
        const decided = await rejectCall(handle, { callId, reason: opts.reason, by: opts.by ?? defaultResolvedBy() });
        printLine(`rejected ${callId} at ${decided.decidedAt}; nothing ran, the model reads: ${opts.reason}`);
      });
    });
}

/**
 * Connects, reads the call awaiting approval (checking the tenant) and runs `decide` with it.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for an unknown run or another tenant's run,
 *   DECRYPTION_FAILED (with the hint) when the run's payloads are encrypted and no key is set;
 *   {@link DecisionRefusedError} when the call does not await approval or the run refuses.
 */
async function withWaitingCall(
  workflowId: string,
  callId: string,
  tenant: string | undefined,
  decide: (handle: WorkflowHandle, waiting: WaitingCall, config: Config) => Promise<void>,
): Promise<void> {
  const config = loadConfig();
  const { client, close } = await connectClient(config);
  try {
    const handle = client.workflow.getHandle(workflowId);
    const waiting = await readWaitingCall(handle, config.temporal.namespace, callId, 'awaiting-approval').catch((error: unknown) => {
      throw explainUndecodable(error, `run ${workflowId}'s status`);
    });
    assertRunTenant(workflowId, waiting.status.tenant, tenant);
    await decide(handle, waiting, config);
  } finally {
    await close();
  }
}

/** Prints what the person decides on: the call, what will run (validated), what the model sent, digest, expiry, state version. */
function printReview(verb: 'approve' | 'reject', { workflowId, status, call }: WaitingCall): void {
  const json = (value: unknown): string => JSON.stringify(value) ?? 'null';
  printLine(`${verb} ${workflowId}/${call.callId} (tenant ${status.tenant ?? '?'}): ${call.toolName} revision ${call.toolRevision ?? '?'}`);
  printLine(
    `  arguments (validated; these run): ${call.arguments === null ? 'not reported by the worker (older code): what runs may differ from what the model sent' : json(call.arguments)}`,
  );
  const hidden = hiddenCharacterWarning('the arguments', call.arguments);
  if (hidden !== null) printLine(`  ${hidden}`);
  if (call.target !== null) printLine(`  target: ${json(call.target)}`);
  const hiddenInTarget = hiddenCharacterWarning('the target', call.target);
  if (hiddenInTarget !== null) printLine(`  ${hiddenInTarget}`);
  printLine(`  model sent (not run as sent): ${json(call.modelInput)}`);
  const hiddenInModelInput = hiddenCharacterWarning("the model's input", call.modelInput);
  if (hiddenInModelInput !== null) printLine(`  ${hiddenInModelInput}`);
  printLine(`  intent digest: ${call.intentDigest ?? '?'}`);
  printLine(`  approval expires at: ${call.approvalExpiresAt ?? '?'}`);
  printLine(`  run state version: ${status.stateVersion}`);
}
