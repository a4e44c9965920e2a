/**
 * The call-identity activity header, shared by the workflow outbound interceptor (sandbox) and
 * the fence interceptor (Node). Node-free: imports only `@temporalio/common`.
 */
import { defaultPayloadConverter, type Headers } from '@temporalio/common';

/** Header key: underscore, vendor, kebab case (never the SDK's reserved `__temporal_` prefix). */
export const CALL_HEADER = '_ttc-call';

/** What the header carries. */
export interface CallHeader {
  /**
   * The call within its run chain: `act-<seq>` for the chain's first run, `act-<seq>@<continuedFromExecutionRunId>`
   * after a continue-as-new (or a workflow retry), where `seq` is the workflow's activity command
   * sequence number (deterministic on replay). A reset keeps the started event, so it keeps the ids.
   * A compensation recorded by `Compensations.step` (`../../workflows/fenced/compensations`) runs under
   * `<step's call id>/compensation` instead, named through a call scope (`../../workflows/fenced/call-scope`).
   */
  readonly callId: string;
  /** The workflow's `firstExecutionRunId`. */
  readonly runChainId: string;
  /**
   * For a call scheduled inside `withApprovedIntent` (`../../workflows/fenced/approval-scope`): the intent digest a
   * person approved. The fence refuses the call with APPROVAL_MISMATCH when it computes another.
   */
  readonly approvedIntentDigest?: string;
  /** With {@link approvedIntentDigest}: when the approval expires, ISO-8601 UTC (APPROVAL_EXPIRED at or after it). */
  readonly approvalExpiresAt?: string;
  /**
   * For the call a `withApprovalGrant` scope names: the person's signed grant
   * (docs/protocol.md#approval-grants). It carries no intent digest; the fence verifies it.
   */
  readonly approvalGrant?: string;
}

/** `headers` with the call header added (the input's other headers unchanged); the approval fields only when set. */
export function withCallHeader(headers: Headers, call: CallHeader): Headers {
  const { callId, runChainId, approvedIntentDigest, approvalExpiresAt, approvalGrant } = call;
  const value = {
    callId,
    runChainId,
    ...(approvedIntentDigest === undefined ? {} : { approvedIntentDigest }),
    ...(approvalExpiresAt === undefined ? {} : { approvalExpiresAt }),
    ...(approvalGrant === undefined ? {} : { approvalGrant }),
  };
  return { ...headers, [CALL_HEADER]: defaultPayloadConverter.toPayload(value) };
}

/**
 * The call header of `headers`, or undefined when it is absent or malformed (an identity field
 * that is not a non-empty string, or an approval field present and not a non-empty string).
 */
export function readCallHeader(headers: Headers | undefined): CallHeader | undefined {
  const payload = headers?.[CALL_HEADER];
  if (payload === undefined) return undefined;
  let value: unknown;
  try {
    value = defaultPayloadConverter.fromPayload(payload);
  } catch {
    return undefined;
  }
  const { callId, runChainId, approvedIntentDigest, approvalExpiresAt, approvalGrant } = (value ?? {}) as Partial<Record<keyof CallHeader, unknown>>;
  if (!isText(callId) || !isText(runChainId)) return undefined;
  if ([approvedIntentDigest, approvalExpiresAt, approvalGrant].some((field) => field !== undefined && !isText(field))) return undefined;
  return {
    callId,
    runChainId,
    ...(approvedIntentDigest === undefined ? {} : { approvedIntentDigest: approvedIntentDigest as string }),
    ...(approvalExpiresAt === undefined ? {} : { approvalExpiresAt: approvalExpiresAt as string }),
    ...(approvalGrant === undefined ? {} : { approvalGrant: approvalGrant as string }),
  };
}

/** The call id of the activity command `seq` in a run continued from `continuedFromExecutionRunId` (see {@link CallHeader.callId}). */
export function callIdOf(seq: number, continuedFromExecutionRunId: string | undefined): string {
  return continuedFromExecutionRunId === undefined ? `act-${seq}` : `act-${seq}@${continuedFromExecutionRunId}`;
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}
