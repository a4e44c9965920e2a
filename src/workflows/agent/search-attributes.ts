/**
 * The agent run's search attributes ("Temporal visibility"): what Temporal's
 * visibility store knows about a run without asking it, so `pending`, the console and
 * `temporal workflow list --query 'TtcNeedsPerson = true'` find the runs waiting for a person.
 *
 * - `TtcNeedsPerson` (Bool): true while at least one call of the run awaits approval or is paused
 *   on an unknown outcome;
 * - `TtcWaitingCalls` (KeywordList): those calls' ids (see {@link waitingCallsValue} for its bound).
 *
 * Sandbox-safe (imports only `@temporalio/common` and a pure helper), so the workflow, the client and the dev
 * server share one definition. A namespace must have both registered before a run may set them:
 * see docs/visibility.md.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { utf8Length } from './conversation';

/** Bool: the run has a call waiting for a person (approval or an unknown outcome). */
export const TTC_NEEDS_PERSON = defineSearchAttributeKey('TtcNeedsPerson', SearchAttributeType.BOOL);

/** KeywordList: the ids of the run's calls awaiting approval or paused on an unknown outcome. */
export const TTC_WAITING_CALLS = defineSearchAttributeKey('TtcWaitingCalls', SearchAttributeType.KEYWORD_LIST);

/** Both keys, in the order they are registered and documented. */
export const RUN_SEARCH_ATTRIBUTES = [TTC_NEEDS_PERSON, TTC_WAITING_CALLS] as const;

/**
 * Most UTF-8 JSON bytes the `TtcWaitingCalls` value may take. Temporal refuses a search
 * attribute value over `limit.searchAttributesSizeOfValue` (2,048 bytes by default) and, as that
 * refusal fails the workflow task on every retry, the run would be stuck: the list stays well below.
 */
export const MAX_WAITING_CALLS_BYTES = 1_536;

/**
 * The `TtcWaitingCalls` value for these call ids: the ids in order, as many as fit in
 * {@link MAX_WAITING_CALLS_BYTES} as a JSON array (an id that does not fit is left out; the run's
 * status query always has them all, and `TtcNeedsPerson` stays true). Pure.
 */
export function waitingCallsValue(callIds: readonly string[]): string[] {
  const value: string[] = [];
  let bytes = 2; // []
  for (const id of callIds) {
    const more = utf8Length(JSON.stringify(id)) + (value.length > 0 ? 1 : 0);
    if (bytes + more > MAX_WAITING_CALLS_BYTES) continue;
    value.push(id);
    bytes += more;
  }
  return value;
}
