/**
 * One business action across runs (docs/protocol.md#business-keys): a tool that declares
 * `businessKey` claims each call under a dedupe key made from the tenant, the tool and that key,
 * held for the tool's window. A call whose claim meets another run's holder takes that call's
 * identity (as `./intent-dedupe` does within a run) and is answered from its checkpoint; a call
 * with the same key but other arguments or another revision is refused before anything is written.
 */
import { parseCallBindingId, type CallIdentity } from '../../checkpoint/call-identity';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { sha256Hex } from '../../checkpoint/digest';
import { CheckpointError } from '../../checkpoint/errors';
import type { CheckpointRecord } from '../../checkpoint/types';
import type { ToolDefinition } from '../tools/define-tool';
import { takeIdentity, type AdoptableCall } from './intent-dedupe';

/** Most characters of a business key a tool returns. */
export const BUSINESS_KEY_MAX_LENGTH = 1_024;

/** The call of another run (or workflow) whose checkpoint answered a call: its workflow, run chain and call id. */
export type AnsweredBy = CallIdentity;

/**
 * The business key `tool.businessKey(args)` returns for a call, checked: a well-formed (no lone
 * surrogate), non-empty string of at most {@link BUSINESS_KEY_MAX_LENGTH} characters.
 *
 * @throws {@link CheckpointError} INVALID_TOOL_INPUT (`details.reason` `business-key`) when the
 *   function throws or returns anything else; nothing is written.
 */
