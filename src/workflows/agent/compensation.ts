/**
 * Compensation of an agent run's applied effects (saga), workflow side. Sandbox-safe:
 * imports only `@temporalio/workflow`, types of the activity contract and this folder.
 *
 * When a run with a `compensateOn` policy is cancelled, abandoned by a person, or stopped by a
 * tool result its policy names, {@link compensateRun}:
 * 1. pauses on every call whose outcome nobody knows (paused, or cut off by the stop while it
 *    ran), one by one, until a person settles it (applied / absent / abandon; an absent call is
 *    not run again, the run is stopping);
 * 2. undoes the applied calls (completed `ok`, or resolved applied) in the reverse order they
 *    applied, each through the `compensateToolCall` activity (the compensation the tool declares,
 *    fenced under its own binding and key). A call proven absent or never run is not compensated.
 *
 * A compensation whose outcome is unknown, or that the provider refuses for good (`ok: false`),
 * pauses for a person with the `resolveOutcome` choices: `applied` stores the person's result in
 * the compensation's checkpoint (`resolveToolCall` with `role: 'compensation'`), `absent` runs the
 * compensation again as the next generation, `abandon` leaves it "compensation pending" and the
 * run goes on with the next one. The caller runs all of this in a non-cancellable scope, with
 * activity timeouts not bounded by the run deadline.
 *
 * @see docs/compensation.md, docs/protocol.md#agent-workflow
 */
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import { ACTIVITY_NOT_REGISTERED, type FencedToolInput, type ToolOutcome } from '../../activities/contract/contract';
import type { CompensateToolCallInput, CompensateToolCallResult, ResolveCompensationInput } from '../../activities/contract/compensation-contract';
import type { CompensationActivities, ToolActivities } from './activity-types';
import { activityFailureDetails, activityFailureMessage, failureTypeOrUnclassified, claimIdentityOf } from '../common/failures';
import { compensationVerdict, untypedAsUnclassified, type CompensationError, type WindDownAttempt } from '../common/compensation-rules';
import type { ActivityKind } from './input';
import { decidedBy } from './messages';
import type { CallState, CompensationState, RunState } from './run-state';
import type { ResolveOutcomeRequest, ResolveOutcomeResult } from './types';

/** A resolution a person gave for the paused call, and how to answer the update that carried it. */
export interface ResolutionTicket {
  readonly request: ResolveOutcomeRequest;
  /** Completes the update with `result` (the run advanced). */
  /** Settles the update; the result's `pauseId` is the request's. */
  settle(result: Omit<ResolveOutcomeResult, 'pauseId'>): void;
  /** Fails the update with a typed failure; the run stays paused. */
  fail(type: string, message: string): void;
}

/** What {@link compensateRun} needs from the agent run. */
export interface CompensationHost {
  readonly state: RunState;
  /** The activity input of `call` exactly as the run ran it (so the worker finds its checkpoint). */
  toolInput(call: CallState): FencedToolInput;
  /** Runs one activity with wind-down options (the tool's `perTool` options for `toolName`). */
  windDownActivity<T>(kind: ActivityKind, toolName: string | null, run: (options: ActivityOptions) => Promise<T>): Promise<WindDownAttempt<T>>;
  /** Waits until a person resolves the paused call (`state.paused`). */
  nextResolution(): Promise<ResolutionTicket>;
  /** Pauses on a call whose outcome is unknown and waits until a person settles it (never runs it again). */
  settleUnknownCall(call: CallState): Promise<void>;
  /** The run advanced: bumps the state version and publishes who waits for a person. */
  changed(): void;
}

/**
 * Settles the run's unknown calls, then compensates its applied effects, last applied first.
 * Returns once every compensation is compensated, not declared, or pending (abandoned).
 */
export async function compensateRun(host: CompensationHost): Promise<void> {
  for (const call of host.state.unsettledCalls()) {
    host.state.phase = 'compensating';
    await host.settleUnknownCall(call);
  }
  for (const call of host.state.appliedInReverse()) {
    host.state.phase = 'compensating';
    await compensateCall(host, call);
  }
}

/** Runs the compensation of one applied call until it is compensated, not declared, or left pending by a person. */
async function compensateCall(host: CompensationHost, call: CallState): Promise<void> {
  const compensation: CompensationState = {
    status: 'running',
    generation: 1,
    toolName: null,
    toolRevision: null,
    source: null,
    outcome: null,
    idempotencyKey: null,
    errorType: null,
    reason: null,
    pausedAt: null,
  };
  call.compensation = compensation;
  host.changed();
  for (;;) {
    compensation.status = 'running';
    host.state.phase = 'compensating';
    const input: CompensateToolCallInput = { ...host.toolInput(call), role: 'compensation', compensationGeneration: compensation.generation };
    const attempt = await host.windDownActivity('compensate', call.toolName, (options) => {
      const nonRetryableErrorTypes = [...(options.retry?.nonRetryableErrorTypes ?? []), ACTIVITY_NOT_REGISTERED];
      const summary = `compensation of ${call.toolName} call ${call.callId}`;
      return proxyActivities<CompensationActivities>({ ...options, summary, retry: { ...options.retry, nonRetryableErrorTypes } }).compensateToolCall(input);
    });
    if (attempt.kind === 'ok' && !attempt.value.declared) {
      compensation.status = 'not-declared';
      compensation.reason = `tool ${call.toolName} declares no compensation; its effect stays applied`;
      host.changed();
      return;
    }
    noteIdentity(compensation, attempt);
    const verdict = compensationVerdict(attempt, untypedAsUnclassified, refusalOf);
    if (verdict.kind === 'compensated') {
      compensation.status = 'compensated';
      compensation.errorType = null;
      compensation.reason = null;
      host.changed();
      return;
    }
    // The agent pauses for a person on a known failure as on an unknown outcome: the run cannot end before the effect is settled.
    const { type, message } = verdict.error;
    pause(host, call, compensation, type, attempt.kind === 'ok' ? `${type}: the provider refused the compensation: ${message}` : message);
    if ((await awaitCompensationResolution(host, call, compensation)) === 'done') return;
  }
}

