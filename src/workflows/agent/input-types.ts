/**
 * The agent workflow's input: tools' activity options and retry, budgets, run limits, approval
 * policies, and what a run hands to the run it continues as. Type-only and sandbox-safe.
 *
 * Units: every duration is in ms; every timestamp is an ISO-8601 UTC string named `…At`, taken
 * from workflow time.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type { ConversationSegment, LoggedMessage } from '../../model/types';
import type { JsonValue } from '../../checkpoint/types';

/** Retry policy for the workflow's activities, in ms (converted once to Temporal's RetryPolicy). */
export interface ActivityRetryInput {
  /** @default 1000 (Temporal's default) */
  readonly initialIntervalMs?: number;
  /** @default 2 */
  readonly backoffCoefficient?: number;
  /** @default 100 × initialIntervalMs */
  readonly maximumIntervalMs?: number;
  /** 0 or absent: unlimited, bounded by the run deadline. */
  readonly maximumAttempts?: number;
  /** Extra failure types never retried (the CheckpointError table already marks its own). */
  readonly nonRetryableErrorTypes?: readonly string[];
}

/** Timeouts and retry of one kind of activity. Every timeout is also bounded by the run deadline. */
export interface ToolActivityOptions {
  /** Per attempt, ms. @default 60000 */
  readonly startToCloseTimeoutMs?: number;
  /**
   * Heartbeat timeout of the tool and compensation activities (the fence heartbeats every third
   * of it while the tool runs), ms; `null` for none (a killed worker is then noticed at the
   * start-to-close timeout). @default 10000 (DEFAULT_TOOL_HEARTBEAT_TIMEOUT_MS)
   */
  readonly heartbeatTimeoutMs?: number | null;
  readonly retry?: ActivityRetryInput;
}

/** Timeouts and retry for the workflow's activities. Every timeout is also bounded by the run deadline. */
export interface AgentActivityOptions extends ToolActivityOptions {
  /**
   * Per tool name (each tool is its own activity type): options of that tool's activity, over
   * the ones above field by field (`retry` too: a field it leaves out keeps the run's value).
   * Every key must be one of the run's `tools`. Applies to the tool's activity only, not to
   * `describeToolCall` / `resolveToolCall`. @default {}
   */
  readonly perTool?: Readonly<Record<string, ToolActivityOptions>>;
}

/** Budgets of one run. The first three are required; every one must be a positive integer. */
export interface AgentBudget {
  /** Most model turns the run may take. */
  readonly maxTurns: number;
  /** Most tool calls the model may make in the whole run (a retry after `absent` does not count again). */
  readonly maxToolCalls: number;
  /** Total run deadline in ms of workflow time, from the start of the run. */
  readonly deadlineMs: number;
  /**
   * Most UTF-8 bytes the conversation may hold (every message's JSON, tool outputs kept by
   * reference counted at their full size). A model turn that would send more is not taken: the
   * run stops `budget-exhausted` / `max-conversation-bytes`. @default 33,554,432 (32 MiB)
   */
  readonly maxConversationBytes?: number;
  /**
   * Most tool calls one model turn may run. The calls after the first this many are not run: the
   * model reads `TOO_MANY_TOOL_CALLS` for each (see `turn-bounds.ts`); they take nothing of
   * `maxToolCalls`. @default 64
   */
  readonly maxToolCallsPerTurn?: number;
  /**
   * Most UTF-8 bytes of tool input (each call's input as JSON, summed) one model turn may run. The
   * call that crosses it and every later one are not run: the model reads `TURN_INPUT_TOO_LARGE`.
   * @default 524,288 (512 KiB)
   */
  readonly maxToolInputBytesPerTurn?: number;
}

/**
 * Size limits of a run (Temporal refuses a payload over 2 MB and a history over
 * 50 MB). Every field optional; each must be a positive integer. Runs started without the patch
 * replay with their old behaviour (patch `ttc-long-runs`).
 */
export interface RunLimits {
  /**
   * A tool output whose JSON text is longer than this (UTF-8 bytes) stays in the side store's
   * conversation log and reaches history, the status query and the result as an `OutputRef`
   * (claim check). @default 4,096
   */
  readonly inlineResultMaxBytes?: number;
  /**
   * The run continues as new (between model turns, once every handler has finished) when its
   * history holds this many events, or earlier when the server sets `continueAsNewSuggested`.
   * @default 10,000
   */
  readonly continueAsNewAfterEvents?: number;
  /** …or when its history holds this many bytes (`workflowInfo().historySize`). @default 10,485,760 (10 MiB) */
  readonly continueAsNewAfterHistoryBytes?: number;
  /**
   * …or when this run's calls, as the status query and the result report them, take this many
   * UTF-8 bytes of JSON, so neither nears Temporal's 2 MB payload limit (each run reports its own
   * calls; earlier runs' are counted). @default 1,048,576 (1 MiB)
   */
  readonly continueAsNewAfterStateBytes?: number;
}

/**
 * What a run hands to the run it continues as. Carried between model turns, when no
 * call is pending: budgets used, the state version (so approvals read before keep their
 * meaning), intent generations, every call id used (call identity: a reused id gets a
 * turn-scoped one), the conversation's place in the side store and counts of the calls of
 * earlier runs (their details stay in those runs' histories and results). Set by the workflow
 * itself; never pass it when starting a run.
 */
