/**
 * `show <workflowId> [--tenant t] [--json]`: a run's tenant, phase, budget and calls (status,
 * source, receipt, error or note (a completed call's note, such as one answered from the store
 * after a reset); a call whose outcome is the tool's error result shows `completed,
 * refused` and that error) as a table, each call's compensation, the run's effects once it
 * stopped (`effects` in the JSON), what a paused run waits on with the revision and idempotency
 * key it was claimed under, the progress of its running batch calls (`batches` in the JSON) and, once the run closed, its close status and (failed) its
 * failure with its cause chain, as `start --wait` prints it (`execution` in the JSON). With
 * `--tenant`, a run of another tenant is refused.
 */
import type { Command } from 'commander';
import { connectClient } from '../client';
import { loadConfig } from '../config';
import { runStatusQuery } from '../workflows/agent/messages';
import type { CallReport, CompensationReport, FinalCallStatus, PausedView, RunEffects } from '../workflows/agent/types';
import { listEffects } from '../workflows/agent/effects';
import { describeItem } from '../checkpoint/item-position';
import type { JsonValue } from '../checkpoint/types';
import { printTable, withCode } from './table';
import { WorkflowNotFoundError, type WorkflowExecutionDescription, type WorkflowHandle } from '@temporalio/client';
import { batchProgressLine, batchProgressOf } from './batch-progress';
import { CheckpointError } from '../checkpoint/errors';
import { explainUndecodable, runFailureOf, type RunFailure } from './errors';
import { failureChainLines, failureChainOf, type FailureLink } from './failure-chain';
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
        const handle = client.workflow.getHandle(workflowId);
        const status = await handle.query(runStatusQuery).catch((error: unknown) => {
          if (error instanceof WorkflowNotFoundError)
            throw new CheckpointError('INVALID_ARGUMENT', `no run with workflow id ${JSON.stringify(workflowId)} in namespace ${config.temporal.namespace}`, {
              field: 'workflowId',
            });
          throw explainUndecodable(error, `run ${workflowId}'s status`);
        });
        assertRunTenant(workflowId, status.tenant, opts.tenant);
        const description = await handle.describe();
        const execution = await runExecution(handle, workflowId, description);
        const batches = await batchProgressOf(description, client.options.loadedDataConverter);
        // A stopped run's calls are final: their effects are listed as the run's result lists them.
        const effects = status.stoppedBecause !== null ? listEffects(status.calls as CallReport<FinalCallStatus>[]) : null;
        if (opts.json) {
          printJson({ ...status, execution, batches, ...(effects === null ? {} : { effects }) });
          return;
        }
        const b = status.budget;
        printLine(
          `run ${workflowId} (tenant ${status.tenant ?? '?'}): phase ${status.phase}, state version ${status.stateVersion}, turns ${b.turnsUsed}/${b.maxTurns}, tool calls ${b.toolCallsUsed}/${b.maxToolCalls}, deadline ${b.deadlineAt}`,
        );
        if (execution.status !== 'RUNNING')
          printLine(
            `closed: ${execution.status}${execution.closeTime === null ? '' : ` at ${execution.closeTime}`}${execution.failure === null ? '' : `: ${withCode(execution.failure.type, execution.failure.message)}`}`,
          );
        for (const line of failureChainLines(execution.failureChain ?? [], 2)) printLine(line);
        if (status.conversation !== undefined) {
          const earlier = status.earlierCalls;
          const continued =
            (status.continuations ?? 0) > 0 && earlier !== undefined
              ? `; continued as new ${status.continuations} times, earlier runs: ${earlier.ran} calls ran, ${earlier.notRun} not run, ${earlier.unknown} unknown (details in those runs)`
              : '';
          printLine(`conversation: ${status.conversation.messages} messages, ${status.conversation.bytes} of ${status.conversation.maxBytes} bytes, in the side store${continued}`);
        }
        for (const batch of batches) printLine(batchProgressLine(batch));
        if (status.paused) printLine(`paused on ${pausedWhat(status.paused)}: ${withCode(status.paused.errorType, status.paused.reason)}`);
        printTable(
          ['call', 'tool', 'status', 'source', 'receipt', 'error or note'],
          status.calls.map((c) => [c.callId, c.toolName, shownStatus(c), c.source ?? '', receiptOf(c) === null ? '' : JSON.stringify(receiptOf(c)), errorOf(c)]),
        );
        for (const c of status.calls) if (c.compensation !== undefined) printLine(compensationLine(c.callId, c.compensation));
        if (effects !== null) printLine(effectsLine(effects));
      } finally {
        await close();
      }
    });
}

/**
 * What a paused run waits on: the call, its compensation, or one item of a batch call,
 * with the revision it was claimed under and the idempotency key to look it up by at the provider
 * (`not reported` when the failure that paused the run named none).
 */
