/**
 * Keeps an agent run's search attributes (`TtcNeedsPerson`, `TtcWaitingCalls`; see
 * ./search-attributes.ts) in step with the calls waiting for a person, by
 * `upsertSearchAttributes` (workflow sandbox).
 *
 * Safety rule: upserting a search attribute the namespace has not registered fails the workflow
 * task on every retry, and runs started before this code must replay unchanged. So a run upserts
 * only when it was started with `TtcNeedsPerson` set (the client sets it only on a namespace that
 * has both registered: `startAgentRun` in src/client.ts; continue-as-new carries it; the empty
 * `TtcWaitingCalls` the client also sets is dropped by the server, so it cannot be the sign), and
 * only behind the {@link RUN_SEARCH_ATTRIBUTES_PATCH} marker, asked for where the first upsert
 * would go: a run that a worker of older code took past that point (during a deploy) replays
 * without the marker and never upserts. A run that never waits for a person, or was started
 * without the attributes, upserts nothing and records no marker.
 *
 * @see docs/visibility.md
 */
import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { TTC_NEEDS_PERSON, TTC_WAITING_CALLS, waitingCallsValue } from './search-attributes';

/** Patch id: the run upserts its search attributes (runs without the marker never do). */
export const RUN_SEARCH_ATTRIBUTES_PATCH = 'ttc-run-search-attributes';

/** What the run's search attributes say, as last set (by the client at start, or by an upsert). */
interface Published {
  readonly needsPerson: boolean;
  readonly waitingCalls: readonly string[];
}

/** The run's search attributes; {@link publish} upserts only what changed, and only when allowed. */
export class RunSearchAttributes {
  /** The patch decision, asked once at the first change to publish (null: not asked yet). */
  private patchedIn: boolean | null = null;

  private constructor(
    /** Whether the run was started with `TtcNeedsPerson` set (see the module docstring). */
    readonly startedWith: boolean,
    private published: Published,
  ) {}

  /**
   * Reads the attributes the run was started with (`workflowInfo().typedSearchAttributes`, from
   * its start event, so the same on replay). Call once, at the start of the workflow function.
   */
  static fromStart(): RunSearchAttributes {
    const attributes = workflowInfo().typedSearchAttributes;
    const needsPerson = attributes.get(TTC_NEEDS_PERSON);
    return new RunSearchAttributes(needsPerson !== undefined, { needsPerson: needsPerson ?? false, waitingCalls: attributes.get(TTC_WAITING_CALLS) ?? [] });
  }

  /**
   * Sets `TtcNeedsPerson` to whether `waitingCallIds` is non-empty and `TtcWaitingCalls` to
   * `waitingCallsValue(waitingCallIds)`, in one upsert, when either differs from what the run's
   * attributes say now. Does nothing when they are equal, when the run was started without them,
   * or when the run's history passed its first change without the patch marker.
   *
   * @param waitingCallIds the run's calls awaiting approval or paused on an unknown outcome, in order
   */
  publish(waitingCallIds: readonly string[]): void {
    if (!this.startedWith) return;
    const next: Published = { needsPerson: waitingCallIds.length > 0, waitingCalls: waitingCallsValue(waitingCallIds) };
    if (next.needsPerson === this.published.needsPerson && sameIds(next.waitingCalls, this.published.waitingCalls)) return;
    // Asked once and remembered: patched() is false only while replaying a history without the marker.
    this.patchedIn ??= patched(RUN_SEARCH_ATTRIBUTES_PATCH);
    if (!this.patchedIn) return;
    upsertSearchAttributes([
      { key: TTC_NEEDS_PERSON, value: next.needsPerson },
      { key: TTC_WAITING_CALLS, value: [...next.waitingCalls] },
    ]);
    this.published = next;
  }
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}
