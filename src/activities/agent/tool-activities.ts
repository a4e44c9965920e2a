/**
 * The agent's tool activities (docs/protocol.md#the-fenced-attempt): `runFencedTool`, one activity
 * per tool, `describeToolCall`, `resolveToolCall` and `compensateToolCall`, built by a factory that
 * closes over the store and the tools, as the Temporal samples do. Node side only: workflow code
 * imports at most the types in `../contract`.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { resolveMaxPayloadBytes, resolveMaxToolInputBytes } from '../../checkpoint/bounds';
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import { assertIdempotencyKeySecret } from '../../checkpoint/digest';
import { AGENT_RESOLUTION_POLICY, resolveUnknownOutcome } from '../fence/resolution';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import {
  NOTHING_APPLIED_CODES,
  type Delivered,
  type FencedToolInput,
  type FencedToolResult,
  type ResolveToolCallInput,
  type ResolveToolCallResult,
  type ToolCallDescription,
  type ToolOutcome,
} from '../contract/contract';
import { conversationLogId, deliverOutput } from './conversation-log';
import { refuseIfStarted } from './chain-segments';
import { defineTool, type ToolDefinition } from '../tools/define-tool';
import { ownProperties, readCompensateToolCallInput, readFencedToolInput, readResolveToolCallInput } from '../fence/input-schema';
import type { CompensateToolCallInput, CompensateToolCallResult, ResolveCompensationInput } from '../contract/compensation-contract';
import { assertCompensationToolsRegistered } from '../tools/compensation-declaration';
import { compensationStore, prepareCompensation, type PreparedCompensation } from '../fence/compensation-call';
import { resolveBatchItem } from '../fence/batch-resolve';
import { toApplicationFailure } from '../fence/failures';
import { findCallRecords, keyOfRecord, settleFailedAttempt, type CallLocator } from '../fence/call-failure';
import { refuseIfDiscardedByReset } from '../fence/discarded-dispatch';
import { appliedByRunOf } from '../fence/occurrence';
import { adoptedFrom } from '../fence/intent-dedupe';
import { settleCall, type AttemptEvidence, type FencedToolDeps } from '../fence/fenced-tool';
import { prepareCall, type AttemptContext, type PreparedCall } from '../fence/prepare-call';
import { assertTenantPinned, assertToolPinned, resolvePins, type WorkerPins } from '../fence/pins';
import { assertGrantKeys, authorizeCall, type GrantCheck } from '../fence/approval-grants';
import type { GrantVerificationKey } from '../../checkpoint/approval-grant';
import { describePreparedCall } from '../fence/call-description';
import { toolCallActivities, type ToolCallActivity } from './tool-call-activities';

/** Options of {@link createToolActivities}; the pins (see `../fence/pins`) refuse input outside them with NOT_PINNED / APPROVAL_REQUIRED. */
export interface ToolActivitiesOptions extends WorkerPins {
  readonly store: CheckpointStore;
  readonly tools: readonly ToolDefinition<any>[];
  /** UTF-8 JSON bytes of a stored result; validated when the activities are built. @default 65,536, at most 10 MiB */
  readonly maxPayloadBytes?: number;
  /**
   * UTF-8 bytes of a call's input as canonical JSON; a larger input is refused with
   * INVALID_TOOL_INPUT (`too-large`) before anything is written. Give the model
   * adapters the same value. @default 65,536, at most 10 MiB
   */
  readonly maxToolInputBytes?: number;
  /** Every time decision of the fence. @default () => new Date() */
  readonly clock?: () => Date;
  /**
   * Secret (at least 32 bytes) idempotency keys are derived with: HMAC-SHA-256 keys (`ttc3-…`)
   * a third party cannot predict (env TTC_IDEMPOTENCY_KEY_SECRET in `ttc worker`).
   * Every worker of a task queue must use the same secret, set before first use: keys are
   * recomputed on every attempt, so changing it while calls are in flight changes their keys.
   * @default none: unkeyed `ttc2-…` keys, as before
   */
  readonly idempotencyKeySecret?: Uint8Array;
  /**
   * Keys approval grants are verified with (docs/protocol.md#approval-grants; env
   * TTC_APPROVAL_GRANT_KEYS in `ttc worker`). Set: a call of a `requireApproval` tool runs only
   * with a valid, unexpired grant for exactly that call, and every grant a call carries is
   * verified (APPROVAL_REQUIRED, APPROVAL_MISMATCH, APPROVAL_EXPIRED before any claim).
   * @default none: unsigned mode (the approved intent digest is checked, not who approved)
   */
  readonly approvalGrantKeys?: readonly GrantVerificationKey[];
  /** Margin added to a holder's call deadline before its claim may be taken over, ms (docs/protocol.md#overlapping-attempts). @default 5,000 */
  readonly reconcileMarginMs?: number;
  /** In-attempt backoff for transient tool errors (full jitter, Retry-After honoured). */
  readonly transientRetry?: FencedToolDeps['transientRetry'];
  /** Test-only hooks (see {@link FencedToolDeps.hooks}). */
  readonly hooks?: FencedToolDeps['hooks'];
}

