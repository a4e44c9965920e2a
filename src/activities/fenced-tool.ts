/**
 * One fenced tool-call attempt (SPEC §4): validate the input, build the binding from the
 * activity context, create-if-absent, decide, then execute, deliver or reconcile. Every change
 * to the checkpoint is a compare-and-swap; the tool never runs without a durable claim.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { decideCheckpoint } from '../checkpoint/decide';
import { fingerprintInput, idempotencyKey, intentDigest } from '../checkpoint/digest';
import { createCheckpoint, deepFreeze } from '../checkpoint/record';
import {
  claimDelivery,
  claimExecution,
  completeDelivery,
  completeExecution,
  markExecutionUncertain,
  reclaimExecution,
  releaseDelivery,
} from '../checkpoint/transitions';
import type { Binding, CheckpointRecord, TransitionResult } from '../checkpoint/types';
import type { CheckpointStore } from '../stores/checkpoint-store';
import type { FencedToolInput, FencedToolResult, ResultSource, ToolOutcome } from './contract';
import { crashPoint } from './crash-points';
import { toolErrorKind, type ToolContext, type ToolDefinition, type ToolSuccess } from './define-tool';
import { DEFAULT_TRANSIENT_RETRY, retryTransient } from './transient-retry';

/** Dependencies of the fenced tool activity. */
export interface FencedToolDeps {
  readonly store: CheckpointStore;
  readonly tools: ReadonlyMap<string, ToolDefinition<any>>;
  /** UTF-8 JSON bytes of a stored result. @default 65,536 */
  readonly maxPayloadBytes?: number;
  /** @default () => new Date() */
  readonly clock?: () => Date;
  /** In-attempt backoff for transient tool errors (full jitter). */
  readonly transientRetry?: { readonly initialIntervalMs: number; readonly maximumIntervalMs: number; readonly maximumAttempts: number };
}

/** Everything one attempt derives from its input and the activity context. */
export interface PreparedCall {
  readonly tool: ToolDefinition<any>;
  readonly input: FencedToolInput;
  /** Frozen, validated input; what was fingerprinted. */
  readonly args: unknown;
  readonly binding: Binding;
  readonly idempotencyKey: string;
  readonly intentDigest: string;
  readonly workflowId: string;
  readonly attemptId: string;
  readonly deliveryId: string;
}

/** Returned by a step whose compare-and-swap lost: read the record again and decide again. */
const REREAD = Symbol('reread');
type Step = FencedToolResult | typeof REREAD;
const MAX_ROUNDS = 8;

/**
 * Validates `input` against its tool and derives binding, idempotency key and intent digest.
 * Namespace = `<Temporal namespace>/<tenant>`; call id = `<workflow id>/<model tool-call id>`
 * (never `activityId`, which restarts after continue-as-new).
 *
 * @throws {@link CheckpointError} UNKNOWN_TOOL, INVALID_TOOL_INPUT, INVALID_ARGUMENT; nothing is written.
 */
export function prepareCall(deps: FencedToolDeps, input: FencedToolInput, context: { namespace: string; workflowId: string; attempt: number }): PreparedCall {
  const tool = deps.tools.get(input?.toolName);
  if (tool === undefined) {
    throw new CheckpointError('UNKNOWN_TOOL', `tool ${JSON.stringify(input?.toolName)} is not registered on this worker (known: ${[...deps.tools.keys()].join(', ')})`, {
      field: 'toolName',
      actual: String(input?.toolName),
    });
  }
  const parsed = tool.input.safeParse(input.input);
  if (!parsed.success) {
    throw new CheckpointError('INVALID_TOOL_INPUT', `input of ${tool.name} call ${JSON.stringify(input.callId)} does not match its schema: ${parsed.error.issues.map((i) => `${i.path.join('.') || '$'}: ${i.message}`).join('; ')}`, {
      toolName: tool.name,
      callId: String(input.callId),
    });
  }
  const args = deepFreeze(structuredClone(parsed.data));
  const namespace = `${context.namespace}/${input.tenant}`;
  const digest = intentDigest({ toolName: tool.name, toolRevision: tool.revision, args, target: tool.target?.(args as never) ?? null });
  // dedupeByIntent: calls of this run with the same intent (and generation) share one checkpoint and key.
  const keyCallId = tool.dedupeByIntent ? intentCallId(digest, input.intentGeneration) : input.callId;
  const binding: Binding = {
    namespace,
    callId: `${context.workflowId}/${keyCallId}`,
    toolName: tool.name,
    toolRevision: tool.revision,
    inputFingerprint: fingerprintInput(args),
  };
  const fence = randomUUID();
  return {
    tool,
    input,
    args,
    binding,
    idempotencyKey: idempotencyKey({ namespace, workflowId: context.workflowId, callId: keyCallId, toolName: tool.name, toolRevision: tool.revision }),
    intentDigest: digest,
    workflowId: context.workflowId,
    attemptId: `attempt-${context.attempt}-${fence}`,
    deliveryId: `delivery-${context.attempt}-${fence}`,
  };
}

