/**
 * The patch ids of the agent workflow: each marks in a run's history a change of the commands the
 * workflow issues, so that a run started before the change replays as it ran. Never renamed or
 * removed while such runs may be replayed.
 */

/**
 * Patch id: a run with a `compensateOn` policy stops on a result its policy names and
 * compensates its applied effects when it stops by cancel, abandon or that result.
 */
export const COMPENSATION_PATCH = 'ttc-compensation';

/**
 * Patch id: each tool call is scheduled as the tool's own activity type. Runs whose
 * history has no marker (started before) schedule `runFencedTool`, which workers keep registered.
 */
export const TOOL_ACTIVITY_TYPES_PATCH = 'ttc-tool-activity-types';

/**
 * Patch id: the conversation and large tool outputs by reference in the side store,
 * concurrent calls of a turn, turn-scoped ids for reused call ids, continue-as-new. Runs whose
 * history has no marker keep the old command sequence.
 */
export const LONG_RUNS_PATCH = 'ttc-long-runs';

/** Patch id: a call needing approval is refused when the worker did not report its validated arguments. */
export const APPROVAL_ARGUMENTS_PATCH = 'ttc-approval-shows-validated-arguments';

/** Patch id: the calls of a turn beyond its bounds are refused (`turn-bounds.ts`). */
export const TURN_BOUNDS_PATCH = 'ttc-turn-bounds';

/** Patch id: calls refused before they run take nothing of `budget.maxToolCalls` (see `refusedBeforeRunning`). */
export const REFUSED_CALLS_UNCOUNTED_PATCH = 'ttc-refused-calls-uncounted';

/**
 * Patch id: a call another run's call answered (a business key's first call) is reported with
 * `answeredBy`, the model reads its output with a note saying so, and the run never compensates it.
 */
export const ANSWERED_BY_PATCH = 'ttc-answered-by-another-run';

/**
 * Patch id: the conversation log forks per run (`conversation.ts`): a run writes its messages to
 * its own run's log and reads the earlier ones where the runs of its history wrote them, so a
 * reset run never writes over the discarded branch (docs/deploying.md#resetting-a-run).
 */
export const CONVERSATION_BRANCHES_PATCH = 'ttc-conversation-branches';

/**
 * Patch id: a reset run (and a run continued from one) addresses its calls as `<id>@<reset run id>`, and each
 * call of a tool without its own dedupe key claims an occurrence of its intent, so a reset run's
 * call that means an action the discarded branch applied is answered from its checkpoint
 * (docs/deploying.md#resetting-a-run).
 */
export const RESET_SAFE_CALLS_PATCH = 'ttc-reset-safe-calls';