/** The fence's own activities (each tool's activity runs `runFencedTool`). */
export interface FenceActivities {
  /**
   * One fenced attempt of a tool call. Failure types are CheckpointError codes (see `failures.ts`).
   * With `input.resultByReference`, a successful output over `inlineMaxBytes` is written to the
   * run chain's conversation log and returned as an `OutputRef` (see {@link deliverOutput}); a
   * failure to write it is RECONCILE_PENDING (retryable, never "nothing applied": the call has a
   * stored result) or CONVERSATION_CONFLICT / a quarantine code (non-retryable).
   */
  runFencedTool(input: FencedToolInput & Required<Pick<FencedToolInput, 'resultByReference'>>): Promise<Delivered<FencedToolResult>>;
  /** Without `resultByReference` (the plugin, older runs): the outcome as stored. */
  runFencedTool(input: FencedToolInput): Promise<FencedToolResult>;
  /** Validates a call and returns its revision, intent digest, idempotency key, validated arguments and target; writes nothing. */
  describeToolCall(input: FencedToolInput): Promise<ToolCallDescription>;
  /**
   * Stores a person's resolution of an unknown outcome under the original fence, then delivers
   * it (by reference above the threshold when `input.resultByReference` is given, as `runFencedTool`).
   */
  resolveToolCall(input: ResolveToolCallInput & Required<Pick<ResolveToolCallInput, 'resultByReference'>>): Promise<Delivered<ResolveToolCallResult>>;
  /** Without `resultByReference`: the outcome as stored. */
  resolveToolCall(input: ResolveToolCallInput): Promise<ResolveToolCallResult>;
  /**
   * With `role: 'compensation'`: stores a person's `applied` resolution of a compensation
   * whose outcome is unknown in the compensation's checkpoint (of `compensationGeneration`), under
   * its fence, as for a call; the outcome is returned inline (never by reference), `idempotencyKey`
   * is the compensation's. Refused with NOTHING_TO_COMPENSATE when the original call holds no
   * applied effect, INVALID_ARGUMENT when its tool declares no compensation or the compensation
   * has no checkpoint to resolve.
   */
  resolveToolCall(input: ResolveCompensationInput): Promise<ResolveToolCallResult>;
  /**
   * Runs the compensation the original call's tool declares, as one fenced attempt of
   * its own call: the original call's checkpoint is read from the store and must hold an applied
   * (`ok: true`) outcome, else NOTHING_TO_COMPENSATE (non-retryable, nothing ran). The compensation
   * then settles exactly as a call does (`settleCall`: execute, deliver a stored result, lookup,
   * same-key repeat, or OUTCOME_UNKNOWN for a person; failures through `settleFailedAttempt` and
   * `toApplicationFailure`). A `{ tool }` compensation whose input the tool's schema refuses is
   * INVALID_TOOL_INPUT (nothing ran). See `../contract/compensation-contract` for the shapes.
   */
  compensateToolCall(input: CompensateToolCallInput): Promise<CompensateToolCallResult>;
}

/**
 * The activities object for `Worker.create({ activities })`: the fence's own activities and one
 * activity per tool, named after the tool (see `./tool-call-activities`). `runFencedTool` stays
 * registered for runs that scheduled tool calls under it before each tool had its own type.
 */
