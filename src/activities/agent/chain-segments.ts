/**
 * Which segments of an agent run chain have started (docs/protocol.md#resets). A reset run counts
 * the occurrences of its calls' intents in the segment of the run it reset, so it meets the calls
 * that run's discarded branch made; calls the discarded branch made in a later segment (the run
 * it reset had continued as new) it cannot meet. So each continued run records, on its first
 * model turn, that its segment started (`s/<segment>` in the chain's conversation log), and every
 * model turn and tool call of a reset lineage is refused once the segment after the run its reset
 * run reset has started. Node side.
 */
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import type { ConversationRef } from '../../model/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import type { RunConversationLogs } from './conversation-log';

/** Longest segment name a run may give (`after:<run id>` is 42 characters). */
const MAX_SEGMENT_CHARS = 256;
/** Most segments a run may name as refusing it (one per reset outside a reset lineage). */
const MAX_REFUSING_SEGMENTS = 100;

/**
 * A model turn's part: records `ref.startsSegment` (when given) in the chain's log, then refuses
 * the turn when a segment of `ref.refusedIfStarted` has started. The record's value is the segment
 * itself, so a retried turn, or another run that starts the same segment, writes the same entry.
 *
 * @throws {@link CheckpointError} RESET_OF_CONTINUED_RUN (non-retryable, see {@link refuseIfStarted});
 *   INVALID_ARGUMENT for a segment that is not a string of 1 to 256 characters, or more than 100;
 *   the store's codes.
 */
export async function checkChainSegments(store: CheckpointStore, logs: RunConversationLogs, ref: ConversationRef): Promise<void> {
  const started = ref.startsSegment;
  if (started !== undefined) {
    assertSegment(started, 'conversation.startsSegment');
    await store.putConversationEntries(logs.chain, [{ key: segmentKey(started), value: { segment: started } }]);
  }
  if (ref.refusedIfStarted !== undefined) await refuseIfStarted(store, logs.chain, ref.refusedIfStarted, 'conversation.refusedIfStarted');
}

/**
 * Refuses a reset lineage's model turn or tool call when a segment of `segments` has started: the
 * run its reset run reset had continued as new, and what the runs after it applied could not be met.
 * One read per segment of `chainLog` (the run chain's conversation log id).
 *
 * @throws {@link CheckpointError} RESET_OF_CONTINUED_RUN (non-retryable; nothing ran); INVALID_ARGUMENT
 *   (`details.field` = `field`) for a malformed list; the store's codes.
 */
export async function refuseIfStarted(store: CheckpointStore, chainLog: string, segments: readonly string[], field: string): Promise<void> {
  if (!Array.isArray(segments) || segments.length > MAX_REFUSING_SEGMENTS) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must be an array of at most ${MAX_REFUSING_SEGMENTS} segments`, { field });
  }
  for (const segment of segments) {
    assertSegment(segment, field);
    if (!(await hasStarted(store, chainLog, segment))) continue;
    throw new CheckpointError(
      'RESET_OF_CONTINUED_RUN',
      `this run descends from a reset of a run that had continued as new (segment ${segment} started): effects its later runs applied cannot be told apart from new ones, ` +
        "so nothing more runs here; reset the chain's latest run instead (docs/deploying.md#resetting-a-run)",
      { field },
    );
  }
}

async function hasStarted(store: CheckpointStore, chainLog: string, segment: string): Promise<boolean> {
  try {
    await store.getConversationEntries(chainLog, [segmentKey(segment)]);
    return true;
  } catch (error) {
    if (isCheckpointError(error, 'CONVERSATION_ENTRY_MISSING')) return false;
    throw error;
  }
}

function segmentKey(segment: string): string {
  return `s/${segment}`;
}

function assertSegment(segment: unknown, field: string): void {
  if (typeof segment !== 'string' || segment.length === 0 || segment.length > MAX_SEGMENT_CHARS) {
    throw new CheckpointError('INVALID_ARGUMENT', `${field} must hold strings of 1 to ${MAX_SEGMENT_CHARS} characters`, { field });
  }
}
