/**
 * Not a workflow, just interceptors: the module `ToolCheckpointPlugin` adds to
 * `workflowInterceptorModules`. Sandbox code: imports nothing Node-only.
 *
 * Every scheduled activity (and local activity) gets the call header (`../../plugin/contract/call-header`): a call id
 * from the activity's command sequence number, deterministic on replay, and the run chain
 * (`firstExecutionRunId`), and, inside `withApprovedIntent` (`./approval-scope`), the approved
 * intent digest and its expiry: workflow state only, so the header is the same on replay. Inside
 * a call scope (`./call-scope`, used by `Compensations`) the scope may name the call id of its
 * first activity and learns the ids given. The fence interceptor reads the header only for
 * fenced activity types.
 *
 * A fenced activity scheduled on the workflow's own task queue without `heartbeatTimeout` gets the
 * plugin's default (`../../plugin/contract/scheduling-defaults`, handed to this module in its
 * request's query), so that a worker that dies is noticed within it; the fence heartbeats while the
 * activity runs.
 */
import {
  ActivityFailure,
  TimeoutFailure,
  workflowInfo,
  type ActivityInput,
  type ContinueAsNewInput,
  type WorkflowInboundCallsInterceptor,
  type LocalActivityInput,
  type Next,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { headerApproval } from './approval-scope';
import { callIdOf, readSegmentHeader, withCallHeader, withSegmentHeader, type CallHeader } from '../../plugin/contract/call-header';
import { assignCallId } from './call-scope';
import { parseSchedulingDefaults, type SchedulingDefaults } from '../../plugin/contract/scheduling-defaults';
import { callHash, nextSegmentScope, occurrenceScopeOf } from '../../checkpoint/run-scope';

/** The query of this module's request, set by webpack when the plugin added the module with one (undefined elsewhere). */
declare const __resourceQuery: string | undefined;
const schedulingDefaults = parseSchedulingDefaults(typeof __resourceQuery === 'string' ? __resourceQuery : undefined);

class CallIdOutboundInterceptor implements WorkflowOutboundCallsInterceptor {
  /**
   * Local activity calls by their argument array: a local activity retried after a backoff timer
   * (past `localRetryThreshold`) is scheduled again by the SDK under a new sequence number, with the
   * same `args` array and `attempt` > 1; it keeps the call of its first schedule (replay repeats this).
   */
  private readonly localCalls = new WeakMap<unknown[], CallHeader>();
  private readonly fencedTypes: ReadonlySet<string>;
  /** Calls scheduled so far in this run, by the hash of their activity type and arguments (see {@link CallHeader.occurrence}). */
  private readonly scheduled = new Map<string, number>();
  /** The occurrence scope the run this one continued from handed over (its start header), if any. */
  handedOverScope: string | undefined;

  constructor(private readonly defaults: SchedulingDefaults | null) {
    this.fencedTypes = new Set(defaults?.fencedTypes ?? []);
  }

  /**
   * The occurrence of a call (see {@link CallHeader.occurrence}): how many calls of the same action
   * ({@link actionKey}) this run scheduled before, less those that never started,
   * counted on replay too, so a reset run counts its history's calls as the discarded run did.
   * `settled` is the call's promise: a call that never started gives its occurrence back.
   */
  private occurrenceOf(activityType: string, args: unknown[]): { header: Pick<CallHeader, 'occurrence'>; settled(promise: Promise<unknown>): void } {
    const key = this.fencedTypes.has(activityType) ? actionKey(activityType, args) : null;
    if (key === null) return { header: {}, settled: () => undefined };
    const index = this.scheduled.get(key) ?? 0;
    this.scheduled.set(key, index + 1);
    return {
      header: { occurrence: { scope: occurrenceScopeOf(workflowInfo(), this.handedOverScope), index } },
      settled: (promise) =>
        void promise.then(undefined, (error: unknown) => {
          if (neverStarted(error)) this.scheduled.set(key, Math.max(0, (this.scheduled.get(key) ?? 1) - 1));
        }),
    };
  }

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): ReturnType<WorkflowOutboundCallsInterceptor['scheduleActivity'] & {}> {
    const { defaults } = this;
    const options =
      defaults !== null && input.options.heartbeatTimeout === undefined && this.fencedTypes.has(input.activityType) && onOwnTaskQueue(input)
        ? { ...input.options, heartbeatTimeout: defaults.heartbeatTimeoutMs }
        : input.options;
    const occurrence = this.occurrenceOf(input.activityType, input.args);
    const scheduled = next({ ...input, options, headers: withCallHeader(input.headers, { ...callOf(input.seq), ...occurrence.header }) });
    occurrence.settled(scheduled);
    return scheduled;
  }

  /** Hands the next run its occurrence scope (`nextSegmentScope`): the same after a reset of this run. */
  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>): ReturnType<WorkflowOutboundCallsInterceptor['continueAsNew'] & {}> {
    return next({ ...input, headers: withSegmentHeader(input.headers, nextSegmentScope(workflowInfo())) });
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ): ReturnType<WorkflowOutboundCallsInterceptor['scheduleLocalActivity'] & {}> {
    let call = input.attempt > 1 ? this.localCalls.get(input.args) : undefined;
    if (call === undefined) {
      const occurrence = this.occurrenceOf(input.activityType, input.args);
      call = { ...callOf(input.seq), ...occurrence.header };
      this.localCalls.set(input.args, call);
      const scheduled = next({ ...input, headers: withCallHeader(input.headers, call) });
      occurrence.settled(scheduled);
      return scheduled;
    }
    return next({ ...input, headers: withCallHeader(input.headers, call) });
  }
}

