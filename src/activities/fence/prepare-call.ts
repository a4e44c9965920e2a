/**
 * What one fenced attempt derives from its input and the activity context before it touches the
 * store (docs/protocol.md#keys-and-digests, docs/protocol.md#call-identity): the tool, the
 * validated arguments, the binding, the idempotency key and the intent digest. Throws before
 * anything is written.
 */
import { randomUUID } from 'node:crypto';
import { callBindingId } from '../../checkpoint/call-identity';
import { LIMITS } from '../../checkpoint/bounds';
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { fingerprintCanonicalInput, idempotencyKey, intentDigest, sha256Hex } from '../../checkpoint/digest';
import { canonicalToolInput, toolInputError } from '../../checkpoint/model-input';
import { deepFreeze } from '../../checkpoint/record';
import type { Binding, JsonValue } from '../../checkpoint/types';
import type { AppliedByRun, FencedToolInput } from '../contract/contract';
import { DEFAULT_BUSINESS_KEY_WINDOW_MS, type ToolDefinition } from '../tools/define-tool';
import type { ItemRef } from '../../checkpoint/batch-identity';
import type { BatchProgress } from '../contract/batch-items';
import { adoptHolder, intentDedupeKey, type CallDedupe } from './intent-dedupe';
import { adoptFirstCall, businessDedupeKey, businessKeyOf } from './business-key';
import { occurrenceDedupe } from './occurrence';
import { runOfCallId } from '../../checkpoint/run-scope';

/** Where an attempt runs: from the activity's `Context.current().info`. */
export interface AttemptContext {
  /** The Temporal namespace of the workflow. */
  readonly namespace: string;
  readonly workflowId: string;
  /** The workflow run id (the run chain when the input names none). */
  readonly runId: string;
  /** The activity attempt, 1 for the first. */
  readonly attempt: number;
  /** Secret idempotency keys are derived with (`createToolActivities` option `idempotencyKeySecret`); absent: unkeyed keys. */
  readonly idempotencyKeySecret?: Uint8Array;
}

/** Everything one attempt derives from its input and the activity context. */
export interface PreparedCall {
  readonly tool: ToolDefinition<any>;
  readonly input: FencedToolInput;
  /**
   * Frozen, schema-validated arguments as their RFC 8785 canonical JSON parsed back: what
   * `describeToolCall` shows, the intent digest covers and `execute` gets.
   */
  readonly args: unknown;
  /** Binding: the fingerprint covers what the model sent (`input.input`), before schema defaults; for a `businessKey` tool, `args`. */
  readonly binding: Binding;
  readonly idempotencyKey: string;
  readonly intentDigest: string;
  readonly workflowId: string;
  readonly runChainId: string;
  /** The call id the key and binding are derived from: the model's call id, or the intent call id of a `dedupeByIntent` tool. */
  readonly keyCallId: string;
  readonly attemptId: string;
  readonly deliveryId: string;
  /**
   * Set for a `dedupeByIntent` call (`./intent-dedupe`) or a `businessKey` call (`./business-key`): its claim is inserted under this dedupe key,
   * and a call that finds the key held takes the holder's identity. Absent: the call dedupes by its own key only.
   */
  readonly dedupe?: CallDedupe<PreparedCall>;
  /** Set when this call took the identity of a call a reset discarded (`./occurrence`): that call and its run. */
  readonly appliedByRun?: AppliedByRun;
  /** Set for one item of a batch call (`./batch-fence`): the item's key, position and generation. */
  readonly item?: ItemRef;
  /** Set for one item of a batch call: the batch's progress, for the fence's heartbeat details. */
  readonly batchProgress?: () => BatchProgress;
}

/**
 * The binding namespace and call id of `input` in `context`, as far as they do not depend on
 * the tool: `<Temporal namespace>/<tenant>` (Temporal namespace names cannot contain `/`) and
 * `callBindingId({ runChainId, workflowId, callId })`. Used to find a call's checkpoint when
 * the tool is gone or its binding changed (a `dedupeByIntent` call is found by its intent
 * call id instead, see {@link prepareCall}).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT for a missing or malformed part.
 */
export function callAddress(
  input: Pick<FencedToolInput, 'tenant' | 'callId' | 'runChainId'>,
  context: AttemptContext,
  keyCallId: string = input?.callId,
): { namespace: string; callId: string; runChainId: string } {
  if (typeof input?.tenant !== 'string' || input.tenant.length === 0) {
    throw new CheckpointError('INVALID_ARGUMENT', 'tenant is required and must be a non-empty string', { field: 'tenant' });
  }
  if (context.namespace.includes('/')) {
    throw new CheckpointError('INVALID_ARGUMENT', `Temporal namespace ${JSON.stringify(context.namespace)} contains "/"`, { field: 'namespace' });
  }
  const runChainId = input.runChainId ?? context.runId;
  return { namespace: `${context.namespace}/${input.tenant}`, callId: callBindingId({ runChainId, workflowId: context.workflowId, callId: keyCallId }), runChainId };
}