/**
 * The call id under which a `dedupeByIntent` tool's call is checkpointed and keyed:
 * `intent-<hex of the intent digest>`, plus `~gen<n>` for generation n > 0.
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT when `generation` is not a non-negative integer.
 */
function intentCallId(digest: string, generation: number | undefined = 0): string {
  if (!Number.isSafeInteger(generation) || generation < 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `intentGeneration must be a non-negative integer, got ${JSON.stringify(generation)}`, { field: 'intentGeneration' });
  }
  const hex = digest.slice(digest.indexOf(':') + 1);
  return generation === 0 ? `intent-${hex}` : `intent-${hex}~gen${generation}`;
}

/**
 * Runs one attempt of a prepared call to a result, reading and deciding again whenever a
 * compare-and-swap loses (at most 8 rounds).
 *
 * @throws {@link CheckpointError} OUTCOME_UNKNOWN (pause for a person), BINDING_CONFLICT,
 *   FENCE_CONFLICT (this attempt's claim was taken over; its result is discarded),
 *   INVALID_CHECKPOINT and the store codes.
 */
export async function settleCall(deps: FencedToolDeps, call: PreparedCall): Promise<FencedToolResult> {
  const attempt = new Attempt(deps, call);
  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    const step = await attempt.round();
    if (step !== REREAD) return step;
  }
  throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `call ${call.binding.callId}: the checkpoint kept changing under this attempt (${MAX_ROUNDS} lost compare-and-swaps)`, { callId: call.binding.callId });
}

class Attempt {
  private readonly clock: () => Date;

  constructor(
    private readonly deps: FencedToolDeps,
    private readonly call: PreparedCall,
  ) {
    this.clock = deps.clock ?? (() => new Date());
  }

  async round(): Promise<Step> {
    const { record } = await this.deps.store.createIfAbsent(createCheckpoint(this.call.binding, { createdAt: this.now() }));
    switch (decideCheckpoint(record, this.call.binding).action) {
      case 'execute':
        return this.execute(record);
      case 'reconcile-execution':
        return this.reconcileExecution(record);
      case 'deliver':
        return this.deliver(record, 'store');
      case 'reconcile-delivery':
        return this.reconcileDelivery(record);
      case 'none':
        // Delivery was recorded but may never have reached Temporal: the same crash window as right after completeDelivery.
        crashPoint('after-delivery-completed', this.call.tool.name);
        return this.result(record, 'store');
    }
  }

  /** ready: claim, run the tool under the claim, store the result, deliver. */
  private async execute(record: CheckpointRecord): Promise<Step> {
    crashPoint('before-claim', this.call.tool.name);
    const claim = claimExecution(record, { attemptId: this.call.attemptId, at: this.now(record) });
    if (!(await this.cas(claim))) return REREAD;
    crashPoint('after-claim', this.call.tool.name);
    return this.runAndStore(claim.next, 'executed');
  }

