/**
 * Which segments of an agent run chain have started (docs/protocol.md#resets). A reset run counts
 * the occurrences of its calls' intents in the segment of the run it reset, so it meets the calls
 * that run's discarded branch made; calls the discarded branch made in a later segment (the run
 * it reset had continued as new) it cannot meet. So each continued run records, on its first
 * model turn, that its segment started (`s/<segment>` in the chain's conversation log), and a
 * reset run's model turn is refused when the segment after the one it reset has started. Node side.
 */
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import type { ConversationRef } from '../../model/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import type { RunConversationLogs } from './conversation-log';

/** Longest segment name a turn may give (`after:<run id>` is 42 characters). */
const MAX_SEGMENT_CHARS = 256;

/**
 * Records `ref.startsSegment` (when given) in the chain's log, then refuses the turn when
 * `ref.resetRunNextSegment` (when given) has started. The record's value is the segment itself,
 * so a retried turn, or another run that starts the same segment, writes the same entry.
 *
 * @throws {@link CheckpointError} RESET_OF_CONTINUED_RUN (non-retryable) when the reset run's next
 *   segment started; INVALID_ARGUMENT for a segment that is not a string of 1 to 256 characters;
 *   the store's codes.
 */
export async function checkChainSegments(store: CheckpointStore, logs: RunConversationLogs, ref: ConversationRef): Promise<void> {
  const started = segmentOf(ref, 'startsSegment');
  const next = segmentOf(ref, 'resetRunNextSegment');
  if (started !== undefined) await store.putConversationEntries(logs.chain, [{ key: segmentKey(started), value: { segment: started } }]);
  if (next === undefined || !(await hasStarted(store, logs, next))) return;
  throw new CheckpointError(
    'RESET_OF_CONTINUED_RUN',
    `this run is a reset of a run that had continued as new (segment ${next} started): effects its later runs applied cannot be told apart from new ones, ` +
      "so nothing more runs here; reset the chain's latest run instead (docs/deploying.md#resetting-a-run)",
    { field: 'conversation.resetRunNextSegment' },
  );
}

async function hasStarted(store: CheckpointStore, logs: RunConversationLogs, segment: string): Promise<boolean> {
  try {
    await store.getConversationEntries(logs.chain, [segmentKey(segment)]);
    return true;
  } catch (error) {
    if (isCheckpointError(error, 'CONVERSATION_ENTRY_MISSING')) return false;
    throw error;
  }
}

function segmentKey(segment: string): string {
  return `s/${segment}`;
}

function segmentOf(ref: ConversationRef, field: 'startsSegment' | 'resetRunNextSegment'): string | undefined {
  const value = ref[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_SEGMENT_CHARS) {
    throw new CheckpointError('INVALID_ARGUMENT', `conversation.${field} must be a string of 1 to ${MAX_SEGMENT_CHARS} characters`, { field: `conversation.${field}` });
  }
  return value;
}