/** Bounds {@link prepareCall} enforces on the model's input. */
export interface PrepareLimits {
  /** UTF-8 bytes of the canonical JSON of `input.input`. @default LIMITS.defaultMaxToolInputBytes (65,536) */
  readonly maxToolInputBytes?: number;
}

/**
 * Validates `input` against its tool and derives binding, idempotency key and intent digest. Before
 * the tool's schema sees the model's input, `assertToolInput` refuses `__proto__`, `constructor`
 * and `prototype` keys at any depth and inputs over `limits.maxToolInputBytes`, also for callers
 * that skip the adapters. `input` should come from `readFencedToolInput` (every field own).
 *
 * @throws {@link CheckpointError} UNKNOWN_TOOL, INVALID_TOOL_INPUT (`details.reason` says why; `too-large`
 *   also when the validated arguments, wrapped for the intent digest or the intent call id,
 *   exceed the depth or value-count bound), INVALID_ARGUMENT; NOT_JSON when the schema's output
 *   is not JSON; nothing is written.
 */
export function prepareCall(tools: ReadonlyMap<string, ToolDefinition<any>>, input: FencedToolInput, context: AttemptContext, limits: PrepareLimits = {}): PreparedCall {
  const tool = tools.get(input?.toolName);
  if (tool === undefined) {
    throw new CheckpointError(
      'UNKNOWN_TOOL',
      `tool ${JSON.stringify(input?.toolName)} is not registered on this worker (${tools.size} tools registered; the list stays out of messages, see the worker configuration)`,
      {
        field: 'toolName',
        actual: String(input?.toolName),
      },
    );
  }
  const what = `input of ${tool.name} call ${JSON.stringify(input.callId)}`;
  const inputText = canonicalToolInput(input.input, what, { maxBytes: limits.maxToolInputBytes });
  // The schema parses a copy: one that changes its input in place cannot change the model's input after its fingerprint was taken.
  const parsed = tool.input.safeParse(JSON.parse(inputText));
  if (!parsed.success) {
    throw new CheckpointError('INVALID_TOOL_INPUT', `${what} does not match its schema: ${parsed.error.issues.map((i) => `${i.path.join('.') || '$'}: ${i.message}`).join('; ')}`, {
      toolName: tool.name,
      callId: String(input.callId),
    });
  }
  const { args, digest, generation, keyCallId, inputFingerprint } = refuseOverBounds(what, () => {
    // What runs is what the approver reads: `describeToolCall` shows the canonical
    // JSON the digest hashes, so `execute` gets that JSON parsed back, not merely a value with the
    // same digest (member order as shown, -0 as 0). Not JSON: NOT_JSON.
    const args = deepFreeze(JSON.parse(canonicalJson(parsed.data, 'arguments')) as JsonValue);
    const digest = intentDigest({ toolName: tool.name, toolRevision: tool.revision, args, target: tool.target?.(args as never) ?? null });
    // dedupeByIntent: calls of this run with the same model input (and generation) share one key;
    // calls with the same intent share one checkpoint through the dedupe key below.
    const generation = tool.dedupeByIntent ? intentGeneration(input, digest) : 0;
    const keyCallId = tool.dedupeByIntent ? intentCallId(tool.name, input.input, generation) : input.callId;
    // A business-keyed call's fingerprint covers what runs, so a call of another run with the same key is compared by its arguments.
    const fingerprinted = tool.businessKey === undefined ? inputText : canonicalJson(args, 'arguments');
    return { args, digest, generation, keyCallId, inputFingerprint: fingerprintCanonicalInput(fingerprinted, context.idempotencyKeySecret) };
  });
  const address = callAddress(input, context, keyCallId);
  const binding: Binding = {
    namespace: address.namespace,
    callId: address.callId,
    toolName: tool.name,
    toolRevision: tool.revision,
    inputFingerprint,
  };
  const fence = randomUUID();
  const prepared: PreparedCall = {
    tool,
    input,
    args,
    binding,
    idempotencyKey: idempotencyKey(
      { namespace: address.namespace, runChainId: address.runChainId, workflowId: context.workflowId, callId: keyCallId, toolName: tool.name, toolRevision: tool.revision },
      context.idempotencyKeySecret,
    ),
    intentDigest: digest,
    workflowId: context.workflowId,
    runChainId: address.runChainId,
    keyCallId,
    attemptId: `attempt-${context.attempt}-${fence}`,
    deliveryId: `delivery-${context.attempt}-${fence}`,
  };
  if (tool.businessKey !== undefined) {
    const key = businessDedupeKey(address.namespace, tool.name, businessKeyOf(tool, args, input.callId));
    return {
      ...prepared,
      dedupe: {
        key,
        windowMs: tool.businessKeyWindowMs ?? DEFAULT_BUSINESS_KEY_WINDOW_MS,
        releasesAbsent: true,
        adopt: (holder) => adoptFirstCall(prepared, holder, context.idempotencyKeySecret),
      },
    };
  }
  if (!tool.dedupeByIntent) {
    const occurrences = input.occurrences;
    if (occurrences === undefined) return prepared;
    const scope = {
      namespace: address.namespace,
      workflowId: context.workflowId,
      runChainId: address.runChainId,
      // Whose calls are the call's own, and the run its adoptions are recorded for: where the run that scheduled it
      // addresses its calls (a reset run replaying a call planned before its reset point is not that call's run), else
      // the run its id names (a call in flight when its run was reset runs again with the input its own run gave it).
      runId: occurrences.ownCallsIn ?? runOfCallId(input.callId, address.runChainId),
      callId: input.callId,
      intentDigest: digest,
      scope: occurrences.scope,
      liveCalls: occurrences.liveCalls ?? '',
      liveRuns: occurrences.liveRuns ?? [],
      earlierRuns: occurrences.earlierRuns ?? [],
      notRun: occurrences.notRun ?? '',
    };
    return { ...prepared, dedupe: occurrenceDedupe(prepared, scope, context.idempotencyKeySecret, occurrences.from ?? 0) };
  }
  const key = intentDedupeKey({ namespace: address.namespace, runChainId: address.runChainId, workflowId: context.workflowId, intentDigest: digest, generation });
  return { ...prepared, dedupe: { key, adopt: (holder) => adoptHolder(prepared, holder, context.idempotencyKeySecret) } };
}

