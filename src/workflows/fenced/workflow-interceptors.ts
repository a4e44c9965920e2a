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
  workflowInfo,
  type ActivityInput,
  type LocalActivityInput,
  type Next,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { headerApproval } from './approval-scope';
import { callIdOf, withCallHeader, type CallHeader } from '../../plugin/contract/call-header';
import { assignCallId } from './call-scope';
import { parseSchedulingDefaults, type SchedulingDefaults } from '../../plugin/contract/scheduling-defaults';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { callHash } from '../../checkpoint/run-scope';
import type { JsonValue } from '../../checkpoint/types';

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

  constructor(private readonly defaults: SchedulingDefaults | null) {
    this.fencedTypes = new Set(defaults?.fencedTypes ?? []);
  }

  private occurrenceOf(activityType: string, args: unknown[]): Pick<CallHeader, 'occurrence'> {
    return this.fencedTypes.has(activityType) ? occurrenceIn(this.scheduled, activityType, args) : {};
  }

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): ReturnType<WorkflowOutboundCallsInterceptor['scheduleActivity'] & {}> {
    const { defaults } = this;
    const options =
      defaults !== null && input.options.heartbeatTimeout === undefined && this.fencedTypes.has(input.activityType) && onOwnTaskQueue(input)
        ? { ...input.options, heartbeatTimeout: defaults.heartbeatTimeoutMs }
        : input.options;
    return next({ ...input, options, headers: withCallHeader(input.headers, { ...callOf(input.seq), ...this.occurrenceOf(input.activityType, input.args) }) });
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ): ReturnType<WorkflowOutboundCallsInterceptor['scheduleLocalActivity'] & {}> {
    const call = (input.attempt > 1 ? this.localCalls.get(input.args) : undefined) ?? { ...callOf(input.seq), ...this.occurrenceOf(input.activityType, input.args) };
    this.localCalls.set(input.args, call);
    return next({ ...input, headers: withCallHeader(input.headers, call) });
  }
}

/**
 * The occurrence of a call (see {@link CallHeader.occurrence}): how many calls of the same activity
 * type and RFC 8785 canonical arguments this run scheduled before, counted on replay too, so a
 * reset run counts its history's calls as the discarded run did. Nothing for arguments that are not JSON.
 */
function occurrenceIn(scheduled: Map<string, number>, activityType: string, args: unknown[]): Pick<CallHeader, 'occurrence'> {
  let key: string;
  try {
    key = callHash(canonicalJson([activityType, args as JsonValue], 'arguments'));
  } catch {
    return {};
  }
  const index = scheduled.get(key) ?? 0;
  scheduled.set(key, index + 1);
  const info = workflowInfo();
  return { occurrence: { scope: info.continuedFromExecutionRunId ?? info.firstExecutionRunId, index } };
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
export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [new CallIdOutboundInterceptor(schedulingDefaults)] });
