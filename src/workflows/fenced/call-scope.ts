/**
 * Workflow side (sandbox code: imports nothing Node-only). A call scope lets workflow code learn
 * the call ids the plugin's workflow outbound interceptor (`./workflow-interceptors`) gives the
 * activities scheduled inside it, and name the call id of the first one instead of the
 * interceptor's `act-<seq>` (see `CallHeader.callId` in `../../plugin/contract/call-header`). The compensation
 * helper (`./compensations`) uses it to tie a compensation's call to the step it undoes.
 *
 * The scope is held by the workflow sandbox's `AsyncLocalStorage` and filled from workflow state
 * only (the order in which the workflow schedules activities), so replay fills it the same way.
 * Without the plugin's interceptor on the worker nothing fills it: `scheduledCallIds` stays empty
 * and `firstCallId` is not applied.
 */
import { AsyncLocalStorage } from '@temporalio/workflow';

/** A call scope: read by the outbound interceptor when it assigns a call id, filled by it. */
export interface CallScope {
  /**
   * The call id of the first activity (or local activity) scheduled in the scope, instead of
   * `act-<seq>`; later ones get their own. Must be unique within the run chain (the checkpoint
   * binding is keyed by it) and at most 2,048 characters. @default the interceptor's `act-<seq>`
   */
  readonly firstCallId?: string;
  /** The call ids given to the activities scheduled in the scope, in schedule order (appended by the interceptor). */
  readonly scheduledCallIds: string[];
}

const storage = new AsyncLocalStorage<CallScope>();

/**
 * Per scope, the call id given to each command sequence number: the interceptor module listed twice
 * under two paths (the bundler dedupes only equal strings) runs two interceptors for one schedule.
 */
const assigned = new WeakMap<CallScope, Map<number, string>>();

/**
 * Runs `work` in `scope`: each activity `work` schedules (directly or through awaited helpers)
 * has its call id appended to `scope.scheduledCallIds`, the first one gets `scope.firstCallId`
 * when set. An inner scope hides an outer one.
 * @returns what `work` returns.
 */
export function runInCallScope<T>(scope: CallScope, work: () => Promise<T>): Promise<T> {
  return storage.run(scope, work);
}

/**
 * The call id of the activity command `seq` being scheduled, whose own call id is `ownCallId`:
 * the current scope's `firstCallId` for the scope's first activity, else `ownCallId`; recorded
 * in the scope once per `seq` (a second interceptor for the same schedule gets the same id).
 * Outside a scope, `ownCallId`. Called by the outbound interceptor.
 */
export function assignCallId(seq: number, ownCallId: string): string {
  const scope = storage.getStore();
  if (scope === undefined) return ownCallId;
  let bySeq = assigned.get(scope);
  if (bySeq === undefined) assigned.set(scope, (bySeq = new Map()));
  const known = bySeq.get(seq);
  if (known !== undefined) return known;
  const callId = scope.firstCallId !== undefined && scope.scheduledCallIds.length === 0 ? scope.firstCallId : ownCallId;
  bySeq.set(seq, callId);
  scope.scheduledCallIds.push(callId);
  return callId;
}
