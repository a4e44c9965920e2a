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
import { approvalExpiryText } from '../../checkpoint/approval';
import { FINGERPRINT_PATTERN } from '../../checkpoint/bounds';
import { isCheckpointError } from '../../checkpoint/errors';
import type { ApprovedIntent } from '../../plugin/contract/approval-contract';

/** The approval of the current scope, as the header carries it. */
export interface ApprovalScope {
  readonly approvedIntentDigest: string;
  readonly approvalExpiresAt?: string;
}

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

/** The approval scope the current workflow code runs in, or undefined outside {@link withApprovedIntent}. */
export function currentApprovalScope(): ApprovalScope | undefined {
  return storage.getStore();
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