  /**
   * executing | uncertain: never rerun blindly. Lookup proves the effect (store it) or its
   * absence (take over the fence, run once more with the same key); a provider that dedupes
   * by key is repeated with the same key; otherwise the outcome is unknown: pause.
   */
  private async reconcileExecution(record: CheckpointRecord): Promise<Step> {
    const { tool } = this.call;
    if (tool.lookup === undefined && !tool.dedupesByKey) {
      if (record.status === 'executing') {
        const mark = markExecutionUncertain(record, {
          attemptId: record.execution!.attemptId,
          at: this.now(record),
          reason: 'an earlier attempt claimed this call and did not finish; the tool has no lookup and its provider does not deduplicate by key',
        });
        if (!(await this.cas(mark))) return REREAD;
      }
      throw this.outcomeUnknown(record.execution?.uncertainReason ?? 'an earlier attempt did not finish');
    }
    const found = tool.lookup === undefined ? undefined : await this.heartbeating(() => tool.lookup!(this.context()));
    const takeover = reclaimExecution(record, { attemptId: this.call.attemptId, previousAttemptId: record.execution!.attemptId, at: this.now(record) });
    if (!(await this.cas(takeover))) return REREAD;
    if (found?.found) return this.store(takeover.next, { ok: true, output: found.output, receipt: found.receipt ?? null }, 'lookup');
    return this.runAndStore(takeover.next, found === undefined ? 'same-key-repeat' : 'executed');
  }

  /** delivering: Temporal records at most one completion per activity, so this attempt releases and redelivers. */
  private async reconcileDelivery(record: CheckpointRecord): Promise<Step> {
    const release = releaseDelivery(record, { deliveryId: record.delivery!.deliveryId, at: this.now(record) });
    if (!(await this.cas(release))) return REREAD;
    return this.deliver(release.next, 'store');
  }

  /** completed: claim delivery, record it, return the stored payload (the tool is not called). */
  private async deliver(record: CheckpointRecord, source: ResultSource): Promise<Step> {
    const claim = claimDelivery(record, { deliveryId: this.call.deliveryId, at: this.now(record) });
    if (!(await this.cas(claim))) return REREAD;
    crashPoint('after-delivery-claimed', this.call.tool.name);
    const done = completeDelivery(claim.next, { deliveryId: this.call.deliveryId, at: this.now(claim.next) });
    if (!(await this.cas(done))) return REREAD;
    crashPoint('after-delivery-completed', this.call.tool.name);
    return this.result(done.next, source);
  }

  /** Runs the tool under this attempt's fence and stores what happened. */
  private async runAndStore(claimed: CheckpointRecord, source: ResultSource): Promise<Step> {
    const outcome = await this.invoke();
    crashPoint('after-effect', this.call.tool.name);
    if (outcome.kind === 'unknown') {
      const mark = markExecutionUncertain(claimed, { attemptId: this.call.attemptId, at: this.now(claimed), reason: outcome.reason });
      if (!(await this.cas(mark))) return REREAD;
      if (this.call.tool.lookup === undefined && !this.call.tool.dedupesByKey) throw this.outcomeUnknown(outcome.reason);
      // The next attempt reconciles by lookup or by repeating with the same key.
      throw new CheckpointError('RECONCILE_PENDING', `${this.call.tool.name} call ${this.call.input.callId}: outcome unknown (${outcome.reason}); the next attempt reconciles`, { callId: this.call.input.callId });
    }
    return this.store(claimed, outcome.value, source);
  }

  /** Stores `outcome` under this attempt's fence, then delivers it. A result over the bounds is stored as an error result. */
  private async store(claimed: CheckpointRecord, outcome: ToolOutcome, source: ResultSource): Promise<Step> {
    let completion: TransitionResult;
    const complete = (current: CheckpointRecord, result: ToolOutcome): TransitionResult =>
      completeExecution(current, { attemptId: this.call.attemptId, at: this.now(current), result, maxPayloadBytes: this.deps.maxPayloadBytes });
    try {
      completion = complete(claimed, outcome);
    } catch (error) {
      if (!isCheckpointError(error, 'PAYLOAD_TOO_LARGE') && !isCheckpointError(error, 'NOT_JSON')) throw error;
      completion = complete(claimed, { ok: false, error: { type: error.code, message: `the tool ran, but its result cannot be stored: ${error.message}` } });
    }
    if (!(await this.cas(completion))) {
      // Lost the fence (a reconciler took over): completing the current record throws FENCE_CONFLICT and this result is discarded.
      const current = await this.deps.store.get(this.call.binding);
      if (current === null) throw new CheckpointError('INVALID_CHECKPOINT', `checkpoint of ${this.call.binding.callId} disappeared while claimed`, { callId: this.call.binding.callId });
      complete(current, completion.next.result!.payload as ToolOutcome);
      return REREAD;
    }
    crashPoint('after-result-stored', this.call.tool.name);
    return this.deliver(completion.next, source);
  }