export interface ToolActivities extends FenceActivities {
  readonly [toolName: string]: ToolCallActivity | FenceActivities[keyof FenceActivities];
}

/**
 * Builds the tool activities.
 *
 * Every tool goes through `defineTool` again (idempotent), so a tool object that bypassed it is
 * checked and normalised too: its flags are own properties with definite values.
 *
 * Registers one activity per tool, named after the tool, next to `runFencedTool`,
 * `describeToolCall`, `resolveToolCall` and `compensateToolCall` (see {@link ToolActivities}).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT when two tools share a name, for a tool
 *   `defineTool` refuses (a name reserved for the agent's own activities among them), for a tool
 *   whose compensation names a tool not in `tools` (`details.toolName`, `details.compensationTool`),
 *   or for a bad `maxPayloadBytes`, `maxToolInputBytes` or `reconcileMarginMs`.
 */
export function createToolActivities(options: ToolActivitiesOptions): ToolActivities {
  const tools = new Map<string, ToolDefinition<any>>();
  for (const declared of options.tools) {
    const tool = defineTool(declared);
    if (tools.has(tool.name)) throw new CheckpointError('INVALID_ARGUMENT', `two tools are named ${JSON.stringify(tool.name)}`, { field: 'tools' });
    tools.set(tool.name, tool);
  }
  assertCompensationToolsRegistered(tools);
  const pins = resolvePins(options, tools.keys());
  resolveMaxPayloadBytes(options.maxPayloadBytes);
  if (options.idempotencyKeySecret !== undefined) assertIdempotencyKeySecret(options.idempotencyKeySecret);
  const keySecret = options.idempotencyKeySecret === undefined ? undefined : Buffer.from(options.idempotencyKeySecret);
  const limits = { maxToolInputBytes: resolveMaxToolInputBytes(options.maxToolInputBytes) };
  const margin = options.reconcileMarginMs;
  if (margin !== undefined && !(Number.isSafeInteger(margin) && margin >= 0)) {
    throw new CheckpointError('INVALID_ARGUMENT', `reconcileMarginMs must be a non-negative integer (ms), got ${String(margin)}`, { field: 'reconcileMarginMs' });
  }
  const deps: FencedToolDeps = {
    store: options.store,
    tools,
    maxPayloadBytes: options.maxPayloadBytes,
    clock: options.clock,
    reconcileMarginMs: margin,
    transientRetry: options.transientRetry,
    hooks: options.hooks,
  };
  assertGrantKeys(options.approvalGrantKeys);
  const grants: GrantCheck = { keys: options.approvalGrantKeys, store: options.store, clock: options.clock };
  const prepare = (input: FencedToolInput): PreparedCall => prepareCall(tools, input, attemptContext(keySecret), limits);
  const runFencedTool = async (untrusted: FencedToolInput): Promise<Delivered<FencedToolResult>> => {
    const context = attemptContext(keySecret);
    const evidence: AttemptEvidence = { claimSent: false, seen: null };
    let call: PreparedCall | undefined;
    // Own properties only, also on the failure path.
    let input = ownProperties(untrusted) as unknown as FencedToolInput;
    let parsed = false;
    try {
      // A compensation never runs as its original call's tool: it has its own activity.
      if ((input as { role?: unknown }).role !== undefined) {
        throw new CheckpointError(
          'INVALID_ARGUMENT',
          `runFencedTool runs a call, not its compensation (role ${JSON.stringify((input as { role?: unknown }).role)}); use compensateToolCall. Nothing ran`,
          { field: 'role' },
        );
      }
      let result: FencedToolResult;
      try {
        input = readFencedToolInput(untrusted);
        parsed = true;
        assertTenantPinned(pins, input.tenant);
        assertToolPinned(pins, input.toolName);
        call = prepareCall(tools, input, context, limits);
        await refuseIfDiscardedByReset(deps, { input, context, call });
        const refusing = input.occurrences?.refusedIfStarted;
        if (refusing !== undefined && refusing.length > 0) await refuseIfStarted(options.store, chainLogOf(input, context), refusing, 'occurrences.refusedIfStarted');
        await authorizeCall(grants, pins, call, context.namespace);
        result = await settleCall(deps, call, evidence);
      } catch (error) {
        // A call that took the identity of the call holding its dedupe key fails as that call.
        result = await settleFailedAttempt(
          deps,
          { input, context, call: evidence.adopted ?? call, evidence, inputParsed: parsed, deliveryId: `delivery-${context.attempt}-${randomUUID()}` },
          error,
        );
      }
      // An input that did not parse has no trustworthy threshold: its result is returned inline.
      return parsed ? await delivered(options.store, input, context, result) : result;
    } catch (error) {
      throw toApplicationFailure(namingCall(error, evidence.adopted ?? call));
    }
  };
  /** The compensation of `input`'s call; refuses an item, and a tool that declares none. */
  const compensationOf = async (depsOf: FencedToolDeps, input: ResolveCompensationInput, context: AttemptContext): Promise<PreparedCompensation> => {
    if (input.item !== undefined)
      throw new CheckpointError('INVALID_ARGUMENT', 'resolveToolCall input: a compensation has no items (role compensation with item)', { field: 'item' });
    const prepared = await prepareCompensation(depsOf, { ...input, role: 'compensation' }, context, limits);
    if (prepared === null)
      throw new CheckpointError('INVALID_ARGUMENT', `tool ${input.toolName} declares no compensation; call ${JSON.stringify(input.callId)} has none to resolve`, {
        field: 'role',
        toolName: input.toolName,
      });
    return prepared;
  };
  const compensateToolCall = async (untrusted: CompensateToolCallInput): Promise<CompensateToolCallResult> => {
    try {
      const input = readCompensateToolCallInput(untrusted);
      assertTenantPinned(pins, input.tenant);
      assertToolPinned(pins, input.toolName);
      const context = attemptContext(keySecret);
      const prepared = await prepareCompensation(deps, input, context, limits);
      if (prepared === null) return { declared: false };
      const { call, compensation } = prepared;
      if (call.tool.name === compensation.toolName && deps.tools.has(call.tool.name)) assertToolPinned(pins, call.tool.name);
      const evidence: AttemptEvidence = { claimSent: false, seen: null };
      let result: FencedToolResult;
      try {
        if (prepared.inputError !== undefined) throw prepared.inputError;
        result = await settleCall(deps, call, evidence);
      } catch (error) {
        // The failure path looks the call up by address too: it must see the compensation's checkpoint only.
        const own = { ...deps, store: compensationStore(deps.store, call.binding) };
        try {
          result = await settleFailedAttempt(own, { input: call.input, context, call, evidence, deliveryId: `delivery-${context.attempt}-${randomUUID()}` }, error);
        } catch (failure) {
          throw namingCall(failure, call);
        }
      }
      // The key is the compensation's whatever revision its stored result was made under (it derives from the original's key).
      // No intent digest for a compensation input the tool refuses (its refusal may be the stored result).
      return {
        declared: true,
        result: { ...result, callId: input.callId, idempotencyKey: call.idempotencyKey, intentDigest: prepared.inputError === undefined ? result.intentDigest : null },
        compensation,
      };
    } catch (error) {
      throw toApplicationFailure(error);
    }
  };
  const fence: FenceActivities = {
    runFencedTool: runFencedTool as FenceActivities['runFencedTool'],
    async describeToolCall(untrusted) {
      try {
        const input = readFencedToolInput(untrusted);
        assertTenantPinned(pins, input.tenant);
        assertToolPinned(pins, input.toolName);
        return describePreparedCall(prepare(input));
      } catch (error) {
        throw toApplicationFailure(error);
      }
    },
    resolveToolCall: (async (untrusted: ResolveToolCallInput): Promise<Delivered<ResolveToolCallResult>> => {
      try {
        const input = readResolveToolCallInput(untrusted);
        assertTenantPinned(pins, input.tenant);
        const context = attemptContext(keySecret);
        if (input.role === 'compensation') return await resolveCompensation(deps, await compensationOf(deps, input as ResolveCompensationInput, context), context, input);
        let call: PreparedCall | undefined;
        try {
          call = prepareCall(tools, input, context, limits);
        } catch (error) {
          // A person can resolve a call whose tool was removed or whose input no longer parses after a deploy.
          if (!isCheckpointError(error, 'UNKNOWN_TOOL') && !isCheckpointError(error, 'INVALID_TOOL_INPUT')) throw error;
        }
        const where = { input, context, call };
        // A paused item of a batch call is resolved in the item's checkpoint.
        if (input.item !== undefined) return await delivered(options.store, input, context, await resolveBatchItem(deps, where, input));
        return await delivered(options.store, input, context, await resolveCall(deps, where, input));
      } catch (error) {
        throw toApplicationFailure(error);
      }
    }) as FenceActivities['resolveToolCall'],
    compensateToolCall,
  };
  // `default` runs every activity type this worker does not register as a call of that tool: after a
  // deploy that removed a tool, its calls still settle by their evidence (a stored result is delivered,
  // an unfinished claim waits and pauses; docs/protocol.md#nothing-applied), never as a bare
  // "activity not registered" that the workflow would report as nothing applied.
  const unregisteredTool: ToolCallActivity = (input) =>
    fence.runFencedTool({ ...(typeof input === 'object' && input !== null ? input : {}), toolName: Context.current().info.activityType } as FencedToolInput);
  return { ...toolCallActivities(tools.keys(), fence.runFencedTool), default: unregisteredTool, ...fence };
}

