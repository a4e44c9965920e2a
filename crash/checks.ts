/**
 * Checks shared by the scenarios: effects at the provider, results against the stored bytes,
 * and the operator loop for runs that pause on an unknown outcome.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { canonicalJson } from '../src/checkpoint/canonical-json';
import type { agentWorkflow } from '../src/workflows';
import type { AgentWorkflowResult } from '../src/workflows/agent/types';
import type { Repetition, RunState } from './repetition';
import type { Expectations } from './scenario';
import type { ScriptedCall } from './transcripts';

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** How long a paused run is watched to prove the tool does not run again by itself, ms. */
export const PAUSE_HOLD_MS = 1_500;

/** Effects applied per call, checked against one each. */
export async function checkEffects(rep: Repetition, calls: readonly ScriptedCall[], x: Expectations): Promise<{ effectsApplied: number; duplicates: number }> {
  const counts = await rep.effectCounts(calls);
  x.equal(
    counts,
    calls.map(() => 1),
    'effects applied per call at the provider',
  );
  return { effectsApplied: counts.reduce((a, b) => a + b, 0), duplicates: counts.reduce((a, b) => a + Math.max(0, b - 1), 0) };
}

/**
 * Results lost: every call of a finished run must have reached the run (completed or resolved
 * as applied) with exactly the bytes stored in its delivered checkpoint. A run that did not
 * finish lost all of its calls' results.
 */
export async function countLostResults(rep: Repetition, calls: readonly ScriptedCall[], state: RunState, x: Expectations): Promise<number> {
  if (state.kind !== 'finished') {
    x.check(false, `the run did not finish (${state.kind === 'paused' ? `paused on ${state.status.paused?.callId}` : state.reason})`);
    return calls.length;
  }
  const result: AgentWorkflowResult = state.result;
  x.equal(result.status, 'completed', 'run status');
  let lost = 0;
  for (const call of result.calls) {
    if (call.status === 'resolved-absent') continue;
    const scripted = calls.find((c) => c.id === call.modelCallId);
    if (scripted === undefined || (call.status !== 'completed' && call.status !== 'resolved-applied') || call.outcome === null) {
      x.check(false, `call ${call.callId} ended ${call.status} without a result (${call.errorType ?? ''} ${call.reason ?? ''})`);
      lost += 1;
      continue;
    }
    const record = await rep.record(scripted, call.callId);
    const same = record !== null && record.result !== null && canonicalJson(record.result.payload) === canonicalJson(call.outcome);
    if (
      !x.check(
        record?.status === 'delivered' && same,
        `call ${call.callId}: checkpoint ${record?.status ?? 'missing'}, delivered result ${same ? 'equals' : 'differs from'} the stored bytes`,
      )
    )
      lost += 1;
  }
  return lost;
}

/**
 * Waits for the run; while it is paused on an unknown outcome, proves the tool does not run
 * again by itself (effects unchanged for {@link PAUSE_HOLD_MS}), then resolves it as the
 * operator would and waits again. A resolution the run refuses is a failed expectation; the
 * run is then left paused (`resolution: 'refused'`).
 */
export async function settleWithOperator(
  rep: Repetition,
  handle: WorkflowHandle<typeof agentWorkflow>,
  calls: readonly ScriptedCall[],
  x: Expectations,
): Promise<{ state: RunState; pauses: Array<{ callId: string; errorType: string; resolution: 'applied' | 'absent' | 'refused' }> }> {
  const pauses: Array<{ callId: string; errorType: string; resolution: 'applied' | 'absent' | 'refused' }> = [];
  for (;;) {
    const state = await rep.settle(handle);
    if (state.kind !== 'paused' || pauses.length >= calls.length) return { state, pauses };
    const paused = state.status.paused!;
    const before = await rep.effectCounts(calls);
    await sleep(PAUSE_HOLD_MS);
    x.equal(await rep.effectCounts(calls), before, `effects while paused on ${paused.callId} (the tool must not run again by itself)`);
    let resolution: 'applied' | 'absent';
    try {
      resolution = await rep.resolveAsOperator(handle, state.status);
    } catch (error) {
      // The run refused the person's resolution (the update failed): it stays paused.
      const cause = (error as { cause?: { message?: string } }).cause?.message;
      x.check(
        false,
        `the operator's resolution of ${paused.callId} (paused on ${paused.errorType}) was refused: ${cause ?? (error instanceof Error ? error.message : String(error))}`,
      );
      pauses.push({ callId: paused.callId, errorType: paused.errorType, resolution: 'refused' });
      return { state, pauses };
    }
    pauses.push({ callId: paused.callId, errorType: paused.errorType, resolution });
  }
}

/** Resolves with the exit of `exited`, or with 'timeout' after `ms`. */
export async function within<T>(exited: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([exited, new Promise<'timeout'>((done) => (timer = setTimeout(() => done('timeout'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
