/**
 * Approved calls through the plugin: the shapes shared by the workflow side
 * (`../../workflows/fenced/approval-scope`, `../../workflows/fenced/approval-describe`) and the worker side (`../approval-activity`).
 * Types and constants only, sandbox-safe.
 */
import type { GrantedCall } from '../../checkpoint/approval';
import type { JsonValue } from '../../checkpoint/types';

/**
 * The activity `ToolCheckpointPlugin` registers when it fences activities (`fence` option): it
 * describes a call of a fenced activity without running it. Reserved (RESERVED_ACTIVITY_NAMES):
 * no tool or fenced activity may take the name.
 */
export const DESCRIBE_FENCED_CALL_ACTIVITY = 'describeFencedCall';

/** Input of {@link DESCRIBE_FENCED_CALL_ACTIVITY}: the call the workflow would make. */
export interface DescribeFencedCallInput {
  /** The fenced activity type (a `fence` entry of the plugin). */
  readonly activityType: string;
  /** The arguments the workflow would pass to the activity (JSON). */
  readonly args: readonly unknown[];
  /** For a call to approve with a signed grant: the call id it will run under (`withApprovalGrant`). */
  readonly callId?: string;
  /** With {@link callId}: the workflow's run chain (`firstExecutionRunId`). */
  readonly runChainId?: string;
}

/**
 * What a person approves: the frozen identity of a fenced call. Nothing was written and nothing
 * ran to compute it.
 */
export interface FencedCallDescription {
  readonly activityType: string;
  /** The `revision` of the activity's `fence` entry on the worker that described it. */
  readonly toolRevision: string;
  /** `sha256:` + hex over the activity type, revision and `{ args: arguments }` (docs/protocol.md#keys-and-digests); what `withApprovedIntent` takes. */
  readonly intentDigest: string;
  /** The arguments the digest covers, as canonical JSON parses back (after the entry's `input` schema). */
  readonly arguments: JsonValue;
  /**
   * When described with a call id (`grantRequestDescriber`): the call a signed grant must name,
   * for the approve path (`signApprovalGrant` of `temporal-tool-checkpoint/operator`).
   */
  readonly approvalRequest?: GrantedCall;
}

/** An approval a person gave to one fenced call (see `withApprovedIntent`). */
export interface ApprovedIntent {
  /** The digest the person approved: {@link FencedCallDescription.intentDigest}. */
  readonly intentDigest: string;
  /** When the approval expires, ISO-8601 UTC (or a Date, converted). @default no expiry */
  readonly expiresAt?: string | Date;
}
