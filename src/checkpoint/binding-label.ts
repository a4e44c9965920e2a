/**
 * A readable name for a checkpoint's binding call id, for operators (`ttc pending`): a call's
 * `<workflow id>/<call id>`, a batch item's `<call> item "<key>" (generation n)` (issue 14), a
 * compensation's `<call> compensation (generation n)`; any other text as it is. Pure.
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
  const compensation = tagged(bindingCallId, 'ttc/compensation/1', 3);
  if (compensation !== null && typeof compensation[1] === 'string') return `${bindingLabel(compensation[1])} compensation (generation ${String(compensation[2])})`;
  return bindingCallId;
}
