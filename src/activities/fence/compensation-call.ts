/**
 * Prepares the compensation of one applied tool call: reads the ORIGINAL call's
 * checkpoint from the store (never workflow history), checks that it holds an applied effect,
 * and derives the compensation's own fenced call (binding, idempotency key, tool, arguments)
 * for `settleCall`, so lookup / same-key / pause rules are the fence's own. Node side.
 *
 * - binding call id: `canonicalJson(['ttc/compensation/1', <original binding callId>, generation])`
 * - idempotency key: `'ttcc-' + sha256 hex of canonicalJson(['ttc/compensation-key/1', <original idempotency key>, generation])`
 * - tool: the named tool (`{ tool, input }`), or the pseudo-tool `<tool>~compensation` with the
 *   function's revision (`{ revision, execute }`).
 * @see docs/protocol.md#keys-and-digests, #the-fenced-attempt, #nothing-applied
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod/v4';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import { fingerprintCanonicalInput, fingerprintInput, intentDigest, sha256Hex } from '../../checkpoint/digest';
import { canonicalToolInput } from '../../checkpoint/model-input';
import { deepFreeze } from '../../checkpoint/record';
import type { Binding, CheckpointRecord, JsonValue } from '../../checkpoint/types';
import type { CheckpointStore } from '../../stores/checkpoint-store';
import type { FencedToolInput, ToolOutcome } from '../contract/contract';
import type { CompensateToolCallInput, CompensationIdentity } from '../contract/compensation-contract';
import { compensationToolName, isCompensationByTool, type AppliedEffect, type CompensationByFunction, type ToolCompensation } from '../tools/compensation-declaration';
import { findCallRecord, keyOfRecord } from './call-failure';
import { adoptedCallOf } from './adoption';
import { answeredBy } from './business-key';
import type { ToolContext, ToolDefinition } from '../tools/define-tool';
import type { FencedToolDeps } from './fence-deps';
import { prepareCall, type AttemptContext, type PrepareLimits, type PreparedCall } from './prepare-call';

/** Largest `compensationGeneration`. */
export const MAX_COMPENSATION_GENERATION = 1_000_000;

/** A compensation ready for the fence. */
export interface PreparedCompensation {
  /**
   * The compensation as a fenced call: its own binding and `ttcc-…` key; `input` is the original
   * call's input without approval fields or `resultByReference` (its `callId` is the original's, so
   * the tool context and the result name the call being compensated); `args` is what `execute`
   * gets (the named tool's validated input, or the {@link AppliedEffect} for a function).
   */
  readonly call: PreparedCall;
  readonly compensation: CompensationIdentity;
  /**
   * Set when the named tool's schema refuses the compensation's input (INVALID_TOOL_INPUT): nothing
   * may run. `call` still carries the binding, so the refusal settles by the compensation's own
   * evidence (see `settleFailedAttempt`).
   */
  readonly inputError?: CheckpointError;
}

/**
 * Prepares the compensation of call `input.callId` of tool `input.toolName`.
 *
 * @returns null when the tool declares no compensation (nothing is read).
 * @throws {@link CheckpointError} UNKNOWN_TOOL / INVALID_TOOL_INPUT when the original call cannot be
 *   prepared on this worker; NOTHING_TO_COMPENSATE (`details.status`, `details.reason`) when the
 *   original call's checkpoint is absent, unfinished (executing, uncertain, ready) or holds an
 *   error outcome; BINDING_CONFLICT when the checkpoint found was made for other arguments;
 *   INVALID_ARGUMENT for a bad `compensationGeneration`; INVALID_TOOL_INPUT when the compensation's
 *   input is not bounded JSON (no binding can be made for it); the store's codes.
 */
