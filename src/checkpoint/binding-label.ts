/**
 * A readable name for a checkpoint's binding call id, for operators (`ttc pending`): a call's
 * `<workflow id>/<call id>`, a batch item's `<call> item "<key>" (generation n)`, a
 * compensation's `<call> compensation (generation n)`, a grant's use `<workflow id> approval grant <id> (its use)`; any other text as it is. Pure.
 */
import { parseCallBindingId } from './call-identity';

/** Parses a tagged canonical JSON array `[tag, ...parts]`, or null. */
function tagged(text: string, tag: string, length: number): unknown[] | null {
  if (!text.startsWith(`["${tag}"`)) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.length === length && parsed[0] === tag ? parsed : null;
  } catch {
    return null;
  }
}

/** The label of binding call id `bindingCallId` (see the file's comment). */
export function bindingLabel(bindingCallId: string): string {
  const call = parseCallBindingId(bindingCallId);
  if (call !== null) return `${call.workflowId}/${call.callId}`;
  const item = tagged(bindingCallId, 'ttc/item/1', 4);
  if (item !== null && typeof item[1] === 'string') return `${bindingLabel(item[1])} item ${JSON.stringify(item[2])} (generation ${String(item[3])})`;
  const grantUse = tagged(bindingCallId, 'ttc/grant-use/1', 4);
  if (grantUse !== null && typeof grantUse[2] === 'string') return `${grantUse[2]} approval grant ${String(grantUse[3])} (its use)`;
  const compensation = tagged(bindingCallId, 'ttc/compensation/1', 3);
  if (compensation !== null && typeof compensation[1] === 'string') return `${bindingLabel(compensation[1])} compensation (generation ${String(compensation[2])})`;
  return bindingCallId;
}

/**
 * Whose checkpoint a binding call id names: the agent call (run chain, workflow id, call id) and
 * which of its checkpoints it is: the call's own, one of its batch items (key and generation), or
 * its compensation (generation). Null for any other text (a call id not made by `callBindingId`).
 */
export interface CheckpointOwner {
  readonly runChainId: string;
  readonly workflowId: string;
  readonly callId: string;
  readonly item?: { readonly key: string; readonly generation: number };
  readonly compensationGeneration?: number;
}

/** The {@link CheckpointOwner} of binding call id `bindingCallId`, or null. */
export function checkpointOwner(bindingCallId: string): CheckpointOwner | null {
  const call = parseCallBindingId(bindingCallId);
  if (call !== null) return call;
  const item = tagged(bindingCallId, 'ttc/item/1', 4);
  if (item !== null && typeof item[1] === 'string' && typeof item[2] === 'string' && typeof item[3] === 'number') {
    const owner = parseCallBindingId(item[1]);
    return owner === null ? null : { ...owner, item: { key: item[2], generation: item[3] } };
  }
  const compensation = tagged(bindingCallId, 'ttc/compensation/1', 3);
  if (compensation !== null && typeof compensation[1] === 'string' && typeof compensation[2] === 'number') {
    const owner = parseCallBindingId(compensation[1]);
    return owner === null ? null : { ...owner, compensationGeneration: compensation[2] };
  }
  return null;
}