export function businessKeyOf(tool: { readonly name: string; businessKey?(args: never): string }, args: unknown, callId: string): string {
  let key: unknown;
  try {
    key = tool.businessKey!(args as never);
  } catch (error) {
    throw refusal(tool.name, callId, `businessKey threw: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof key !== 'string' || key.length === 0 || key.length > BUSINESS_KEY_MAX_LENGTH || !key.isWellFormed()) {
    throw refusal(
      tool.name,
      callId,
      `businessKey must return a non-empty string of at most ${BUSINESS_KEY_MAX_LENGTH} characters, got ${typeof key === 'string' ? `${key.length} characters` : typeof key}`,
    );
  }
  return key;
}

function refusal(toolName: string, callId: string, message: string): CheckpointError {
  return new CheckpointError('INVALID_TOOL_INPUT', `${toolName} call ${JSON.stringify(callId)}: ${message}; nothing ran`, { toolName, callId, reason: 'business-key' });
}

/**
 * The dedupe key of a business-keyed call: `business1-` + hex SHA-256 of the canonical JSON of
 * the binding namespace (`<Temporal namespace>/<tenant>`), the tool name and the business key.
 * Two calls share it exactly when they name the same business action of the same tool and tenant,
 * whatever their run.
 */
export function businessDedupeKey(namespace: string, toolName: string, businessKey: string): string {
  return `business1-${sha256Hex(canonicalJson(['ttc/business-key/1', namespace, toolName, businessKey]))}`;
}

/**
 * `call` under the identity of `holder`, the first call with its business key (any run of the
 * tenant): its binding, key call id and idempotency key.
 *
 * @throws {@link CheckpointError} IDEMPOTENCY_CONFLICT when the holder ran other arguments (its
 *   input fingerprint covers its validated arguments) or another tool revision: `details` name the
 *   first call (`firstWorkflowId`, `firstRunChainId`, `firstCallId`); nothing of `call` was written.
 *   BINDING_CONFLICT when the holder is not a call of this namespace and tool.
 */
export function adoptFirstCall<Call extends AdoptableCall>(call: Call, holder: CheckpointRecord, secret: Uint8Array | undefined): Call {
  const mine = call.binding;
  const theirs = holder.binding;
  const first = parseCallBindingId(theirs.callId);
  if (first === null || theirs.namespace !== mine.namespace || theirs.toolName !== mine.toolName) {
    throw new CheckpointError(
      'BINDING_CONFLICT',
      `${call.tool.name} call ${JSON.stringify(call.input.callId)}: the checkpoint holding its business key is not a call of the same tenant and tool; nothing ran`,
      { callId: call.input.callId, toolName: call.tool.name },
    );
  }
  const differs =
    theirs.toolRevision !== mine.toolRevision ? `under tool revision ${theirs.toolRevision}` : theirs.inputFingerprint !== mine.inputFingerprint ? 'with other arguments' : null;
  if (differs !== null) {
    throw new CheckpointError(
      'IDEMPOTENCY_CONFLICT',
      `${call.tool.name} call ${JSON.stringify(call.input.callId)}: its business key was used within its window by workflow ${first.workflowId} (run chain ${first.runChainId}), call ${JSON.stringify(first.callId)}, ${differs}; nothing ran`,
      { callId: call.input.callId, toolName: call.tool.name, firstWorkflowId: first.workflowId, firstRunChainId: first.runChainId, firstCallId: first.callId },
    );
  }
  return takeIdentity(call, theirs, first, secret);
}

/**
 * The call of another run or workflow whose identity `call` took (a business key's first call),
 * or undefined when `call` runs as itself or as a call of its own run.
 */
export function answeredBy(call: { readonly binding: { readonly callId: string }; readonly runChainId: string; readonly workflowId: string }): AnsweredBy | undefined {
  const parts = parseCallBindingId(call.binding.callId);
  if (parts === null || (parts.runChainId === call.runChainId && parts.workflowId === call.workflowId)) return undefined;
  return parts;
}

/** `result` with `answeredBy` set when {@link answeredBy} names the call whose identity `call` took. */
export function withAnsweredBy<R extends object>(result: R, call: Parameters<typeof answeredBy>[0]): R & { answeredBy?: AnsweredBy } {
  const by = answeredBy(call);
  return by === undefined ? result : { ...result, answeredBy: by };
}

/**
 * What a call answered by another run's call does while that call's outcome is not stored: it
 * never claims or reconciles it (the first run does, or a person resolving either call), so a
 * person's proof about the first call always speaks of that run's own claim.
 * `settleAtMs`: the first call's settle time (`settleTime` of `./fence-deps`), ms since the epoch.
 * @returns RECONCILE_PENDING (retryable) until the first call's settle time, or after it when the
 *   tool can look the effect up or repeat its key (the first run reconciles); else OUTCOME_UNKNOWN.
 */
export function awaitFirstCall(
  call: AdoptableCall & { readonly tool: ToolDefinition<any>; readonly runChainId: string; readonly workflowId: string },
  settleAtMs: number,
  nowMs: number,
): CheckpointError {
  const first = answeredBy(call)!;
  const where = `${call.tool.name} call ${JSON.stringify(call.input.callId)}`;
  const of = `workflow ${first.workflowId} (run chain ${first.runChainId}), call ${JSON.stringify(first.callId)}`;
  const details = { callId: call.input.callId, toolName: call.tool.name, firstWorkflowId: first.workflowId, firstRunChainId: first.runChainId, firstCallId: first.callId };
  const settleAt = settleAtMs;
  const reconcilable = call.tool.lookup !== undefined || call.tool.dedupesByKey === true;
  if (nowMs < settleAt || reconcilable) {
    const retryAfterMs = Math.max(settleAt - nowMs, Math.min(call.tool.callDeadlineMs ?? 30_000, 10_000));
    return new CheckpointError('RECONCILE_PENDING', `${where}: its business key's first call, ${of}, has no stored outcome yet; its run settles it, and this call waits`, {
      ...details,
      retryAfterMs: Math.ceil(retryAfterMs),
    });
  }
  return new CheckpointError(
    'OUTCOME_UNKNOWN',
    `${where}: its business key's first call, ${of}, has an unknown outcome that cannot be looked up; the run waits for a person (resolve either call)`,
    { ...details, toolRevision: call.binding.toolRevision, idempotencyKey: call.idempotencyKey, reason: 'the first call of its business key did not finish' },
  );
}
