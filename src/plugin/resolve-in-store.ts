/**
 * A person's step for a fenced activity of a user's own workflow whose outcome is unknown
 * (docs/protocol.md#worker-plugin: "a user's own workflow has no `resolve` update: a paused call
 * there … re-reads the store on each attempt (a person resolves it in the store)"). `agentWorkflow`
 * runs are resolved with its `resolveOutcomeUpdate` (`ttc resolve`) instead.
 *
 * {@link resolveCallInStore} finds the call's checkpoint, refuses anything that is not waiting for
 * a person, and stores the person's outcome with `completeExecution` under the fence the record
 * holds, by one compare-and-swap against the record it read (docs/protocol.md#transitions,
 * #side-stores). The record is left `completed`: the activity's next attempt reads it and delivers
 * it as any stored result (docs/protocol.md#statuses-and-actions: the stored payload, the activity
 * not called). Nothing is ever reset to `ready` and nothing is rerun.
 *
 * Node side (node:os, the stores); workflow code never imports it.
 */
import { hostname, userInfo } from 'node:os';
import { assertIdentifier, assertReason } from '../checkpoint/bounds';
import { parseCallBindingId } from '../checkpoint/call-identity';
import { idempotencyKey } from '../checkpoint/digest';
import { CheckpointError } from '../checkpoint/errors';
import { deciderNameRefusal } from '../checkpoint/visible-text';
import type { CheckpointRecord, JsonValue, Status } from '../checkpoint/types';
import type { CheckpointStore } from '../stores/checkpoint-store';
import type { ToolOutcome } from '../activities/contract/contract';
import { callAddress } from '../activities/fence/prepare-call';
import type { ToolErrorClass } from '../activities/contract/error-classes';
import { resolutionAuditOf, type ResolutionAudit } from '../activities/fence/resolution-audit';
import { resolveUnknownOutcome, STORE_RESOLUTION_POLICY } from '../activities/fence/resolution';
import { DEFAULT_PLUGIN_TENANT } from './options';

/**
 * The failure type a workflow receives for a call resolved `{ failed }` without a `type`: a
 * person settled the call as not applied (or as not to be delivered as a success). Delivered as a
 * non-retryable `ApplicationFailure` of this type by the fence (see `fence-interceptor.ts`).
 */
export const RESOLVED_NOT_APPLIED = 'RESOLVED_NOT_APPLIED' satisfies ToolErrorClass;

/** How many records of a status group a lookup without `runChainId` reads at most (`listByStatus` limit). */
export const RESOLVE_SCAN_LIMIT = 10_000;

/**
 * What a person found out about the call:
 * - `{ applied }`: the effect happened; `applied` is the activity's result, exactly as the
 *   workflow will receive it (any JSON value within the payload bounds of docs/protocol.md#bounds).
 * - `{ failed: { type?, message } }`: the effect did not happen, or must not be delivered as a
 *   success; the workflow receives a non-retryable `ApplicationFailure` with `type` (default
 *   {@link RESOLVED_NOT_APPLIED}; 1 to 128 characters `[A-Za-z][A-Za-z0-9_.-]*`) and `message`
 *   (non-empty, at most 2,048 characters).
 */
export type StoreResolution = { readonly applied: JsonValue } | { readonly failed: { readonly type?: string; readonly message: string } };

/** Which call to resolve and how. */
export interface ResolveCallInStoreArgs {
  /** The Temporal namespace the workflow runs in (the first half of the binding namespace `<namespace>/<tenant>`). */
  readonly namespace: string;
  readonly workflowId: string;
  /** The call id the fence used: `act-<seq>` (or `act-<seq>@<runId>` after continue-as-new) from the call header, `activity-<activityId>` without it. */
  readonly callId: string;
  /**
   * The workflow's `firstExecutionRunId`. @default looked up: the one call with this workflow id
   * and call id among the store's executing and uncertain records (then among the others, to say
   * why it is refused); more than one is refused as ambiguous.
   */
  readonly runChainId?: string;
  /** The plugin's `tenant` option. @default 'default' */
  readonly tenant?: string;
  readonly resolution: StoreResolution;
  /** Why the person decided so (audit text kept in the record; non-empty, at most 2,048 characters). */
  readonly reason: string;
  /** Who decided (kept in the record; see `deciderNameRefusal`: 1 to 256 characters, none invisible, not blank). @default `<OS user>@<host name>` */
  readonly resolvedBy?: string;
  /**
   * The checkpoint revision the person decided on (`ttc pending` shows it, with the run chain;
   * `runChainId` is required with it). A record that moved on since (another claim, a renewal, a
   * result) is refused (FENCE_CONFLICT, `stale-decision`): a decision about one claim never
   * settles another. @default not checked (any unfinished claim)
   */
  readonly expectedRevision?: number;
}