/**
 * Runs `derive` (the arguments' canonical form, the intent digest, the intent call id, the input
 * fingerprint), turning PAYLOAD_TOO_LARGE into the call's INVALID_TOOL_INPUT (`too-large`): an
 * input within the model-input bounds can still exceed them once the schema fills defaults or the
 * digest wraps it one level down. Nothing is written yet, so the model reads the refusal (a
 * nothing-applied code) instead of the run pausing for a person.
 *
 * @throws {@link CheckpointError} INVALID_TOOL_INPUT for PAYLOAD_TOO_LARGE; any other error of `derive` as it is.
 */
function refuseOverBounds<T>(what: string, derive: () => T): T {
  try {
    return derive();
  } catch (error) {
    if (!isCheckpointError(error, 'PAYLOAD_TOO_LARGE')) throw error;
    throw toolInputError(
      {
        reason: 'too-large',
        path: '$',
        message: `the validated arguments are too large to digest (at most ${LIMITS.maxDepth} levels and ${LIMITS.maxValues.toLocaleString('en-US')} JSON values, counting one level and a few values the digest adds): ${error.message}`,
      },
      what,
    );
  }
}

/**
 * The call id under which a `dedupeByIntent` tool's call is checkpointed and keyed:
 * `intent-` + hex SHA-256 of the canonical JSON of the tool name and the arguments as the model
 * sent them, plus `~gen<n>` for generation n > 0. It depends on nothing a deploy can change (not
 * the revision, the schema's defaults or the target), so an attempt on a redeployed worker, or
 * on one without the tool, still finds the call's checkpoint (docs/protocol.md#nothing-applied).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT when `generation` is not a non-negative
 *   integer; NOT_JSON or PAYLOAD_TOO_LARGE for arguments that are not bounded JSON.
 */
export function intentCallId(toolName: string, modelInput: unknown, generation = 0): string {
  if (!Number.isSafeInteger(generation) || generation < 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `intentGeneration must be a non-negative integer, got ${JSON.stringify(generation)}`, { field: 'intentGeneration' });
  }
  const hex = sha256Hex(canonicalJson(['ttc/intent-call/1', toolName, modelInput], 'input'));
  return generation === 0 ? `intent-${hex}` : `intent-${hex}~gen${generation}`;
}

/** The generation of a `dedupeByIntent` call: the larger of `intentGeneration` and the run's entry for its digest. */
function intentGeneration(input: FencedToolInput, digest: string): number {
  const own = input.intentGeneration ?? 0;
  if (!Number.isSafeInteger(own) || own < 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `intentGeneration must be a non-negative integer, got ${JSON.stringify(own)}`, { field: 'intentGeneration' });
  }
  const generations = input.intentGenerations;
  const entry = generations !== undefined && Object.prototype.hasOwnProperty.call(generations, digest) ? generations[digest] : 0;
  if (!Number.isSafeInteger(entry) || (entry as number) < 0) {
    throw new CheckpointError('INVALID_ARGUMENT', `intentGenerations[${digest}] must be a non-negative integer, got ${JSON.stringify(entry)}`, { field: 'intentGenerations' });
  }
  return Math.max(own, entry as number);
}
