/**
 * "Nothing applied" belongs to the call, not to one attempt (docs/protocol.md#nothing-applied). A
 * failure of an attempt may reach the workflow as a nothing-applied code only with evidence that no
 * attempt of the call ever held a claim and none ever will: this is the first attempt and it sent
 * no claim, or the call's checkpoint (found by namespace and call id, whatever tool revision or
 * input fingerprint it was made under) is absent or `ready` and this attempt stored the refusal as
 * the call's result (so an earlier attempt that is still about to claim loses its
 * compare-and-swap). Otherwise a stored result is delivered, an unfinished claim waits for its
 * settle time and then pauses the run (unless this attempt failed retryably: a store it could not
 * reach taught it nothing, so the next attempt reconciles), and a store that cannot be read leaves
 * the call to the next attempt.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { sanitizeReason } from '../../checkpoint/bounds';
import { CheckpointError, isCheckpointError } from '../../checkpoint/errors';
import { fingerprintInput, idempotencyKey } from '../../checkpoint/digest';
import { completeAndDeliver, composeTransitions, createClaimed, redeliver } from '../../checkpoint/compose';
import { assertBinding } from '../../checkpoint/record';
import { claimExecution, reclaimExecution } from '../../checkpoint/transitions';
import type { Binding, CheckpointRecord, TransitionResult } from '../../checkpoint/types';
import { NOTHING_APPLIED_CODES, type AppliedByRun, type FencedToolInput, type FencedToolResult, type ToolOutcome } from '../contract/contract';
import { DEFAULT_RECONCILE_MARGIN_MS, fenceNow, settleTime, transitionTime, type AttemptEvidence, type FencedToolDeps } from './fence-deps';
import { unstorableResult } from './unstorable-result';
import type { LookupResult } from '../tools/define-tool';
import { callAddress, intentCallId, type AttemptContext, type PreparedCall } from './prepare-call';
import { adoptedFrom, bindingIdempotencyKey } from './intent-dedupe';
import { appliedByRunOf, builtInAnotherRun } from './occurrence';
import { withAnsweredBy } from './business-key';
import { parseCallBindingId } from '../../checkpoint/call-identity';

/** What locates a call's checkpoint: its input, the attempt's context and, when it could be prepared, the call. */
export interface CallLocator {
  readonly input: FencedToolInput;
  readonly context: AttemptContext;
  /** Undefined when the call could not be prepared (unknown tool, invalid input). */
  readonly call: PreparedCall | undefined;
}

/** Everything known about a failed attempt. */
export interface FailedAttempt extends CallLocator {
  readonly evidence: AttemptEvidence;
  /** Whether `input` passed the input schema (so its `occurrences.builtInRun` can be trusted). @default false */
  readonly inputParsed?: boolean;
  /** A fresh delivery fence for delivering a result stored under another binding. */
  readonly deliveryId: string;
}

/**
 * Settles a failed attempt by the call's evidence.
 *
 * @returns the stored result, delivered, when the call's checkpoint holds one (a deploy changed
 *   the tool's revision or schema, or removed it, after the result was stored).
 * @throws `error` itself when it is not a nothing-applied code, or when nothing applied is proven;
 *   {@link CheckpointError} OUTCOME_UNKNOWN when an earlier claim is unfinished and this worker
 *   cannot reconcile it; RECONCILE_PENDING (retryable) when this attempt sent a claim or the
 *   store cannot say (`details.cause` names the original code).
 */
