/**
 * What the model reads when a tool call fails. Everything the agent workflow
 * puts into a tool message goes to the model vendor, so failures the fence, the worker, the
 * store or the workflow itself produce reach the model as a fixed, short sentence per failure
 * type: never the store's file path, user, host or database, a driver's text, or the tools a
 * worker has. The full text stays for operators in the run's status and result (`reason`,
 * `outcome`; `ttc show`) and in the worker and workflow logs.
 *
 * What the model reads as written (bounded):
 * - a tool's own error result (`{ ok: false, error }` whose type the tool chose, e.g.
 *   `BUSINESS_REJECTION`, `PERMISSION_DENIED`): the tool author wrote that message for the model;
 * - `INVALID_TOOL_INPUT` and `TOOL_REJECTED`: the schema check of the model's own arguments (its
 *   paths and the tool's schema messages, which the model's tool spec already holds) and a
 *   rejection the tool classified;
 * - a person's rejection reason (`rejectCallUpdate`: documented as shown to the model);
 * - `TOO_MANY_TOOL_CALLS` and `TURN_INPUT_TOO_LARGE`: the workflow's own sentence with the turn's
 *   counts and bounds (see `turn-bounds.ts`).
 *
 * Pure and sandbox-safe.
 */
import { NOTHING_APPLIED_CODES } from '../../activities/contract/contract';

/** The error the model reads in a failed call's tool message: `{ error: { type, message } }`. */
export interface ModelToolError {
  /** The failure type: a `CheckpointErrorCode`, a tool error class or the tool's own type. */
  readonly type: string;
  readonly message: string;
}

/**
 * The sentence the model reads per failure type the fence, the worker, the store or the
 * workflow produce. Every one of them means nothing was applied, except the two result
 * failures in {@link RESULT_FAILURE_MESSAGES}.
 */
export const MODEL_ERROR_MESSAGES: Readonly<Record<string, string>> = {
  UNKNOWN_TOOL: 'no tool of this name is available; nothing ran',
  INVALID_ARGUMENT: 'the call could not be prepared; nothing ran',
  STORE_UNAVAILABLE: 'the call could not be recorded, so it was not run; nothing was applied (it may work later)',
  BINDING_CONFLICT: 'this call id is already bound to a different call; nothing ran',
  APPROVAL_MISMATCH: 'the call no longer matches what a person approved; nothing ran',
  APPROVAL_EXPIRED: 'the approval of the call expired before it could run; nothing ran',
  TOOL_TRANSIENT: "the tool's service was unavailable; nothing was applied (it may work later)",
  TRANSIENT_EXHAUSTED: "the tool's service stayed unavailable until the call's deadline; nothing was applied (it may work later)",
  DUPLICATE_CALL_ID: 'this tool-call id was already used in this conversation; the call was not run',
  PAYLOAD_TOO_LARGE: 'the arguments of the call are too large; nothing ran',
  NOT_JSON: 'the arguments of the call are not JSON; nothing ran',
  NOT_PINNED: 'this tool or tenant is not served here; nothing ran',
  APPROVAL_REQUIRED: 'this tool runs only after a person approves the call; nothing ran',
  IDEMPOTENCY_CONFLICT: 'another run already used this business key with other arguments; nothing ran',
  RESET_OF_CONTINUED_RUN: 'this run was reset to a point before it continued as new, which is refused; nothing ran',
  DISCARDED_BY_RESET: 'this call was asked for before the run was reset and had not started; nothing ran, ask again if it is still needed',
};

/** The sentence for a failure type the table does not name (nothing was applied). */
export const MODEL_ERROR_FALLBACK = 'the call could not be run; nothing was applied';

/** A stored result the fence replaced because the tool's result could not be stored (the tool ran). */
const RESULT_FAILURE_MESSAGES: Readonly<Record<string, string>> = {
  PAYLOAD_TOO_LARGE: 'the tool ran, but its result is too large to deliver',
  NOT_JSON: 'the tool ran, but its result is not JSON and cannot be delivered',
};

/** Failure types whose message the model reads as written (see the module comment). */
const READ_AS_WRITTEN: ReadonlySet<string> = new Set(['INVALID_TOOL_INPUT', 'TOOL_REJECTED', 'TOO_MANY_TOOL_CALLS', 'TURN_INPUT_TOO_LARGE']);

/**
 * Error-result types the fence itself stores: a durable refusal (a nothing-applied code, see
 * `closeCall` in `activities/fence/call-failure.ts`), a result it could not store, exhausted
 * transient retries. Any other type in a stored error result is the tool's own.
 */
const FENCE_RESULT_TYPES: ReadonlySet<string> = new Set<string>([...NOTHING_APPLIED_CODES, 'PAYLOAD_TOO_LARGE', 'NOT_JSON', 'TRANSIENT_EXHAUSTED']);

/** `table[key]` when it is the table's own entry (never an inherited property). */
function own(table: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined;
}

/** Longest message the model reads as written from a failure, in UTF-16 code units. */
export const MAX_MODEL_ERROR_MESSAGE_LENGTH = 1_000;

/** A failure type shown to the model: an upper-case code of at most 64 characters, else `UNCLASSIFIED`. */
function shownType(type: string): string {
  return /^[A-Z][A-Z0-9_]{0,63}$/.test(type) ? type : 'UNCLASSIFIED';
}

function bounded(text: string): string {
  if (text.length <= MAX_MODEL_ERROR_MESSAGE_LENGTH) return text;
  let cut = MAX_MODEL_ERROR_MESSAGE_LENGTH - 1;
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1; // do not split a surrogate pair
  return `${text.slice(0, cut)}…`;
}

/**
 * What the model reads for a call that failed with `type` before the tool ran (an activity
 * failure of the nothing-applied kind, an unknown tool, a refusal known before the call's turn):
 * `CODE: <fixed sentence>` from {@link MODEL_ERROR_MESSAGES} (or {@link MODEL_ERROR_FALLBACK}), or,
 * for `INVALID_TOOL_INPUT` / `TOOL_REJECTED`, `detail` bounded to
 * {@link MAX_MODEL_ERROR_MESSAGE_LENGTH}. `detail` is the operators' text; it is never shown
 * otherwise.
 */
export function modelErrorForFailure(type: string, detail: string): ModelToolError {
  const shown = shownType(type);
  if (READ_AS_WRITTEN.has(shown)) return { type: shown, message: bounded(detail) };
  return { type: shown, message: `${shown}: ${own(MODEL_ERROR_MESSAGES, shown) ?? MODEL_ERROR_FALLBACK}` };
}

/**
 * What the model reads for a stored error result (`{ ok: false, error }`). A type the tool chose
 * keeps the tool's message as stored; a refusal the fence stored (a nothing-applied code), a
 * result the fence could not store (`PAYLOAD_TOO_LARGE`, `NOT_JSON`: the tool ran) and
 * exhausted transient retries (`TRANSIENT_EXHAUSTED`, whose text is a provider's or a network
 * error's) read as a fixed sentence, as {@link modelErrorForFailure} gives it.
 */
export function modelErrorForResult(error: { readonly type: string; readonly message: string }): ModelToolError {
  const { type, message } = error;
  if (!FENCE_RESULT_TYPES.has(type)) return { type, message };
  const afterRun = own(RESULT_FAILURE_MESSAGES, type);
  if (afterRun !== undefined) return { type, message: `${type}: ${afterRun}` };
  return modelErrorForFailure(type, message);
}
