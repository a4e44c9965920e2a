/**
 * What a model turn returns to the agent workflow, independent of the provider format.
 * Type-only and sandbox-safe: workflow code imports this file.
 */
import type { OutputRef } from '../activities/contract/contract';
import type { JsonValue } from '../checkpoint/types';

/** One tool call the model asked for in a turn. */
export interface ToolCallRequest {
  /** The provider's tool-call id (Anthropic `toolu_…`, OpenAI `call_…`). */
  readonly callId: string;
  readonly toolName: string;
  /** Parsed JSON arguments (OpenAI's JSON-string arguments are parsed by the adapter); `{}` when `inputError` is set. */
  readonly input: JsonValue;
  /**
   * Set by the adapter when it refused this call's input (not JSON, not an object, a
   * `__proto__`/`constructor`/`prototype` key, a duplicate key, a number literal JSON reads
   * changed, over `maxToolInputBytes`). Only this call fails: the agent workflow reports it to the
   * model as a tool error `{ type, message }` and runs the rest of the turn. What the model sent is
   * not kept (`input` is `{}`).
   */
  readonly inputError?: ToolInputError;
}

/** Why an adapter refused a tool call's input; `message` is what the model sees. */
export interface ToolInputError {
  readonly type: 'INVALID_TOOL_INPUT';
  /** One of `TOOL_INPUT_REFUSALS` (`src/checkpoint/model-input.ts`), e.g. `forbidden-key`. */
  readonly reason: string;
  /** `INVALID_TOOL_INPUT: tool call <id> (<tool>) input refused (<reason>): …; the call was not run`. */
  readonly message: string;
}

/** A message in the conversation the workflow keeps and hands to the next turn. */
export type ConversationMessage =
  | { readonly role: 'user'; readonly text: string }
  | { readonly role: 'assistant'; readonly text: string; readonly toolCalls: readonly ToolCallRequest[] }
  | { readonly role: 'tool'; readonly callId: string; readonly toolName: string; readonly content: JsonValue; readonly isError: boolean };

/**
 * A message as the workflow hands it to the model-turn activity when the conversation lives in
 * the side store: a tool message may carry `contentRef` (its output, kept in the conversation
 * log, see `OutputRef`) instead of `content`. The activity resolves every reference before the
 * adapter sees the conversation; adapters only ever receive {@link ConversationMessage}s.
 */
export type LoggedMessage =
  | Exclude<ConversationMessage, { readonly role: 'tool' }>
  | { readonly role: 'tool'; readonly callId: string; readonly toolName: string; readonly content: JsonValue; readonly isError: boolean }
  | { readonly role: 'tool'; readonly callId: string; readonly toolName: string; readonly contentRef: OutputRef; readonly isError: boolean };

/**
 * The conversation by reference: the first `logged` messages are already in the side store;
 * `append` are the messages after them (the last assistant turn and its tool results, usually),
 * which the activity writes at `logged`, `logged + 1`, … (idempotently: an equal entry is kept,
 * a different one is CONVERSATION_CONFLICT) before it reads the whole conversation back for the
 * model. Without `segments` every message is in the run chain's log (runs started before patch
 * `ttc-conversation-branches`); with them, the log forks per run (see {@link ConversationSegment})
 * and the activity writes `append` to the log of the run it runs for.
 */
export interface ConversationRef {
  /** The run chain (`workflowInfo().firstExecutionRunId`); with the tenant and workflow id it names the logs. */
  readonly runChainId: string;
  /** How many messages the conversation already holds in the side store (≥ 0). */
  readonly logged: number;
  readonly append: readonly LoggedMessage[];
  /**
   * Where the `logged` messages are: segment i holds messages [`until` of segment i − 1 (0 for
   * the first), `until`) in the log of run `runId`. `until` increases and the last one equals
   * `logged` (none when `logged` is 0). Absent: all in the run chain's log.
   */
  readonly segments?: readonly ConversationSegment[];
  /**
   * With `segments`: the run of the chain whose log `append` is written to (a run of this chain;
   * the workflow names the reset run it is, or the run whose log the run it continues wrote to).
   * Absent: the activity's own run.
   */
  readonly writeTo?: string;
  /**
   * A continued run's segment of the run chain (`occurrenceScopeOf` in `checkpoint/run-scope.ts`),
   * given on its first turn: the activity records in the chain's log that the segment started.
   */
  readonly startsSegment?: string;
  /**
   * In a reset lineage: the segment after the run its reset run reset (`nextSegmentScope`). If a
   * run has started it, that run had continued as new, and the turn is refused (RESET_OF_CONTINUED_RUN).
   */
  readonly refusedIfStarted?: readonly string[];
}

