// Pure pieces shared by the agentWorkflow tests and the history recorder
// (scripts/record-histories.ts): model answers, fenced-tool results and failures, a deferred,
// and polling the status query. No Jest globals, so a plain script may import it.
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import type { ModelTurnResult, ToolCallRequest } from '../../src/model/types';
import { runStatusQuery } from '../../src/workflows';
import type { RunStatusView } from '../../src/workflows/agent/types';

export function call(callId: string, toolName: string, input: Record<string, unknown> = {}): ToolCallRequest {
  return { callId, toolName, input: input as ToolCallRequest['input'] };
}
export function toolTurn(text: string, ...toolCalls: ToolCallRequest[]): ModelTurnResult {
  return { stopReason: 'tool_use', text, toolCalls };
}
export function endTurn(text: string): ModelTurnResult {
  return { stopReason: 'end_turn', text, toolCalls: [] };
}

export function digestOf(input: FencedToolInput): string {
  return `sha256:fake:${input.toolName}:${JSON.stringify(input.input)}`;
}

export function okResult(input: FencedToolInput): FencedToolResult {
  return {
    callId: input.callId,
    toolName: input.toolName,
    toolRevision: '1',
    source: 'executed',
    outcome: { ok: true, output: { did: input.toolName, callId: input.callId }, receipt: { receiptId: `r-${input.callId}` } },
    idempotencyKey: `key-${input.callId}`,
    intentDigest: digestOf(input),
  };
}

export function outcomeUnknown(message = 'send_email: the request may have been sent; the provider has no lookup'): ApplicationFailure {
  return ApplicationFailure.create({ type: 'OUTCOME_UNKNOWN', message: `OUTCOME_UNKNOWN: ${message}`, nonRetryable: true });
}

export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Matches the id of pause `base` (`c1#1`, `c1/compensation@1#2`) of any run chain (`c1#1.9f3c2a7b1e04`). */
export function pauseIdLike(base: string): string {
  return expect.stringMatching(new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.[0-9a-f]{12}$`)) as unknown as string;
}

/** The identity of the pause the run waits on now (`runStatus().paused.pauseId`), what a resolution must carry. Throws when the run is not paused. */
export async function currentPauseId(handle: WorkflowHandle): Promise<string> {
  const status = await handle.query(runStatusQuery);
  if (status.paused === null) throw new Error(`the run is ${status.phase}, not paused`);
  return status.paused.pauseId;
}

/** Polls the status query (real time) until `predicate` holds. */
export async function waitForStatus(handle: WorkflowHandle, predicate: (s: RunStatusView) => boolean, timeoutMs = 20_000): Promise<RunStatusView> {
  const until = Date.now() + timeoutMs;
  let last: RunStatusView | undefined;
  while (Date.now() < until) {
    try {
      last = await handle.query(runStatusQuery);
      if (predicate(last)) return last;
    } catch {
      // between two runs of a chain (continue-as-new), or before the first workflow task: ask again
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`status never matched; last: ${JSON.stringify(last)}`);
}
