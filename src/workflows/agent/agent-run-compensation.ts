/**
 * The compensation of an agent run: when a run with a `compensateOn` policy stops by cancel,
 * abandon or a result its policy names, its unknown calls are settled by a person and its
 * applied effects undone in reverse (`./compensation`), in a non-cancellable scope. Sandbox code.
 *
 * @see docs/protocol.md#agent-workflow
 */
import { type ActivityOptions, condition, patched } from '@temporalio/workflow';
import type { DeliveredOutcome } from '../../activities/contract/contract';
import { compensateRun, type CompensationHost } from './compensation';
import { attemptWindDown, windDown, type WindDownAttempt } from '../common/compensation-rules';
import { toolActivityOptions, windDownActivityOptions, type ActivityKind } from './input';
import type { CallState, RunStop } from './run-state';
import type { AgentWorkflowResult, StopReason } from './types';
import { RunToolCalls } from './agent-run-tool-calls';
import type { PendingResolution } from './agent-run-base';
import { COMPENSATION_PATCH } from './agent-patches';

/** An agent run with its compensation (see the module comment). */
export abstract class RunCompensation extends RunToolCalls {
  /**
   * A run cancelled through Temporal while it waited on a condition (an approval, a paused call):
   * the cancellation reaches the workflow as a thrown CancelledFailure, not as a cancelled
   * activity. When the run compensates on cancel, its applied effects are undone (its unknown
   * calls settled by a person first) in a non-cancellable scope before the run closes cancelled.
   */
  async compensateCancelled(): Promise<void> {
    this.cancel ??= { reason: 'the workflow was cancelled' };
    if (this.windingDown || !this.compensates('cancel')) return;
    await this.conclude(this.cancelStop());
  }

  /**
   * The run's result for `stop`: first, when the run compensates (see {@link compensates}), its
   * unknown calls are settled by a person and its applied effects undone in reverse, in a
   * non-cancellable scope (a Temporal cancellation of the run does not cut it short).
   */
  protected async conclude(stop: RunStop): Promise<AgentWorkflowResult> {
    if (this.compensates(stop.because)) {
      this.windingDown = true;
      await windDown(() => compensateRun(this.compensationHost()));
    }
    return this.finish(stop);
  }

  /**
   * Whether the run compensates when it stops for `because`: it has a `compensateOn` policy and
   * stopped by cancel, abandon or a result its policy names. Behind {@link COMPENSATION_PATCH}:
   * a history without the marker replays as it ran.
   */
  protected compensates(because: StopReason): boolean {
    return this.input.compensateOn !== undefined && COMPENSATING_STOPS.includes(because) && patched(COMPENSATION_PATCH);
  }

  /** The stop a tool result asks for: an error result whose type the run's `compensateOn` names (else null). */
  protected compensateOnStop(call: CallState, outcome: DeliveredOutcome): RunStop | null {
    if (outcome.ok || this.input.compensateOn?.includes(outcome.error.type) !== true || !patched(COMPENSATION_PATCH)) return null;
    return {
      status: 'incomplete',
      because: 'compensate-on',
      reason: `${call.toolName} call "${call.callId}" ended with ${outcome.error.type}, which the run's compensateOn names: ${outcome.error.message}`,
    };
  }

  /** What {@link compensateRun} uses of this run. */
  protected compensationHost(): CompensationHost {
    return {
      state: this.state,
      toolInput: (call) => this.toolInput(call),
      windDownActivity: <T>(kind: ActivityKind, toolName: string | null, run: (options: ActivityOptions) => Promise<T>) => this.windDownActivity(kind, toolName, run),
      nextResolution: async () => {
        let pending: PendingResolution;
        do {
          await condition(() => this.resolution !== null);
          pending = this.resolution!;
        } while (this.refuseIfStale(pending));
        return { request: pending.request, settle: (result) => this.settle(pending, result), fail: (type, message) => this.fail(pending, type, message) };
      },
      settleUnknownCall: async (call) => {
        if (call.status === 'unknown')
          this.markPaused(call, call.errorType ?? 'CANCELLED', call.reason ?? 'the run stopped while the call was running; its effect may have been applied');
        await this.awaitResolution(call);
      },
      changed: () => {
        this.state.bump();
        this.publishWaiting();
      },
    };
  }

  /** Runs one activity while winding down: wind-down options (see `windDownActivityOptions`), failures returned, never cancelled. */
  protected windDownActivity<T>(kind: ActivityKind, toolName: string | null, run: (options: ActivityOptions) => Promise<T>): Promise<WindDownAttempt<T>> {
    const opts = toolName === null ? this.input.activityOptions : toolActivityOptions(this.input.activityOptions, toolName);
    return attemptWindDown(() => run(windDownActivityOptions(kind, opts)));
  }
}

/** The stops after which a run with a `compensateOn` policy compensates. */
const COMPENSATING_STOPS: readonly StopReason[] = ['cancel', 'abandon', 'compensate-on'];