export async function settleFailedAttempt(deps: FencedToolDeps, failed: FailedAttempt, error: unknown): Promise<FencedToolResult> {
  if (!isCheckpointError(error) || !NOTHING_APPLIED_CODES.includes(error.code)) throw error;
  const { evidence, context } = failed;
  if (evidence.claimSent) throw claimUnsettled(error, 'this attempt sent a claim for the call');
  const seen = evidence.seen;
  let record: CheckpointRecord | null;
  // The call's adoption record, when an earlier attempt adopted a holder: its delivery names the holder's run.
  let adoption: CheckpointRecord | null = null;
  try {
    // Always asked, also on attempt 1: an activity reset restarts the attempt count.
    if (seen !== null && seen.status !== 'ready' && adoptedFrom(seen) === null) record = seen;
    else ({ record, adoption } = await findCallRecords(deps, failed));
  } catch (readError) {
    // The store cannot say. Only a first attempt that sent no claim knows that nothing was applied.
    if (firstAttemptOfCall(failed) && (seen === null || seen.status === 'ready')) throw error;
    throw claimUnsettled(error, `the call's checkpoint cannot be read (${readError instanceof Error ? readError.message : String(readError)})`);
  }
  // The call it adopted is gone (pruned): whether that call applied its effect is unknown.
  if (adoption !== null && record === adoption) throw adoptedCallGone(failed, adoptedFrom(adoption)!);
  for (let round = 0; round < 3; round += 1) {
    // A call this one adopted is another call, whose own attempts settle it: never closed with this call's refusal.
    if (adoption !== null && record?.status === 'ready') throw claimUnsettled(error, 'the call whose checkpoint answers it has not finished');
    if (record === null || record.status === 'ready') {
      if (firstAttemptOfCall(failed)) throw error;
      if (error.retryable) throw claimUnsettled(error, `attempt ${context.attempt} cannot rule out an earlier attempt that has not claimed yet`);
      // An earlier attempt of this call may still be about to claim: make "nothing applied" durable first.
      try {
        record = await closeCall(deps, failed, record, error);
      } catch (storeError) {
        // Not durable, so not proven: a claim about to land may still run the tool (docs/protocol.md#nothing-applied).
        throw claimUnsettled(error, `its refusal could not be stored (${storeError instanceof Error ? storeError.message : String(storeError)})`);
      }
      if (record === null) throw error;
      // Another attempt wrote first. Its adoption record answers this call as the call it adopted does.
      const holder = adoptedFrom(record);
      if (holder !== null) {
        adoption = record;
        record = (await deps.store.getByCall(record.binding.namespace, holder)) ?? null;
        if (record === null) throw adoptedCallGone(failed, holder);
      }
      continue;
    }
    // A fenced user activity's call id is its workflow's command sequence number (`act-N`), which a
    // workflow reset reuses for whatever the reset run schedules there: only the same call gets its result.
    if (deps.executeIsUserActivity === true && !isSameCall(failed, record)) throw differentCall(failed, record, error);
    if (record.status === 'executing' || record.status === 'uncertain') {
      const reconciled = await reconcileEarlierRevision(deps, failed, record);
      if (reconciled !== null) return reconciled;
      throw unfinishedClaim(deps, failed, record, error);
    }
    try {
      return await deliverStored(deps, failed, record, failed.call?.appliedByRun ?? appliedByRunOf(adoption));
    } catch (deliveryError) {
      // The result is stored; whatever kept this attempt from delivering it, the next attempt delivers it.
      if (isCheckpointError(deliveryError, 'RECONCILE_PENDING')) throw deliveryError;
      throw claimUnsettled(error, `its stored result could not be delivered (${deliveryError instanceof Error ? deliveryError.message : String(deliveryError)})`);
    }
  }
  throw claimUnsettled(error, 'its checkpoint kept changing under this attempt');
}

/**
 * Whether this attempt is the call's first: attempt 1, in the run that built its input (a call
 * dispatched again in a reset run starts at attempt 1 there, after attempts of the discarded run).
 */
function firstAttemptOfCall(failed: FailedAttempt): boolean {
  // A parsed input only (also of a call that could not be prepared: its tool gone, its schema changed): a malformed one names no run.
  return failed.context.attempt === 1 && !(failed.inputParsed === true && builtInAnotherRun(failed.input, failed.context.runId));
}

/**
 * Whether `record` was made for this call, whatever tool revision or schema it was made under: the
 * same tool name and the same input (its fingerprint with this worker's idempotency key secret, or
 * without one: a secret added or removed since). Applied to fenced user activities, whose call ids
 * a workflow reset reuses: a record there made for another activity or other arguments is another
 * call, and its result is never this call's (docs/protocol.md#decide-and-validate). A secret
 * changed from one value to another mid-call cannot be told apart from other arguments: that call
 * fails closed. (Agent tool calls keep delivering a result stored under another binding,
 * docs/protocol.md#nothing-applied: their call ids come from the model turn recorded in history,
 * not from sequence numbers.)
 */
function isSameCall(failed: FailedAttempt, record: CheckpointRecord): boolean {
  if (record.binding.toolName !== failed.input.toolName) return false;
  const secret = failed.context.idempotencyKeySecret;
  try {
    const fingerprints = [fingerprintInput(failed.input.input, secret), ...(secret === undefined ? [] : [fingerprintInput(failed.input.input)])];
    return fingerprints.includes(record.binding.inputFingerprint);
  } catch {
    return false;
  }
}

