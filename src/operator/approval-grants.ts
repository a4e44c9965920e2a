/**
 * Signing a person's approval as a grant (docs/protocol.md#approval-grants), for the approve
 * paths: `ttc approve`, the console, and a team's own UI through `temporal-tool-checkpoint/operator`.
 * The key stays with the approve path; workers hold the key that verifies (the same HMAC secret,
 * or the approver's Ed25519 public key); workflow code holds neither, and what a run reports is
 * not trusted: the digest signed is computed here from the arguments the person is shown. Node side.
 */
import { signApprovalGrant, type GrantSigningKey } from '../checkpoint/approval-grant';
import type { GrantedCall } from '../checkpoint/approval';
import { intentDigest } from '../checkpoint/digest';
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import type { FencedCallDescription } from '../plugin/contract/approval-contract';
import type { WorkflowHandle } from '@temporalio/client';
import type { WaitingCall } from './run-decisions';

export { MAX_GRANT_TTL_MS } from '../checkpoint/approval-grant';
export type { GrantSigningKey, GrantVerificationKey } from '../checkpoint/approval-grant';
export type { GrantedCall } from '../checkpoint/approval';
export { parseGrantSigningKey, parseGrantVerificationKeys, newEd25519GrantKeyEntries } from '../approval-grant-keys';

/** How long a grant an approve path signs lives at most, unless told otherwise: 15 minutes (the call starts at once once approved). */
export const DEFAULT_GRANT_TTL_MS = 15 * 60_000;

/** Who approves, with which key, and how long the grant lives at most. */
export interface ApprovalSigning {
  readonly approver: string;
  readonly key: GrantSigningKey;
  /** Upper bound of the grant's life, ms (at most `MAX_GRANT_TTL_MS`, 24 h). @default {@link DEFAULT_GRANT_TTL_MS} */
  readonly ttlMs?: number;
  readonly now?: Date;
}

/**
 * A grant of `waiting`'s call (an agent run's call awaiting approval, read with `readWaitingCall`)
 * for the intent digest the person reviewed. The digest is recomputed from what the person is
 * shown (tool, revision, validated arguments, target); the grant expires at the call's approval
 * expiry or after `ttlMs`, whichever is first.
 *
 * `options.namespace` is the Temporal namespace of the run; `options.runChainId`, when given, the run
 * chain as the server describes the workflow ({@link describedRunChain}), which the run's own report must match.
 *
 * @throws {@link CheckpointError} APPROVAL_MISMATCH (details `field: 'intentDigest'` or `runChainId`) when the shown
 *   arguments do not have the reviewed digest, or the run reports another run chain than the server; INVALID_ARGUMENT (details `field`) when the run does
 *   not report its tenant, run chain, revision or arguments (older code), or its approval expiry
 *   has passed; nothing is signed.
 */
export function signAgentApproval(
  waiting: WaitingCall,
  options: ApprovalSigning & { readonly namespace: string; readonly intentDigest: string; readonly runChainId?: string },
): string {
  const { tenant, runChainId } = waiting.status;
  if (options.runChainId !== undefined && runChainId !== undefined && runChainId !== options.runChainId) {
    throw new CheckpointError('APPROVAL_MISMATCH', `run ${waiting.workflowId} reports run chain ${runChainId}, the server ${options.runChainId}; nothing was signed`, {
      field: 'runChainId',
    });
  }
  const { call } = waiting;
  const missing =
    tenant === undefined ? 'tenant' : runChainId === undefined ? 'runChainId' : call.toolRevision === null ? 'toolRevision' : call.arguments === null ? 'arguments' : null;
  if (missing !== null) {
    throw new CheckpointError('INVALID_ARGUMENT', `run ${waiting.workflowId} does not report the ${missing} of call ${call.callId} (older code): no grant can name what runs`, {
      field: missing,
    });
  }
  const shown = intentDigest({ toolName: call.toolName, toolRevision: call.toolRevision!, args: call.arguments!, target: call.target });
  assertShownDigest(call.callId, shown, [options.intentDigest, call.intentDigest]);
  const granted: GrantedCall = {
    namespace: options.namespace,
    tenant: tenant!,
    workflowId: waiting.workflowId,
    runChainId: runChainId!,
    callId: call.callId,
    toolName: call.toolName,
    intentDigest: shown,
  };
  return sign(granted, call.approvalExpiresAt, options);
}