/**
 * `error` with the prepared call's tool revision and idempotency key in its details when it names
 * neither (a failure that pauses the run shows a person the key to look the effect up by at the
 * provider, and the revision it was claimed under). A failure that names them (an unfinished
 * claim under another revision, a batch item) keeps its own. Anything else is returned as is.
 */
function namingCall(error: unknown, call: PreparedCall | undefined): unknown {
  if (call === undefined || !isCheckpointError(error) || error.details.idempotencyKey !== undefined || error.details.toolRevision !== undefined) return error;
  const bare = error.message.startsWith(`${error.code}: `) ? error.message.slice(error.code.length + 2) : error.message;
  return new CheckpointError(
    error.code,
    bare,
    { ...error.details, toolName: error.details.toolName ?? call.tool.name, toolRevision: call.tool.revision, idempotencyKey: call.idempotencyKey },
    { cause: error.cause },
  );
}

/**
 * `result` as an agent run receives it (claim check): unchanged without
 * `input.resultByReference`; else its outcome through `deliverOutput` into the run chain's
 * conversation log, named from the activity context (namespace, workflow id), the input's tenant
 * and run chain (the context's run id when the input names none, as the binding does).
 *
 * The call has a stored result by now, so a failure to write the log must never read as
 * "nothing applied": a code of {@link NOTHING_APPLIED_CODES} (STORE_UNAVAILABLE among them)
 * becomes RECONCILE_PENDING (retryable: the next attempt redelivers the stored result).
 */