/** The call id holds another call's checkpoint: nothing of it is delivered or reconciled here (non-retryable BINDING_CONFLICT). */
function differentCall(failed: FailedAttempt, record: CheckpointRecord, error: CheckpointError): CheckpointError {
  return new CheckpointError(
    'BINDING_CONFLICT',
    `call ${JSON.stringify(failed.input?.callId)} already has a checkpoint for another call (${record.binding.toolName} revision ${record.binding.toolRevision}, other arguments or another idempotency key secret; a workflow reset reuses activity sequence numbers): its result is not this call's, and this call is not run (${error.code})`,
    {
      callId: String(failed.input?.callId),
      toolName: failed.input.toolName,
      storedToolName: record.binding.toolName,
      storedToolRevision: record.binding.toolRevision,
      status: record.status,
      cause: error.code,
    },
  );
}

/**
 * A claim left unfinished under an earlier revision of this call's tool, reconciled by this
 * revision's `lookup` when the tool declares `lookupFindsEarlierRevisions`
 * (docs/protocol.md#nothing-applied, the settle time rules of a reconciliation): only once the
 * claim's settle time has passed (read before the lookup starts), with the lookup asked for the
 * idempotency key the earlier revision's attempt sent. A find takes the claim over and stores the
 * effect as the call's result under the record's own binding, delivered in the same write (`source:
 * 'lookup'`, `storedUnder` the earlier revision).
 *
 * @returns the delivered result; null when this does not apply (no such declaration, another
 *   tool or other arguments, the same revision, a batch tool, before the settle time) or the
 *   lookup found nothing: the caller waits or pauses ({@link unfinishedClaim}).
 * @throws {@link CheckpointError} RECONCILE_PENDING when the lookup failed or answered neither
 *   found nor not found, or another attempt changed the checkpoint first.
 */
async function reconcileEarlierRevision(deps: FencedToolDeps, failed: FailedAttempt, record: CheckpointRecord): Promise<FencedToolResult | null> {
  const { call } = failed;
  const tool = call?.tool;
  if (call === undefined || tool?.lookupFindsEarlierRevisions !== true || tool.lookup === undefined || tool.batch === true) return null;
  if (record.binding.toolName !== tool.name || record.binding.toolRevision === tool.revision || !isSameCall(failed, record)) return null;
  // Read before the lookup: a lookup that finds nothing proves nothing before the settle time, and one that finds the effect does not take over a live holder.
  const now = fenceNow(deps);
  if (now < settleTime(record, tool, deps.reconcileMarginMs ?? DEFAULT_RECONCILE_MARGIN_MS)) return null;
  const key = keyOfRecord(failed, record.binding);
  const where = `${tool.name} call ${JSON.stringify(failed.input.callId)}`;
  let found: LookupResult;
  try {
    const activity = Context.current();
    found = await tool.lookup({
      idempotencyKey: key,
      intentDigest: call.intentDigest,
      attemptId: call.attemptId,
      callId: failed.input.callId,
      workflowId: call.workflowId,
      signal: activity.cancellationSignal,
      heartbeat: (details?: unknown) => activity.heartbeat(details),
    });
  } catch (lookupError) {
    throw new CheckpointError(
      'RECONCILE_PENDING',
      `the lookup of ${where}, claimed under revision ${record.binding.toolRevision}, failed (${sanitizeReason(lookupError instanceof Error ? lookupError.message : String(lookupError), 'no message')}); the next attempt looks again`,
      { callId: failed.input.callId, toolName: tool.name, idempotencyKey: key },
    );
  }
  if (found?.found !== true && found?.found !== false) {
    throw new CheckpointError('RECONCILE_PENDING', `the lookup of ${where} answered neither { found: true, output } nor { found: false }; the next attempt looks again`, {
      callId: failed.input.callId,
      toolName: tool.name,
      idempotencyKey: key,
    });
  }
  if (!found.found) return null;
  const at = transitionTime(deps, record);
  const complete = (claimed: CheckpointRecord, result: ToolOutcome): TransitionResult =>
    completeAndDeliver(claimed, { attemptId: call.attemptId, deliveryId: failed.deliveryId, at, result, maxPayloadBytes: deps.maxPayloadBytes });
  const takeOverAndStore = (result: ToolOutcome): TransitionResult =>
    composeTransitions(reclaimExecution(record, { attemptId: call.attemptId, previousAttemptId: record.execution!.attemptId, at, deadlineAt: at }), (claimed) =>
      complete(claimed, result),
    );
  const outcome: ToolOutcome = { ok: true, output: found.output, receipt: found.receipt ?? null };
  let settled: TransitionResult;
  try {
    settled = takeOverAndStore(outcome);
  } catch (error) {
    if (!isCheckpointError(error, 'PAYLOAD_TOO_LARGE') && !isCheckpointError(error, 'NOT_JSON')) throw error;
    settled = takeOverAndStore(unstorableResult(error, outcome, (candidate) => takeOverAndStore(candidate)));
  }
  failed.evidence.claimSent = true;
  if (!(await deps.store.compareAndSwap(settled.expectedRevision, settled.next, record))) {
    throw new CheckpointError('RECONCILE_PENDING', `another attempt changed the checkpoint of ${where} while this one reconciled it; the next attempt reads what it left`, {
      callId: failed.input.callId,
      toolName: tool.name,
      idempotencyKey: key,
    });
  }
  const { binding } = settled.next;
  return {
    callId: failed.input.callId,
    toolName: binding.toolName,
    toolRevision: binding.toolRevision,
    source: 'lookup',
    outcome: settled.next.result!.payload as ToolOutcome,
    idempotencyKey: key,
    intentDigest: null,
    storedUnder: { toolName: binding.toolName, toolRevision: binding.toolRevision },
  };
}

