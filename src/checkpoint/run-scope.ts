/**
 * Which run of a run chain a call belongs to (docs/protocol.md#resets). A Temporal reset starts a
 * new run in the same chain (`firstExecutionRunId` survives it) that replays the history up to the
 * reset point and discards the rest; a continue-as-new starts one too. So that a call id the model
 * or the workflow reuses in such a run never lands on a discarded call's checkpoint, a reset run
 * addresses its calls as `<id>@<runId>` (and so do the runs continued from it, with its id; the
 * plugin: every run other than the chain's first). Pure and sandbox-safe.
 */

/** A Temporal run id as the server makes them: a UUID in lower-case hex. */
const RUN_ID_SUFFIX = /@([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/**
 * `callId` addressed within run `runId`: `<callId>@<runId>`, or `callId` itself in the chain's first
 * run (`runId === runChainId`), unless it already ends as another run's address would (a model id
 * like `x@<uuid>`): then `<callId>@<runChainId>`, so {@link runOfCallId} always names the run.
 */
export function runScopedCallId(callId: string, runId: string, runChainId: string): string {
  return runId === runChainId && runOfCallId(callId, runChainId) === runChainId ? callId : `${callId}@${runId}`;
}

/** A run id where {@link runScopedCallId} puts it: at the end, or before a `/` that names a call derived from it (`act-3@<runId>/compensation`). */
const RUN_ID_IN_CALL = /@([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?=$|\/[^@]*$)/;

/** The run a call id was addressed in by {@link runScopedCallId} (also in a call id derived from one, `<id>@<runId>/compensation`), else the chain's first run. */
export function runOfCallId(callId: string, runChainId: string): string {
  return RUN_ID_IN_CALL.exec(callId)?.[1] ?? runChainId;
}

/** `callId` without the run it was addressed in (`e1@<runId>` → `e1`; an id without one as it is). */
export function callIdWithoutRun(callId: string): string {
  const match = RUN_ID_SUFFIX.exec(callId);
  return match === null ? callId : callId.slice(0, match.index);
}

/**
 * The call of `calls` a person named `given`: the one with exactly that id, else the one whose id
 * without its run is `given` (`ttc resolve <workflow> e1` for `e1@<runId>`), unless several are.
 */
export function findNamedCall<C extends { readonly callId: string }>(calls: readonly C[], given: string): C | undefined {
  const exact = calls.find((call) => call.callId === given);
  if (exact !== undefined) return exact;
  const named = calls.filter((call) => callIdWithoutRun(call.callId) === given);
  return named.length === 1 ? named[0] : undefined;
}

/**
 * Where the occurrences of a run's actions are counted (docs/protocol.md#resets): one scope per
 * segment of the run chain, which a reset keeps and a continue-as-new or a workflow retry changes.
 * `handedOver` is what the run this one continued from named the next segment
 * ({@link nextSegmentScope}); without it, `first:<run chain>` for the chain's first segment,
 * `after:<run id>` for a run continued (or retried) from run `<run id>`.
 */
export function occurrenceScopeOf(info: { readonly firstExecutionRunId: string; readonly continuedFromExecutionRunId?: string }, handedOver?: string): string {
  if (handedOver !== undefined) return handedOver;
  return info.continuedFromExecutionRunId === undefined ? `first:${info.firstExecutionRunId}` : `after:${info.continuedFromExecutionRunId}`;
}

/**
 * The scope a run hands to the run it continues as new: `after:<originalExecutionRunId>`, the run
 * that first wrote this run's start, which a reset keeps. So the segment after a reset run is the
 * same scope as the segment after the run it reset, and its calls meet the discarded ones.
 */
export function nextSegmentScope(info: { readonly originalExecutionRunId: string }): string {
  return `after:${info.originalExecutionRunId}`;
}

/** Hex digits of one hash in {@link packCallHashes}. */
export const CALL_HASH_CHARS = 16;

/** 64 bits of a call id: two FNV-1a passes (different offset bases) over its UTF-16 code units, as 16 lower-case hex digits. */
export function callHash(callId: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < callId.length; i += 1) {
    const unit = callId.charCodeAt(i);
    a = Math.imul(a ^ unit, 0x01000193) >>> 0;
    b = Math.imul(b ^ unit, 0x01000193) >>> 0;
  }
  return a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0');
}

/** The {@link callHash}es of `callIds`, concatenated (16 characters per call). */
export function packCallHashes(callIds: Iterable<string>): string {
  return [...callIds].map(callHash).join('');
}

/** Whether `packed` (see {@link packCallHashes}) holds the hash of `callId`. A false match is about 1 in 2⁶⁴ per packed call. */
export function hasCallHash(packed: string, callId: string): boolean {
  const hash = callHash(callId);
  for (let at = 0; at + CALL_HASH_CHARS <= packed.length; at += CALL_HASH_CHARS) if (packed.startsWith(hash, at)) return true;
  return false;
}
