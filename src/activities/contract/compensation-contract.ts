/**
 * The contract of the `compensateToolCall` activity (a saga step undone): its input,
 * its result, and the input of `resolveToolCall` for a compensation. Types only, sandbox-safe:
 * workflow code imports this file (no Node imports, nothing at run time).
 *
 * A compensation is a fenced call of its own (see `../tools/compensation-declaration`): binding call id
 * `canonicalJson(['ttc/compensation/1', <original binding callId>, generation])`, idempotency key
 * `'ttcc-' + sha256 hex of canonicalJson(['ttc/compensation-key/1', <original idempotency key>, generation])`,
 * run through the same fence as any call (lookup / same key / pause rules unchanged).
 * @see docs/protocol.md, docs/protocol.md#the-fenced-attempt
 */
import type { FencedToolInput, FencedToolResult, ResolveToolCallInput } from './contract';

/**
 * Input of `compensateToolCall`: the ORIGINAL call exactly as the workflow ran it (same tenant,
 * call id, run chain, tool name and model input, so the worker finds the original call's
 * checkpoint), marked `role: 'compensation'`. The applied effect (arguments, output, receipt) is
 * read from that checkpoint in the store, never from this input. `expectedIntentDigest`,
 * `approvalExpiresAt` and `resultByReference` are ignored: a compensation is not the approved
 * call, and its result is always returned inline (it would otherwise take the original call's
 * place in the conversation log).
 */
export interface CompensateToolCallInput extends FencedToolInput {
  readonly role: 'compensation';
  /**
   * Which run of the compensation: 1 for the first; n + 1 after a person proved run n's effect
   * absent (so a rerun never reopens the old checkpoint). Part of the compensation's binding and
   * idempotency key. An integer from 1 to 1,000,000. @default 1
   */
  readonly compensationGeneration?: number;
}

/** Which compensation ran: the named tool and its revision, or `<tool>~compensation` and the function's revision. */
export interface CompensationIdentity {
  readonly toolName: string;
  readonly toolRevision: string;
}

/**
 * Result of `compensateToolCall`: `{ declared: false }` when the original call's tool declares no
 * compensation (nothing was read or written); else the compensation's fenced result (its own
 * call id is the original's, `idempotencyKey` the compensation's `ttcc-…` key, `outcome` the
 * compensation's outcome, `ok: false` when the provider refused it for good) and which
 * compensation ran.
 */
export type CompensateToolCallResult = { readonly declared: false } | { readonly declared: true; readonly result: FencedToolResult; readonly compensation: CompensationIdentity };

/**
 * Input of `resolveToolCall` for a compensation whose outcome is unknown: a person proved the
 * compensation applied and gives its outcome (`resolution: 'applied'`, `result` the compensation's
 * ToolOutcome). Stored in the compensation's checkpoint of `compensationGeneration` under its
 * fence, as `resolveToolCall` does for a call. `absent` is not stored: the workflow runs the
 * compensation again as the next generation.
 */
export interface ResolveCompensationInput extends ResolveToolCallInput {
  readonly role: 'compensation';
  /** The paused compensation's generation (see {@link CompensateToolCallInput.compensationGeneration}). @default 1 */
  readonly compensationGeneration?: number;
}
