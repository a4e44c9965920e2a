/**
 * Workflow side of approved calls through the plugin (sandbox code: imports nothing Node-only).
 *
 * `withApprovedIntent(approval, work)` runs `work` in a scope held by the workflow sandbox's
 * `AsyncLocalStorage`; the plugin's workflow outbound interceptor (`./workflow-interceptors`)
 * adds the scope's digest and expiry to the call header of each activity scheduled inside it,
 * and the fence refuses a fenced call whose intent differs (APPROVAL_MISMATCH) or whose approval
 * has expired (APPROVAL_EXPIRED) before any claim: nothing runs. The header is built from
 * workflow state only (the approval the workflow holds), so it is the same on replay.
 */
import { ApplicationFailure, AsyncLocalStorage } from '@temporalio/workflow';
import { approvalExpiryText, MAX_GRANT_LENGTH } from '../../checkpoint/approval';
import { runInCallScope } from './call-scope';
import { FINGERPRINT_PATTERN } from '../../checkpoint/bounds';
import { isCheckpointError } from '../../checkpoint/errors';
import type { ApprovedIntent } from '../../plugin/contract/approval-contract';

/** The approval of the current scope: an approved digest (and expiry), or a signed grant of one named call. */
export type ApprovalScope = { readonly approvedIntentDigest: string; readonly approvalExpiresAt?: string } | { readonly approvalGrant: string; readonly grantCallId: string };

const storage = new AsyncLocalStorage<ApprovalScope>();

/**
 * Runs `work` under a person's approval of one fenced call: the activities `work` schedules carry
 * `approval` in their call header, and a fenced one runs only if its intent digest is
 * `approval.intentDigest` and `approval.expiresAt` has not passed when its attempt claims the call.
 * Schedule one fenced call inside: a second call with other arguments has another digest and is
 * refused. Activities that are not fenced ignore the approval. The plugin must be on the worker
 * (it adds the interceptor that writes the header); a worker pin `requireApproval` refuses a
 * call made outside a scope with APPROVAL_REQUIRED.
 *
 * @returns what `work` returns.
 * @throws ApplicationFailure `INVALID_ARGUMENT` (non-retryable) when `intentDigest` is not a
 *   `sha256:` digest or `expiresAt` is not an ISO-8601 UTC timestamp (or a valid Date); `work` is not called.
 */
export function withApprovedIntent<T>(approval: ApprovedIntent, work: () => Promise<T>): Promise<T> {
  return storage.run(approvalScopeOf(approval), work);
}

/** A person's signed approval grant of one fenced call (docs/protocol.md#approval-grants), as the approve path returned it. */
export interface ApprovalGrant {
  /** The call id the grant names (`FencedCallDescription.approvalRequest.callId`): the first activity of the scope is scheduled under it. */
  readonly callId: string;
  /** The grant itself (`signApprovalGrant` of `temporal-tool-checkpoint/operator`). */
  readonly grant: string;
}

/**
 * Runs `work` under a person's signed grant of one fenced call: the first activity `work`
 * schedules gets the call id `approval.callId` and carries the grant in its call header (no
 * digest travels); a worker holding grant keys runs it only if the grant verifies for exactly
 * that call (namespace, tenant, workflow, run chain, call, activity type and intent) and has not
 * expired, and records the grant's use; a second use of the call id is the same checkpoint, so
 * the effect happens once. Later activities of the scope carry no grant.
 *
 * @returns what `work` returns.
 * @throws ApplicationFailure `INVALID_ARGUMENT` (non-retryable) when `callId` or `grant` is not
 *   non-empty text (the grant at most 4,096 characters); `work` is not called.
 */
export function withApprovalGrant<T>(approval: ApprovalGrant, work: () => Promise<T>): Promise<T> {
  const callId: unknown = approval?.callId;
  const grant: unknown = approval?.grant;
  if (typeof callId !== 'string' || callId === '' || callId.length > 2048) throw invalid('callId', 'withApprovalGrant: callId must be non-empty text of at most 2,048 characters');
  if (typeof grant !== 'string' || grant === '' || grant.length > MAX_GRANT_LENGTH)
    throw invalid('grant', `withApprovalGrant: grant must be non-empty text of at most ${MAX_GRANT_LENGTH} characters`);
  return runInCallScope({ firstCallId: callId, scheduledCallIds: [] }, () => storage.run({ approvalGrant: grant, grantCallId: callId }, work));
}

/** The approval fields of the call header of an activity scheduled under call id `callId` in the current scope. */
export function headerApproval(callId: string): { approvedIntentDigest?: string; approvalExpiresAt?: string; approvalGrant?: string } {
  const scope = storage.getStore();
  if (scope === undefined) return {};
  if ('approvalGrant' in scope) return scope.grantCallId === callId ? { approvalGrant: scope.approvalGrant } : {};
  return scope;
}

function approvalScopeOf(approval: ApprovedIntent): ApprovalScope {
  const digest: unknown = approval?.intentDigest;
  if (typeof digest !== 'string' || !FINGERPRINT_PATTERN.test(digest)) {
    throw invalid(
      'intentDigest',
      `withApprovedIntent: intentDigest must be a digest like sha256:<64 hex> (describeFencedCall's intentDigest), got ${JSON.stringify(digest ?? null)}`,
    );
  }
  const expiresAt: unknown = approval.expiresAt;
  if (expiresAt === undefined) return { approvedIntentDigest: digest };
  try {
    return { approvedIntentDigest: digest, approvalExpiresAt: approvalExpiryText(expiresAt, 'expiresAt') };
  } catch (error) {
    if (!isCheckpointError(error, 'INVALID_ARGUMENT')) throw error;
    throw invalid('expiresAt', `withApprovedIntent: ${error.message}`);
  }
}

function invalid(field: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'INVALID_ARGUMENT', message, nonRetryable: true, details: [{ field }] });
}