/**
 * A grant of the fenced call a workflow described for a grant (`grantRequestDescriber`: the
 * description with its `approvalRequest`), for a person shown `description.arguments`. The digest
 * is recomputed from the activity type, revision and those arguments, and the request must name
 * `options.run`, the run the description was read from (its handle's namespace and workflow id,
 * and the run chain when known: {@link describedRunChain}).
 *
 * @throws {@link CheckpointError} APPROVAL_MISMATCH when the arguments do not have the digest the
 *   description and its request report, or the request names another activity type or run;
 *   INVALID_ARGUMENT when the description has no `approvalRequest`; nothing is signed.
 */
export function signFencedCallApproval(description: FencedCallDescription, options: ApprovalSigning & { readonly run: RunIdentity }): string {
  const request = description.approvalRequest;
  if (request === undefined)
    throw new CheckpointError('INVALID_ARGUMENT', 'the description has no approvalRequest (describe the call with grantRequestDescriber)', { field: 'approvalRequest' });
  for (const field of ['namespace', 'workflowId', 'runChainId'] as const) {
    const known = options.run[field];
    if (known !== undefined && request[field] !== known) {
      throw new CheckpointError(
        'APPROVAL_MISMATCH',
        `the approval request names ${field} ${JSON.stringify(request[field])}, but the run queried is ${JSON.stringify(known)}; nothing was signed`,
        { field },
      );
    }
  }
  if (request.toolName !== description.activityType) {
    throw new CheckpointError('APPROVAL_MISMATCH', `the approval request names ${request.toolName}, the description ${description.activityType}; nothing was signed`, {
      field: 'toolName',
    });
  }
  const shown = intentDigest({ toolName: description.activityType, toolRevision: description.toolRevision, args: { args: description.arguments } as JsonValue, target: null });
  assertShownDigest(request.callId, shown, [description.intentDigest, request.intentDigest]);
  return sign({ ...request, intentDigest: shown }, null, options);
}

/** The run a description was read from, as the approve path knows it (never from the run's own answer). */
export interface RunIdentity {
  readonly namespace: string;
  readonly workflowId: string;
  /** The workflow's first run id, from the server ({@link describedRunChain}). @default not checked */
  readonly runChainId?: string;
}

/** The run chain (first run id) of the workflow `handle` names, as the server describes it; undefined when it reports none. */
export async function describedRunChain(handle: WorkflowHandle): Promise<string | undefined> {
  const first = (await handle.describe()).raw.workflowExecutionInfo?.firstRunId;
  return typeof first === 'string' && first !== '' ? first : undefined;
}

/** Refuses when any reported digest is not the one the shown arguments have. */
function assertShownDigest(callId: string, shown: string, reported: readonly (string | null)[]): void {
  const other = reported.find((digest) => digest !== shown);
  if (other === undefined) return;
  throw new CheckpointError(
    'APPROVAL_MISMATCH',
    `call ${JSON.stringify(callId)}: the arguments shown have intent digest ${shown}, but ${String(other)} was reported or reviewed; nothing was signed`,
    { field: 'intentDigest', callId },
  );
}

function sign(call: GrantedCall, callExpiresAt: string | null, options: ApprovalSigning): string {
  const now = options.now ?? new Date();
  const ttl = options.ttlMs ?? DEFAULT_GRANT_TTL_MS;
  const until = Math.min(now.getTime() + ttl, callExpiresAt === null ? Infinity : Date.parse(callExpiresAt));
  if (!(until > now.getTime()))
    throw new CheckpointError('INVALID_ARGUMENT', `call ${JSON.stringify(call.callId)}: its approval expired at ${String(callExpiresAt)}; nothing was signed`, {
      field: 'approvalExpiresAt',
    });
  return signApprovalGrant(call, { approver: options.approver, expiresAt: new Date(until).toISOString() }, options.key, now);
}
