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
   * The call within its run chain: `act-<seq>` in the chain's first run, `act-<seq>@<runId>` in any
   * other (after a continue-as-new, a workflow retry or a reset), where `seq` is the workflow's
   * activity command sequence number (deterministic on replay). So a reset run's call never lands on
   * the checkpoint of a call its reset discarded; {@link occurrence} finds that call when it is the same action.
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
  /**
   * Where the fence claims the occurrence of this call's action (docs/protocol.md#resets): `scope`,
   * the run chain's segment (`occurrenceScopeOf`), and `index`, how many calls of the same activity
   * type and arguments this run scheduled before it (less those that never started). A reset run's
   * call that is the same action as one the discarded branch applied is answered from its
   * checkpoint. Absent for arguments JSON cannot carry.
   */
  readonly occurrence?: { readonly scope: string; readonly index: number };
}

/** `headers` with the call header added (the input's other headers unchanged); the approval fields only when set. */
export function withCallHeader(headers: Headers, call: CallHeader): Headers {
  const { callId, runChainId, approvedIntentDigest, approvalExpiresAt, approvalGrant, occurrence } = call;
  const value = {
    callId,
    runChainId,
    ...(occurrence === undefined ? {} : { occurrence: { scope: occurrence.scope, index: occurrence.index } }),
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
  const { callId, runChainId, approvedIntentDigest, approvalExpiresAt, approvalGrant, occurrence } = (value ?? {}) as Partial<Record<keyof CallHeader, unknown>>;
  if (!isText(callId) || !isText(runChainId)) return undefined;
  if ([approvedIntentDigest, approvalExpiresAt, approvalGrant].some((field) => field !== undefined && !isText(field))) return undefined;
  const { scope, index } = (occurrence ?? {}) as { scope?: unknown; index?: unknown };
  if (occurrence !== undefined && (!isText(scope) || !Number.isSafeInteger(index) || (index as number) < 0)) return undefined;
  return {
    callId,
    runChainId,
    ...(occurrence === undefined ? {} : { occurrence: { scope: scope as string, index: index as number } }),
    ...(approvedIntentDigest === undefined ? {} : { approvedIntentDigest: approvedIntentDigest as string }),
    ...(approvalExpiresAt === undefined ? {} : { approvalExpiresAt: approvalExpiresAt as string }),
    ...(approvalGrant === undefined ? {} : { approvalGrant: approvalGrant as string }),
  };
}

/** The call id of the activity command `seq` in run `runId` of chain `runChainId` (see {@link CallHeader.callId}). */
export function callIdOf(seq: number, runId: string, runChainId: string): string {
  return runId === runChainId ? `act-${seq}` : `act-${seq}@${runId}`;
}

/** Header key of a continue-as-new: the occurrence scope the new run counts its calls' actions in (`nextSegmentScope`). */
export const SEGMENT_HEADER = '_ttc-segment';

/** `headers` with the segment header set to `scope`. */
export function withSegmentHeader(headers: Headers, scope: string): Headers {
  return { ...headers, [SEGMENT_HEADER]: defaultPayloadConverter.toPayload(scope) };
}

/** The segment header's scope, or undefined when absent or not a non-empty string. */
export function readSegmentHeader(headers: Headers | undefined): string | undefined {
  const payload = headers?.[SEGMENT_HEADER];
  if (payload === undefined) return undefined;
  try {
    const scope: unknown = defaultPayloadConverter.fromPayload(payload);
    return isText(scope) ? scope : undefined;
  } catch {
    return undefined;
  }
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}