  /** Calls `execute` with heartbeats, retrying transient failures with full-jitter backoff and Retry-After, within the call deadline. */
  private async invoke(): Promise<{ kind: 'done'; value: ToolOutcome } | { kind: 'unknown'; reason: string }> {
    const { tool } = this.call;
    const deadlineAt = Date.now() + (tool.callDeadlineMs ?? 30_000);
    try {
      const value: ToolSuccess = await this.heartbeating(() =>
        retryTransient(() => tool.execute(this.call.args as never, this.context()), {
          policy: this.deps.transientRetry ?? DEFAULT_TRANSIENT_RETRY,
          deadlineAt,
          isTransient: (error) => toolErrorKind(error) === 'transient',
          signal: Context.current().cancellationSignal,
        }),
      );
      return { kind: 'done', value: { ok: true, output: value.output, receipt: value.receipt ?? null } };
    } catch (error) {
      const kind = toolErrorKind(error);
      const message = error instanceof Error ? error.message : String(error);
      if (kind === 'unknown-outcome') return { kind: 'unknown', reason: message.slice(0, 2_000) || 'the tool failed after the request may have been sent' };
      const type = (error as { type?: unknown }).type;
      return {
        kind: 'done',
        value: { ok: false, error: { type: typeof type === 'string' ? type : kind === 'transient' ? 'TRANSIENT_EXHAUSTED' : 'BUSINESS_REJECTION', message } },
      };
    }
  }

  private async heartbeating<T>(work: () => Promise<T>): Promise<T> {
    const ctx = Context.current();
    const intervalMs = Math.max(200, Math.floor((ctx.info.heartbeatTimeoutMs ?? 3_000) / 3));
    const timer = setInterval(() => ctx.heartbeat(), intervalMs);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  private context(): ToolContext {
    const ctx = Context.current();
    return {
      idempotencyKey: this.call.idempotencyKey,
      intentDigest: this.call.intentDigest,
      attemptId: this.call.attemptId,
      callId: this.call.input.callId,
      workflowId: this.call.workflowId,
      signal: ctx.cancellationSignal,
      heartbeat: (details?: unknown) => ctx.heartbeat(details),
    };
  }

  private outcomeUnknown(reason: string): CheckpointError {
    return new CheckpointError('OUTCOME_UNKNOWN', `${this.call.tool.name} call ${this.call.input.callId}: the outcome is unknown and cannot be looked up (${reason}); the run waits for a person`, {
      callId: this.call.input.callId,
      toolName: this.call.tool.name,
      idempotencyKey: this.call.idempotencyKey,
      reason,
    });
  }

  private result(record: CheckpointRecord, source: ResultSource): FencedToolResult {
    return {
      callId: this.call.input.callId,
      toolName: this.call.tool.name,
      toolRevision: this.call.tool.revision,
      source,
      outcome: record.result!.payload as ToolOutcome,
      idempotencyKey: this.call.idempotencyKey,
      intentDigest: this.call.intentDigest,
    };
  }

  private cas(t: TransitionResult): Promise<boolean> {
    return this.deps.store.compareAndSwap(t.expectedRevision, t.next);
  }

  /** Now, never earlier than the record's `updatedAt` (clocks of workers may disagree). */
  private now(record?: CheckpointRecord): string {
    const now = this.clock().getTime();
    const floor = record === undefined ? 0 : Date.parse(record.updatedAt);
    return new Date(Math.max(now, floor)).toISOString();
  }
}
