/**
 * The agent workflow's result: how a run ended, each call's report (status, source, decisions,
 * paused items, compensation), the run's effects and summary. Type-only (and the status lists)
 * and sandbox-safe.
 *
 * Units: every duration is in ms; every timestamp is an ISO-8601 UTC string named `…At`, taken
 * from workflow time.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type { BatchCancellationReport, PausedItem } from '../../activities/contract/batch-items';
import type { DeliveredOutcome, ResultSource } from '../../activities/contract/contract';
import type { JsonValue } from '../../checkpoint/types';
import type { EarlierCalls } from './input-types';

export type { PausedItem } from '../../activities/contract/batch-items';

/** How a run ended. */
export const RUN_STATUSES = ['completed', 'incomplete', 'budget-exhausted', 'deadline-exceeded', 'cancelled', 'abandoned'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * Why a run stopped: the model ended its turn, its answer was cut off (`model-truncated`:
 * Anthropic `max_tokens`, OpenAI `length`) or refused (`model-refused`: `refusal`,
 * `content_filter`) — both end the run `incomplete` and none of that answer's calls runs — a
 * budget or the deadline ran out, a person cancelled or abandoned, or a tool call's error result
 * has a type the run's `compensateOn` names (`compensate-on`: the run ends `incomplete` and
 * compensates).
 */
export const STOP_REASONS = [
  'model-stopped',
  'model-truncated',
  'model-refused',
  'max-turns',
  'max-tool-calls',
  'max-conversation-bytes',
  'deadline',
  'cancel',
  'abandon',
  'compensate-on',
] as const;
export type StopReason = (typeof STOP_REASONS)[number];

/**
 * Final status of a tool call in the result:
 * - `completed`: the fenced activity returned an outcome (success or the tool's own error);
 * - `rejected`: a person rejected it, its approval expired, or it was approved but could not
 *   start before the approval expired; nothing ran;
 * - `failed`: refused before anything ran (unknown tool, invalid input, binding conflict, …);
 *   the model sees the error;
 * - `not-run`: never started (budget, deadline or cancel came first);
 * - `unknown`: it may have run (it was running or paused when the run stopped);
 * - `resolved-applied`: paused, then a person proved it applied and gave the result;
 * - `resolved-absent`: paused, then a person proved it never applied; it ran again as `<callId>~retryN`;
 * - `abandoned`: paused, then a person abandoned the run.
 */
export const FINAL_CALL_STATUSES = ['completed', 'rejected', 'failed', 'not-run', 'unknown', 'resolved-applied', 'resolved-absent', 'abandoned'] as const;
export type FinalCallStatus = (typeof FINAL_CALL_STATUSES)[number];

/**
 * Status of a call that has not finished, as the status query shows it: `queued` (waiting its
 * turn), `awaiting-approval`, `approved` (not started yet), `running`, `paused` (outcome unknown,
 * waiting for `resolveOutcomeUpdate`).
 */
export const LIVE_CALL_STATUSES = ['queued', 'awaiting-approval', 'approved', 'running', 'paused'] as const;
export type LiveCallStatus = (typeof LIVE_CALL_STATUSES)[number];

/** Any call status the status query can show. */
export type CallStatus = FinalCallStatus | LiveCallStatus;

/** Where a call's outcome came from: the fenced activity's source, or `resolution` when a person supplied it. */
export type CallSource = ResultSource | 'resolution';

/** One tool call as the result and the status query report it. */
export interface CallReport<S extends CallStatus = CallStatus> {
  /** The call id the activity ran under: the model's id, or `<model id>~retryN` after `absent`. */
  readonly callId: string;
  /** The model's tool-call id (what the model's conversation refers to). */
  readonly modelCallId: string;
  readonly toolName: string;
  /** 0-based model turn that asked for the call. */
  readonly turn: number;
  readonly status: S;
  readonly source: CallSource | null;
  /** The provider's receipt from a successful outcome, else null. */
  readonly receipt: JsonValue | null;
  /** The outcome as delivered: a large output is an `OutputRef` to the side store (see `RunLimits.inlineResultMaxBytes`). */
  readonly outcome: DeliveredOutcome | null;
  /** Known once `describeToolCall` or the tool's activity answered; else null. */
  readonly toolRevision: string | null;
  readonly intentDigest: string | null;
  /**
   * The key the call's request is sent with. Known once the activity answered, or from the failure
   * that paused it (with `toolRevision`: the revision it was claimed under); else null.
   */
  readonly idempotencyKey: string | null;
  /** Failure type behind `failed`, `paused`, `unknown` (e.g. `OUTCOME_UNKNOWN`), else null. */
  readonly errorType: string | null;
  /** Why it was rejected, failed, paused, unknown, resolved or abandoned; else null. */
  readonly reason: string | null;
  /** The compensation of this call, once the run started compensating it. Absent otherwise. */
  readonly compensation?: CompensationReport;
  /**
   * The batch item the call is paused on (a batch tool's `ctx.forEachItem` item whose outcome is
   * unknown): a resolution of the call is stored in that item's checkpoint and the call
   * then runs again under the same call id, resuming after the item. Absent otherwise.
   */
  readonly item?: PausedItem;
  /** A batch call cancelled part-way: its items applied / not applied / unknown, as the activity reported them. Absent otherwise. */
  readonly batch?: BatchCancellationReport;
  /** The decisions people took on this call (approval, rejection, resolutions of its pauses), in order, with who took them. Absent when none. */
  readonly decisions?: readonly DecisionRecord[];
  /**
   * The call of another run (or workflow) that applied this call's effect: the first call with the
   * tool's business key within its window (docs/protocol.md#business-keys). This call applied
   * nothing, and the run never compensates it. Absent otherwise.
   */
  readonly answeredBy?: { readonly workflowId: string; readonly runChainId: string; readonly callId: string };
  /**
   * Set when a call of a run a reset discarded applied this call's action (same tool, intent and
   * occurrence in the run chain): its checkpoint answered this call, which applied nothing, and
   * this run owns the effect (it compensates it). `callId` is that call's id, `runId` its run's.
   */
  readonly appliedByRun?: { readonly runId: string; readonly callId: string };
}

