/**
 * Workflow side: how a workflow obtains the intent digest of a fenced call to show a person
 * (sandbox code). It schedules the plugin's `describeFencedCall` activity, which validates the
 * call and computes its digest on a worker; nothing is written and the activity does not run.
 */
import { ApplicationFailure, proxyActivities, workflowInfo, type ActivityOptions } from '@temporalio/workflow';
import type { GrantedCall } from '../../checkpoint/approval';
import { DESCRIBE_FENCED_CALL_ACTIVITY, type DescribeFencedCallInput, type FencedCallDescription } from '../../plugin/contract/approval-contract';

/** Describes a call of the fenced activity type `activityType` with `args`. */
export type FencedCallDescriber<A> = <K extends keyof A & string>(activityType: K, ...args: A[K] extends (...a: infer P) => unknown ? P : never) => Promise<FencedCallDescription>;

/** @default options of the describe activity: it only validates and hashes. */
const DEFAULT_OPTIONS: ActivityOptions = { startToCloseTimeout: '30s', retry: { maximumAttempts: 5 } };

/**
 * A typed describer of calls of the activities `A` (the interface you pass to `proxyActivities`):
 *
 *   const describe = fencedCallDescriber<typeof activities>();
 *   const { intentDigest, arguments: shown } = await describe('chargeCard', customer, amountCents);
 *
 * Show `shown` (and `toolRevision`) to a person; run the call under the digest they approve
 * with `withApprovedIntent`. The describing worker must have the plugin with the activity in `fence`.
 *
 * @param options activity options of the describe activity. @default 30 s start-to-close, 5 attempts
 * @returns a function resolving to the call's {@link FencedCallDescription}; it fails with an
 *   `ActivityFailure` whose cause type is UNKNOWN_TOOL (the activity type is not fenced there),
 *   INVALID_TOOL_INPUT (the arguments do not match the entry's `input` schema) or NOT_JSON.
 */
export function fencedCallDescriber<A>(options: ActivityOptions = DEFAULT_OPTIONS): FencedCallDescriber<A> {
  const activities = proxyActivities<Record<typeof DESCRIBE_FENCED_CALL_ACTIVITY, (input: DescribeFencedCallInput) => Promise<FencedCallDescription>>>(options);
  return (activityType, ...args) => activities[DESCRIBE_FENCED_CALL_ACTIVITY]({ activityType, args });
}

/** Describes a call of `activityType` with `args` that will run under call id `callId` with a signed grant. */
export type GrantRequestDescriber<A> = <K extends keyof A & string>(
  callId: string,
  activityType: K,
  ...args: A[K] extends (...a: infer P) => unknown ? P : never
) => Promise<FencedCallDescription & { readonly approvalRequest: GrantedCall }>;

/**
 * A typed describer of calls to approve with a signed grant (docs/protocol.md#approval-grants):
 * as {@link fencedCallDescriber}, and the description's `approvalRequest` is the call the grant
 * must name (namespace, tenant, workflow, run chain, `callId`, activity type, intent digest).
 * Hand it to the approve path, which signs it for a person (`signApprovalGrant`); run the call
 * with `withApprovalGrant({ callId, grant }, ...)`. `callId` must be unique in the run chain.
 *
 * @param options activity options of the describe activity. @default 30 s start-to-close, 5 attempts
 */
export function grantRequestDescriber<A>(options: ActivityOptions = DEFAULT_OPTIONS): GrantRequestDescriber<A> {
  const activities = proxyActivities<Record<typeof DESCRIBE_FENCED_CALL_ACTIVITY, (input: DescribeFencedCallInput) => Promise<FencedCallDescription>>>(options);
  return async (callId, activityType, ...args) => {
    const described = await activities[DESCRIBE_FENCED_CALL_ACTIVITY]({ activityType, args, callId, runChainId: workflowInfo().firstExecutionRunId });
    if (described.approvalRequest === undefined) {
      throw ApplicationFailure.create({
        type: 'INVALID_ARGUMENT',
        message: `the worker that described ${activityType} returned no approvalRequest (older code); nothing to sign`,
        nonRetryable: true,
      });
    }
    return described as FencedCallDescription & { readonly approvalRequest: GrantedCall };
  };
}