/** Options of {@link resolveCallInStore}; give the values the worker's plugin uses. */
export interface ResolveCallInStoreOptions {
  /** The time of every decision. @default () => new Date() */
  readonly clock?: () => Date;
  /** The plugin's `reconcileMarginMs`: an executing claim is resolvable only after its deadline plus this, ms. @default 5,000 */
  readonly reconcileMarginMs?: number;
  /** The plugin's `maxPayloadBytes`: UTF-8 JSON bytes of the stored payload. @default 65,536, at most 10 MiB */
  readonly maxPayloadBytes?: number;
  /** The plugin's `idempotencyKeySecret`, only to report the call's idempotency key as the activity saw it. @default none (`ttc2-…` keys) */
  readonly idempotencyKeySecret?: Uint8Array;
}

/**
 * Who resolved a call in the store, why and when: stored in the result payload as its
 * `resolvedInStore` member (see `../activities/fence/resolution-audit`). `by` is always set here.
 */
export type StoreResolutionAudit = ResolutionAudit;

/** The stored payload of a call resolved in the store: a tool outcome plus its audit. */
export type ResolvedOutcome = ToolOutcome & { readonly resolvedInStore: StoreResolutionAudit };

/** What {@link resolveCallInStore} did. */
export interface ResolvedInStore {
  /** The record as written: `completed`, revision `previous.revision + 1`. */
  readonly record: CheckpointRecord;
  /** The record as it was read (`executing` or `uncertain`). */
  readonly previous: CheckpointRecord;
  readonly workflowId: string;
  readonly callId: string;
  readonly runChainId: string;
  readonly toolName: string;
  readonly toolRevision: string;
  /** The key the activity was given (see {@link ResolveCallInStoreOptions.idempotencyKeySecret}). */
  readonly idempotencyKey: string;
  /** When the unfinished claim was made, ISO-8601 UTC. */
  readonly claimedAt: string;
  /** Why the outcome was recorded as unknown (`uncertain`), else null. */
  readonly uncertainReason: string | null;
  /** The payload stored; the activity's next attempt delivers it. */
  readonly outcome: ResolvedOutcome;
}

/**
 * Resolves the call of a user's workflow whose outcome is unknown, in the store
 * (docs/protocol.md#worker-plugin).
 *
 * Finds the call's checkpoint by `getByCall(<namespace>/<tenant>, callBindingId({ runChainId,
 * workflowId, callId }))` (the binding the fence interceptor builds, `activities/fence/prepare-call.ts`)
 * or, without `runChainId`, by listing; then accepts only:
 * - `uncertain`: an attempt recorded that the outcome is unknown;
 * - `executing` past its settle time (the claim's `deadlineAt`, or claim time + 30 s when it
 *   declared none, plus `reconcileMarginMs`): its holder's request can no longer be outstanding
 *   (docs/protocol.md#overlapping-attempts).
 *
 * It then stores `{ ok: true, output: applied, receipt: null, resolvedInStore }` or
 * `{ ok: false, error: { type, message }, resolvedInStore }` through `completeExecution` under the
 * record's own fence, by one compare-and-swap from the record it read: a record changed since
 * (the holder finished or renewed its claim, another person resolved it) is never overwritten.
 *
 * @returns what was stored and about which call (see {@link ResolvedInStore}).
 * @throws {@link CheckpointError} (`details.refusal` names the case; nothing was written):
 *   - INVALID_ARGUMENT: a bad argument (`details.field`); `not-found`: no checkpoint for the call;
 *     `ambiguous`: without `runChainId`, the call exists in more than one run chain;
 *   - INVALID_TRANSITION: `never-claimed` (`ready`: the call never ran, there is nothing to
 *     resolve); `already-settled` (`completed`, `delivering`, `delivered`: a result is stored);
 *   - RECONCILE_PENDING (`may-be-running`): `executing` before its settle time, its holder may
 *     still be running; `details.retryAfterMs` is the time left;
 *   - FENCE_CONFLICT (`lost-race`): the compare-and-swap lost, the record changed after it was
 *     read (`details.nowStatus`); (`stale-decision`): the record is not at `expectedRevision`;
 *   - PAYLOAD_TOO_LARGE, NOT_JSON: `applied` is not bounded JSON;
 *   - the store's codes (STORE_UNAVAILABLE, STORE_OUTCOME_UNKNOWN, a quarantine code for a row
 *     that fails to parse or verify, which is left as it is).
 */
