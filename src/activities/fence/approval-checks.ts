/**
 * The fence's approval refusals (docs/protocol.md#agent-workflow, docs/protocol.md#worker-plugin),
 * one implementation for `runFencedTool` (the agent's and the plugin's tools) and the plugin's
 * fence interceptor (fenced activities, and a tool call whose header carries an approval). Each
 * is thrown before any claim, so nothing runs; whether an earlier attempt may have run the call
 * is settled by the call's evidence (`settleFailedAttempt`). The rules themselves (present,
 * mismatch, expired) are `../../checkpoint/approval`'s. No I/O.
 */
import { approvalExpired, hasApprovedIntent, intentMismatch } from '../../checkpoint/approval';
import { CheckpointError } from '../../checkpoint/errors';
import type { ResolvedPins } from './pins';
import type { PreparedCall } from './prepare-call';

/**
 * The worker pin `requireApproval` (`./pins`): a call of a tool that needs approval on this worker
 * must carry an approved intent digest.
 *
 * @throws {@link CheckpointError} APPROVAL_REQUIRED (details `field: 'expectedIntentDigest'`,
 *   `toolName`) when `toolName` needs approval and `expectedIntentDigest` is absent or empty.
 */
export function assertApprovalGiven(pins: ResolvedPins, toolName: string, expectedIntentDigest: unknown): void {
  if (!pins.requireApproval.has(toolName) || hasApprovedIntent(expectedIntentDigest)) return;
  throw new CheckpointError(
    'APPROVAL_REQUIRED',
    `tool ${JSON.stringify(toolName)} runs on this worker only after a person approved the call's intent (an agent run's approvalRequired must name it; a plugin user's workflow runs it inside withApprovedIntent); the tool was not run`,
    { field: 'expectedIntentDigest', toolName },
  );
}

/**
 * Approval bound to intent, end to end: when the call carries the intent digest a person
 * approved, it runs only if this worker computes the same digest.
 *
 * @throws {@link CheckpointError} APPROVAL_MISMATCH (details `callId`, `toolName`, `toolRevision`,
 *   `expectedIntentDigest`, `intentDigest`) when the digests differ; nothing was written or run.
 */
export function assertApprovedIntent(call: PreparedCall): void {
  const expected = call.input.expectedIntentDigest;
  if (!intentMismatch(expected, call.intentDigest)) return;
  throw new CheckpointError(
    'APPROVAL_MISMATCH',
    `${call.tool.name} call ${JSON.stringify(call.input.callId)} was approved for intent ${String(expected)}, but this worker (tool revision ${call.tool.revision}) computes ${call.intentDigest}; nothing was written or run`,
    { callId: call.input.callId, toolName: call.tool.name, toolRevision: call.tool.revision, expectedIntentDigest: String(expected), intentDigest: call.intentDigest },
  );
}

/**
 * The checks of a prepared call before the fence settles it, in order: {@link assertApprovalGiven}
 * (only with `pins`), then {@link assertApprovedIntent}. The expiry is checked at the claim
 * ({@link assertApprovalLive}).
 */
export function assertCallApproved(pins: ResolvedPins | undefined, call: PreparedCall): void {
  if (pins !== undefined) assertApprovalGiven(pins, call.tool.name, call.input.expectedIntentDigest);
  assertApprovedIntent(call);
}

/** Whether the call's approval (`approvalExpiresAt` of its input) has expired at `nowMs`; no expiry: false. */
export function callApprovalExpired(call: PreparedCall, nowMs: number): boolean {
  return approvalExpired(call.input.approvalExpiresAt, nowMs);
}

/**
 * Refuses a fresh claim once the call's approval has expired (at or after `approvalExpiresAt`).
 *
 * @throws {@link CheckpointError} APPROVAL_EXPIRED (details `callId`, `approvalExpiresAt`); nothing ran.
 */
export function assertApprovalLive(call: PreparedCall, nowMs: number): void {
  if (!callApprovalExpired(call, nowMs)) return;
  throw new CheckpointError(
    'APPROVAL_EXPIRED',
    `${call.tool.name} call ${JSON.stringify(call.input.callId)}: its approval expired at ${call.input.approvalExpiresAt}, before this attempt could claim it; nothing ran`,
    {
      callId: call.input.callId,
      approvalExpiresAt: String(call.input.approvalExpiresAt),
    },
  );
}

/**
 * Two approvals of one call must name the same intent: a tool call's input (`inputDigest`, its
 * `expectedIntentDigest`) and its call header (`headerDigest`, from `withApprovedIntent`).
 *
 * @throws {@link CheckpointError} APPROVAL_MISMATCH (details `callId`, `toolName`,
 *   `expectedIntentDigest` (the header's), `inputIntentDigest`) when the input names another
 *   digest; nothing was written or run.
 */
export function assertOneApprovedIntent(toolName: string, callId: unknown, inputDigest: unknown, headerDigest: string): void {
  if (!intentMismatch(inputDigest, headerDigest)) return;
  throw new CheckpointError(
    'APPROVAL_MISMATCH',
    `${toolName} call ${JSON.stringify(callId ?? null)} carries the approved intent ${JSON.stringify(inputDigest)} in its input, but withApprovedIntent approved ${headerDigest}; nothing was written or run`,
    { callId: typeof callId === 'string' ? callId : null, toolName, expectedIntentDigest: headerDigest, inputIntentDigest: String(inputDigest) },
  );
}
