/**
 * The error result stored in place of a tool's outcome that cannot be stored (over the payload
 * bounds, or not JSON), keeping the provider's receipt when it fits.
 */
import { utf8ByteLength } from '../../checkpoint/bounds';
import { canonicalJson } from '../../checkpoint/canonical-json';
import { isCheckpointError, type CheckpointError } from '../../checkpoint/errors';
import type { ToolOutcome } from '../contract/contract';

/** Largest receipt kept in the error result of a result that could not be stored, UTF-8 bytes of its canonical JSON. */
export const TOO_LARGE_RECEIPT_MAX_BYTES = 4_096;

/**
 * The error result stored when a tool ran but its outcome cannot be stored (PAYLOAD_TOO_LARGE,
 * NOT_JSON): `{ ok: false, error: { type, message, receipt? } }`, keeping the provider's receipt
 * (so a person can still reconcile the effect) when it is JSON of at most
 * {@link TOO_LARGE_RECEIPT_MAX_BYTES} bytes and the record with it still fits (`fits` throws
 * otherwise); else without it, the message saying why.
 */
export function unstorableResult(error: CheckpointError, outcome: ToolOutcome, fits: (candidate: ToolOutcome) => unknown): ToolOutcome {
  const message = `the tool ran, but its result cannot be stored: ${error.message}`;
  const receipt = outcome.ok ? outcome.receipt : null;
  if (receipt === null || receipt === undefined) return { ok: false, error: { type: error.code, message } };
  let why: string;
  try {
    const bytes = utf8ByteLength(canonicalJson(receipt, 'receipt'));
    if (bytes <= TOO_LARGE_RECEIPT_MAX_BYTES) {
      const kept: ToolOutcome = { ok: false, error: { type: error.code, message, receipt } };
      fits(kept);
      return kept;
    }
    why = `the receipt is ${bytes} bytes, over ${TOO_LARGE_RECEIPT_MAX_BYTES}`;
  } catch (failure) {
    if (!isCheckpointError(failure, 'PAYLOAD_TOO_LARGE') && !isCheckpointError(failure, 'NOT_JSON')) throw failure;
    why = `the receipt cannot be stored either (${failure.code})`;
  }
  return { ok: false, error: { type: error.code, message: `${message} (${why}, so it is not kept)` } };
}