export async function resolveCallInStore(store: CheckpointStore, args: ResolveCallInStoreArgs, options: ResolveCallInStoreOptions = {}): Promise<ResolvedInStore> {
  const request = checkArgs(args, options);
  const { record, runChainId } = await findCall(store, request);
  const what = `call ${JSON.stringify(request.callId)} of workflow ${JSON.stringify(request.workflowId)} (${record.binding.toolName} revision ${record.binding.toolRevision}, run chain ${runChainId})`;
  const done = await resolveUnknownOutcome(
    { store, clock: options.clock, reconcileMarginMs: options.reconcileMarginMs, maxPayloadBytes: options.maxPayloadBytes },
    {
      record,
      kind: 'applied' in request.resolution ? 'applied' : 'not-applied',
      outcome: () => storedOutcome(request.resolution),
      by: request.resolvedBy,
      reason: request.reason,
      ...(request.expectedRevision === undefined ? {} : { expectedRevision: request.expectedRevision }),
      what,
    },
    STORE_RESOLUTION_POLICY,
  );
  // STORE_RESOLUTION_POLICY refuses a settled record: whatever returns was written now.
  const execution = record.execution!;
  return {
    record: done.record,
    previous: record,
    workflowId: request.workflowId,
    callId: request.callId,
    runChainId,
    toolName: record.binding.toolName,
    toolRevision: record.binding.toolRevision,
    idempotencyKey: idempotencyKey(
      {
        namespace: record.binding.namespace,
        runChainId,
        workflowId: request.workflowId,
        callId: request.callId,
        toolName: record.binding.toolName,
        toolRevision: record.binding.toolRevision,
      },
      options.idempotencyKeySecret,
    ),
    claimedAt: execution.claimedAt,
    uncertainReason: execution.uncertainReason,
    outcome: done.record.result!.payload as unknown as ResolvedOutcome,
  };
}

/**
 * The audit of a record resolved by {@link resolveCallInStore} (its payload's `resolvedInStore`),
 * or null for any other record. Reads only; never throws.
 */
export function storeResolutionOf(record: CheckpointRecord | null): StoreResolutionAudit | null {
  return resolutionAuditOf(record);
}

/** The payload `resolution` stores, without its audit. */
function storedOutcome(resolution: StoreResolution): ToolOutcome {
  return 'applied' in resolution
    ? { ok: true, output: resolution.applied, receipt: null }
    : { ok: false, error: { type: resolution.failed.type ?? RESOLVED_NOT_APPLIED, message: resolution.failed.message } };
}

/** The arguments, checked, with defaults filled. */
interface Request {
  readonly namespace: string;
  readonly workflowId: string;
  readonly callId: string;
  readonly runChainId: string | undefined;
  readonly tenant: string;
  readonly resolution: StoreResolution;
  readonly reason: string;
  readonly resolvedBy: string;
  readonly expectedRevision: number | undefined;
}

const FAILURE_TYPE = /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/;

function checkArgs(args: ResolveCallInStoreArgs, options: ResolveCallInStoreOptions): Request {
  if (typeof args !== 'object' || args === null) throw invalid('args', 'resolveCallInStore needs { namespace, workflowId, callId, resolution, reason }');
  const { namespace, workflowId, callId, runChainId, tenant = DEFAULT_PLUGIN_TENANT, resolution, reason, resolvedBy = defaultResolvedBy(), expectedRevision } = args;
  if (expectedRevision !== undefined && !(Number.isSafeInteger(expectedRevision) && expectedRevision >= 0))
    throw invalid('expectedRevision', `expectedRevision must be a non-negative integer, got ${String(expectedRevision)}`);
  assertIdentifier(namespace, 'namespace');
  assertIdentifier(workflowId, 'workflowId');
  assertIdentifier(callId, 'callId');
  if (runChainId !== undefined) assertIdentifier(runChainId, 'runChainId');
  // Records of two run chains that reuse a workflow id go through the same revisions: a revision
  // names the checkpoint a person saw only together with its run chain.
  if (expectedRevision !== undefined && runChainId === undefined)
    throw invalid('runChainId', 'expectedRevision names a checkpoint only with its run chain: give runChainId as well (`ttc pending` shows both)');
  if (typeof tenant !== 'string' || tenant.length === 0 || tenant.length > 256) throw invalid('tenant', 'tenant must be a non-empty string of at most 256 characters');
  assertReason(reason, 'reason');
  const byRefusal = deciderNameRefusal(resolvedBy);
  if (byRefusal !== null) {
    throw invalid('resolvedBy', `resolvedBy: ${byRefusal}`);
  }
  const margin = options.reconcileMarginMs;
  if (margin !== undefined && !(Number.isSafeInteger(margin) && margin >= 0))
    throw invalid('reconcileMarginMs', `reconcileMarginMs must be a non-negative integer (ms), got ${String(margin)}`);
  return { namespace, workflowId, callId, runChainId, tenant, resolution: checkResolution(resolution), reason, resolvedBy, expectedRevision };
}

