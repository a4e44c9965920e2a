/**
 * Zombie attempts (docs/protocol.md#overlapping-attempts): attempt 1 has
 * claimed the call and its request is still outstanding when Temporal starts attempt 2.
 *
 * Two workers poll the run's task queue, each through its own TCP proxy. The harness cuts the
 * proxy of the worker that runs attempt 1 right after the claim, while its request is held
 * (crash/tools.ts `TTC_CRASH_REQUEST_HOLD`): its heartbeats stop, the heartbeat timeout (1 s
 * here) fires and attempt 2 starts on the other worker. The harness
 * lets the zombie's request go only once attempt 2 has arrived and failed, so the effect always
 * lands after the retry arrived. Then:
 * - `zombie-lookup` (create_ticket_lookup: lookup, no key dedupe): the zombie stalls right after
 *   its effect (it never stores the result). Attempt 2 must not look up, take over or mark
 *   anything before `settleAt = claimedAt + callDeadlineMs + margin`: it fails RECONCILE_PENDING
 *   and is retried at settleAt; that attempt's lookup finds the zombie's ticket, takes the fence
 *   over and delivers it. The zombie, released, cannot overwrite the stored result.
 * - `zombie-no-lookup` (send_email: neither lookup nor key dedupe): attempt 2 waits likewise;
 *   the zombie's request returns and it stores its own result; the attempt at settleAt delivers
 *   that stored result. Should the zombie be unable to store it (its deadline aborted the
 *   request), the run pauses as OUTCOME_UNKNOWN and the operator resolves it. Never two effects.
 */
import { join } from 'node:path';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { canonicalJson } from '../../src/checkpoint/canonical-json';
import { DEFAULT_RECONCILE_MARGIN_MS } from '../../src/activities/fence/fenced-tool';
import { checkEffects, countLostResults, settleWithOperator } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { startTcpProxy } from '../tcp-proxy';
import { emailCall, ticketCall } from '../transcripts';
import { waitFor, waitForFile, waitForLine } from '../waits';

/** Heartbeat timeout of the zombie runs, ms: attempt 2 must arrive well inside the zombie's call deadline. */
const ZOMBIE_HEARTBEAT_TIMEOUT_MS = 500;
/**
 * `callDeadlineMs` of the zombie runs' tools (both workers), ms. Longer than the other crash
 * tools' 3 s: attempt 2 arrives about 2 s after the claim (the heartbeat timeout is detected
 * late on a loaded host), and the zombie's request must still be held then and go out before
 * its deadline.
 */
const ZOMBIE_CALL_DEADLINE_MS = 5_000;
/** The zombie's request is let go at the latest this long before its call deadline, ms. */
const RELEASE_BEFORE_DEADLINE_MS = 1_000;
/** Tolerance for clock reads between the harness, the workers and the Temporal server, ms. */
const CLOCK_SLACK_MS = 250;

interface ZombieSpec {
  readonly id: string;
  readonly toolName: 'create_ticket_lookup' | 'send_email';
  readonly lookup: boolean;
}

