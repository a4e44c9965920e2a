/**
 * A person's resolution of a call whose outcome is unknown, stored: the one implementation behind
 * `agentWorkflow`'s `resolveToolCall` activity (a call, a compensation, a batch item) and the
 * worker plugin's `resolveCallInStore` (docs/protocol.md#reconciliation, #worker-plugin). The
 * caller finds the record; {@link resolveUnknownOutcome} decides whether it may be resolved
 * (`decideResolution`, `../../checkpoint/resolution`), builds the stored outcome with its audit
 * (`./resolution-audit`) and writes it under the record's own fence by one compare-and-swap
 * against the record as read: a record changed since is never overwritten. Nothing is ever reset
 * to `ready` and nothing is rerun.
 */
import { completeAndDeliver } from '../../checkpoint/compose';
import { CheckpointError } from '../../checkpoint/errors';
import { decideResolution, type ResolutionRefusal, type ResolutionRules, type ResolvableStatus } from '../../checkpoint/resolution';
import { completeExecution } from '../../checkpoint/transitions';
import type { CheckpointRecord } from '../../checkpoint/types';
import type { ToolOutcome } from '../contract/contract';
import type { ToolDefinition } from '../tools/define-tool';
import { DEFAULT_RECONCILE_MARGIN_MS, fenceNow, settleTime, transitionTime, type FencedToolDeps } from './fence-deps';
import { resolutionAuditOf, withResolutionAudit, type ResolutionAudit } from './resolution-audit';

export type { ResolutionRefusalKind, ResolutionRules, ResolvableStatus } from '../../checkpoint/resolution';

/**
 * The rules where the surfaces differ (see `ResolutionRules`), plus what a lost compare-and-swap
 * is: `refuse` (FENCE_CONFLICT `lost-race`, final: the person reads the record again) or `retry`
 * (STORE_OUTCOME_UNKNOWN, retryable: the retry reads the record again and, under
 * `settled: 'return'`, returns what won).
 */
export interface ResolutionPolicy extends ResolutionRules {
  readonly lostRace: 'refuse' | 'retry';
}

/** The worker plugin's rules (`resolveCallInStore`): every case that is not waiting for a person is refused. */
export const STORE_RESOLUTION_POLICY: ResolutionPolicy = Object.freeze({ executingBeforeSettle: 'refuse', settled: 'refuse', lostRace: 'refuse' });

/**
 * `agentWorkflow`'s rules (`resolveToolCall` of a call, a compensation, a batch item `applied`):
 * an `applied` resolution stores no new effect, so an `executing` claim may be resolved at once;
 * the activity is idempotent (a settled record is delivered as stored) and a lost race is retried
 * by Temporal (the retry delivers what won). The person's decision is checked for staleness by the
 * workflow (its state version), not by revision here.
 */
export const AGENT_RESOLUTION_POLICY: ResolutionPolicy = Object.freeze({ executingBeforeSettle: 'allow', settled: 'return', lostRace: 'retry' });

/**
 * `agentWorkflow`'s rules for a batch item proven `absent`: as {@link AGENT_RESOLUTION_POLICY},
 * but an `executing` item is refused before its settle time, since the item then runs again under
 * a new key while its holder's request may still land (docs/protocol.md#overlapping-attempts).
 */
export const AGENT_ABSENT_RESOLUTION_POLICY: ResolutionPolicy = Object.freeze({ ...AGENT_RESOLUTION_POLICY, executingBeforeSettle: 'refuse' });

/** What the fence needs to resolve: the store, the clock, the margin and the payload bound of the worker. */
export type ResolutionDeps = Pick<FencedToolDeps, 'store' | 'clock' | 'reconcileMarginMs' | 'maxPayloadBytes'>;

/** A person's resolution of the record `record`. */
export interface UnknownOutcomeResolution {
  /** The record as the caller found it (any status). */
  readonly record: CheckpointRecord;
  /** `applied` (the effect happened) or `not-applied`; kept in the audit. */
  readonly kind: ResolutionAudit['kind'];
  /** The outcome to store, without its audit; called only once the record is resolvable (it may throw INVALID_ARGUMENT). */
  readonly outcome: (fromStatus: ResolvableStatus) => ToolOutcome;
  /** Who decided; null when the decision names no one. */
  readonly by: string | null;
  readonly reason: string;
  /** Set: the result and its delivery in one write (`completeAndDeliver`, the record is left `delivered`). Unset: `completeExecution`, left `completed` for the activity's next attempt to deliver. */
  readonly deliveryId?: string;
  /** The revision the person decided on: a record at another revision is refused (`stale-decision`). @default not checked */
  readonly expectedRevision?: number;
  /** The call's tool, for the settle time of a claim that declared no deadline. @default the default call deadline */
  readonly tool?: ToolDefinition<any>;
  /** The call in messages, e.g. `call "act-1"`. */
  readonly what: string;
  /** Added to the details of every refusal (e.g. `{ callId }`). */
  readonly details?: Readonly<Record<string, string | number | null>>;
}

/** What {@link resolveUnknownOutcome} did. */
export type UnknownOutcomeResolved =
  /** Stored: `record` as written (revision `previous.revision + 1`), `previous` as read. */
  | { readonly resolved: true; readonly record: CheckpointRecord; readonly previous: CheckpointRecord; readonly fromStatus: ResolvableStatus }
  /** Already settled and returned as stored (`settled: 'return'`); nothing written. */
  | { readonly resolved: false; readonly record: CheckpointRecord };

