/**
 * Not a workflow, just interceptors: the module `ToolCheckpointPlugin` adds to
 * `workflowInterceptorModules`. Sandbox code: imports nothing Node-only.
 *
 * Every scheduled activity (and local activity) gets the call header (`./call-header`): a call id
 * from the activity's command sequence number, deterministic on replay, and the run chain
 * (`firstExecutionRunId`). The fence interceptor reads it only for fenced activity types.
 */
import { workflowInfo, type ActivityInput, type LocalActivityInput, type Next, type WorkflowInterceptorsFactory, type WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';
import { callIdOf, withCallHeader } from './call-header';

class CallIdOutboundInterceptor implements WorkflowOutboundCallsInterceptor {
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): ReturnType<WorkflowOutboundCallsInterceptor['scheduleActivity'] & {}> {
    return next({ ...input, headers: withCallHeader(input.headers, callOf(input.seq)) });
  }

  scheduleLocalActivity(input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>): ReturnType<WorkflowOutboundCallsInterceptor['scheduleLocalActivity'] & {}> {
    return next({ ...input, headers: withCallHeader(input.headers, callOf(input.seq)) });
  }
}

function callOf(seq: number): { callId: string; runChainId: string } {
  const info = workflowInfo();
  return { callId: callIdOf(seq, info.continuedFromExecutionRunId), runChainId: info.firstExecutionRunId };
}

/** The workflow interceptors of the tool checkpoint plugin. */
export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [new CallIdOutboundInterceptor()] });
