/**
 * The heartbeat details of a fenced call attempt: what the Temporal UI and
 * `temporal workflow describe` show for a running tool activity (its pending activity's
 * `heartbeatDetails`), so a stuck attempt tells which call it holds, the checkpoint's status and
 * what it is waiting for. Small and free of the call's arguments and results.
 *
 * Only the fence's own heartbeats carry them. A fenced user activity (the plugin's fence
 * interceptor, `executeIsUserActivity`) owns its heartbeat details (a retry resumes from them):
 * there the fence keeps the previous attempt's details and sends none of its own.
 */
import type { Status } from '../checkpoint/types';

/**
 * What the attempt is doing:
 * - `execute`: the tool's `execute` runs under this attempt's claim (sent right after the claim
 *   and then periodically);
 * - `lookup`: the tool's `lookup` runs to reconcile a claim an earlier attempt left unfinished;
 * - `items`: a batch call settles its items (`ctx.forEachItem`); `items` says how far.
 */
export type FencePhase = 'execute' | 'lookup' | 'items';

/** How far a batch call is: items in the batch, settled, applied, and the key of the item being settled (null between items). */
export interface BatchItemsProgress {
  readonly total: number;
  readonly settled: number;
  readonly applied: number;
  readonly current: string | null;
}

/** The details of the fence's heartbeats. */
export interface FenceHeartbeatDetails {
  /** The model's tool-call id (as in the activity summary `<tool> call <callId>`). */
  readonly callId: string;
  /** The status of the call's checkpoint as this attempt last knew it (docs/protocol.md#statuses-and-actions). */
  readonly checkpointStatus: Status;
  readonly phase: FencePhase;
  /** Only in phase `items`: the batch's progress; `checkpointStatus` is then the current item's. */
  readonly items?: BatchItemsProgress;
}

/** The heartbeat details for `callId` in `phase`, its checkpoint in `checkpointStatus` (and a batch's progress in phase `items`). */
export function fenceHeartbeatDetails(callId: string, checkpointStatus: Status, phase: FencePhase, items?: BatchItemsProgress): FenceHeartbeatDetails {
  return items === undefined ? { callId, checkpointStatus, phase } : { callId, checkpointStatus, phase, items };
}
