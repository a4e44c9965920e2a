/**
 * The Temporal activities of the fenced tool layer (SPEC §4), built by a factory that closes
 * over the store and the tools, as the Temporal samples do. Node side only: workflow code
 * imports at most the types in `./contract`.
 */
import { Context } from '@temporalio/activity';
import { CheckpointError } from '../checkpoint/errors';
import { decideCheckpoint } from '../checkpoint/decide';
import { completeExecution, claimDelivery, completeDelivery } from '../checkpoint/transitions';
import type { CheckpointStore } from '../stores/checkpoint-store';
import type { FencedToolInput, FencedToolResult, ResolveToolCallInput, ResolveToolCallResult, ToolCallDescription } from './contract';
import type { ToolDefinition } from './define-tool';
import { toApplicationFailure } from './failures';
import { prepareCall, settleCall, type FencedToolDeps, type PreparedCall } from './fenced-tool';

/** Options of {@link createToolActivities}. */
export interface ToolActivitiesOptions {
  readonly store: CheckpointStore;
  readonly tools: readonly ToolDefinition<any>[];
  /** UTF-8 JSON bytes of a stored result. @default 65,536 */
  readonly maxPayloadBytes?: number;
  /** @default () => new Date() */
  readonly clock?: () => Date;
  /** In-attempt backoff for transient tool errors (full jitter, Retry-After honoured). */
  readonly transientRetry?: FencedToolDeps['transientRetry'];
}

/** The activities object for `Worker.create({ activities })`. */
export interface ToolActivities {
  /** One fenced attempt of a tool call. Failure types are CheckpointError codes (see `failures.ts`). */
  runFencedTool(input: FencedToolInput): Promise<FencedToolResult>;
  /** Validates a call and returns its revision, intent digest and idempotency key; writes nothing. */
  describeToolCall(input: FencedToolInput): Promise<ToolCallDescription>;
  /** Stores a person's resolution of an unknown outcome under the original fence, then delivers it. */
  resolveToolCall(input: ResolveToolCallInput): Promise<ResolveToolCallResult>;
}

/**
 * Builds the tool activities.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT when two tools share a name.
 */
export function createToolActivities(options: ToolActivitiesOptions): ToolActivities {
  const tools = new Map<string, ToolDefinition<any>>();
  for (const tool of options.tools) {
    if (tools.has(tool.name)) throw new CheckpointError('INVALID_ARGUMENT', `two tools are named ${JSON.stringify(tool.name)}`, { field: 'tools' });
    tools.set(tool.name, tool);
  }
  const deps: FencedToolDeps = { store: options.store, tools, maxPayloadBytes: options.maxPayloadBytes, clock: options.clock, transientRetry: options.transientRetry };
  const prepare = (input: FencedToolInput): PreparedCall => {
    const info = Context.current().info;
    const workflowId = info.workflowExecution?.workflowId;
    if (workflowId === undefined) throw new CheckpointError('INVALID_ARGUMENT', 'fenced tool activities run only inside a workflow (no workflow id in the activity context)', { field: 'workflowId' });
    return prepareCall(deps, input, { namespace: info.workflowNamespace ?? info.activityNamespace, workflowId, attempt: info.attempt });
  };
  return {
    async runFencedTool(input) {
      try {
        const call = prepare(input);
        await assertApprovedIntent(deps, call, Context.current().info.attempt);
        return await settleCall(deps, call);
      } catch (error) {
        throw toApplicationFailure(error);
      }
    },
    async describeToolCall(input) {
      try {
        const call = prepare(input);
        return { toolRevision: call.tool.revision, intentDigest: call.intentDigest, idempotencyKey: call.idempotencyKey };
      } catch (error) {
        throw toApplicationFailure(error);
      }
    },
    async resolveToolCall(input) {
      try {
        return await resolveCall(deps, prepare(input), input);
      } catch (error) {
        throw toApplicationFailure(error);
      }
    },
  };
}

/**
 * Approval bound to intent, end to end (issue 6): when the workflow passes the intent digest a
 * person approved, the call runs only if this worker computes the same digest. Checked before
 * any checkpoint write.
 *
 * @param attempt the activity attempt (1 for the first).
 * @throws {@link CheckpointError} APPROVAL_MISMATCH when the digests differ on the first attempt
 *   and the call has no checkpoint (nothing was written or run); OUTCOME_UNKNOWN when they
 *   differ on a later attempt or a checkpoint exists: an earlier attempt may have run the
 *   approved intent (the store key covers the revision, so a redeployed tool cannot see its
 *   checkpoint); a person decides; nothing is written.
 */
