/**
 * Whether a person may resolve a call whose outcome is unknown, from the record as read
 * (docs/protocol.md#reconciliation: "the run pauses for a person, who resolves the call";
 * docs/protocol.md#overlapping-attempts for the settle time). Pure: no I/O, no clock (the caller
 * passes `now` and the claim's settle time). Acted on by `src/activities/fence/resolution.ts`, the one
 * place that stores a person's resolution for `agentWorkflow` and for the worker plugin.
 */
import type { CheckpointRecord, Status } from './types';

/** The statuses a person may resolve: an unfinished claim whose holder never stored a result. */
export type ResolvableStatus = Extract<Status, 'executing' | 'uncertain'>;

/**
 * The rules on which the two surfaces differ, chosen by each caller explicitly:
 * - `executingBeforeSettle`: `refuse` an `executing` record before its settle time (its holder's
 *   request may still be outstanding: `may-be-running`), or `allow` resolving it at once;
 * - `settled`: `refuse` a record that already holds a result (`already-settled`), or `return` it
 *   as stored (the resolution is idempotent: its retry delivers what is stored).
 */
export interface ResolutionRules {
  readonly executingBeforeSettle: 'refuse' | 'allow';
  readonly settled: 'refuse' | 'return';
}

/** The refusals {@link decideResolution} returns; the store is never written for any of them. */
export type ResolutionRefusal =
  /** The record moved on from the revision the person decided on (FENCE_CONFLICT). */
  | { readonly kind: 'stale-decision'; readonly seenRevision: number }
  /** `ready`: never claimed, the call never ran, there is nothing to resolve (INVALID_TRANSITION). */
  | { readonly kind: 'never-claimed' }
  /** `completed`, `delivering`, `delivered`: a result is stored (INVALID_TRANSITION). */
  | { readonly kind: 'already-settled' }
  /** `executing` before its settle time: its holder may still be running (RECONCILE_PENDING); `retryAfterMs` is the time left. */
  | { readonly kind: 'may-be-running'; readonly settleAt: number; readonly retryAfterMs: number };

/** The kind of every refusal of a resolution, the lost compare-and-swap (`lost-race`) included. */
export type ResolutionRefusalKind = ResolutionRefusal['kind'] | 'lost-race';

/** What to do with the record a person resolves. */
export type ResolutionDecision =
  /** Store the person's outcome under the record's own claim (`attemptId`), from `fromStatus`. */
  | { readonly action: 'resolve'; readonly fromStatus: ResolvableStatus; readonly attemptId: string }
  /** The record already holds a result and the rules say to return it as stored. */
  | { readonly action: 'return-settled' }
  | { readonly action: 'refuse'; readonly refusal: ResolutionRefusal };

/**
 * Decides a person's resolution of `record`.
 * @param at.now the decision time, ms since the epoch.
 * @param at.settleAt the settle time of the record's claim, ms since the epoch (its deadline plus
 *   the reconcile margin); read only for an `executing` record.
 * @param at.expectedRevision the revision the person decided on; checked first when given.
 * @returns `resolve` for `uncertain`, and for `executing` past its settle time (or at once under
 *   `executingBeforeSettle: 'allow'`); `return-settled` or `already-settled` for a stored result;
 *   `never-claimed` for `ready`. Never throws; does not mutate `record`.
 */
export function decideResolution(
  record: CheckpointRecord,
  at: { readonly now: number; readonly settleAt: () => number; readonly expectedRevision?: number },
  rules: ResolutionRules,
): ResolutionDecision {
  if (at.expectedRevision !== undefined && record.revision !== at.expectedRevision) return refuse({ kind: 'stale-decision', seenRevision: at.expectedRevision });
  switch (record.status) {
    case 'ready':
      return refuse({ kind: 'never-claimed' });
    case 'uncertain':
      return { action: 'resolve', fromStatus: 'uncertain', attemptId: record.execution!.attemptId };
    case 'executing': {
      if (rules.executingBeforeSettle === 'refuse') {
        const settleAt = at.settleAt();
        if (at.now < settleAt) return refuse({ kind: 'may-be-running', settleAt, retryAfterMs: Math.ceil(settleAt - at.now) });
      }
      return { action: 'resolve', fromStatus: 'executing', attemptId: record.execution!.attemptId };
    }
    default:
      return rules.settled === 'return' ? { action: 'return-settled' } : refuse({ kind: 'already-settled' });
  }
}

function refuse(refusal: ResolutionRefusal): ResolutionDecision {
  return { action: 'refuse', refusal };
}
