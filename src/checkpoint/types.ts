/**
 * Types of the checkpoint protocol (docs/protocol.md#record). Type-only and sandbox-safe: workflow
 * code may import this file.
 */

/** A JSON value as RFC 8259 defines it: no undefined, NaN, ±Infinity, functions or cycles. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * What a checkpoint is about. Every field is required and length-bounded (see `bounds.ts`);
 * two bindings that differ in any field are different calls (docs/protocol.md#binding).
 */
export interface Binding {
  /** Tenant or security boundary, e.g. the Temporal namespace plus tenant id. */
  readonly namespace: string;
  /** The provider's or application's tool-call id (for example Anthropic `toolu_…`). */
  readonly callId: string;
  readonly toolName: string;
  readonly toolRevision: string;
  /** `sha256:` + 64 lowercase hex over the RFC 8785 canonical input (see `fingerprintInput`). */
  readonly inputFingerprint: string;
}

/** The six statuses of docs/protocol.md#statuses-and-actions, exactly as spelled there. */
export const STATUSES = ['ready', 'executing', 'uncertain', 'completed', 'delivering', 'delivered'] as const;
export type Status = (typeof STATUSES)[number];

/** The recovery actions `decideCheckpoint` returns (docs/protocol.md#statuses-and-actions). */
export const ACTIONS = ['execute', 'reconcile-execution', 'deliver', 'reconcile-delivery', 'none'] as const;
export type Action = (typeof ACTIONS)[number];

/** Execution fence: set by `claimExecution`, finished by `completeExecution`. Times are ISO-8601 UTC. */
export interface ExecutionState {
  readonly attemptId: string;
  readonly claimedAt: string;
  /** When the result was stored; null until then. */
  readonly finishedAt: string | null;
  /** When the host recorded the outcome as unknown; null unless it did. */
  readonly uncertainAt: string | null;
  readonly uncertainReason: string | null;
  /** The fence this one took over from by `reclaimExecution`; null for a first claim. */
  readonly previousAttemptId: string | null;
  /**
   * When the holder stops waiting for its request (claim time + the tool's call deadline), as the
   * holder declared it; a claim can be taken over only after it plus a margin
   * (docs/protocol.md#overlapping-attempts). Null when the claim did not declare one (records
   * migrated from schema version 1).
   */
  readonly deadlineAt: string | null;
}

/** The exact JSON payload to redeliver (a success or a handler error, as the host chose). */
export interface ResultState {
  readonly payload: JsonValue;
}

/** Delivery fence: set by `claimDelivery`. Times are ISO-8601 UTC. */
export interface DeliveryState {
  readonly deliveryId: string;
  readonly claimedAt: string;
  /** Set by `releaseDelivery` (a known failed delivery); the record is `completed` again. */
  readonly releasedAt: string | null;
  /** Set by `completeDelivery`. */
  readonly deliveredAt: string | null;
}

/** Schema version written by this code. Version 2 added `execution.deadlineAt` (version 1 records are migrated with null). */
export const CURRENT_SCHEMA_VERSION = 2 as const;

/**
 * A persisted checkpoint, schema version 2. Records are immutable: every transition returns a
 * new, frozen record with `revision + 1`. Timestamps are ISO-8601 UTC strings.
 */
export interface CheckpointRecord {
  readonly schemaVersion: typeof CURRENT_SCHEMA_VERSION;
  readonly binding: Binding;
  readonly status: Status;
  /** Integer, 0 when created, +1 on every transition; the compare-and-swap token. */
  readonly revision: number;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly execution: ExecutionState | null;
  readonly result: ResultState | null;
  readonly delivery: DeliveryState | null;
}

/** What `decideCheckpoint` returns. */
export interface Decision {
  readonly action: Action;
  readonly status: Status;
  readonly revision: number;
}

/**
 * What every transition returns: the host may act only after a compare-and-swap from
 * `expectedRevision` to `next` succeeded (docs/protocol.md#transitions).
 */
export interface TransitionResult {
  readonly action: Action;
  readonly expectedRevision: number;
  readonly next: CheckpointRecord;
}
