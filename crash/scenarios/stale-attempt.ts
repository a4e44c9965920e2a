/**
 * A stale attempt (docs/protocol.md#crash-windows): attempt 1 applies the
 * create_ticket effect and then its whole process stalls (event loop blocked, no heartbeats)
 * past the heartbeat timeout. Temporal retries on a standby worker, which takes the fence over
 * (reclaimExecution), recovers the receipt by lookup and delivers it. Then attempt 1 is
 * released and tries to store its own result: FENCE_CONFLICT, and its result is discarded.
 *
 * The stalled worker reaches Temporal through a proxy the harness cuts during the stall. A
 * stalled Node worker's SDK core keeps polling on its own threads and would accept the retries
 * it cannot run, each costing another heartbeat timeout (seen without the cut: attempt 5 was
 * the first to run); cut off, it holds no polls and attempt 2 lands on the standby.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../../src/checkpoint/canonical-json';
import { checkEffects, countLostResults, settleWithOperator } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { startTcpProxy } from '../tcp-proxy';
import { ticketCall } from '../transcripts';

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export const staleAttemptScenario: Scenario = {
  id: 'stale-attempt',
  title: 'stale attempt: attempt 1 stalls past its heartbeat timeout after the effect (create_ticket)',
  forced: 'the first worker blocks its process right after the effect (crash/tools.ts TTC_CRASH_STALL_DIR) until the takeover attempt on a standby has delivered, then is released',
  expected:
    "the takeover records previousAttemptId = attempt 1 and delivers the lookup receipt; attempt 1 fails with FENCE_CONFLICT; the stored result stays the takeover's; one ticket",
  async run(rep: Repetition): Promise<RunOutcome> {
    const x = new Expectations();
    const call = ticketCall(rep.tag, 1);
    const stallDir = rep.path('stall');
    mkdirSync(stallDir, { recursive: true });
    const proxy = await startTcpProxy(rep.stack.server().address);
    rep.onCleanup(() => proxy.close());
    const stale = await rep.worker({ env: { TTC_CRASH_STALL_DIR: stallDir, TEMPORAL_ADDRESS: proxy.address } });
    const standby = rep.standby();
    const handle = await rep.start([call]);

    const stalled = await waitForFile(join(stallDir, 'stalled.json'), 90_000);
    const stalledAt = Date.now();
    if (!x.check(stalled !== null, 'attempt 1 never stalled after its effect')) return failed(x);
    const staleAttemptId = (JSON.parse(stalled!) as { attemptId: string }).attemptId;
    proxy.cut();
    standby.open();
    await rep.forgetStickyWorker();

    const takenOver = await rep.waitForRecord(call, (r) => r.status === 'delivered', 90_000).catch((error: Error) => (x.check(false, error.message), null));
    if (takenOver !== null) {
      x.check(takenOver.execution?.attemptId !== staleAttemptId, 'the takeover attempt holds the fence');
      x.equal(takenOver.execution?.previousAttemptId, staleAttemptId, 'execution.previousAttemptId of the stored record');
    }
    proxy.restore();
    writeFileSync(join(stallDir, 'release'), '');
    const fenced = await waitForLine(rep, stale.identity, /FENCE_CONFLICT/, 30_000);
    x.check(fenced, 'attempt 1 did not fail with FENCE_CONFLICT after it was released');

    const { state, pauses } = await settleWithOperator(rep, handle, [call], x);
    x.equal(pauses, [], 'pauses');
    const after = await rep.record(call);
    if (takenOver !== null && after !== null) {
      x.equal(after.revision, takenOver.revision, 'checkpoint revision after attempt 1 tried to finish (its result is discarded)');
      x.check(canonicalJson(after.result?.payload ?? null) === canonicalJson(takenOver.result?.payload ?? null), "the stored result is still the takeover attempt's");
    }
    if (state.kind === 'finished')
      x.equal(
        state.result.calls.map((c) => c.source),
        ['lookup'],
        'call source',
      );
    const effects = await checkEffects(rep, [call], x);
    const resultsLost = await countLostResults(rep, [call], state, x);
    const event = (await rep.callEvents(handle)).get(call.id);
    x.equal(event?.attempt, 2, 'attempt that took over and delivered to Temporal');
    const completedAt = event?.completedAt;
    return { ...effects, resultsLost, paused: pauses.length > 0, unknownNotPaused: false, recoveryMs: completedAt == null ? null : completedAt - stalledAt, failures: x.failures };
  },
};

async function waitForFile(file: string, timeoutMs: number): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(file)) return readFileSync(file, 'utf8');
    await sleep(20);
  }
  return null;
}

async function waitForLine(rep: Repetition, identity: string, pattern: RegExp, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (rep.lines.some((line) => line.startsWith(`${identity}: `) && pattern.test(line))) return true;
    await sleep(50);
  }
  return false;
}

function failed(x: Expectations): RunOutcome {
  return { effectsApplied: 0, duplicates: 0, resultsLost: 1, paused: false, unknownNotPaused: false, recoveryMs: null, failures: x.failures };
}