export async function prepareCompensation(
  deps: FencedToolDeps,
  input: CompensateToolCallInput,
  context: AttemptContext,
  limits: PrepareLimits,
): Promise<PreparedCompensation | null> {
  const generation = compensationGeneration(input.compensationGeneration);
  const originalInput = originalCallInput(input);
  const original = prepareCall(deps.tools, originalInput, context, limits);
  const declared = original.tool.compensation as ToolCompensation | undefined;
  if (declared === undefined) return null;
  const record = await findCallRecord(deps, { input: originalInput, context, call: original });
  const payload = appliedOutcome(original, record);
  // A call that adopted another's checkpoint is that call's action (docs/protocol.md#dedupe-keys): it shares its compensation.
  const adopted = record!.binding.callId !== original.binding.callId && (await adoptedCallOf(deps.store, original)) === record!.binding.callId;
  const firstCall = adopted ? answeredBy({ binding: record!.binding, runChainId: original.runChainId, workflowId: original.workflowId }) : undefined;
  if (firstCall !== undefined) {
    // Another run's call applied it (its business key): that run owns the effect and its compensation.
    throw new CheckpointError(
      'NOTHING_TO_COMPENSATE',
      `${original.tool.name} call ${JSON.stringify(input.callId)} was answered by workflow ${firstCall.workflowId} (run chain ${firstCall.runChainId}), call ${JSON.stringify(firstCall.callId)}, which applied the effect; nothing to compensate in this run, nothing ran`,
      { callId: input.callId, toolName: original.tool.name, status: record!.status, reason: 'answered-by-another-run' },
    );
  }
  if (!adopted && record!.binding.inputFingerprint !== original.binding.inputFingerprint) {
    throw new CheckpointError(
      'BINDING_CONFLICT',
      `${original.tool.name} call ${JSON.stringify(input.callId)}: its checkpoint was made for other arguments (or another idempotency key secret) than the input given; nothing to compensate from it`,
      {
        callId: input.callId,
        toolName: original.tool.name,
      },
    );
  }
  const sameBinding = record!.binding.callId === original.binding.callId && record!.binding.toolRevision === original.binding.toolRevision;
  const originalKey = sameBinding ? original.idempotencyKey : keyOfRecord({ input: originalInput, context, call: original }, record!.binding);
  const applied = deepFreeze({ args: original.args as JsonValue, output: payload.output, receipt: payload.receipt ?? null }) as AppliedEffect;
  const identity = {
    namespace: record!.binding.namespace,
    callId: compensationBindingCallId(record!.binding.callId, generation),
    idempotencyKey: compensationIdempotencyKey(originalKey, generation),
  };
  if (generation > 1) await assertPreviousGenerationFailed(deps, original, record!.binding, generation);
  const compensationInput: FencedToolInput = Object.freeze({ ...originalInput, role: 'compensation' as const });
  const fence = randomUUID();
  const common = {
    input: compensationInput,
    workflowId: context.workflowId,
    runChainId: original.runChainId,
    keyCallId: identity.callId,
    attemptId: `attempt-${context.attempt}-${fence}`,
    deliveryId: `delivery-${context.attempt}-${fence}`,
    idempotencyKey: identity.idempotencyKey,
  };
  const secret = context.idempotencyKeySecret;
  if (!isCompensationByTool(declared)) {
    const tool = functionTool(original.tool, declared);
    const binding: Binding = {
      namespace: identity.namespace,
      callId: identity.callId,
      toolName: tool.name,
      toolRevision: tool.revision,
      inputFingerprint: fingerprintInput(applied, secret),
    };
    const call: PreparedCall = {
      ...common,
      tool,
      args: applied,
      binding,
      intentDigest: intentDigest({ toolName: tool.name, toolRevision: tool.revision, args: applied, target: null }),
    };
    return { call, compensation: { toolName: tool.name, toolRevision: tool.revision } };
  }
  const tool = deps.tools.get(declared.tool);
  if (tool === undefined) {
    throw new CheckpointError('UNKNOWN_TOOL', `tool ${original.tool.name}: its compensation names tool ${JSON.stringify(declared.tool)}, which this worker does not have`, {
      field: 'compensation.tool',
      toolName: original.tool.name,
      compensationTool: declared.tool,
    });
  }
  const what = `compensation input of ${original.tool.name} call ${JSON.stringify(input.callId)} for tool ${tool.name}`;
  const modelInput = compensationModelInput(declared.input, applied, what);
  const modelInputText = canonicalToolInput(modelInput, what, { maxBytes: limits.maxToolInputBytes });
  const binding: Binding = {
    namespace: identity.namespace,
    callId: identity.callId,
    toolName: tool.name,
    toolRevision: tool.revision,
    inputFingerprint: fingerprintCanonicalInput(modelInputText, secret),
  };
  const compensation = { toolName: tool.name, toolRevision: tool.revision };
  // A copy, as in prepareCall: a schema that changes its input in place cannot change what was fingerprinted.
  const parsed = tool.input.safeParse(JSON.parse(modelInputText));
  if (!parsed.success) {
    const inputError = new CheckpointError(
      'INVALID_TOOL_INPUT',
      `${what} does not match the tool's schema: ${parsed.error.issues.map((i) => `${i.path.join('.') || '$'}: ${i.message}`).join('; ')}; nothing ran`,
      {
        toolName: tool.name,
        callId: input.callId,
      },
    );
    return { call: { ...common, tool, args: undefined, binding, intentDigest: '' }, compensation, inputError };
  }
  const args = deepFreeze(JSON.parse(canonicalJson(parsed.data, 'arguments')) as JsonValue);
  const digest = intentDigest({ toolName: tool.name, toolRevision: tool.revision, args, target: tool.target?.(args as never) ?? null });
  return { call: { ...common, tool, args, binding, intentDigest: digest }, compensation };
}

