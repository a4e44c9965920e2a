/**
 * How far the batch calls of a run are: read from the heartbeat details the fence sends while a
 * batch call settles its items (`phase: 'items'`, see `../telemetry/heartbeat-details`), found
 * among the run's pending activities. For `ttc show`.
 */
import type { WorkflowExecutionDescription } from '@temporalio/client';
import type { LoadedDataConverter } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { FenceHeartbeatDetails } from '../telemetry/heartbeat-details';

/** One running batch call's progress. */
export interface BatchCallProgress {
  readonly callId: string;
  readonly activityType: string;
  readonly attempt: number;
  readonly total: number;
  readonly settled: number;
  readonly applied: number;
  /** The item being settled, or null between items. */
  readonly current: string | null;
}

/**
 * The progress of every pending activity of the run whose last heartbeat is a batch's. Details
 * that do not decode, or are not a batch's, are skipped (an older worker, a user's activity).
 */
export async function batchProgressOf(description: WorkflowExecutionDescription, converter: LoadedDataConverter): Promise<BatchCallProgress[]> {
  const found: BatchCallProgress[] = [];
  for (const pending of description.raw.pendingActivities ?? []) {
    let details: FenceHeartbeatDetails | undefined;
    try {
      details = await decodeFromPayloadsAtIndex<FenceHeartbeatDetails>(converter, 0, pending.heartbeatDetails?.payloads);
    } catch {
      continue;
    }
    const items = details?.phase === 'items' ? details.items : undefined;
    if (items === undefined || typeof details?.callId !== 'string') continue;
    found.push({
      callId: details.callId,
      activityType: pending.activityType?.name ?? '',
      attempt: pending.attempt ?? 1,
      total: items.total,
      settled: items.settled,
      applied: items.applied,
      current: items.current,
    });
  }
  return found;
}

/** One line per batch call: `batch <call> (<tool>, attempt n): 20 of 100 items settled, 20 applied, settling <key>`. */
export function batchProgressLine(p: BatchCallProgress): string {
  return `batch ${p.callId} (${p.activityType}, attempt ${p.attempt}): ${p.settled} of ${p.total} items settled, ${p.applied} applied${p.current === null ? '' : `, settling ${JSON.stringify(p.current)}`}`;
}
