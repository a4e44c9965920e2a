/**
 * Worker side of approved calls through the plugin (Node): the `describeFencedCall` activity and
 * the approval a call header carries, read for the fence interceptor.
 */
import { Context } from '@temporalio/activity';
import type { Headers } from '@temporalio/common';
import { approvalExpiryText } from '../checkpoint/approval';
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import { toApplicationFailure } from '../activities/fence/failures';
import type { ToolDefinition } from '../activities/tools/define-tool';
import { prepareCall } from '../activities/fence/prepare-call';
import { describePreparedCall } from '../activities/fence/call-description';
import type { DescribeFencedCallInput, FencedCallDescription } from './contract/approval-contract';
import { CALL_HEADER, readCallHeader } from './contract/call-header';
import { attemptContextOf } from './call-identity';
import type { FencedActivity } from './options';

/** The approval fields of a fenced call's input, from its call header (both absent outside `withApprovedIntent`). */
export interface HeaderApproval {
  readonly expectedIntentDigest?: string;
  readonly approvalExpiresAt?: string;
  /** The signed grant of a `withApprovalGrant` scope's call. */
  readonly approvalGrant?: string;
}

/**
 * The approval the call header of `headers` carries, as `FencedToolInput` fields.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT when the call header is present but malformed
 *   (it may have carried an approval: fail closed) or its `approvalExpiresAt` is not an
 *   ISO-8601 UTC timestamp; nothing is written or run.
 */
export function approvalFromHeaders(headers: Headers | undefined): HeaderApproval {
  if (headers?.[CALL_HEADER] === undefined) return {};
  const header = readCallHeader(headers);
  if (header === undefined) throw new CheckpointError('INVALID_ARGUMENT', `the ${CALL_HEADER} activity header is malformed; the call was not run`, { field: CALL_HEADER });
  const { approvedIntentDigest, approvalExpiresAt, approvalGrant } = header;
  if (approvalExpiresAt !== undefined) approvalExpiryText(approvalExpiresAt, 'approvalExpiresAt');
  return {
    ...(approvedIntentDigest === undefined ? {} : { expectedIntentDigest: approvedIntentDigest }),
    ...(approvalExpiresAt === undefined ? {} : { approvalExpiresAt }),
    ...(approvalGrant === undefined ? {} : { approvalGrant }),
  };
}

/** What the describe activity needs of the plugin's fence dependencies. */
export interface DescribeDeps {
  /** The fenced activity types. */
  readonly fenced: ReadonlyMap<string, FencedActivity>;
  readonly tenant: string;
  readonly idempotencyKeySecret?: Uint8Array;
}

/**
 * The `describeFencedCall` activity: validates a call of a fenced activity type as the fence
 * would (the entry's `input` schema, JSON, bounds) and returns its revision, intent digest and
 * canonical arguments. Writes nothing; the activity does not run.
 *
 * @throws ApplicationFailure (via `toApplicationFailure`) UNKNOWN_TOOL when `activityType` is not
 *   fenced on this worker; INVALID_TOOL_INPUT / NOT_JSON for arguments the fence would refuse;
 *   INVALID_ARGUMENT for a malformed input.
 */
export function describeFencedCallActivity(deps: DescribeDeps): (input: DescribeFencedCallInput) => Promise<FencedCallDescription> {
  return async (input) => {
    try {
      const { activityType, args, callId, runChainId } = readDescribeInput(input);
      const entry = deps.fenced.get(activityType);
      const tools = new Map<string, ToolDefinition<unknown>>(entry === undefined ? [] : [[activityType, { ...entry, execute: NOT_RUN }]]);
      const info = Context.current().info;
      const context = attemptContextOf(info, deps.idempotencyKeySecret);
      const call = prepareCall(tools, { tenant: deps.tenant, callId: 'describe', toolName: activityType, input: { args: args as JsonValue } }, context);
      // The description a tool call gets; a fenced activity's arguments are shown as the activity takes them.
      const { toolRevision, intentDigest, arguments: described } = describePreparedCall(call);
      const approvalRequest =
        callId === undefined || runChainId === undefined
          ? {}
          : { approvalRequest: { namespace: context.namespace, tenant: deps.tenant, workflowId: context.workflowId, runChainId, callId, toolName: activityType, intentDigest } };
      return { activityType, toolRevision, intentDigest, arguments: (described as { args: JsonValue }).args, ...approvalRequest };
    } catch (error) {
      throw toApplicationFailure(error);
    }
  };
}

const NOT_RUN = async (): Promise<never> => {
  throw new Error('unreachable: describeFencedCall never runs the activity');
};

function readDescribeInput(input: unknown): DescribeFencedCallInput {
  // Own properties only: nothing is read from a polluted Object.prototype.
  const own = (key: keyof DescribeFencedCallInput): unknown =>
    typeof input === 'object' && input !== null && Object.hasOwn(input, key) ? (input as Record<string, unknown>)[key] : undefined;
  const activityType = own('activityType');
  const args = own('args');
  if (typeof activityType !== 'string' || activityType === '')
    throw new CheckpointError('INVALID_ARGUMENT', 'describeFencedCall: activityType must be a non-empty string', { field: 'activityType' });
  if (!Array.isArray(args)) throw new CheckpointError('INVALID_ARGUMENT', "describeFencedCall: args must be an array of the activity's arguments", { field: 'args' });
  const callId = own('callId');
  const runChainId = own('runChainId');
  for (const [field, value] of [
    ['callId', callId],
    ['runChainId', runChainId],
  ] as const) {
    if (value !== undefined && (typeof value !== 'string' || value === '' || value.length > 2048))
      throw new CheckpointError('INVALID_ARGUMENT', `describeFencedCall: ${field} must be non-empty text of at most 2,048 characters`, { field });
  }
  if ((callId === undefined) !== (runChainId === undefined))
    throw new CheckpointError('INVALID_ARGUMENT', 'describeFencedCall: callId and runChainId come together', { field: 'callId' });
  return { activityType, args, ...(callId === undefined ? {} : { callId: callId as string, runChainId: runChainId as string }) };
}
