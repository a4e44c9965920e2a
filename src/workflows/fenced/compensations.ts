/**
 * Compensations (a saga) for users' own workflows under `ToolCheckpointPlugin`. Sandbox code:
 * imports nothing Node-only; exported from the workflow-safe entry (`src/workflow.ts`).
 *
 * The workflow records, as each step completes, the activity that undoes it; when a later step
 * fails or the workflow is cancelled, `compensate()` runs the recorded compensations in reverse
 * order, in a non-cancellable scope. Each compensation is an activity the user registers and
 * fences with the plugin like any other (`fence: { refund: { revision, lookup? } }`), so it has
 * its own checkpoint and idempotency key, and the fence's lookup / same-key / pause rules apply.
 * A compensation recorded by {@link Compensations.step} runs under the call id
 * `<step's call id>/compensation` (`act-2/compensation` undoes `act-2`), so its checkpoint and
 * key are stable across replays and worker restarts and name the call it undoes.
 *
 * @see docs/compensation.md, docs/protocol.md#worker-plugin
 */
import { ApplicationFailure, log } from '@temporalio/workflow';
import { attemptWindDown, compensationVerdict, lastAppliedFirst, untypedAsErrorName, windDown, type CompensationError } from '../common/compensation-rules';
import { runInCallScope, type CallScope } from './call-scope';

/** The suffix of a step's call id that makes its compensation's call id: `<step call id>/compensation`. */
export const COMPENSATION_CALL_SUFFIX = '/compensation';

/** How the compensation of one step is recorded by {@link Compensations.step}. */
export interface StepCompensation<T> {
  /** Names the compensation in the report and the workflow log (for example 'refund charge'); a non-empty string. */
  readonly name: string;
  /**
   * Undoes the step, given what the step returned: schedule ONE activity (a fenced one, so it
   * runs at most once) and return its promise. Its first activity gets the derived call id.
   */
  compensate(result: T): Promise<unknown>;
}

/** A compensation as the report lists it. */
export interface CompensationEntry {
  /** The `name` it was recorded with. */
  readonly name: string;
  /**
   * The call id its activity ran under (the checkpoint binding's call id, what `ttc
   * resolve-in-store <workflowId> <callId>` takes): `<stepCallId>/compensation`, or the
   * activity's own `act-<seq>` for one recorded by {@link Compensations.add} or a step that did
   * not schedule exactly one activity. Null when it scheduled no activity, or the plugin's
   * workflow interceptor is not on the worker.
   */
  readonly callId: string | null;
  /** The call id of the step it undoes; null when not tied to one step. */
  readonly stepCallId: string | null;
}

/** A compensation that did not complete, with what it failed with. */
export interface FailedCompensation extends CompensationEntry {
  /**
   * `type`: the activity failure's type (a `CheckpointErrorCode`, the error type a fenced
   * activity's rejection stored, `TIMEOUT_<kind>`), else the error's name; `message`: its innermost message.
   */
  readonly error: CompensationError;
}

/** What one {@link Compensations.compensate} call did, each list in the order the compensations ran (reverse of recording). */
export interface CompensationReport {
  /** Completed: the effect is undone (or was found undone by the fence's lookup or store). */
  readonly compensated: readonly CompensationEntry[];
  /**
   * Failed with a known outcome: the activity's rejection (stored by the fence, delivered again
   * to any later attempt), a timeout, or any failure other than OUTCOME_UNKNOWN. The effect it
   * should undo is still applied.
   */
  readonly failed: readonly FailedCompensation[];
  /**
   * Outcome unknown (OUTCOME_UNKNOWN, the plugin's default `onUnknownOutcome: 'fail'`): the
   * compensation may have been applied and only a person can tell. Resolve it in the store
   * (`ttc resolve-in-store <workflowId> <callId>`), then call `compensate()` again: it runs the
   * same call, which delivers what the person stored. Under `onUnknownOutcome: 'wait'` such a
   * compensation never lands here: `compensate()` waits until a person has resolved it.
   */
  readonly pending: readonly FailedCompensation[];
}

interface Recorded {
  readonly name: string;
  readonly run: () => Promise<unknown>;
  readonly stepCallId: string | null;
  /** Its place in the order of recording (the order the steps applied): compensations run highest first. */
  readonly appliedSeq: number;
  /** The call id it runs under: derived from the step, or the one its first run got (so a second `compensate()` runs the same call). */
  callId: string | null;
}

/**
 * The compensations of one saga in a workflow. Workflow state: keep one instance per saga in
 * your workflow function (it does not survive continue-as-new).
 *
 * Failure policy: `compensate()` runs every recorded compensation, also after one fails, and
 * returns a report instead of throwing. Each compensation undoes its own step's effect, which
 * stays applied if it is skipped: stopping at the first failure would leave the earlier effects
 * applied for nothing, and the workflow (or a person) can act on the report's `failed` and
 * `pending` lists. This is also what Temporal's saga samples do.
 */
export class Compensations {
  private readonly recorded: Recorded[] = [];
  private recordedCount = 0;
  private running: Promise<CompensationReport> | undefined;

