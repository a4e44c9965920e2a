/**
 * The approval rules both surfaces apply (docs/protocol.md#agent-workflow,
 * docs/protocol.md#worker-plugin): a call that needs approval runs only with the intent digest a
 * person approved, and only before the approval's expiry. Predicates and the expiry's parsing and
 * clamping, once: the fence (`../activities/fence/approval-checks`), the agent workflow's approvals and
 * the plugin's approval scope and call header all call these. Pure and sandbox-safe: no I/O, no
 * clock (callers pass `nowMs`).
 */
import { parseTimestamp } from './bounds';
import { CheckpointError } from './errors';

/** Largest approval grant accepted, in characters (docs/protocol.md#approval-grants). */
export const MAX_GRANT_LENGTH = 4096;

/** The call an approval grant names exactly (docs/protocol.md#approval-grants), as the worker knows it. */
export interface GrantedCall {
  /** The Temporal namespace of the run. */
  readonly namespace: string;
  readonly tenant: string;
  readonly workflowId: string;
  /** The run chain (`firstExecutionRunId`). */
  readonly runChainId: string;
  readonly callId: string;
  /** The tool, or the fenced activity type. */
  readonly toolName: string;
  /** The call's intent digest (docs/protocol.md#keys-and-digests): signed, never carried by the grant. */
  readonly intentDigest: string;
}

/**
 * Whether `digest` is an approved intent digest at all: a non-empty string. A call of a tool that
 * needs approval without one is refused (APPROVAL_REQUIRED).
 */
export function hasApprovedIntent(digest: unknown): digest is string {
  return typeof digest === 'string' && digest.length > 0;
}

/**
 * Whether an approval naming `approved` fails to cover an intent whose digest is `actual`: it is
 * present (anything but undefined, null included) and differs (APPROVAL_MISMATCH). An absent
 * approval never mismatches; whether one is required is {@link hasApprovedIntent}'s question.
 */
export function intentMismatch(approved: unknown, actual: string | null): boolean {
  return approved !== undefined && approved !== actual;
}

/**
 * Whether an approval expiring at `expiresAt` has expired at `nowMs` (ms since the epoch): at or
 * after the expiry (APPROVAL_EXPIRED). `expiresAt` is ms since the epoch, or ISO-8601 UTC text
 * already checked by {@link approvalExpiryText}; undefined or null: no expiry, never expired.
 * Text that does not parse counts as expired (fail closed).
 */
export function approvalExpired(expiresAt: number | string | null | undefined, nowMs: number): boolean {
  if (expiresAt === undefined || expiresAt === null) return false;
  const at = typeof expiresAt === 'number' ? expiresAt : Date.parse(expiresAt);
  return !(nowMs < at);
}

/**
 * An approval's expiry as the ISO-8601 UTC text a call carries: a `Date` converted
 * (`toISOString`), text checked as it is (`parseTimestamp`: `2026-01-31T12:00:00.000Z`, no
 * impossible dates).
 *
 * @param field the name the refusal gives the value.
 * @throws {@link CheckpointError} INVALID_ARGUMENT (details `field`) for an invalid Date, text
 *   that is not such a timestamp, or any other value.
 */
export function approvalExpiryText(value: unknown, field: string): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new CheckpointError('INVALID_ARGUMENT', `${field} is an invalid Date`, { field });
    return value.toISOString();
  }
  parseTimestamp(value, field);
  return value as string;
}

/** Whether `value` is an approval expiry {@link approvalExpiryText} accepts as text. */
export function isApprovalExpiryText(value: unknown): value is string {
  try {
    return typeof value === 'string' && approvalExpiryText(value, 'approvalExpiresAt') === value;
  } catch {
    return false;
  }
}

/**
 * The expiry of a call under two approvals of the same intent: the earlier one wins. An `a` that
 * is not valid expiry text is returned as it is (fail closed: the call's input check refuses it,
 * INVALID_ARGUMENT); an absent one yields the other.
 */
export function earlierExpiry(a: unknown, b: string | undefined): unknown {
  if (b === undefined) return a;
  if (a === undefined) return b;
  if (!isApprovalExpiryText(a)) return a;
  return Date.parse(b) < Date.parse(a) ? b : a;
}