async function assertApprovedIntent(deps: FencedToolDeps, call: PreparedCall, attempt: number): Promise<void> {
  const expected = call.input.expectedIntentDigest;
  if (expected === undefined || expected === call.intentDigest) return;
  const details = { callId: call.input.callId, toolName: call.tool.name, toolRevision: call.tool.revision, expectedIntentDigest: String(expected), intentDigest: call.intentDigest };
  const existing = await deps.store.get(call.binding);
  if (existing === null && attempt === 1) {
    throw new CheckpointError(
      'APPROVAL_MISMATCH',
      `${call.tool.name} call ${JSON.stringify(call.input.callId)} was approved for intent ${String(expected)}, but this worker (tool revision ${call.tool.revision}) computes ${call.intentDigest}; nothing was written or run`,
      details,
    );
  }
  throw new CheckpointError(
    'OUTCOME_UNKNOWN',
    `${call.tool.name} call ${JSON.stringify(call.input.callId)} was approved for intent ${String(expected)}, this worker computes ${call.intentDigest}, and ${existing === null ? `this is attempt ${attempt}, so an earlier attempt may have run the approved intent` : `an earlier attempt already left a ${existing.status} checkpoint`}; not running it; the run waits for a person`,
    { ...details, attempt, status: existing?.status ?? null },
  );
}

/**
 * Stores a person's `applied` resolution of an executing or uncertain call through
 * `completeExecution` under the fence the record holds, then records its delivery.
 * Idempotent: a call already completed is delivered again as stored.
 */
async function resolveCall(deps: FencedToolDeps, call: PreparedCall, input: ResolveToolCallInput): Promise<ResolveToolCallResult> {
  const record = await deps.store.get(call.binding);
  if (record === null) throw new CheckpointError('INVALID_ARGUMENT', `call ${call.binding.callId} has no checkpoint to resolve`, { callId: call.binding.callId });
  decideCheckpoint(record, call.binding);
  if (record.status === 'executing' || record.status === 'uncertain') {
    if (input.resolution !== 'applied') throw new CheckpointError('INVALID_ARGUMENT', `resolveToolCall stores only an applied resolution, got ${JSON.stringify(input.resolution)}`, { field: 'resolution' });
    const at = new Date(Math.max(Date.now(), Date.parse(record.updatedAt))).toISOString();
    const done = completeExecution(record, { attemptId: record.execution!.attemptId, at, result: input.result, maxPayloadBytes: deps.maxPayloadBytes });
    const claim = claimDelivery(done.next, { deliveryId: call.deliveryId, at });
    const delivered = completeDelivery(claim.next, { deliveryId: call.deliveryId, at });
    for (const t of [done, claim, delivered]) {
      if (!(await deps.store.compareAndSwap(t.expectedRevision, t.next))) {
        throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `call ${call.binding.callId} changed while being resolved; retry`, { callId: call.binding.callId });
      }
    }
  }
  const current = await deps.store.get(call.binding);
  if (current?.result === null || current === null) {
    throw new CheckpointError('INVALID_TRANSITION', `call ${call.binding.callId} is ${current?.status ?? 'missing'}; only an executing or uncertain call can be resolved`, { callId: call.binding.callId });
  }
  return {
    callId: input.callId,
    toolName: call.tool.name,
    toolRevision: call.tool.revision,
    outcome: current.result.payload as ResolveToolCallResult['outcome'],
    idempotencyKey: call.idempotencyKey,
    intentDigest: call.intentDigest,
  };
}

export { defineTool, ToolError } from './define-tool';
export type { LookupResult, ToolContext, ToolDefinition, ToolErrorKind, ToolSuccess } from './define-tool';
export { toApplicationFailure } from './failures';
export { classifyHttpFailure, TOOL_ERROR_CLASSES } from './error-classes';
export type { HttpFailureClass, ToolErrorClass } from './error-classes';
export { DEFAULT_TRANSIENT_RETRY, nextRetryDelayMs, retryTransient } from './transient-retry';
export type { TransientRetryPolicy } from './transient-retry';