function zombieScenario(spec: ZombieSpec): Scenario {
  const settle = `claimedAt + callDeadlineMs (${ZOMBIE_CALL_DEADLINE_MS} ms) + margin (${DEFAULT_RECONCILE_MARGIN_MS} ms)`;
  return {
    id: spec.id,
    title: spec.lookup
      ? 'zombie attempt still mid-request when the retry arrives (create_ticket_lookup: lookup, no key dedupe)'
      : 'zombie attempt still mid-request when the retry arrives (send_email: no lookup, no key dedupe)',
    forced: `tool callDeadlineMs ${ZOMBIE_CALL_DEADLINE_MS} ms; two workers, each behind its own TCP proxy; the one running attempt 1 claims, holds its request and is cut off from Temporal; heartbeat timeout ${ZOMBIE_HEARTBEAT_TIMEOUT_MS} ms; attempt 2 starts on the other worker; the zombie's request is let go once attempt 2 has failed${spec.lookup ? '; the zombie then stalls after its effect and never stores it' : ''}`,
    expected: spec.lookup
      ? `attempt 2 fails RECONCILE_PENDING (nextRetryDelay up to settleAt) and writes nothing; nobody takes the fence over before settleAt = ${settle}; then lookup finds the zombie's ticket and its receipt is stored: one ticket, source lookup (or store, when the next attempt delivers that stored result); the zombie cannot overwrite the stored result`
      : `attempt 2 fails RECONCILE_PENDING and writes nothing; the zombie stores its own result; the attempt at settleAt = ${settle} delivers it: one email, source store (or, if the zombie could not store it, a pause resolved applied); never two emails`,
    recovery: `from the cut (right after the claim) to the ActivityTaskCompleted of the call: about callDeadlineMs + margin = ${ZOMBIE_CALL_DEADLINE_MS + DEFAULT_RECONCILE_MARGIN_MS} ms`,
    async run(rep: Repetition): Promise<RunOutcome> {
      const x = new Expectations();
      const startedAt = Date.now();
      const call = spec.lookup ? ticketCall(rep.tag, 1, spec.toolName) : emailCall(rep.tag, 1);
      // Two workers, each behind its own proxy, both polling from the start (a standby that joins
      // only after the cut needs about 2 s to poll, longer than the zombie's call deadline allows).
      // Whichever runs attempt 1 becomes the zombie; the other one runs the retries.
      const workers = await Promise.all(
        [1, 2].map(async (n) => {
          const dir = rep.path(`w${n}`);
          mkdirSync(dir, { recursive: true });
          const proxy = await startTcpProxy(rep.stack.server().address);
          rep.onCleanup(() => proxy.close());
          const worker = await rep.worker({
            env: {
              TEMPORAL_ADDRESS: proxy.address,
              TTC_CRASH_CALL_DEADLINE_MS: String(ZOMBIE_CALL_DEADLINE_MS),
              TTC_CRASH_REQUEST_HOLD: `${spec.toolName}:${join(dir, 'hold')}`,
              ...(spec.lookup ? { TTC_CRASH_STALL_DIR: dir, TTC_CRASH_STALL_TOOL: spec.toolName } : {}),
            },
          });
          return { dir, proxy, worker, held: join(dir, 'hold.held') };
        }),
      );
      const readyAt = Date.now();
      const handle = await rep.start([call], { heartbeatTimeoutMs: ZOMBIE_HEARTBEAT_TIMEOUT_MS });

      const first = await waitFor(() => workers.find((w) => existsSync(w.held)), 90_000);
      if (!x.check(first !== undefined, 'attempt 1 never reached its request')) return failed(x);
      first!.proxy.cut();
      const cutAt = Date.now();
      const zombie = first!;
      const other = workers.find((w) => w !== zombie)!;
      const zombieAttemptId = (JSON.parse(readFileSync(zombie.held, 'utf8')) as { attemptId: string }).attemptId;
      await rep.forgetStickyWorker();
      const watch = rep.watchAttempts(handle, 100);
      try {
        const claimed = await rep.waitForRecord(call, (r) => r.status === 'executing', 10_000).catch((error: Error) => (x.check(false, error.message), null));
        if (claimed === null) return failed(x);
        x.equal(claimed.execution?.attemptId, zombieAttemptId, "the claim is the zombie attempt's");
        const claimedAt = Date.parse(claimed.execution!.claimedAt);
        // The claim declares its deadline (claimedAt + callDeadlineMs); it settles a margin later.
        const deadlineAt = claimed.execution!.deadlineAt === null ? claimedAt + ZOMBIE_CALL_DEADLINE_MS : Date.parse(claimed.execution!.deadlineAt);
        x.equal(deadlineAt - claimedAt, ZOMBIE_CALL_DEADLINE_MS, "the claim's declared deadline after its claim time, ms");
        const settleAt = deadlineAt + DEFAULT_RECONCILE_MARGIN_MS;

        // Let the zombie's request go once attempt 2 has arrived and given up (or just before the zombie's deadline).
        const releaseBy = claimedAt + ZOMBIE_CALL_DEADLINE_MS - RELEASE_BEFORE_DEADLINE_MS;
        const arrived = await waitFor(() => (watch.failures.some((f) => f.attempt >= 2) ? true : undefined), Math.max(0, releaseBy - Date.now()), 20);
        writeFileSync(join(zombie.dir, 'hold'), '');
        const releasedAt = Date.now();
        x.check(arrived === true, `attempt 2 did not arrive and fail while the zombie's request was held (harness timing: released ${releasedAt - claimedAt} ms after the claim)`);
        const second = watch.failures.find((f) => f.attempt === 2);
        if (second?.type === 'TIMEOUT') {
          // Attempt 2's answer reached Temporal after its 500 ms heartbeat timeout (a loaded host): Temporal
          // recorded a timeout and retries at once. What attempt 2 did is in its worker's output.
          await waitFor(() => (reconcilePendingLogged(rep, other.worker.identity, 2) ? true : undefined), 5_000, 50);
          x.check(reconcilePendingLogged(rep, other.worker.identity, 2), 'attempt 2 timed out and its worker did not log it failing RECONCILE_PENDING');
        } else if (second !== undefined) {
          x.equal(second.type, 'RECONCILE_PENDING', 'failure of attempt 2 (arrived while attempt 1 was mid-request)');
          x.check(
            second.nextRetryDelayMs !== null &&
              second.nextRetryDelayMs >= settleAt - second.seenAt - CLOCK_SLACK_MS &&
              second.nextRetryDelayMs <= settleAt - claimedAt + CLOCK_SLACK_MS,
            `attempt 2's nextRetryDelay (${second.nextRetryDelayMs} ms) reaches settleAt (${settleAt - second.seenAt} ms after it was seen)`,
          );
        }
        const duringWait = await rep.record(call);
        x.equal(duringWait?.execution?.attemptId, zombieAttemptId, 'the fence right after attempt 2 failed (attempt 2 wrote nothing)');
        x.check(
          duringWait?.status === 'executing' || duringWait?.status === 'completed' || duringWait?.status === 'delivering' || duringWait?.status === 'delivered',
          `checkpoint status after attempt 2 (${duringWait?.status})`,
        );

        let takenOver: Awaited<ReturnType<typeof rep.record>> = null;
        if (spec.lookup) {
          const stalled = await waitForFile(join(zombie.dir, 'stalled.json'), 10_000);
          x.check(stalled !== null, "the zombie's request never returned (no effect before its deadline)");
          takenOver = await rep.waitForRecord(call, (r) => r.status === 'delivered', 60_000).catch((error: Error) => (x.check(false, error.message), null));
          if (takenOver !== null) {
            x.equal(takenOver.execution?.previousAttemptId, zombieAttemptId, 'execution.previousAttemptId of the stored record (the takeover)');
            const takeoverAt = Date.parse(takenOver.execution!.claimedAt);
            x.check(takeoverAt >= settleAt - CLOCK_SLACK_MS, `the fence was taken over ${takeoverAt - claimedAt} ms after the claim, before settleAt (${settleAt - claimedAt} ms)`);
          }
          zombie.proxy.restore();
          writeFileSync(join(zombie.dir, 'release'), '');
          await waitForLine(rep, zombie.worker.identity, /FENCE_CONFLICT|OUTCOME_UNKNOWN|RECONCILE_PENDING|failed/i, 15_000);
        }

        const { state, pauses } = await settleWithOperator(rep, handle, [call], x);
        await watch.stop();
        const event = (await rep.callEvents(handle)).get(call.id);
        const after = await rep.record(call);
        if (spec.lookup) {
          x.equal(pauses, [], 'pauses');
          if (takenOver !== null && after !== null) {
            x.equal(after.revision, takenOver.revision, 'checkpoint revision after the zombie was released (its result is discarded)');
            x.check(canonicalJson(after.result?.payload ?? null) === canonicalJson(takenOver.result?.payload ?? null), "the stored result is still the takeover's");
          }
          // The stored result is what the lookup found (crash/tools.ts marks its receipt). The attempt that
          // stored it normally delivers it (source lookup); when that attempt's completion misses the
          // 500 ms heartbeat timeout on a loaded host, the next attempt delivers the stored bytes (source store).
          const receipt = (after?.result?.payload as { receipt?: { foundBy?: string } } | undefined)?.receipt;
          x.equal(receipt?.foundBy, 'lookup', 'the stored result came from the lookup (receipt.foundBy)');
          const source = state.kind === 'finished' ? state.result.calls[0]?.source : undefined;
          if (state.kind === 'finished')
            x.check(source === 'lookup' || source === 'store', `call source: expected lookup (or store, the lookup's stored result redelivered), got ${source}`);
        } else if (pauses.length === 0) {
          x.equal(after?.execution?.attemptId, zombieAttemptId, "the stored result is the zombie attempt's own");
          x.equal(after?.execution?.previousAttemptId ?? null, null, 'nobody took the fence over');
          if (state.kind === 'finished')
            x.equal(
              state.result.calls.map((c) => c.source),
              ['store'],
              'call source',
            );
        } else {
          x.equal(
            pauses.map((p) => [p.errorType, p.resolution]),
            [['OUTCOME_UNKNOWN', 'applied']],
            'pause (type, what the operator found)',
          );
        }
        if (event?.completedAt != null && pauses.length === 0) {
          x.check(
            event.completedAt >= settleAt - CLOCK_SLACK_MS,
            `the call completed ${event.completedAt - claimedAt} ms after the claim, before settleAt (${settleAt - claimedAt} ms)`,
          );
          x.check((event.attempt ?? 0) >= 3, `attempt that delivered to Temporal (${event.attempt}) comes after the one that waited`);
        }
        x.check(!existsSync(other.held), "a later attempt called the tool again while the zombie's claim was unsettled");
        const effects = await checkEffects(rep, [call], x);
        const resultsLost = await countLostResults(rep, [call], state, x);
        const endAt = pauses.length > 0 ? event?.failedAt : event?.completedAt;
        const timing = `workers polling after ${readyAt - startedAt} ms, claim ${claimedAt - readyAt} ms later; attempt 2 seen failed ${second === undefined ? '?' : second.seenAt - claimedAt} ms and request released ${releasedAt - claimedAt} ms after the claim; run settled ${Date.now() - cutAt} ms after the cut`;
        return {
          ...effects,
          resultsLost,
          paused: pauses.length > 0,
          unknownNotPaused: false,
          recoveryMs: endAt == null ? null : endAt - cutAt,
          failures: x.failures,
          note: timing,
        };
      } finally {
        await watch.stop();
      }
    },
  };
}

/** Whether worker `identity` logged attempt `attempt` of the tool activity failing RECONCILE_PENDING (the SDK's multi-line "Activity failed" entry). */
function reconcilePendingLogged(rep: Repetition, identity: string, attempt: number): boolean {
  const own = rep.lines.filter((line) => line.startsWith(`${identity}: `));
  for (let i = 0; i < own.length; i += 1) {
    if (!own[i]!.includes(`attempt: ${attempt},`)) continue;
    if (own.slice(i, i + 20).some((line) => line.includes('RECONCILE_PENDING'))) return true;
  }
  return false;
}

function failed(x: Expectations): RunOutcome {
  return { effectsApplied: 0, duplicates: 0, resultsLost: 1, paused: false, unknownNotPaused: false, recoveryMs: null, failures: x.failures };
}

export const zombieScenarios: Scenario[] = [
  zombieScenario({ id: 'zombie-lookup', toolName: 'create_ticket_lookup', lookup: true }),
  zombieScenario({ id: 'zombie-no-lookup', toolName: 'send_email', lookup: false }),
];
