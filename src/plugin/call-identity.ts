/**
 * The identity of a fenced activity call and attempt, from the call header (`./contract/call-header`)
 * or, without it, from the activity context.
 */
import type { Info } from '@temporalio/activity';
import type { Headers } from '@temporalio/common';
import { CheckpointError } from '../checkpoint/errors';
import type { AttemptContext } from '../activities/fence/prepare-call';
import { readCallHeader, type CallHeader } from './contract/call-header';

/** A call's identity and where it came from. */
export interface ActivityCallIdentity extends CallHeader {
  /**
   * `header`: set by the plugin's workflow interceptor (unique across continue-as-new, stable
   * across a reset). `context`: the workflow interceptor module did not reach the workflow (a
   * prebuilt bundle made without the plugin): `activity-<activityId>` in run chain `<runId>`,
   * which is new after a reset, continue-as-new or workflow retry (a call repeated there runs
   * again) and relies on activity ids being unique within a run.
   */
  readonly source: 'header' | 'context';
}

/** The call identity of the activity described by `info`, preferring the call header. @throws {@link CheckpointError} INVALID_ARGUMENT outside a workflow. */
export function activityCallIdentity(info: Info, headers: Headers | undefined): ActivityCallIdentity {
  const execution = requireWorkflow(info);
  const header = readCallHeader(headers);
  if (header !== undefined) return { ...header, source: 'header' };
  return { callId: `activity-${info.activityId}`, runChainId: execution.runId, source: 'context' };
}

/** The attempt's context for `prepareCall`. @throws {@link CheckpointError} INVALID_ARGUMENT outside a workflow. */
export function attemptContextOf(info: Info, idempotencyKeySecret: Uint8Array | undefined): AttemptContext {
  const execution = requireWorkflow(info);
  return {
    namespace: info.workflowNamespace ?? info.activityNamespace,
    workflowId: execution.workflowId,
    runId: execution.runId,
    attempt: info.attempt,
    ...(idempotencyKeySecret === undefined ? {} : { idempotencyKeySecret }),
  };
}

function requireWorkflow(info: Info): { workflowId: string; runId: string } {
  const execution = info.workflowExecution;
  if (execution?.workflowId === undefined) {
    throw new CheckpointError('INVALID_ARGUMENT', `fenced activity ${info.activityType} runs only inside a workflow (no workflow id in the activity context)`, {
      field: 'workflowId',
    });
  }
  return execution;
}
