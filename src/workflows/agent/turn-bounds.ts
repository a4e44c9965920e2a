/**
 * How much one model turn may ask for: at most `maxCalls` tool calls and `maxInputBytes` of tool
 * input in total (UTF-8 bytes of each call's input as JSON). A turn that asks for more runs the
 * longest prefix of its calls, in the model's order, that fits both; the call that crosses a
 * bound and every later one are refused before anything of the turn is scheduled, and the model
 * reads why (`TOO_MANY_TOOL_CALLS`, `TURN_INPUT_TOO_LARGE`) with the numbers, so it can ask again
 * for what did not run. A prefix, never a selection: a later call may depend on an earlier one.
 * Pure and sandbox-safe.
 */
import type { JsonValue } from '../../checkpoint/types';
import { utf8Length } from './conversation';

/** Default of `AgentBudget.maxToolCallsPerTurn`. */
export const DEFAULT_MAX_TOOL_CALLS_PER_TURN = 64;
/** Default of `AgentBudget.maxToolInputBytesPerTurn` (512 KiB). */
export const DEFAULT_MAX_TOOL_INPUT_BYTES_PER_TURN = 524_288;

/** The bounds of one turn (positive integers). */
export interface TurnBounds {
  readonly maxCalls: number;
  readonly maxInputBytes: number;
}

/** Why a call of the turn was not run: a failure type the model reads with its message. */
export interface TurnRefusal {
  readonly type: 'TOO_MANY_TOOL_CALLS' | 'TURN_INPUT_TOO_LARGE';
  readonly message: string;
}

/** True for the failure types of {@link TurnRefusal}. */
export function isTurnRefusal(type: string | undefined): boolean {
  return type === 'TOO_MANY_TOOL_CALLS' || type === 'TURN_INPUT_TOO_LARGE';
}

/**
 * For each call of a turn, in order: null when it runs, else its refusal (see the module comment).
 * @param inputs each call's input, in the model's order.
 */
export function turnRefusals(inputs: readonly JsonValue[], bounds: TurnBounds): (TurnRefusal | null)[] {
  const out: (TurnRefusal | null)[] = [];
  let bytes = 0;
  let cut: TurnRefusal | null = null;
  for (const [i, input] of inputs.entries()) {
    if (cut === null) {
      const size = utf8Length(JSON.stringify(input));
      const notRun = inputs.length - i;
      if (i >= bounds.maxCalls) {
        cut = {
          type: 'TOO_MANY_TOOL_CALLS',
          message: `TOO_MANY_TOOL_CALLS: this turn asked for ${inputs.length} tool calls and at most ${bounds.maxCalls} run per turn; the last ${notRun} were not run (ask for them again in a later turn)`,
        };
      } else if (bytes + size > bounds.maxInputBytes) {
        cut = {
          type: 'TURN_INPUT_TOO_LARGE',
          message: `TURN_INPUT_TOO_LARGE: the tool inputs of this turn up to call ${i + 1} of ${inputs.length} total ${bytes + size} bytes, over the turn's limit of ${bounds.maxInputBytes}; that call and the ${notRun - 1} after it were not run (ask for them again, in smaller parts, in a later turn)`,
        };
      }
      bytes += size;
    }
    out.push(cut);
  }
  return out;
}
