/**
 * The one interface every model backend implements (scripted transcript replay, Anthropic
 * Messages, OpenAI Chat Completions). Type-only.
 */
import type { ModelTurnInput, ModelTurnResult } from './types';

/**
 * A model backend the `runModelTurn` activity dispatches to by `ModelTurnInput.model`.
 *
 * Contract:
 * - `input` is read-only: a conversation read by reference is deeply frozen (a worker hands the
 *   same messages to later turns, see `ConversationCache`); build the provider request anew.
 * - `turn` is called once per activity attempt; a retried attempt repeats the same input, so a
 *   deterministic adapter (the scripted model) must return the same result for the same turn.
 * - The result obeys the {@link ModelTurnResult} invariant (`tool_use` iff tool calls, unique
 *   call ids, object inputs; a refused input is `{}` with `inputError`).
 * - Errors: `CheckpointError` with a model code (INVALID_TRANSCRIPT … MODEL_REJECTED, see
 *   `checkpoint/errors.ts`; `retryable` says whether a retry can help). Unusable tool arguments
 *   fail only their call (`ToolCallRequest.inputError`), never the turn. When `signal` aborts,
 *   the adapter rejects with `signal.reason` (Temporal's `CancelledFailure` in an activity).
 */
export interface ModelAdapter {
  /** The adapter's registry name, matched against `ModelTurnInput.model`. */
  readonly name: string;
  turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnResult>;
}