async function delivered<R extends { readonly callId: string; readonly outcome: ToolOutcome }>(
  store: CheckpointStore,
  input: FencedToolInput,
  context: AttemptContext,
  result: R,
): Promise<R | Delivered<R>> {
  const byReference = input.resultByReference;
  if (byReference === undefined) return result;
  try {
    const logId = chainLogOf(input, context);
    return { ...result, outcome: await deliverOutput(store, logId, input.callId, result.outcome, byReference.inlineMaxBytes) };
  } catch (error) {
    if (!isCheckpointError(error) || !NOTHING_APPLIED_CODES.includes(error.code)) throw error;
    throw new CheckpointError(
      'RECONCILE_PENDING',
      `call ${JSON.stringify(input.callId)} has a stored result, but it could not be handed over by reference (${error.message}); the next attempt delivers it again`,
      { callId: input.callId, cause: error.code },
      { cause: error },
    );
  }
}

/** The attempt's identity from the activity context. @throws {@link CheckpointError} INVALID_ARGUMENT outside a workflow. */
function attemptContext(idempotencyKeySecret: Uint8Array | undefined): AttemptContext {
  const info = Context.current().info;
  const execution = info.workflowExecution;
  if (execution?.workflowId === undefined)
    throw new CheckpointError('INVALID_ARGUMENT', 'fenced tool activities run only inside a workflow (no workflow id in the activity context)', { field: 'workflowId' });
  return {
    namespace: info.workflowNamespace ?? info.activityNamespace,
    workflowId: execution.workflowId,
    runId: execution.runId,
    attempt: info.attempt,
    ...(idempotencyKeySecret === undefined ? {} : { idempotencyKeySecret }),
  };
}

