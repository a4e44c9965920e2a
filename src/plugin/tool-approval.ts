/**
 * An approval from `withApprovedIntent` (`../workflows/fenced/approval-scope`) for a call of one of the plugin's
 * `defineTool` tools. The tool's activity takes a `FencedToolInput` whose own
 * `expectedIntentDigest` / `approvalExpiresAt` `runFencedTool` checks; the approval of the scope
 * rides in the call header instead, so the fence interceptor copies it into the input before the
 * tool's activity runs. Node side; no I/O.
 */
import type { Headers } from '@temporalio/common';
import { earlierExpiry } from '../checkpoint/approval';
import { assertOneApprovedIntent } from '../activities/fence/approval-checks';
import { approvalFromHeaders } from './approval-activity';

/**
 * The arguments of a tool activity call with the approval of its call header applied:
 * - no approval in the header: `args` unchanged;
 * - the input (`args[0]`, a `FencedToolInput` without `toolName`) carries no
 *   `expectedIntentDigest`: a copy of it with the header's digest, and the header's
 *   `approvalExpiresAt` (the earlier of the two when the input also names one: `earlierExpiry`);
 * - the input carries the header's digest: its expiry becomes the earlier of the two;
 * - `args[0]` is not an object: `args` unchanged (the tool's activity refuses such input).
 * `runFencedTool` then refuses the call with APPROVAL_MISMATCH when the digest it computes
 * differs, and with APPROVAL_EXPIRED at or after the expiry, before any claim.
 *
 * @throws {@link CheckpointError} APPROVAL_MISMATCH when the input carries another digest than the
 *   header (two approvals of one call that cannot both hold: `assertOneApprovedIntent`); INVALID_ARGUMENT when the call
 *   header is malformed or its expiry is not an ISO-8601 UTC timestamp (see `approvalFromHeaders`).
 */
export function toolArgsWithHeaderApproval(toolName: string, args: readonly unknown[], headers: Headers | undefined): unknown[] {
  const approval = approvalFromHeaders(headers);
  const input = args[0];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return [...args];
  const own = (key: string): unknown => (Object.hasOwn(input, key) ? (input as Record<string, unknown>)[key] : undefined);
  // A grant of the header goes to a tool call whose input carries none (an input's own grant is verified as it is).
  const granted = approval.approvalGrant !== undefined && own('approvalGrant') === undefined ? { ...input, approvalGrant: approval.approvalGrant } : input;
  if (approval.expectedIntentDigest === undefined) return granted === input ? [...args] : [granted, ...args.slice(1)];
  assertOneApprovedIntent(toolName, own('callId'), own('expectedIntentDigest'), approval.expectedIntentDigest);
  const expiresAt = earlierExpiry(own('approvalExpiresAt'), approval.approvalExpiresAt);
  const merged = { ...granted, expectedIntentDigest: approval.expectedIntentDigest, ...(expiresAt === undefined ? {} : { approvalExpiresAt: expiresAt }) };
  return [merged, ...args.slice(1)];
}