/**
 * An earlier claim of the call is unfinished and this attempt cannot reconcile it: wait for its
 * settle time, then pause. An attempt that failed retryably (the store could not be read or
 * written: STORE_UNAVAILABLE; a transient failure) has learned nothing about the claim, and the
 * next attempt may reconcile it (lookup, same-key repeat): it fails RECONCILE_PENDING, and only
 * the end of the retries pauses the run.
 */
function unfinishedClaim(deps: FencedToolDeps, failed: FailedAttempt, record: CheckpointRecord, error: CheckpointError): CheckpointError {
  const now = fenceNow(deps);
  const settleAt = settleTime(record, failed.call?.tool ?? deps.tools.get(record.binding.toolName), deps.reconcileMarginMs ?? DEFAULT_RECONCILE_MARGIN_MS);
  const where = `${record.binding.toolName} revision ${record.binding.toolRevision}`;
  if (now < settleAt) {
    // A live holder (another revision during a rolling deploy) may still finish and store its result.
    return new CheckpointError(
      'RECONCILE_PENDING',
      `call ${JSON.stringify(failed.input?.callId)} is claimed under ${where} and may still be running until ${new Date(settleAt).toISOString()}; this attempt (${error.code}) waits for it`,
      {
        callId: String(failed.input?.callId),
        toolName: record.binding.toolName,
        toolRevision: record.binding.toolRevision,
        idempotencyKey: keyOfClaim(failed, record.binding),
        cause: error.code,
        retryAfterMs: Math.ceil(settleAt - now),
      },
    );
  }
  if (error.retryable)
    return claimUnsettled(error, `it is claimed under ${where} (${record.status} since ${record.updatedAt}) and this attempt could not settle it; the next attempt reconciles it`);
  return new CheckpointError(
    'OUTCOME_UNKNOWN',
    `call ${JSON.stringify(failed.input?.callId)} was claimed under ${where} (${record.status} since ${record.updatedAt}), and this attempt cannot reconcile it: ${error.message}; the run waits for a person`,
    {
      callId: String(failed.input?.callId),
      toolName: record.binding.toolName,
      toolRevision: record.binding.toolRevision,
      idempotencyKey: keyOfClaim(failed, record.binding),
      status: record.status,
      cause: error.code,
    },
  );
}

/**
 * The idempotency key the unfinished claim's request was sent under, for the person who looks
 * the effect up at the provider: this attempt's key when the claim was made under its binding
 * (a compensation's key derives from its original's, so only its prepared call knows it),
 * otherwise the key of the record's own tool and revision ({@link keyOfRecord}); null when no
 * key can be derived from the input.
 */
function keyOfClaim(failed: FailedAttempt, binding: Binding): string | null {
  const call = failed.call;
  if (call !== undefined && call.binding.callId === binding.callId && call.binding.toolName === binding.toolName && call.binding.toolRevision === binding.toolRevision)
    return call.idempotencyKey;
  try {
    return keyOfRecord(failed, binding);
  } catch {
    return null; // an input the key cannot be derived from; the pause still names the call, tool and revision
  }
}