/**
 * `canonicalJson(['ttc/compensation/1', originalBindingCallId, generation])`: the binding call id
 * of generation `generation` of the compensation of the call whose binding call id is given.
 * Injective, and never a call's own binding call id (those start with `ttc/call/2`).
 */
export function compensationBindingCallId(originalBindingCallId: string, generation: number): string {
  return canonicalJson(['ttc/compensation/1', originalBindingCallId, generation], 'callId');
}

/**
 * `'ttcc-'` + 64 lowercase hex of SHA-256 over `canonicalJson(['ttc/compensation-key/1', originalKey, generation])`:
 * the compensation's idempotency key, stable across attempts and workers, never the original's
 * (and, with an idempotency key secret, as unpredictable as the original's key it is derived from).
 */
export function compensationIdempotencyKey(originalKey: string, generation: number): string {
  return `ttcc-${sha256Hex(canonicalJson(['ttc/compensation-key/1', originalKey, generation]))}`;
}

/**
 * A view of `store` that sees only the checkpoint of `binding` (any other call reads as absent): what
 * the shared failure and resolution paths (`settleFailedAttempt`, `resolveToolCall`) get for a
 * compensation, since they also look a call up by the original call's address, where the
 * original's own (applied) checkpoint must never be taken for the compensation's.
 */
