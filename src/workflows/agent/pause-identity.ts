/**
 * The identity of a pause: what is paused, its number in the run and the run chain, so a
 * person's decision made for one pause is never applied to another. Pure; sandbox-safe.
 *
 * @see docs/protocol.md#agent-workflow
 */
import type { CallState } from './call-state';

/**
 * The identity of a pause of `call`, the run's `seq`-th pause, in run chain `chainTag`: what is
 * paused (the call, its compensation at its generation, or one of its batch items at the item's
 * generation), the number and the chain, e.g. `c1#1.9f3c2a7b1e04`, `c1/compensation@1#3.9f3c2a7b1e04`.
 * Unique within the run (`seq`), across a chain (call ids are unique in a chain) and across chains
 * that reuse a workflow id (`chainTag`). Pure.
 */
export function pauseIdOf(call: CallState, seq: number, chainTag: string): string {
  const chain = chainTag === '' ? '' : `.${chainTag}`;
  if (call.compensation?.status === 'paused') return `${call.callId}/compensation@${call.compensation.generation}#${seq}${chain}`;
  if (call.pausedItem !== null) return `${call.callId}/item:${call.pausedItem.key}@${call.pausedItem.generation}#${seq}${chain}`;
  return `${call.callId}#${seq}${chain}`;
}

/**
 * The run chain's part of a pause id: the last 12 hex digits of its first run id (random in both
 * UUID v4 and v7 run ids: two chains of one workflow id share a tag with odds 2^-48), or the
 * whole id when it has fewer. Pure.
 */
export function chainTagOf(runChainId: string): string {
  const hex = runChainId.replace(/[^0-9a-fA-F]/g, '').toLowerCase();
  return hex.length >= 12 ? hex.slice(-12) : runChainId;
}