/**
 * Stores a person's `applied` resolution of a compensation (see {@link resolveCall}) in the
 * compensation's own checkpoint; the store view sees nothing else, so the original call's
 * checkpoint is never taken for it.
 */
async function resolveCompensation(deps: FencedToolDeps, prepared: PreparedCompensation, context: AttemptContext, input: ResolveToolCallInput): Promise<ResolveToolCallResult> {
  const { call } = prepared;
  const own = { ...deps, store: compensationStore(deps.store, call.binding) };
  const result = await resolveCall(own, { input: call.input, context, call }, input, `compensation of call ${JSON.stringify(input.callId)}`);
  return {
    ...result,
    idempotencyKey: call.idempotencyKey,
    intentDigest: result.toolRevision === call.tool.revision && prepared.inputError === undefined ? call.intentDigest : null,
  };
}

/**
 * Stores a person's `applied` resolution of an executing or uncertain call through
 * `resolveUnknownOutcome` (`../fence/resolution`, under {@link AGENT_RESOLUTION_POLICY}): under the fence
 * the record holds, with its delivery, in one write. The record is found by call (whatever revision
 * it was made under, also when this worker no longer has the tool). Idempotent: a call already
 * completed is delivered again as stored. A call that had adopted the checkpoint of a call a reset
 * discarded names it (`appliedByRun`, from its adoption record), as its delivery would.
 */
async function resolveCall(
  deps: FencedToolDeps,
  where: CallLocator,
  input: ResolveToolCallInput,
  describe = `call ${JSON.stringify(input.callId)}`,
): Promise<ResolveToolCallResult> {
  const { record, adoption } = await findCallRecords(deps, where);
  if (record === null) throw new CheckpointError('INVALID_ARGUMENT', `${describe} has no checkpoint to resolve`, { callId: input.callId });
  if (adoption !== null && record === adoption) {
    // The call it adopted was pruned: there is no claim to store the person's result under, and the adoption record is not a result.
    throw new CheckpointError(
      'INVALID_CHECKPOINT',
      `${describe} was answered by call ${adoptedFrom(adoption)}, whose checkpoint is gone: a result cannot be stored for it; ` +
        'if the effect was applied, abandon the run; if it was not, resolve it absent (it runs again)',
      { callId: input.callId },
    );
  }
  const appliedByRun = appliedByRunOf(adoption);
  // The resolution and its delivery in one write (docs/protocol.md#cost), as the fence stores a result.
  const { record: current } = await resolveUnknownOutcome(
    deps,
    {
      record,
      kind: 'applied',
      outcome: () => {
        if (input.resolution !== 'applied')
          throw new CheckpointError('INVALID_ARGUMENT', `resolveToolCall stores only an applied resolution, got ${JSON.stringify(input.resolution)}`, { field: 'resolution' });
        return input.result!;
      },
      by: input.decidedBy ?? null,
      reason: input.reason,
      deliveryId: `delivery-${where.context.attempt}-${randomUUID()}`,
      what: describe,
      details: { callId: input.callId },
    },
    AGENT_RESOLUTION_POLICY,
  );
  const { binding } = current;
  const sameTool = where.call !== undefined && where.call.binding.toolRevision === binding.toolRevision && where.call.binding.callId === binding.callId;
  return {
    callId: input.callId,
    toolName: binding.toolName,
    toolRevision: binding.toolRevision,
    outcome: current.result!.payload as ResolveToolCallResult['outcome'],
    idempotencyKey: sameTool ? where.call!.idempotencyKey : keyOfRecord(where, binding),
    intentDigest: sameTool ? where.call!.intentDigest : null,
    ...(appliedByRun !== undefined ? { appliedByRun } : {}),
  };
}

/** The run chain's conversation log of `input`'s run (outputs by reference, the chain's segments: `./conversation-log`). */
function chainLogOf(input: FencedToolInput, context: AttemptContext): string {
  return conversationLogId({ namespace: context.namespace, tenant: input.tenant, workflowId: context.workflowId, runChainId: input.runChainId ?? context.runId });
}