/**
 * Messages of a conversation that one run of the chain wrote to its log (the log forks at a
 * reset, so a run reset to an earlier workflow task never writes over what the discarded branch
 * wrote): they end before index `until` and start where the previous segment ends.
 */
export interface ConversationSegment {
  /** The run (`workflowInfo().runId`) whose log holds them. */
  readonly runId: string;
  /** Index after the segment's last message (> the previous segment's `until`). */
  readonly until: number;
}

/** Input of one model turn (the `runModelTurn` activity). */
export interface ModelTurnInput {
  /** The run's tenant (the agent workflow passes it), so a worker pinned to tenants refuses other turns before calling the model. */
  readonly tenant?: string;
  /** Which model adapter the worker uses, e.g. `scripted`, `anthropic`, `openai`. */
  readonly model: string;
  /** Opaque adapter options, e.g. the transcript id of the scripted model. */
  readonly modelOptions?: JsonValue;
  /** 0-based index of this turn within the run. */
  readonly turn: number;
  /**
   * The whole conversation inline (runs started without patch `ttc-long-runs`, unit tests). Exactly
   * one of `messages` and `conversation` is given.
   */
  readonly messages?: readonly ConversationMessage[];
  /**
   * The conversation by reference, read from the side store by the activity (which writes
   * `append` to the log of run `writeTo` when `segments` are given, else to the run chain's log).
   */
  readonly conversation?: ConversationRef;
  /** Names of the tools the model may call. */
  readonly tools: readonly string[];
  /**
   * Optional system prompt. Anthropic adapters send it as `system`, OpenAI adapters as a
   * leading `role: 'system'` message; the scripted model ignores it.
   */
  readonly system?: string;
}

/**
 * Output of one model turn: final text, tool calls, or both.
 *
 * Invariant (enforced by every adapter): `stopReason === 'tool_use'` exactly when
 * `toolCalls` is non-empty; call ids are unique within the turn and every `input` is a JSON
 * object. A response cut off (`max_tokens`), refused (`refusal`) or paused (`pause_turn`) never
 * hands out a tool call: its calls are dropped and counted in `droppedToolCalls`.
 */
export interface ModelTurnResult {
  /**
   * - `tool_use`: the model asked for tools;
   * - `end_turn`: it is done (Anthropic `end_turn`/`stop_sequence`, OpenAI `stop`);
   * - `max_tokens`: it was cut off (Anthropic `max_tokens`/`model_context_window_exceeded`,
   *   OpenAI `length`); the agent workflow ends the run `incomplete` / `model-truncated`;
   * - `refusal`: the provider refused or filtered the answer (Anthropic `refusal`, OpenAI
   *   `content_filter` or a `refusal` message); the run ends `incomplete` / `model-refused`;
   * - `pause_turn`: Anthropic paused a long turn; the workflow sends the conversation back as
   *   it stands and the model continues in the next turn.
   */
  readonly stopReason: ModelStopReason;
  readonly text: string;
  readonly toolCalls: readonly ToolCallRequest[];
  /**
   * How many tool calls a `max_tokens`, `refusal` or `pause_turn` response held that were dropped
   * (never run, not answered in the conversation). Absent when none. @default 0
   */
  readonly droppedToolCalls?: number;
  /**
   * Set by the model-turn activity (never by an adapter) for a conversation by reference with
   * `segments`: the run (its activity context's `workflowExecution.runId`) to whose log it wrote
   * `conversation.append`. The workflow attributes those messages to it: a run reset to an
   * earlier workflow task replays the turns the discarded run took, whose messages are in that
   * run's log, not its own. The turn's tool calls are addressed in that run too (`<id>@<runId>`).
   */
  readonly conversationRunId?: string;
}

/** Why a model turn ended, across providers (see {@link ModelTurnResult.stopReason}). */
export type ModelStopReason = 'tool_use' | 'end_turn' | 'max_tokens' | 'refusal' | 'pause_turn';