export function pausedWhat(paused: PausedView): string {
  const what = paused.role === 'compensation' ? `the compensation of ${paused.callId}` : paused.callId;
  const claimed = `revision ${paused.toolRevision ?? 'not reported'}, key ${paused.idempotencyKey ?? 'not reported'}`;
  const item = paused.item === undefined ? '' : `; ${describeItem(paused.item)}, item key ${paused.item.idempotencyKey ?? 'not reported'}`;
  return `${what} (${paused.toolName} ${claimed}${item}); pause ${paused.pauseId} (ttc resolve … --pause ${paused.pauseId})`;
}

/** A call's status as people read it: `completed, refused` for a call whose stored outcome is the tool's error result (nothing applied). */
export function shownStatus(call: Pick<CallReport, 'status' | 'outcome'>): string {
  return call.outcome !== null && !call.outcome.ok ? `${call.status}, refused` : call.status;
}

/** The error-or-note column: the call's failure or reason (a completed call's note), else the refusal of its error result (`TYPE: message`). */
export function errorOf(call: Pick<CallReport, 'errorType' | 'reason' | 'outcome'>): string {
  if (call.outcome !== null && !call.outcome.ok) return withCode(call.outcome.error.type, call.outcome.error.message);
  return call.errorType || call.reason ? withCode(call.errorType, call.reason) : '';
}

/** `compensation of c1: compensated by refund revision v1 (generation 1, source executed, key ttcc-…)`, with the compensation's error when it has one. */
export function compensationLine(callId: string, c: CompensationReport): string {
  const by = c.toolName === null ? '' : ` by ${c.toolName}${c.toolRevision === null ? '' : ` revision ${c.toolRevision}`}`;
  const facts = [`generation ${c.generation}`, ...(c.source === null ? [] : [`source ${c.source}`]), ...(c.idempotencyKey === null ? [] : [`key ${c.idempotencyKey}`])].join(', ');
  const refused = c.outcome !== null && !c.outcome.ok ? `: refused: ${withCode(c.outcome.error.type, c.outcome.error.message)}` : '';
  const why = refused === '' && (c.errorType || c.reason) ? `: ${withCode(c.errorType, c.reason)}` : '';
  return `compensation of ${callId}: ${c.status}${by} (${facts})${refused}${why}`;
}

/** `effects: applied c2; compensated c1; compensation pending none; not run s1; unknown none` (a stopped run's calls, see `listEffects`). */
export function effectsLine(effects: RunEffects): string {
  const list = (ids: readonly string[]): string => (ids.length === 0 ? 'none' : ids.join(', '));
  return `effects: applied ${list(effects.applied)}; compensated ${list(effects.compensated)}; compensation pending ${list(effects.compensationPending)}; not run ${list(effects.notRun)}; unknown ${list(effects.unknown)}`;
}

/** The Temporal side of a run `show` reports next to its status query. */
export interface RunExecutionView {
  /** Temporal's execution status: `RUNNING`, `COMPLETED`, `FAILED`, `TERMINATED`, `TIMED_OUT`, `CANCELLED`, `CONTINUED_AS_NEW`, … */
  readonly status: string;
  /** When the run closed (ISO 8601), or null while it runs. */
  readonly closeTime: string | null;
  /** For a run that closed without completing: its failure (see `runFailureOf`); else null. */
  readonly failure: RunFailure | null;
  /** With `failure`: the whole cause chain, outermost first (see `failureChainOf`); absent otherwise. */
  readonly failureChain?: readonly FailureLink[];
}

/**
 * The run's execution status and close time (`describe`) and, when it closed failed, terminated,
 * timed out or cancelled, its failure and cause chain (from `result()`).
 *
 * @throws {@link CheckpointError} DECRYPTION_FAILED (with a hint) when the failure is encrypted
 *   by the payload codec and no key is set; Temporal's errors otherwise.
 */
async function runExecution(handle: WorkflowHandle, workflowId: string, description: WorkflowExecutionDescription): Promise<RunExecutionView> {
  const status = description.status.name;
  const closeTime = description.closeTime?.toISOString() ?? null;
  if (status === 'RUNNING' || status === 'COMPLETED' || status === 'CONTINUED_AS_NEW') return { status, closeTime, failure: null };
  const error = await handle.result().then(
    () => null,
    (error: unknown) => {
      const explained = explainUndecodable(error, `run ${workflowId}'s failure`);
      if (explained !== error) throw explained;
      return error;
    },
  );
  if (error === null) return { status, closeTime, failure: null };
  return { status, closeTime, failure: runFailureOf(error), failureChain: failureChainOf(error) };
}

/**
 * The receipt shown for a call: a success's, or the one an error result kept because the tool
 * ran but its result could not be stored (PAYLOAD_TOO_LARGE / NOT_JSON), so a person
 * can reconcile from `ttc show` alone.
 */
export function receiptOf(call: Pick<CallReport, 'receipt' | 'outcome'>): JsonValue | null {
  if (call.receipt !== null) return call.receipt;
  return call.outcome !== null && !call.outcome.ok ? (call.outcome.error.receipt ?? null) : null;
}