/**
 * The key a call's action is counted under: a hash of its activity type and its arguments as the
 * default payload converter sends them (JSON: `undefined` members dropped, a `Date` as its ISO
 * text), with object members in sorted order. Null for arguments JSON cannot carry (a `bigint`, a cycle).
 */
function actionKey(activityType: string, args: unknown[]): string | null {
  let sent: unknown;
  try {
    sent = JSON.parse(JSON.stringify(args) ?? 'null');
  } catch {
    return null;
  }
  return callHash(`${activityType}\n${sortedJson(sent)}`);
}

/** JSON text of a parsed JSON value with every object's members in sorted order. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${sortedJson(record[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Whether a call's failure says it never started: a schedule-to-start timeout. (A refusal of the
 * fence is no such proof: an earlier attempt of the call may have claimed before it.)
 */
function neverStarted(error: unknown): boolean {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START';
}

/**
 * Whether the activity runs on the workflow's own task queue, whose workers run this plugin (the
 * plugin is a worker's, and a worker serves one queue). An activity sent to another queue may meet
 * a worker that does not fence it, so nobody would heartbeat under the default: it gets none.
 */
function onOwnTaskQueue(input: ActivityInput): boolean {
  return input.options.taskQueue === undefined || input.options.taskQueue === workflowInfo().taskQueue;
}

function callOf(seq: number): CallHeader {
  const info = workflowInfo();
  const callId = assignCallId(seq, callIdOf(seq, info.runId, info.firstExecutionRunId));
  return { callId, runChainId: info.firstExecutionRunId, ...headerApproval(callId) };
}

/** The workflow interceptors of the tool checkpoint plugin. */
export const interceptors: WorkflowInterceptorsFactory = () => {
  const outbound = new CallIdOutboundInterceptor(schedulingDefaults);
  // The scope a continue-as-new handed over (see `nextSegmentScope`), read before the workflow runs.
  const inbound: WorkflowInboundCallsInterceptor = {
    execute(input, next) {
      outbound.handedOverScope = readSegmentHeader(input.headers);
      return next(input);
    },
  };
  return { inbound: [inbound], outbound: [outbound] };
};