/**
 * Makes a refusal durable before a later attempt reports it (docs/protocol.md#nothing-applied): in
 * one write, claims the call (inserting its checkpoint when absent, or from its `ready` record)
 * under this attempt's fence with no time to send anything (its deadline is its claim time), stores
 * the refusal `{ ok: false, error: { type, message } }` as the call's result and records its
 * delivery (claimExecution, completeExecution, claimDelivery, completeDelivery composed:
 * docs/protocol.md#cost). An earlier attempt that was about to claim then loses its insert or
 * compare-and-swap and never runs the tool.
 *
 * @returns null when the refusal is stored (or no checkpoint can be made for this input, in which
 *   case no attempt can claim one either); otherwise the record another attempt left meanwhile.
 */
async function closeCall(deps: FencedToolDeps, failed: FailedAttempt, found: CheckpointRecord | null, error: CheckpointError): Promise<CheckpointRecord | null> {
  const { store } = deps;
  const attemptId = failed.call?.attemptId ?? `attempt-${failed.context.attempt}-${randomUUID()}`;
  const refusal: ToolOutcome = { ok: false, error: { type: error.code, message: sanitizeReason(error.message, error.code) } };
  const refuse = (claimed: CheckpointRecord, at: string): TransitionResult => completeAndDeliver(claimed, { attemptId, deliveryId: failed.deliveryId, at, result: refusal });
  if (found === null) {
    const binding = refusalBinding(failed);
    if (binding === null) return null;
    const at = transitionTime(deps);
    const { created, record } = await store.createIfAbsent(refuse(createClaimed(binding, { attemptId, at, deadlineAt: at }), at).next);
    return created ? null : record;
  }
  const at = transitionTime(deps, found);
  const closed = composeTransitions(claimExecution(found, { attemptId, at, deadlineAt: at }), (claimed) => refuse(claimed, at));
  if (!(await store.compareAndSwap(closed.expectedRevision, closed.next, found))) return store.getByCall(found.binding.namespace, found.binding.callId);
  return null;
}

/** A binding for the refusal of a call that could not be prepared: the tool name the model asked for, revision `refused`, the model's input. Null when the input cannot make one. */
function refusalBinding(failed: FailedAttempt): Binding | null {
  if (failed.call !== undefined) return failed.call.binding;
  try {
    const address = callAddress(failed.input, failed.context);
    const binding: Binding = {
      namespace: address.namespace,
      callId: address.callId,
      toolName: failed.input.toolName,
      toolRevision: 'refused',
      inputFingerprint: fingerprintInput(failed.input.input, failed.context.idempotencyKeySecret),
    };
    assertBinding(binding);
    return binding;
  } catch {
    return null;
  }
}

/**
 * The call's checkpoint by namespace and call id, whatever its tool revision or input
 * fingerprint: under this attempt's binding call id, the model's call id, and the intent call id
 * a `dedupeByIntent` tool would use (which needs only the tool name and the model's input, so it
 * is found even when the tool is gone). Where an adoption record holds the call's address, the
 * checkpoint of the call it adopted (docs/protocol.md#dedupe-keys). Null when there is none.
 */
export async function findCallRecord(deps: FencedToolDeps, where: CallLocator): Promise<CheckpointRecord | null> {
  return (await findCallRecords(deps, where)).record;
}

/** {@link findCallRecord}, with the adoption record that holds the call's address when there is one. */
export async function findCallRecords(deps: FencedToolDeps, where: CallLocator): Promise<{ record: CheckpointRecord | null; adoption: CheckpointRecord | null }> {
  const { input, context, call } = where;
  const callIds = new Set<string>();
  if (call !== undefined) callIds.add(call.binding.callId);
  callIds.add(callAddress(input, context).callId);
  try {
    callIds.add(callAddress(input, context, intentCallId(input.toolName, input.input, input.intentGeneration ?? 0)).callId);
  } catch {
    // input that cannot be hashed has no intent checkpoint
  }
  const namespace = callAddress(input, context).namespace;
  for (const callId of callIds) {
    const record = await deps.store.getByCall(namespace, callId);
    if (record === null) continue;
    const holder = adoptedFrom(record);
    if (holder === null) return { record, adoption: null };
    return { record: (await deps.store.getByCall(namespace, holder)) ?? record, adoption: record };
  }
  return { record: null, adoption: null };
}