export function compensationStore(store: CheckpointStore, binding: Pick<Binding, 'namespace' | 'callId'>): CheckpointStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'getByCall') {
        return async (namespace: string, callId: string): Promise<CheckpointRecord | null> =>
          namespace === binding.namespace && callId === binding.callId ? target.getByCall(namespace, callId) : null;
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** @throws {@link CheckpointError} INVALID_ARGUMENT unless an integer from 1 to {@link MAX_COMPENSATION_GENERATION}. */
function compensationGeneration(value: number | undefined): number {
  const generation = value ?? 1;
  if (!Number.isSafeInteger(generation) || generation < 1 || generation > MAX_COMPENSATION_GENERATION) {
    throw new CheckpointError('INVALID_ARGUMENT', `compensationGeneration must be an integer from 1 to ${MAX_COMPENSATION_GENERATION}, got ${JSON.stringify(value)}`, {
      field: 'compensationGeneration',
    });
  }
  return generation;
}

/** The original call's input as `runFencedTool` ran it: no role, no approval check, no delivery by reference. */
function originalCallInput(input: CompensateToolCallInput): FencedToolInput {
  const { role: _role, compensationGeneration: _generation, expectedIntentDigest: _digest, approvalExpiresAt: _expiry, resultByReference: _byReference, ...call } = input;
  return Object.freeze(call);
}

/**
 * The original call's applied outcome from its checkpoint.
 * @throws {@link CheckpointError} NOTHING_TO_COMPENSATE when there is none.
 */
/**
 * Generation `generation` of a compensation runs only after generation − 1 was claimed and did not
 * succeed (its outcome unknown, a person proved it absent, or it failed): a workflow cannot run a
 * compensation again by naming a later generation.
 *
 * @throws {@link CheckpointError} NOTHING_TO_COMPENSATE (`reason: 'compensated'`) when the previous
 *   generation's stored outcome is a success; INVALID_ARGUMENT (`field: 'compensationGeneration'`)
 *   when the previous generation has no checkpoint; the store's codes.
 */
async function assertPreviousGenerationFailed(deps: FencedToolDeps, original: PreparedCall, binding: Binding, generation: number): Promise<void> {
  const previous = await deps.store.getByCall(binding.namespace, compensationBindingCallId(binding.callId, generation - 1));
  const name = `${original.tool.name} call ${JSON.stringify(original.input.callId)}`;
  if (previous === null) {
    throw new CheckpointError('INVALID_ARGUMENT', `${name}: compensation generation ${generation} needs generation ${generation - 1} first, which has no checkpoint; nothing ran`, {
      field: 'compensationGeneration',
    });
  }
  if ((previous.result?.payload as ToolOutcome | undefined)?.ok === true) {
    throw new CheckpointError('NOTHING_TO_COMPENSATE', `${name} was compensated by generation ${generation - 1}; nothing ran`, {
      callId: original.input.callId,
      toolName: original.tool.name,
      status: previous.status,
      reason: 'compensated',
    });
  }
}

function appliedOutcome(original: PreparedCall, record: CheckpointRecord | null): Extract<ToolOutcome, { ok: true }> {
  const name = `${original.tool.name} call ${JSON.stringify(original.input.callId)}`;
  const refuse = (status: string, reason: string): CheckpointError =>
    new CheckpointError('NOTHING_TO_COMPENSATE', `${name} ${reason}; nothing to compensate, nothing ran`, {
      callId: original.input.callId,
      toolName: original.tool.name,
      status,
      reason,
    });
  if (record === null) throw refuse('absent', 'has no checkpoint (it never ran, or ran in another run chain)');
  if (record.result === null || !(record.status === 'completed' || record.status === 'delivering' || record.status === 'delivered')) {
    throw refuse(record.status, `is ${record.status}: its outcome is not stored yet (a person resolves an unknown outcome first)`);
  }
  const outcome = record.result.payload as ToolOutcome;
  if (outcome.ok !== true) throw refuse(record.status, `ended with error ${outcome.error.type}: no effect was applied`);
  return outcome;
}

/** The pseudo-tool a function compensation runs as; `args` is the {@link AppliedEffect}. */
function functionTool(original: ToolDefinition<any>, declared: CompensationByFunction): ToolDefinition<AppliedEffect> {
  return Object.freeze({
    name: compensationToolName(original.name),
    revision: declared.revision,
    input: z.custom<AppliedEffect>(() => true),
    execute: (applied: Readonly<AppliedEffect>, ctx: ToolContext) => declared.execute(applied, ctx),
    lookup: declared.lookup,
    dedupesByKey: declared.dedupesByKey ?? false,
    keyRetentionMs: declared.keyRetentionMs,
    dedupeByIntent: false,
    batch: false,
    callDeadlineMs: declared.callDeadlineMs ?? original.callDeadlineMs,
  });
}

/** `input(applied)` of a tool compensation; a throw is the compensation's INVALID_TOOL_INPUT (`reason` `input-threw`). */
function compensationModelInput(input: (applied: AppliedEffect) => JsonValue, applied: AppliedEffect, what: string): JsonValue {
  try {
    return input(applied);
  } catch (error) {
    if (isCheckpointError(error)) throw error;
    throw new CheckpointError('INVALID_TOOL_INPUT', `${what}: input(applied) threw (${error instanceof Error ? error.message : String(error)}); nothing ran`, {
      reason: 'input-threw',
    });
  }
}