function checkResolution(resolution: unknown): StoreResolution {
  const r = (typeof resolution === 'object' && resolution !== null ? resolution : {}) as Record<string, unknown>;
  const applied = Object.hasOwn(r, 'applied');
  const failed = Object.hasOwn(r, 'failed');
  if (applied === failed || Object.keys(r).length !== 1) {
    throw invalid('resolution', 'resolution must be exactly one of { applied: <the result JSON> } or { failed: { type?, message } }');
  }
  if (applied) return { applied: r.applied as JsonValue };
  const f = (typeof r.failed === 'object' && r.failed !== null ? r.failed : {}) as Record<string, unknown>;
  if (Object.keys(f).some((k) => k !== 'type' && k !== 'message')) throw invalid('resolution.failed', 'resolution.failed takes only type and message');
  assertReason(f.message, 'resolution.failed.message');
  if (f.type !== undefined && (typeof f.type !== 'string' || !FAILURE_TYPE.test(f.type))) {
    throw invalid('resolution.failed.type', `resolution.failed.type must match ${FAILURE_TYPE.source}, got ${JSON.stringify(f.type)}`);
  }
  return { failed: { ...(f.type === undefined ? {} : { type: f.type as string }), message: f.message } };
}

/** The call's record and its run chain; refuses a call that has none or is ambiguous. */
async function findCall(store: CheckpointStore, request: Request): Promise<{ record: CheckpointRecord; runChainId: string }> {
  const context = { namespace: request.namespace, workflowId: request.workflowId, runId: request.runChainId ?? 'unknown', attempt: 1 };
  const who = `call ${JSON.stringify(request.callId)} of workflow ${JSON.stringify(request.workflowId)} in ${request.namespace}/${request.tenant}`;
  if (request.runChainId !== undefined) {
    // The binding the fence interceptor builds for this call (see `callAddress`).
    const address = callAddress({ tenant: request.tenant, callId: request.callId, runChainId: request.runChainId }, context);
    const record = await store.getByCall(address.namespace, address.callId);
    if (record === null)
      throw refusal(
        'INVALID_ARGUMENT',
        'not-found',
        `${who}, run chain ${request.runChainId}, has no checkpoint: it was never scheduled through the fence (check the ids, the tenant and the namespace)`,
        { field: 'callId' },
      );
    return { record, runChainId: request.runChainId };
  }
  // The namespace part does not depend on the run chain.
  const { namespace } = callAddress({ tenant: request.tenant, callId: request.callId }, context);
  const matching = async (statuses: readonly Status[]): Promise<{ record: CheckpointRecord; runChainId: string }[]> =>
    (await store.listByStatus(statuses, { limit: RESOLVE_SCAN_LIMIT })).flatMap((record) => {
      const id = record.binding.namespace === namespace ? parseCallBindingId(record.binding.callId) : null;
      return id !== null && id.workflowId === request.workflowId && id.callId === request.callId ? [{ record, runChainId: id.runChainId }] : [];
    });
  let found = await matching(['executing', 'uncertain']);
  if (found.length === 0) found = await matching(['ready', 'completed', 'delivering', 'delivered']);
  if (found.length === 0) {
    throw refusal(
      'INVALID_ARGUMENT',
      'not-found',
      `${who} has no checkpoint among the store's records (at most ${RESOLVE_SCAN_LIMIT.toLocaleString('en-US')} per status group read); check the ids, the tenant and the namespace, or name the run chain`,
      { field: 'callId' },
    );
  }
  if (found.length > 1) {
    const chains = found.map((f) => `${f.runChainId} (${f.record.status})`).join(', ');
    throw refusal('INVALID_ARGUMENT', 'ambiguous', `${who} exists in ${found.length} run chains: ${chains}; name the run chain (the workflow's first execution run id)`, {
      field: 'runChainId',
    });
  }
  return found[0]!;
}

function refusal(code: 'INVALID_ARGUMENT', kind: string, message: string, details: Record<string, string | number | null>): CheckpointError {
  return new CheckpointError(code, message, { refusal: kind, ...details });
}

function invalid(field: string, message: string): CheckpointError {
  return new CheckpointError('INVALID_ARGUMENT', message, { field });
}

/** Who decides when a person's command names no one: `<OS user>@<host name>` (`unknown` when the OS cannot say). */
export function defaultResolvedBy(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return 'unknown';
  }
}