/** Delivers a stored result under the record's own binding (it may differ from this worker's), naming the discarded call that applied it when one did. */
async function deliverStored(deps: FencedToolDeps, failed: FailedAttempt, record: CheckpointRecord, appliedByRun: AppliedByRun | undefined): Promise<FencedToolResult> {
  const at = (r: CheckpointRecord): string => transitionTime(deps, r);
  let current = record;
  if (current.status === 'delivering' || current.status === 'completed') {
    const delivery = redeliver(current, { deliveryId: failed.deliveryId, at: at(current) });
    if (!(await deps.store.compareAndSwap(delivery.expectedRevision, delivery.next, current))) throw claimUnsettled(null, 'its delivery changed under this attempt');
    current = delivery.next;
  }
  const { binding } = current;
  const { call } = failed;
  // The same tool, revision and arguments: also the record of a call this one adopted (a business key's first call).
  const sameTool =
    call !== undefined &&
    call.binding.toolName === binding.toolName &&
    call.binding.toolRevision === binding.toolRevision &&
    call.binding.inputFingerprint === binding.inputFingerprint;
  const result: FencedToolResult = {
    callId: failed.input.callId,
    toolName: binding.toolName,
    toolRevision: binding.toolRevision,
    source: 'store',
    outcome: current.result!.payload as ToolOutcome,
    idempotencyKey: sameTool && call.binding.callId === binding.callId ? call.idempotencyKey : keyOfRecord(failed, binding),
    intentDigest: sameTool ? call.intentDigest : null,
    ...(sameTool ? {} : { storedUnder: { toolName: binding.toolName, toolRevision: binding.toolRevision } }),
    ...(appliedByRun !== undefined ? { appliedByRun } : {}),
  };
  return call === undefined ? result : withAnsweredBy(result, { binding, runChainId: call.runChainId, workflowId: call.workflowId });
}

/** The call this one adopted has no checkpoint any more: OUTCOME_UNKNOWN (the run pauses for a person), as an attempt that meets it does (`./adoption`). */
function adoptedCallGone(failed: FailedAttempt, holder: string): CheckpointError {
  return new CheckpointError(
    'OUTCOME_UNKNOWN',
    `call ${JSON.stringify(failed.input.callId)} was answered by call ${holder}, whose checkpoint is gone; whether its effect was applied is unknown`,
    { callId: String(failed.input.callId) },
  );
}

function claimUnsettled(error: CheckpointError | null, why: string): CheckpointError {
  const cause = error === null ? 'STORE_OUTCOME_UNKNOWN' : error.code;
  return new CheckpointError(
    'RECONCILE_PENDING',
    `the call may have been claimed (${why}), so ${error === null ? 'this attempt' : `${error.code}`} is not "nothing applied"; the next attempt reads the checkpoint and decides${error === null ? '' : `: ${error.message}`}`,
    { cause },
    { cause: error ?? undefined },
  );
}

/**
 * The idempotency key a call's checkpoint was made under (its own tool and revision), derived
 * without the tool: the key call id is the prepared call's when the binding call ids agree,
 * otherwise the model's call id, or the intent call id when the record is keyed by intent.
 */
export function keyOfRecord(where: CallLocator, binding: Binding): string {
  // The binding call id names the run chain, workflow and key call id the key was derived from.
  const parts = parseCallBindingId(binding.callId);
  if (parts !== null) return bindingIdempotencyKey(binding, parts, where.context.idempotencyKeySecret);
  const address = callAddress(where.input, where.context);
  let keyCallId = where.input.callId;
  if (where.call?.binding.callId === binding.callId) keyCallId = where.call.keyCallId;
  else if (binding.callId !== address.callId) {
    try {
      const intent = intentCallId(where.input.toolName, where.input.input, where.input.intentGeneration ?? 0);
      if (callAddress(where.input, where.context, intent).callId === binding.callId) keyCallId = intent;
    } catch {
      // not an intent-keyed record
    }
  }
  return idempotencyKey(
    {
      namespace: binding.namespace,
      runChainId: address.runChainId,
      workflowId: where.context.workflowId,
      callId: keyCallId,
      toolName: binding.toolName,
      toolRevision: binding.toolRevision,
    },
    where.context.idempotencyKeySecret,
  );
}