/**
 * Records what the worker said of the compensation that ran: its tool, revision, source, key and
 * outcome from a result; from a failure, the key and revision it was claimed under and its tool
 * (for the person who looks it up at the provider), each only when the failure names it.
 */
function noteIdentity(compensation: CompensationState, attempt: WindDownAttempt<CompensateToolCallResult>): void {
  if (attempt.kind === 'ok') {
    if (!attempt.value.declared) return;
    const { result, compensation: ran } = attempt.value;
    compensation.toolName = ran.toolName;
    compensation.toolRevision = ran.toolRevision;
    compensation.source = result.source;
    compensation.idempotencyKey = result.idempotencyKey;
    compensation.outcome = result.outcome;
    return;
  }
  const claimed = claimIdentityOf(attempt.error);
  compensation.toolRevision = claimed.toolRevision ?? compensation.toolRevision;
  compensation.idempotencyKey = claimed.idempotencyKey ?? compensation.idempotencyKey;
  const named = activityFailureDetails(attempt.error)?.toolName;
  if (compensation.toolName === null && typeof named === 'string' && named.length > 0) compensation.toolName = named;
}

/** A provider's refusal of the compensation (`ok: false` outcome), else null. */
function refusalOf(value: CompensateToolCallResult): CompensationError | null {
  if (!value.declared || value.result.outcome.ok) return null;
  return { type: value.result.outcome.error.type, message: value.result.outcome.error.message };
}

/** Marks the compensation paused: the run waits on it (the status query shows it with `role: 'compensation'`). */
function pause(host: CompensationHost, call: CallState, compensation: CompensationState, errorType: string, reason: string): void {
  compensation.status = 'paused';
  compensation.errorType = errorType;
  compensation.reason = reason;
  compensation.pausedAt = Date.now();
  host.state.paused = call;
  host.state.phase = 'paused';
  host.changed();
}

/**
 * Waits for a person's resolution of the paused compensation: `applied` stores the result through
 * `resolveToolCall` (`role: 'compensation'`; a refusal by the worker fails the update and the
 * compensation stays paused), `absent` → `rerun` as the next generation, `abandon` → `pending`.
 */
async function awaitCompensationResolution(host: CompensationHost, call: CallState, compensation: CompensationState): Promise<'done' | 'rerun'> {
  for (;;) {
    const ticket = await host.nextResolution();
    const req = ticket.request;
    const answer = { callId: call.callId, resolution: req.resolution, role: 'compensation' as const };
    if (req.resolution === 'abandon') {
      compensation.status = 'pending';
      compensation.reason = `${compensation.reason ?? 'paused'}; abandoned by a person: ${req.reason}`;
      host.state.paused = null;
      ticket.settle({ ...answer, status: 'abandoned', retryCallId: null });
      return 'done';
    }
    if (req.resolution === 'absent') {
      const proven = compensation.generation;
      compensation.generation += 1;
      compensation.status = 'running';
      compensation.reason = `a person proved compensation run ${proven} absent: ${req.reason}; it runs again as generation ${compensation.generation}`;
      host.state.paused = null;
      ticket.settle({ ...answer, status: 'resolved-absent', retryCallId: null, compensationGeneration: compensation.generation });
      return 'rerun';
    }
    if (req.resolution !== 'applied') continue;
    const result: ToolOutcome = { ok: true, output: req.result, receipt: req.receipt ?? null };
    const input: ResolveCompensationInput = {
      ...host.toolInput(call),
      role: 'compensation',
      compensationGeneration: compensation.generation,
      resolution: 'applied',
      result,
      reason: req.reason,
      ...decidedBy(req),
    };
    const attempt = await host.windDownActivity('resolve', null, (options) => proxyActivities<ToolActivities>(options).resolveToolCall(input));
    if (attempt.kind === 'failed') {
      const type = failureTypeOrUnclassified(attempt.error);
      ticket.fail(type, `the worker refused to store the compensation's result (${activityFailureMessage(attempt.error)}); the compensation stays paused`);
      continue;
    }
    compensation.status = 'compensated';
    compensation.source = 'resolution';
    compensation.outcome = attempt.value.outcome;
    compensation.idempotencyKey = attempt.value.idempotencyKey;
    compensation.toolRevision = attempt.value.toolRevision;
    compensation.errorType = null;
    compensation.reason = `a person proved the compensation applied: ${req.reason}`;
    host.state.paused = null;
    ticket.settle({ ...answer, status: 'resolved-applied', retryCallId: null });
    return 'done';
  }
}
