/**
 * `resolve <workflowId> <callId>`: tells a paused run how an unknown outcome ended: applied
 * (with the exact result), absent (run it again under a new call id) or abandon (end the run).
 * The decision names the pause it was made for (`--pause <id>`, as `ttc pending` and `ttc show`
 * print it): a call can pause again (its compensation, a batch item, a later generation), and a
 * decision about an earlier pause is refused (STALE_PAUSE) by this command before anything is
 * sent and by the run itself.
 * Checks that the call is the one paused (and, with `--tenant`, that the run is that tenant's) before sending the update; a refusal by the run
 * (another operator was faster, the run stopped) is printed with its type and the run's own
 * message (`src/operator/run-decisions.ts`, shared with `approve` and the console). Any refusal
 * exits 1.
 */
import type { Command } from 'commander';
import { findNamedCall } from '../checkpoint/run-scope';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { CheckpointError } from '../checkpoint/errors';
import { DecisionRefusedError, resolutionNextStep, resolveCall } from '../operator/run-decisions';
import { MESSAGE_ERROR_TYPES } from '../workflows/agent/messages';
import type { PausedView, ResolveOutcomeRequest } from '../workflows/agent/types';
import { printLine } from './terminal-safe';
import { defaultResolvedBy } from '../plugin/resolve-in-store';
import { withRun } from './with-run';

export function registerResolve(program: Command): void {
  program
    .command('resolve <workflowId> <callId>')
    .description('resolve a paused call: --applied <json result> | --absent | --abandon, with --reason')
    .option('--applied <json>', 'the effect happened; this JSON is the exact tool output the model should see')
    .option('--receipt <json>', 'with --applied: the provider receipt, if you have one')
    .option(
      '--absent',
      'the effect did not happen; run the call again under a new call id (a paused batch item: the item runs again under its next generation and the batch resumes)',
    )
    .option('--abandon', 'give up; the run ends as abandoned')
    .requiredOption('--reason <text>', 'why (kept in the run for audit)')
    .option('--by <name>', 'who resolves (kept with the decision in the run and the checkpoint; default: <OS user>@<host>)')
    .option('--pause <pauseId>', 'the pause you decided on, as `ttc pending` / `ttc show` print it (required; refused if the run now waits on another pause)')
    .option('--tenant <tenant>', 'refuse unless the run belongs to this tenant')
    .action(
      async (
        workflowId: string,
        callId: string,
        opts: { applied?: string; receipt?: string; absent?: boolean; abandon?: boolean; reason: string; pause?: string; by?: string; tenant?: string },
      ) => {
        const chosen = [opts.applied !== undefined, !!opts.absent, !!opts.abandon].filter(Boolean).length;
        if (chosen !== 1) throw new CheckpointError('INVALID_ARGUMENT', 'choose exactly one of --applied <json>, --absent, --abandon', { field: 'resolution' });
        const pauseId = opts.pause ?? '';
        const by = opts.by ?? defaultResolvedBy();
        const request: ResolveOutcomeRequest =
          opts.applied !== undefined
            ? {
                callId,
                pauseId,
                by,
                resolution: 'applied',
                result: parseJson(opts.applied, '--applied'),
                receipt: opts.receipt === undefined ? null : parseJson(opts.receipt, '--receipt'),
                reason: opts.reason,
              }
            : { callId, pauseId, by, resolution: opts.absent ? 'absent' : 'abandon', reason: opts.reason };
        await withRun(workflowId, opts.tenant, async (handle, status) => {
          if (status.phase !== 'paused' || status.paused === null || findNamedCall([status.paused], callId) === undefined) {
            throw new CheckpointError(
              'INVALID_ARGUMENT',
              `run ${workflowId} is ${status.phase}${status.paused ? `, paused on ${status.paused.callId}` : ''}; call ${callId} is not waiting for a resolution`,
              { field: 'callId' },
            );
          }
          const waiting = status.paused.pauseId;
          if (opts.pause === undefined) {
            throw new CheckpointError(
              'INVALID_ARGUMENT',
              `--pause is required: run ${workflowId} waits on pause ${waiting} (${describePaused(status.paused)}); check that it is the pause you decided on, then pass --pause ${waiting}`,
              { field: '--pause' },
            );
          }
          if (opts.pause !== waiting) {
            throw new DecisionRefusedError(
              MESSAGE_ERROR_TYPES.STALE_PAUSE,
              workflowId,
              callId,
              `the decision was made for pause ${opts.pause}, but the run now waits on pause ${waiting} (${describePaused(status.paused)}); nothing was sent`,
            );
          }
          const result = await resolveCall(handle, request).catch((error: unknown) => {
            // The run's refusals are DecisionRefusedErrors; an `applied` the worker refused fails the update with the worker's failure.
            if (!(error instanceof WorkflowUpdateFailedError)) throw error;
            const cause = error.cause as { type?: string; message?: string } | undefined;
            throw new Error(`run ${workflowId} refused the resolution of ${callId}: ${cause?.message ?? error.message}`);
          });
          const next = resolutionNextStep(result);
          printLine(`resolved ${callId} as ${result.resolution}: call status ${result.status}${next === null ? '' : `; ${next}`}`);
        });
      },
    );
}

/** What a pause is about, as a person reads it: the call, its compensation or one of its batch items. */
function describePaused(paused: PausedView): string {
  if (paused.role === 'compensation') return `the compensation of call ${paused.callId}`;
  if (paused.item !== undefined) return `item ${JSON.stringify(paused.item.key)} (generation ${paused.item.generation}) of call ${paused.callId}`;
  return `call ${paused.callId}`;
}

function parseJson(text: string, flag: string): never {
  try {
    return JSON.parse(text) as never;
  } catch {
    throw new CheckpointError('INVALID_ARGUMENT', `${flag} must be JSON, got ${JSON.stringify(text)}`, { field: flag });
  }
}