export interface ContinuedRun {
  /** How many times the chain has continued as new, counting this one. */
  readonly continuations: number;
  /** Workflow time the chain started, ms since the epoch (the deadline counts from it). */
  readonly startedAt: number;
  readonly stateVersion: number;
  readonly turns: number;
  readonly toolCallsUsed: number;
  readonly finalText: string;
  readonly intentGenerations: Readonly<Record<string, number>>;
  /**
   * Every call id used so far in the chain (model ids, turn-scoped and `~retryN` ids), as 8-hex
   * FNV-1a hashes concatenated: 8 bytes per call whatever the ids' length (`call-id-hashes.ts`).
   */
  readonly usedCallIdHashes: string;
  /** Where this run counts the occurrences of its calls' intents (`nextSegmentScope` of the run before, or its own in a reset lineage; `run-scope.ts`). Absent in handovers of older code. */
  readonly occurrenceScope?: string;
  /** Set when the run before was of a reset lineage (a reset run, or a run continued from one): this run is too. */
  readonly resetLineage?: ResetLineage;
  readonly conversation: ConversationState;
  /** Calls that finished in earlier runs of the chain, counted by {@link CallSummary} group. */
  readonly earlierCalls: EarlierCalls;
}

/**
 * A reset lineage: a reset run and the runs continued from it (docs/protocol.md#resets). They keep
 * counting occurrences in the reset run's segment (`ContinuedRun.occurrenceScope` stays), so a
 * call the reset discarded is met whichever run of the lineage asks for its action again; each
 * run addresses its calls in itself and writes its own conversation log.
 */
export interface ResetLineage {
  /** The lineage's runs before this one, oldest first: every call of theirs is this run's history. */
  readonly runs: readonly string[];
  /** `packCallHashes` of the calls other runs made that the lineage's reset runs replayed (their calls before the reset point). */
  readonly liveCalls: string;
  /** The runs those calls were made in. */
  readonly liveRuns: readonly string[];
  /**
   * `packCallHashes` of the calls of the lineage's history that applied nothing in it (see
   * `FencedToolInput.occurrences.notRun`): another branch may have run them under the same id, so
   * they are not the lineage's however their run or `liveCalls` place them. Absent: none.
   */
  readonly notRun?: string;
  /** The segment after the run the lineage's reset run reset (`nextSegmentScope`): once started, the lineage's turns and calls are refused (RESET_OF_CONTINUED_RUN). */
  readonly refusedIfStarted: readonly string[];
}

/**
 * Where the conversation stands: `logged` messages in the side store, `pending` not yet written,
 * `bytes` in all; `segments` (runs with patch `ttc-conversation-branches`) say which run's log
 * holds which logged messages (see `ConversationRef.segments`). Without them, all are in the run
 * chain's log.
 */
export interface ConversationState {
  readonly logged: number;
  readonly pending: readonly LoggedMessage[];
  readonly bytes: number;
  readonly segments?: readonly ConversationSegment[];
}

/** Counts of calls that finished in earlier runs of a chain, by {@link CallSummary} group. */
export interface EarlierCalls {
  readonly ran: number;
  readonly notRun: number;
  readonly unknown: number;
}

/** Approval policy of one tool: a pending call must be approved within `expiresAfterMs` and must start running before then. */
export interface ApprovalPolicy {
  readonly expiresAfterMs: number;
}

/** Input of {@link agentWorkflow}. */
export interface AgentWorkflowInput {
  /** Tenant within the Temporal namespace (part of every checkpoint binding). */
  readonly tenant: string;
  /** Model adapter name, e.g. `scripted`, `anthropic`, `openai`. */
  readonly model: string;
  /** Opaque adapter options, passed to every model turn. */
  readonly modelOptions?: JsonValue;
  /** The user's request; the first message of the conversation. */
  readonly prompt: string;
  /** Names of the tools the model may call; a call to any other tool fails with UNKNOWN_TOOL and nothing runs. */
  readonly tools: readonly string[];
  readonly budget: AgentBudget;
  /** Tools whose calls need a person's approval, by tool name. @default {} */
  readonly approvalRequired?: Readonly<Record<string, ApprovalPolicy>>;
  readonly activityOptions?: AgentActivityOptions;
  /**
   * How many tool calls of one model turn run at once. Results reach the model in the model's order
   * whatever order they finish in. A positive integer. @default every call of the turn
   */
  readonly toolConcurrency?: number;
  readonly limits?: RunLimits;
  /**
   * Compensation policy (saga): present = the run compensates. When the run is cancelled, abandoned
   * by a person, or a tool call's result is an error whose `type` is listed here (for example
   * `BUSINESS_REJECTION`; the run then stops `incomplete` / `compensate-on`), the run undoes its
   * applied effects (calls completed `ok`, or resolved applied) in the reverse order they were
   * applied, each through the tool's declared compensation (`compensateToolCall`). A call whose
   * outcome is unknown pauses for a person first; a call proven absent or not run is never
   * compensated. `[]`: compensate on cancel and abandon only. Up to 100 distinct non-empty types of
   * at most 256 characters each. Absent: nothing is compensated (runs started before compensations
   * existed). Compensations cover this run's calls, not calls of earlier runs of a continue-as-new
   * chain.
   */
  readonly compensateOn?: readonly string[];
  /** Set by the workflow when it continues as new; see {@link ContinuedRun}. */
  readonly continued?: ContinuedRun;
}
