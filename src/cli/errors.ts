/**
 * How the command line reports errors: a failed run's cause chain (a `WorkflowFailedError`
 * alone says only "Workflow execution failed"; the `NOT_PINNED: …` is its cause's cause), and a
 * typed error with a hint when payloads are encrypted by the payload codec and no key is set.
 * Text only: the caller prints it through `terminal-safe.ts`.
 */
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { PAYLOAD_CODEC_ENCODING } from '../codec/payload-codec';
import { PAYLOAD_CODEC_KEY_ENV, PAYLOAD_CODEC_KEYS_ENV } from '../codec/codec-config';
import { DecisionRefusedError } from '../operator/run-decisions';

/** Causes followed at most (a cycle or a very deep chain stops here). */
const MAX_CAUSES = 8;

/** What an operator reads when payloads are encrypted and this process has no codec key. */
export const CODEC_KEY_HINT = `payloads are encrypted by the payload codec (${PAYLOAD_CODEC_ENCODING}); set ${PAYLOAD_CODEC_KEY_ENV} (and ${PAYLOAD_CODEC_KEYS_ENV}) to read them`;

/** An error whose message starts with its code and stands alone: a {@link CheckpointError} or a run's {@link DecisionRefusedError}. */
function isTypedError(error: unknown): error is Error {
  return isCheckpointError(error) || error instanceof DecisionRefusedError;
}

/** `Name: message` of one error (the message alone for a plain `Error` or a typed error, whose message starts with its code). */
function describeOne(error: unknown): string {
  if (isTypedError(error)) return error.message;
  if (!(error instanceof Error)) return String(error);
  const type = error instanceof ApplicationFailure && error.type && !error.message.startsWith(`${error.type}:`) ? ` [${error.type}]` : '';
  return `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}${type}`;
}

/**
 * One line for `error` and each error in its `cause` chain, joined with `; caused by `, e.g.
 * `WorkflowFailedError: Workflow execution failed; caused by ActivityFailure: Activity task
 * failed; caused by ApplicationFailure: NOT_PINNED: …`. A message already shown by the previous
 * error is not repeated; the chain stops at a {@link CheckpointError} or a
 * {@link DecisionRefusedError} (`STALE_STATE_VERSION: run … refused the decision on …`: their
 * messages are written to stand alone, and a CheckpointError's cause may hold text it masks).
 * Total: never throws.
 */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  const seen = new Set<unknown>();
  for (let e: unknown = error; e !== undefined && e !== null && !seen.has(e) && parts.length <= MAX_CAUSES; e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const text = describeOne(e);
    if (parts.length === 0 || !parts[parts.length - 1]!.endsWith(text)) parts.push(text);
    // A typed error's message already says what its cause means; a CheckpointError's cause may hold text it masks (store URLs).
    if (typeof e !== 'object' || isTypedError(e)) break;
  }
  return parts.join('; caused by ');
}

/** A failed run's failure as `show` reports it: the innermost ApplicationFailure's type and message, else the failure's class and message. */
export interface RunFailure {
  readonly type: string;
  readonly message: string;
}

/**
 * The failure of a closed run from what `handle.result()` rejected with: for a
 * `WorkflowFailedError`, the innermost `ApplicationFailure` in its cause chain (type and
 * message, e.g. `NOT_PINNED`), else its cause's class and message (a termination or timeout).
 */
export function runFailureOf(error: unknown): RunFailure {
  const root = error instanceof WorkflowFailedError && error.cause !== undefined ? error.cause : error;
  let found: ApplicationFailure | null = null;
  const seen = new Set<unknown>();
  for (let e: unknown = root; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    if (e instanceof ApplicationFailure) found = e;
  }
  if (found !== null) return { type: found.type ?? found.name, message: found.message };
  return root instanceof Error ? { type: root.name, message: root.message } : { type: 'Error', message: String(root) };
}

/**
 * `error`, or, when it (or a cause) is Temporal's "Unknown encoding: binary/encrypted" (a payload
 * encrypted by the payload codec read without a key), a {@link CheckpointError}
 * DECRYPTION_FAILED (reason `no-codec-key`, field TTC_PAYLOAD_CODEC_KEY) whose message is the
 * hint {@link CODEC_KEY_HINT}. The error never carries a key: this process has none.
 */
export function explainUndecodable(error: unknown, what = 'a Temporal payload'): unknown {
  const seen = new Set<unknown>();
  for (let e: unknown = error; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    if (e.name === 'ValueError' && e.message.includes(`Unknown encoding: ${PAYLOAD_CODEC_ENCODING}`)) {
      return new CheckpointError('DECRYPTION_FAILED', `cannot read ${what}: ${CODEC_KEY_HINT}`, { field: PAYLOAD_CODEC_KEY_ENV, reason: 'no-codec-key' }, { cause: error });
    }
  }
  return error;
}