/**
 * One decision a person took on a call, as the run keeps it: what was decided, by whom (the
 * request's `by`; null when it named no one), when (workflow time, ISO-8601 UTC), and for a
 * resolution the pause it settled (`pauseId`, `role: 'compensation'` for a compensation's).
 */
export interface DecisionRecord {
  readonly kind: 'approved' | 'rejected' | 'resolved-applied' | 'resolved-absent' | 'abandoned';
  readonly by: string | null;
  readonly at: string;
  readonly pauseId?: string;
  readonly role?: 'compensation';
}

/**
 * Where a call's compensation stands:
 * - `running`: `compensateToolCall` is running;
 * - `paused`: its outcome is unknown, or the provider refused it (`ok: false`); waits for
 *   `resolveOutcomeUpdate` (applied / absent → runs again as the next generation / abandon);
 * - `compensated`: the compensation applied (ran `ok`, or a person resolved it applied);
 * - `pending`: not done: a person abandoned it, or the run stopped while it waited;
 * - `not-declared`: the call's tool declares no compensation; the effect stays applied.
 */
export const COMPENSATION_STATUSES = ['running', 'paused', 'compensated', 'pending', 'not-declared'] as const;
export type CompensationStatus = (typeof COMPENSATION_STATUSES)[number];

/** A call's compensation as the result and the status query report it. */
export interface CompensationReport {
  readonly status: CompensationStatus;
  /** Which run of the compensation: 1, raised by one each time a person proves a run absent. */
  readonly generation: number;
  /** The compensation that ran: the named tool, or `<tool>~compensation` for a function; null until the worker answered. */
  readonly toolName: string | null;
  readonly toolRevision: string | null;
  readonly source: CallSource | null;
  /** The compensation's outcome (`ok: false`: the provider refused it). Null until known. */
  readonly outcome: DeliveredOutcome | null;
  /** The compensation's `ttcc-…` idempotency key; null until the worker answered. */
  readonly idempotencyKey: string | null;
  /** Failure or refusal type behind `paused` / `pending`, else null. */
  readonly errorType: string | null;
  readonly reason: string | null;
}

/**
 * The run's effects, by call id: what is in place at the end of the run and what was
 * undone. Every call is in exactly one list.
 */
export interface RunEffects {
  /** Applied and left in place (completed `ok` or resolved applied; not compensated: the run did not compensate, or the tool declares no compensation). */
  readonly applied: readonly string[];
  /** Applied, then undone by its compensation. */
  readonly compensated: readonly string[];
  /** Applied, and its compensation did not finish (abandoned by a person, or the run stopped while it waited). */
  readonly compensationPending: readonly string[];
  /** Nothing applied: not run, rejected, failed, proven absent, or the tool's own error result. */
  readonly notRun: readonly string[];
  /**
   * May have been applied, nobody knows: `unknown`, `abandoned` (never compensated). A batch call
   * cancelled part-way is grouped by its items' report instead: `applied` when an item applied
   * and none is unknown, `notRun` when none applied and none is unknown.
   */
  readonly unknown: readonly string[];
}

/**
 * Which calls ran, which did not, and which may have, by call id (as in `calls`). Above all the
 * answer to "what happened" when a budget, the deadline, a cancel or an abandon stops a run.
 */
export interface CallSummary {
  /** The tool ran to a known outcome: `completed` (success or the tool's own error result), `resolved-applied`. */
  readonly ran: readonly string[];
  /** Nothing was applied: `not-run`, `rejected`, `failed`, `resolved-absent` (its rerun is listed on its own). */
  readonly notRun: readonly string[];
  /**
   * The effect may have been applied: `unknown`, `abandoned`. A batch call cancelled part-way
   * (`unknown` with a `batch` report whose items are all known) is in `ran` when an item applied,
   * else in `notRun`.
   */
  readonly unknown: readonly string[];
}

/** Result of {@link agentWorkflow}. */
export interface AgentWorkflowResult {
  readonly status: RunStatus;
  /** The model's text from its last turn ('' if it never answered). */
  readonly finalText: string;
  /** Every call the model asked for, in order, plus retries after `absent` right after their original. */
  readonly calls: readonly CallReport<FinalCallStatus>[];
  /** `calls` grouped into ran / not run / unknown. */
  readonly summary: CallSummary;
  /** `calls` grouped by effect: applied, compensated, compensation pending, not run, unknown. */
  readonly effects: RunEffects;
  /** Model turns taken. */
  readonly turns: number;
  readonly stoppedBecause: StopReason;
  /** The cancel or abandon reason, or a sentence about the budget or deadline; null when the model stopped. */
  readonly reason: string | null;
  /**
   * Set when the run continued as new: how many times, and the calls that finished in the
   * earlier runs (counted; `calls` and `summary` hold this run's calls). Absent otherwise.
   */
  readonly continued?: { readonly continuations: number; readonly earlierCalls: EarlierCalls };
}
