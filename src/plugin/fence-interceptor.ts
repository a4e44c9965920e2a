/**
 * The fence as an activity inbound interceptor (docs/protocol.md#worker-plugin): a call of a fenced
 * activity type runs through the same fence as a tool (`settleCall`, `settleFailedAttempt`), with
 * the activity itself (`next`) as the tool's execute step. A stored result is returned without
 * calling `next`; `next` is called at most once per attempt, and only under this attempt's claim. A
 * call of one of the plugin's own tools (which fence themselves) gets only the approval of its call
 * header merged into its input (`./tool-approval`).
 */
import { randomUUID } from 'node:crypto';
import type { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { isCheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import type { FencedToolInput, FencedToolResult } from '../activities/contract/contract';
import { ToolError, type LookupResult, type ToolContext, type ToolDefinition } from '../activities/tools/define-tool';
import { toApplicationFailure, type CallNames } from '../activities/fence/failures';
import { boundedFailure, MAX_FAILURE_MESSAGE_BYTES, truncateText } from '../activities/fence/failure-bounds';
import { settleFailedAttempt } from '../activities/fence/call-failure';
import { settleCall, type AttemptEvidence, type FencedToolDeps } from '../activities/fence/fenced-tool';
import { prepareCall, type PreparedCall } from '../activities/fence/prepare-call';
import { ownProperties } from '../activities/fence/input-schema';
import { authorizeCall } from '../activities/fence/approval-grants';
import type { ResolvedPins } from '../activities/fence/pins';
import type { GrantVerificationKey } from '../checkpoint/approval-grant';
import { approvalFromHeaders } from './approval-activity';
import { classifyActivityError } from './error-classification';
import { toolArgsWithHeaderApproval } from './tool-approval';
import { runWithCallContext } from './call-context';
import { activityCallIdentity, attemptContextOf } from './call-identity';
import { DEFAULT_UNKNOWN_OUTCOME_RETRY_MS, type FencedActivity, type FencedLookupContext } from './options';

/** What the plugin builds once and every fence interceptor shares. */
export interface FenceDeps extends Omit<FencedToolDeps, 'tools' | 'transientRetry'> {
  /** The fenced activity types. */
  readonly fenced: ReadonlyMap<string, FencedActivity>;
  readonly tenant: string;
  readonly idempotencyKeySecret?: Uint8Array;
  /** Fenced activity types that run only under an approved intent digest (`requireApproval`, see `./approval-pins`). @default none */
  readonly approvalPins?: ResolvedPins;
  /** Keys approval grants are verified with (the plugin option `approvalGrantKeys`); absent: unsigned mode. */
  readonly approvalGrantKeys?: readonly GrantVerificationKey[];
  /**
   * The plugin's `defineTool` tools by name (each registered as an activity of its name, input
   * `FencedToolInput`): the fence merges the approval of a call's header into such a call's
   * input (`./tool-approval`) before the tool's activity runs. @default none
   */
  readonly toolNames?: ReadonlySet<string>;
  /**
   * `'wait'`: a call paused as OUTCOME_UNKNOWN (in a fenced activity or a plugin tool) fails its
   * attempt retryably after {@link unknownOutcomeRetryMs} instead of non-retryably (see the
   * plugin option `onUnknownOutcome`). @default 'fail'
   */
  readonly onUnknownOutcome?: 'fail' | 'wait';
  /** With `onUnknownOutcome: 'wait'`, the next-retry delay, ms. @default 300,000 */
  readonly unknownOutcomeRetryMs?: number;
}

/** `next` is called once per attempt: a transient error is left to Temporal's retry policy, not retried in the attempt. */
const ONE_CALL = { initialIntervalMs: 1, maximumIntervalMs: 1, maximumAttempts: 1 } as const;

/** Activity executions a fence interceptor already holds: a second fence (the plugin given twice) passes them through. */
const fencing = new WeakSet<Context>();

/**
 * Fences the calls of the activity types in `deps.fenced`, hands the calls of the plugin's tools
 * (`deps.toolNames`) their header's approval; every other activity passes through untouched. An
 * execution is fenced once: when the plugin is registered twice (on the worker and its
 * `NativeConnection`), the outer interceptor fences and the inner one passes through.
 */
export class ToolFenceInboundInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    protected readonly ctx: Context,
    protected readonly deps: FenceDeps,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    if (this.deps.toolNames?.has(this.ctx.info.activityType) === true) return this.runTool(input, next);
    const activity = this.deps.fenced.get(this.ctx.info.activityType);
    if (activity === undefined || fencing.has(this.ctx)) return next(input);
    fencing.add(this.ctx);
    return deliver(await this.fence(activity, input, next));
  }

  /**
   * A call of one of the plugin's tools (which fences itself, as `runFencedTool`): the approval
   * of its call header (`withApprovedIntent`) is merged into its input (`./tool-approval`), so
   * the tool runs only if its intent digest is the approved one and the approval has not expired.
   * A call refused here (the input carries another approval: APPROVAL_MISMATCH; a malformed call
   * header: INVALID_ARGUMENT) never reaches the tool, and is settled by the call's evidence as
   * `runFencedTool` settles such a refusal (see `settleFailedAttempt`): on a first attempt
   * nothing is written and the refusal fails the activity non-retryably.
   */
  private async runTool(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const toolName = this.ctx.info.activityType;
    let args: unknown[];
    try {
      args = toolArgsWithHeaderApproval(toolName, input.args, input.headers);
    } catch (refusal) {
      try {
        const context = attemptContextOf(this.ctx.info, this.deps.idempotencyKeySecret);
        const callInput = { ...ownProperties(input.args[0]), toolName } as unknown as FencedToolInput;
        const deps: FencedToolDeps = { ...this.deps, tools: new Map() };
        return await settleFailedAttempt(
          deps,
          { input: callInput, context, call: undefined, evidence: { claimSent: false, seen: null }, deliveryId: `delivery-${context.attempt}-${randomUUID()}` },
          refusal,
        );
      } catch (error) {
        const callId = (input.args[0] as { callId?: unknown } | null)?.callId;
        throw this.failure(error, { toolName, ...(typeof callId === 'string' ? { callId } : {}) });
      }
    }
    try {
      return await next({ ...input, args });
    } catch (error) {
      // The tool's activity maps its own errors; only a pause changes, under 'wait'.
      throw this.waitIfPaused(error);
    }
  }

  /** One fenced attempt: prepare, settle, or settle the failure by the call's evidence; errors leave as `toApplicationFailure` maps them. */
  private async fence(activity: FencedActivity, input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<FencedToolResult> {
    const { info } = this.ctx;
    const evidence: AttemptEvidence = { claimSent: false, seen: null };
    // What names the call in a failure, filled in as the attempt learns it.
    const names: { callId?: string; toolName: string; idempotencyKey?: string } = { toolName: info.activityType };
    try {
      const context = attemptContextOf(info, this.deps.idempotencyKeySecret);
      const identity = activityCallIdentity(info, input.headers);
      names.callId = identity.callId;
      // An approval from `withApprovedIntent` rides in the call header: checked as runFencedTool checks it.
      const approval = approvalFromHeaders(input.headers);
      const callInput: FencedToolInput = {
        tenant: this.deps.tenant,
        callId: identity.callId,
        runChainId: identity.runChainId,
        toolName: info.activityType,
        input: { args: asSent(input.args) },
        ...approval,
        ...(identity.occurrence === undefined ? {} : { occurrences: { scope: identity.occurrence.scope, from: identity.occurrence.index } }),
      };
      const tool = withExecute(activity, input, next);
      const deps: FencedToolDeps = { ...this.deps, tools: new Map([[tool.name, tool]]), transientRetry: ONE_CALL, executeIsUserActivity: true };
      let call: PreparedCall | undefined;
      try {
        call = prepareCall(deps.tools, callInput, context);
        names.idempotencyKey = call.idempotencyKey;
        await authorizeCall({ keys: this.deps.approvalGrantKeys, store: this.deps.store, clock: this.deps.clock }, this.deps.approvalPins, call, context.namespace);
        return await settleCall(deps, call, evidence);
      } catch (error) {
        return await settleFailedAttempt(
          deps,
          { input: callInput, context, call: evidence.adopted ?? call, evidence, deliveryId: `delivery-${context.attempt}-${randomUUID()}` },
          error,
        );
      }
    } catch (error) {
      throw this.failure(error, names, true);
    }
  }

  /**
   * What the activity throws for `error`: `toApplicationFailure(error, names)` (bounded in size,
   * naming the call, tool and key: `../activities/fence/failure-bounds`), except that a pause
   * (OUTCOME_UNKNOWN, from this fence or from a tool's `runFencedTool`) is worded by
   * {@link pauseFailure} and, under `onUnknownOutcome: 'wait'`, becomes retryable. A fenced
   * activity of the user's own workflow (`ownActivity`) always gets that wording (no agent run
   * waits on it); a plugin tool's pause keeps the fence's under `'fail'` (an `agentWorkflow` may
   * run the tool and does wait for a person). Every other failure keeps its retryability.
   */
  private failure(error: unknown, names?: CallNames, ownActivity = false): unknown {
    return this.waitIfPaused(toApplicationFailure(error, names), ownActivity);
  }

  /** `error` itself, or a pause as {@link pauseFailure} words it (see {@link failure}). */
  private waitIfPaused(error: unknown, ownActivity = false): unknown {
    const mode = this.deps.onUnknownOutcome ?? 'fail';
    if (!isPause(error) || (mode !== 'wait' && !ownActivity)) return error;
    return pauseFailure(error, mode, this.deps.unknownOutcomeRetryMs ?? DEFAULT_UNKNOWN_OUTCOME_RETRY_MS);
  }
}

/** A pause for a person: the fence's OUTCOME_UNKNOWN, as `toApplicationFailure` maps it (a user's own error of that type is classified, never thrown as is). */
function isPause(failure: unknown): failure is ApplicationFailure {
  return failure instanceof ApplicationFailure && failure.type === 'OUTCOME_UNKNOWN' && isCheckpointError(failure.cause, 'OUTCOME_UNKNOWN');
}

/** What the fence appends to an agent run's pause; a user's workflow is no agent run, so the plugin says what happens instead. */
const AGENT_RUN_WAITS = '; the run waits for a person';

/**
 * A pause in a user's own workflow (docs/protocol.md#worker-plugin), type OUTCOME_UNKNOWN with the same
 * details (call id, tool, revision, idempotency key, reason). Its message names the type once
 * (Temporal shows the type beside it; the fence's own `OUTCOME_UNKNOWN: ` prefix is dropped) and
 * says what happens to the activity, not to an agent run:
 * - `'fail'`: non-retryable, the activity fails now and the workflow decides;
 * - `'wait'`: retryable with `nextRetryDelay` `retryMs`; the call delivers its outcome once a
 *   person has stored it (`ttc resolve-in-store`).
 * The cause (the fence's CheckpointError, the same text) is not sent along, so the failure chain
 * does not repeat it.
 */
export function pauseFailure(paused: ApplicationFailure, mode: 'fail' | 'wait', retryMs: number): ApplicationFailure {
  let text = paused.message.startsWith('OUTCOME_UNKNOWN: ') ? paused.message.slice('OUTCOME_UNKNOWN: '.length) : paused.message;
  if (text.endsWith(AGENT_RUN_WAITS)) text = text.slice(0, -AGENT_RUN_WAITS.length);
  const details = paused.details?.[0];
  const key = (details as { idempotencyKey?: unknown } | undefined)?.idempotencyKey;
  const lookUp = typeof key === 'string' ? `; look the effect up at the provider by idempotency key ${key}` : '';
  const then =
    mode === 'wait'
      ? `; onUnknownOutcome 'wait': the call is tried again every ${retryMs} ms and delivers its outcome once a person has stored it (ttc resolve-in-store)`
      : "; onUnknownOutcome 'fail': the activity fails without a retry and your workflow decides";
  const suffix = `${then}${lookUp}`;
  return boundedFailure({
    type: 'OUTCOME_UNKNOWN',
    // The suffix is kept whole: the pause's text is cut first.
    message: `${truncateText(text, MAX_FAILURE_MESSAGE_BYTES - Buffer.byteLength(suffix, 'utf8') - 2)}${suffix}`,
    nonRetryable: mode !== 'wait',
    details: typeof details === 'object' && details !== null ? (details as Record<string, unknown>) : undefined,
    ...(mode === 'wait' ? { nextRetryDelay: retryMs } : {}),
  });
}

/**
 * `activity` as a tool whose execute step is `next(input)`, called at most once, inside the
 * call's `fencedCallContext()`, and whose `lookup` (if any) gets `input.args` as `ctx.args`. The activity's return value, as Temporal would send it ({@link asSent}),
 * is the tool's output; an error it throws is classified by the entry's `classifyError` (see
 * `./error-classification`): `rejected` is stored as the call's error result, `unknown-outcome`
 * is reconciled or pauses.
 */
function withExecute(activity: FencedActivity, input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): ToolDefinition<unknown> {
  let called = false;
  const { lookup } = activity;
  const args: readonly unknown[] = Object.freeze([...input.args]);
  return {
    ...activity,
    // The entry's lookup gets the activity's arguments beside the call's context (FencedLookupContext).
    ...(lookup === undefined ? {} : { lookup: (ctx: ToolContext) => (lookup as (ctx: FencedLookupContext) => Promise<LookupResult>)({ ...ctx, args }) }),
    async execute(_args, toolContext) {
      if (called) throw new ToolError('unknown-outcome', `${activity.name}: the fence calls the activity at most once per attempt`);
      called = true;
      let value: unknown;
      try {
        value = await runWithCallContext(toolContext, () => next(input));
      } catch (error) {
        throw classifyActivityError(activity.classifyError, error);
      }
      if (value instanceof Uint8Array) return { output: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'), encoding: 'binary/plain' };
      if (value === undefined) return { output: null, encoding: 'binary/null' };
      return { output: asSent(value) };
    },
  };
}

/**
 * An activity's result as Temporal's default payload converter sends it (JSON: a `Date` as its ISO
 * string, `undefined` properties dropped, `toJSON` honoured), which is what the workflow receives
 * unfenced (a top-level `Uint8Array` or `undefined` is stored with its `encoding` by `withExecute`). A value JSON cannot hold (BigInt, a cycle) is kept, and refused as NOT_JSON when stored.
 */
function asSent(value: unknown): JsonValue {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return value as JsonValue;
  }
  return text === undefined ? null : (JSON.parse(text) as JsonValue);
}

/** The activity's result: the stored output as it was stored (bytes and undefined restored by their `encoding`), or the stored error result as a non-retryable failure. */
export function deliver(result: FencedToolResult): unknown {
  const { outcome } = result;
  if (outcome.ok) {
    if (outcome.encoding === 'binary/plain' && typeof outcome.output === 'string') return new Uint8Array(Buffer.from(outcome.output, 'base64'));
    if (outcome.encoding === 'binary/null') return undefined;
    return outcome.output;
  }
  // The stored message is the tool's or the provider's text (up to maxPayloadBytes): cut to the failure's bounds.
  throw boundedFailure({
    type: outcome.error.type,
    message: outcome.error.message,
    nonRetryable: true,
    details: { callId: result.callId, toolName: result.toolName, source: result.source, idempotencyKey: result.idempotencyKey },
  });
}