  /**
   * Runs `work` (one step: one activity call, typically) and, when it returns, records
   * `compensation` for it. The compensation runs under the call id `<step call id>/compensation`
   * when `work` scheduled exactly one activity (with the plugin's workflow interceptor on the
   * worker); otherwise under its own activity's call id. A step that throws records nothing: its
   * effect is not known to be applied (a fenced step whose outcome is unknown pauses under
   * `onUnknownOutcome: 'wait'` until a person resolves it, then returns).
   *
   * @returns what `work` returns. @throws what `work` throws.
   * @throws ApplicationFailure `INVALID_ARGUMENT` (non-retryable) when `compensation.name` is
   *   not a non-empty string or `compensation.compensate` is not a function; `work` is not called.
   */
  async step<T>(work: () => Promise<T>, compensation: StepCompensation<T>): Promise<T> {
    assertCompensation(compensation?.name, compensation?.compensate, 'step');
    const scope: CallScope = { scheduledCallIds: [] };
    const result = await runInCallScope(scope, work);
    const [stepCallId] = scope.scheduledCallIds.length === 1 ? scope.scheduledCallIds : [undefined];
    this.recorded.push({
      name: compensation.name,
      run: () => compensation.compensate(result),
      stepCallId: stepCallId ?? null,
      callId: stepCallId === undefined ? null : `${stepCallId}${COMPENSATION_CALL_SUFFIX}`,
      appliedSeq: ++this.recordedCount,
    });
    return result;
  }

  /**
   * Records `compensate` for an effect the workflow applied outside {@link step} (as in
   * Temporal's saga samples: `await charge(); saga.add(() => refund(), { name })`). It runs
   * under its own activity's call id (`act-<seq>`, stable on replay), not tied to a step: prefer
   * `step`, whose compensation's call id names the call it undoes.
   *
   * @throws ApplicationFailure `INVALID_ARGUMENT` (non-retryable) for a `name` that is not a
   *   non-empty string or a `compensate` that is not a function.
   */
  add(compensate: () => Promise<unknown>, options: { readonly name: string }): void {
    assertCompensation(options?.name, compensate, 'add');
    this.recorded.push({ name: options.name, run: compensate, stepCallId: null, callId: null, appliedSeq: ++this.recordedCount });
  }

  /** The names of the compensations still to run, in the order `compensate()` runs them (last recorded first). */
  get outstanding(): readonly string[] {
    return this.lastRecordedFirst().map((r) => r.name);
  }

  /**
   * Runs the outstanding compensations one at a time, last recorded first, inside
   * `CancellationScope.nonCancellable` (a cancelled workflow still compensates; its activities
   * are not cancelled). Never throws for a compensation's failure: see the class's failure policy.
   * A compensated one is done; a failed or pending one stays outstanding, and a later
   * `compensate()` runs it again under the same call id (the fence then delivers a stored
   * outcome instead of running an applied effect again). A call while one runs returns that one's report.
   *
   * @returns the report of this call: {@link CompensationReport}.
   */
  compensate(): Promise<CompensationReport> {
    this.running ??= windDown(() => this.runOutstanding()).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async runOutstanding(): Promise<CompensationReport> {
    const compensated: CompensationEntry[] = [];
    const failed: FailedCompensation[] = [];
    const pending: FailedCompensation[] = [];
    for (const entry of this.lastRecordedFirst()) {
      const scope: CallScope = { scheduledCallIds: [], ...(entry.callId === null ? {} : { firstCallId: entry.callId }) };
      const attempt = await attemptWindDown(() => runInCallScope(scope, entry.run));
      entry.callId ??= scope.scheduledCallIds[0] ?? null;
      const verdict = compensationVerdict(attempt, untypedAsErrorName);
      if (verdict.kind === 'compensated') {
        compensated.push(reported(entry));
        this.recorded.splice(this.recorded.indexOf(entry), 1);
        continue;
      }
      // The plugin reports and goes on (the user's workflow decides); the agent pauses for a person instead.
      const unknown = verdict.kind === 'outcome-unknown';
      const failure = { ...reported(entry), error: verdict.error };
      (unknown ? pending : failed).push(failure);
      log.warn(`compensation ${unknown ? 'pending (outcome unknown)' : 'failed'}: ${entry.name}`, { callId: failure.callId, error: failure.error });
    }
    return { compensated, failed, pending };
  }

  /** The outstanding compensations in the order they run: last recorded (last applied) first. */
  private lastRecordedFirst(): Recorded[] {
    return lastAppliedFirst(this.recorded, (r) => r.appliedSeq);
  }
}

function reported(entry: Recorded): CompensationEntry {
  return { name: entry.name, callId: entry.callId, stepCallId: entry.stepCallId };
}

function assertCompensation(name: unknown, compensate: unknown, method: 'step' | 'add'): void {
  if (typeof name !== 'string' || name === '') {
    throw ApplicationFailure.create({
      type: 'INVALID_ARGUMENT',
      message: `Compensations.${method}: name must be a non-empty string, got ${JSON.stringify(name ?? null)}`,
      nonRetryable: true,
      details: [{ field: 'name' }],
    });
  }
  if (typeof compensate !== 'function') {
    throw ApplicationFailure.create({
      type: 'INVALID_ARGUMENT',
      message: `Compensations.${method}: compensate must be a function returning the compensation's promise`,
      nonRetryable: true,
      details: [{ field: 'compensate' }],
    });
  }
}