/**
 * Stores a person's resolution of `request.record` under the fence it holds, by one
 * compare-and-swap from the record as read; the payload is `outcome(fromStatus)` with its
 * `resolvedInStore` audit (`./resolution-audit`: kind, by, reason, `at` = the record's new
 * `updatedAt`, fromStatus, the claim's attemptId).
 *
 * @throws {@link CheckpointError} (nothing written; `details.refusal` names the case, see
 *   `ResolutionRefusalKind`, with `request.details`):
 *   - FENCE_CONFLICT `stale-decision` (`seenRevision`, `nowRevision`, `nowStatus`);
 *   - INVALID_TRANSITION `never-claimed` (`ready`) and `already-settled` (`fromStatus`) under `settled: 'refuse'`;
 *   - RECONCILE_PENDING `may-be-running` (`retryAfterMs`) under `executingBeforeSettle: 'refuse'`;
 *   - FENCE_CONFLICT `lost-race` (`fromStatus`, `nowStatus`, `expectedRevision`) under `lostRace: 'refuse'`,
 *     STORE_OUTCOME_UNKNOWN `lost-race` under `lostRace: 'retry'`;
 *   - what `outcome` throws; PAYLOAD_TOO_LARGE, NOT_JSON for an outcome over the bounds; the store's codes.
 */
export async function resolveUnknownOutcome(deps: ResolutionDeps, request: UnknownOutcomeResolution, policy: ResolutionPolicy): Promise<UnknownOutcomeResolved> {
  const { record, what } = request;
  const margin = deps.reconcileMarginMs ?? DEFAULT_RECONCILE_MARGIN_MS;
  const decision = decideResolution(
    record,
    {
      now: fenceNow(deps),
      settleAt: () => settleTime(record, request.tool, margin),
      ...(request.expectedRevision === undefined ? {} : { expectedRevision: request.expectedRevision }),
    },
    policy,
  );
  if (decision.action === 'return-settled') return { resolved: false, record };
  if (decision.action === 'refuse') throw refusalError(record, decision.refusal, what, request.details);
  const { fromStatus, attemptId } = decision;
  const at = transitionTime(deps, record);
  const result = withResolutionAudit(request.outcome(fromStatus), { kind: request.kind, by: request.by, reason: request.reason, at, fromStatus, attemptId });
  const done =
    request.deliveryId === undefined
      ? completeExecution(record, { attemptId, at, result, maxPayloadBytes: deps.maxPayloadBytes })
      : completeAndDeliver(record, { attemptId, deliveryId: request.deliveryId, at, result, maxPayloadBytes: deps.maxPayloadBytes });
  if (await deps.store.compareAndSwap(done.expectedRevision, done.next, record)) return { resolved: true, record: done.next, previous: record, fromStatus };
  const now = await deps.store.getByCall(record.binding.namespace, record.binding.callId).catch(() => null);
  const details = { ...request.details, refusal: 'lost-race', fromStatus: record.status, nowStatus: now?.status ?? null, expectedRevision: record.revision };
  if (policy.lostRace === 'retry') throw new CheckpointError('STORE_OUTCOME_UNKNOWN', `${what} changed while being resolved; retry`, details);
  throw new CheckpointError(
    'FENCE_CONFLICT',
    `${what}: the checkpoint changed after it was read (revision ${record.revision}, ${record.status}; now ${now === null ? 'unreadable' : `revision ${now.revision}, ${now.status}${describeResolution(now)}`}); nothing was written`,
    details,
  );
}

/** The refusal as the error a caller throws (see {@link resolveUnknownOutcome}). */
function refusalError(record: CheckpointRecord, refusal: ResolutionRefusal, what: string, extra: UnknownOutcomeResolution['details']): CheckpointError {
  const details = { ...extra, refusal: refusal.kind };
  switch (refusal.kind) {
    case 'stale-decision':
      return new CheckpointError(
        'FENCE_CONFLICT',
        `${what}: the decision was made on checkpoint revision ${refusal.seenRevision}, but the checkpoint is now at revision ${record.revision} (${record.status}${record.execution === null ? '' : ` under ${record.execution.attemptId} since ${record.execution.claimedAt}`}${describeResolution(record)}); nothing was written: read it again and decide on what it holds now`,
        { ...details, seenRevision: refusal.seenRevision, nowRevision: record.revision, nowStatus: record.status },
      );
    case 'never-claimed':
      return new CheckpointError('INVALID_TRANSITION', `${what} is ready: it was never claimed, so it never ran and there is nothing to resolve (its next attempt runs it)`, {
        ...details,
        fromStatus: 'ready',
      });
    case 'already-settled':
      return new CheckpointError('INVALID_TRANSITION', `${what} is ${record.status}: its result is already stored${describeResolution(record)}; the activity delivers it`, {
        ...details,
        fromStatus: record.status,
      });
    case 'may-be-running':
      return new CheckpointError(
        'RECONCILE_PENDING',
        `${what} is executing under ${record.execution!.attemptId} since ${record.execution!.claimedAt}; its holder may still be running until ${new Date(refusal.settleAt).toISOString()} (its claim's deadline plus the margin), so it cannot be resolved before then`,
        { ...details, retryAfterMs: refusal.retryAfterMs, fromStatus: 'executing' },
      );
  }
}

/** `, resolved in the store as … by … (reason)` for a record a person resolved, else ''. */
export function describeResolution(record: CheckpointRecord): string {
  const audit = resolutionAuditOf(record);
  return audit === null ? '' : ` (resolved in the store as ${audit.kind} by ${audit.by ?? 'an unnamed person'} at ${audit.at}: ${audit.reason})`;
}
