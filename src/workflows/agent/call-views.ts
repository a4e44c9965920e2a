/**
 * How the agent workflow shows its calls: a call's report (for the result and the status query),
 * the paused view, a paused compensation as a pending call, what a pause is about as a person
 * reads it, and the grouping of final calls into ran / not run / unknown. Pure; sandbox-safe.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type { CallReport, CallSummary, CompensationReport, FinalCallStatus, LiveCallStatus, PausedView, PendingCallView } from './types';
import type { CallState, CompensationState } from './call-state';
import { UNCLASSIFIED } from '../common/failures';

/** ISO-8601 UTC string of a workflow time in ms. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

const SUMMARY_GROUP: Readonly<Record<FinalCallStatus, keyof CallSummary>> = {
  completed: 'ran',
  'resolved-applied': 'ran',
  'not-run': 'notRun',
  rejected: 'notRun',
  failed: 'notRun',
  'resolved-absent': 'notRun',
  unknown: 'unknown',
  abandoned: 'unknown',
};

/**
 * Groups final calls into ran / not run / unknown by status (see {@link CallSummary}); a batch call
 * cancelled part-way (`unknown` with its `batch` report) by its items, as `listEffects` groups it:
 * `unknown` while an item's outcome is unknown, else `ran` when an item applied, else `notRun`. Pure.
 */
export function summarizeCalls(calls: readonly CallReport<FinalCallStatus>[]): CallSummary {
  const summary: { ran: string[]; notRun: string[]; unknown: string[] } = { ran: [], notRun: [], unknown: [] };
  for (const call of calls) summary[summaryGroup(call)].push(call.callId);
  return summary;
}

function summaryGroup(call: CallReport<FinalCallStatus>): keyof CallSummary {
  const batch = call.status === 'unknown' ? call.batch : undefined;
  if (batch === undefined || batch.unknown.count > 0) return SUMMARY_GROUP[call.status];
  return batch.applied.count > 0 ? 'ran' : 'notRun';
}

/** What is paused, as a person reads it: `the compensation of call "c1" (generation 1)`, `item "k" (generation 2) of call "c1"`, `call "c1"`. */
export function describePause(call: CallState): string {
  if (call.compensation?.status === 'paused') return `the compensation of call "${call.callId}" (generation ${call.compensation.generation})`;
  if (call.pausedItem !== null) return `item "${call.pausedItem.key}" (generation ${call.pausedItem.generation}) of call "${call.callId}"`;
  return `call "${call.callId}"`;
}

/** The paused view of `call`: the call's pause, or its compensation's (`role: 'compensation'`). */
export function pausedView(call: CallState, pauseId: string, now: number): PausedView {
  const compensation = call.compensation?.status === 'paused' ? call.compensation : null;
  if (compensation !== null) {
    return {
      pauseId,
      callId: call.callId,
      toolName: call.toolName,
      errorType: compensation.errorType ?? UNCLASSIFIED,
      reason: compensation.reason ?? '',
      pausedAt: iso(compensation.pausedAt ?? now),
      role: 'compensation',
      toolRevision: compensation.toolRevision,
      idempotencyKey: compensation.idempotencyKey,
    };
  }
  return {
    pauseId,
    callId: call.callId,
    toolName: call.toolName,
    errorType: call.errorType ?? UNCLASSIFIED,
    reason: call.reason ?? '',
    pausedAt: iso(call.pausedAt ?? now),
    ...(call.pausedItem !== null ? { item: call.pausedItem } : {}),
    toolRevision: call.toolRevision,
    idempotencyKey: call.idempotencyKey,
  };
}

/** A call whose compensation is paused, as a pending call: status `paused`, the compensation's error and reason, `role: 'compensation'`. */
export function compensationPendingView(call: CallState): PendingCallView {
  const compensation = call.compensation!;
  return {
    ...(report(call) as CallReport<LiveCallStatus>),
    status: 'paused',
    errorType: compensation.errorType,
    reason: compensation.reason,
    arguments: call.arguments,
    target: call.target,
    modelInput: call.input,
    approvalExpiresAt: null,
    role: 'compensation',
  };
}

/** A call as the result and the status query report it. */
export function report(call: CallState): CallReport {
  return {
    callId: call.callId,
    modelCallId: call.modelCallId,
    toolName: call.toolName,
    turn: call.turn,
    status: call.status,
    source: call.source,
    receipt: call.receipt,
    outcome: call.outcome,
    toolRevision: call.toolRevision,
    intentDigest: call.intentDigest,
    idempotencyKey: call.idempotencyKey,
    errorType: call.errorType,
    reason: call.reason,
    ...(call.compensation !== null ? { compensation: compensationReport(call.compensation) } : {}),
    ...(call.pausedItem !== null ? { item: call.pausedItem } : {}),
    ...(call.batch !== null ? { batch: call.batch } : {}),
    ...(call.decisions.length > 0 ? { decisions: [...call.decisions] } : {}),
    ...(call.answeredBy !== undefined ? { answeredBy: call.answeredBy } : {}),
    ...(call.appliedByRun !== undefined ? { appliedByRun: call.appliedByRun } : {}),
  };
}

function compensationReport(state: CompensationState): CompensationReport {
  const { pausedAt: _pausedAt, ...shown } = state;
  return { ...shown };
}

/** What the run's result and the model read about a call another run answered (see `CallReport.answeredBy`). */
export function answeredByNote(by: NonNullable<CallReport['answeredBy']>): string {
  return `already done by another run: workflow ${by.workflowId} (run chain ${by.runChainId}), call "${by.callId}", applied this business action; its result is delivered here and nothing was applied again`;
}

/** What the run's result and the model read about a call a reset discarded that applied the same action (see `CallReport.appliedByRun`). */
export function appliedByRunNote(by: NonNullable<CallReport['appliedByRun']>): string {
  return `already done before a reset: call "${by.callId}" of run ${by.runId} applied this same action; its result is delivered here and nothing was applied again`;
}
