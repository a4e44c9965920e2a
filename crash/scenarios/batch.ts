/**
 * The batch exercise: "send 100 notifications in batches; the process crashes after
 * notification 20 succeeded but before its checkpoint was written", with real processes. One
 * model call of a batch tool (crash/batch-tools.ts) sends to 100 recipients, one item each.
 * - A worker SIGKILLed right after item 20's effect (`TTC_CRASH_AT=after-effect:<tool>#20`; every
 *   item passes the crash points under the batch tool's name): a standby takes the call over;
 *   every notification is applied exactly once (counted at the provider by recipient), and item
 *   21's first request reaches the provider only after item 20's reconciliation was answered
 *   (the provider's request log), by lookup or by a same-key repeat.
 * - The same without idempotency support: item 20 pauses for a person (OUTCOME_UNKNOWN naming the
 *   item); items 21-100 are not sent while the run waits; the harness, as the person, finds item
 *   20's notification at the provider and resolves it `applied`; the batch resumes after it.
 * - A cancellation while item 19 (resp. 20) is in flight (its request held by the harness until
 *   the activity saw the cancellation): that item finishes, nothing after it starts, and the
 *   run's result reports exactly 19 (resp. 20) applied, 81 (80) not applied, 0 unknown.
 */
import { existsSync, writeFileSync } from 'node:fs';
import type { WorkflowHandle } from '@temporalio/client';
import { NotificationClient } from '../../examples/provider/notification-client';
import type { NotificationRequest } from '../../examples/provider/types';
import type { agentWorkflow } from '../../src/workflows';
import { cancelRunSignal, resolveOutcomeUpdate } from '../../src/workflows/agent/messages';
import type { AgentWorkflowResult, CallReport } from '../../src/workflows/agent/types';
import { countLostResults, PAUSE_HOLD_MS, within } from '../checks';
import type { Repetition, RunState } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { batchRecipients, notificationsCall } from '../transcripts';
import { sleep, waitForFile } from '../waits';

/** Items per batch. */
export const BATCH_ITEMS = 100;
/** The item the kill follows (1-based). */
const CRASHED_ITEM = 20;

const recipientPrefix = (tag: string) => `${tag}-r`;
const provider = (rep: Repetition) => new NotificationClient(rep.stack.provider.url);

/** Notifications the provider applied per recipient of the batch, in recipient order (zeros included). */
async function countsByRecipient(rep: Repetition): Promise<number[]> {
  const sent = await provider(rep).list(recipientPrefix(rep.tag));
  return batchRecipients(rep.tag, BATCH_ITEMS).map((r) => sent.filter((n) => n.recipient === r).length);
}

/** Effects, duplicates and the per-recipient check: `expected` recipients (the first n) once each, the others never. */
async function checkNotifications(rep: Repetition, expected: number, x: Expectations): Promise<{ effectsApplied: number; duplicates: number }> {
  const counts = await countsByRecipient(rep);
  const wrong = counts.map((n, i) => ({ recipient: i + 1, n, want: i < expected ? 1 : 0 })).filter((c) => c.n !== c.want);
  x.check(
    wrong.length === 0,
    `notifications per recipient at the provider: expected recipients 1-${expected} once each${expected < BATCH_ITEMS ? ` and ${expected + 1}-${BATCH_ITEMS} never` : ''}; wrong: ${JSON.stringify(wrong.slice(0, 10))}`,
  );
  return { effectsApplied: counts.reduce((a, b) => a + b, 0), duplicates: counts.reduce((a, b) => a + Math.max(0, b - 1), 0) };
}

const batchCall = (result: AgentWorkflowResult): CallReport | undefined => result.calls[0];

/** The kill scenarios (lookup, same key, no idempotency support). */
function crashAfterItemScenario(spec: { id: string; tool: string; reconciledBy: 'lookup' | 'same-key' | 'person' }): Scenario {
  const how = { lookup: 'looked up by its key', 'same-key': 'repeated with its key (the provider replays the receipt)', person: 'paused for a person' }[spec.reconciledBy];
  return {
    id: spec.id,
    title: `${BATCH_ITEMS} notifications in one batch call, kill right after item ${CRASHED_ITEM}'s effect (${spec.tool})`,
    forced: `TTC_CRASH_AT=after-effect:${spec.tool}#${CRASHED_ITEM} on the only worker; a standby joins after the SIGKILL`,
    expected:
      spec.reconciledBy === 'person'
        ? `the run pauses (OUTCOME_UNKNOWN naming item ${CRASHED_ITEM}) and sends nothing more while it waits; the harness finds item ${CRASHED_ITEM}'s notification at the provider and resolves it applied; the batch resumes after it: every notification applied once, items ${CRASHED_ITEM + 1}-${BATCH_ITEMS} sent only after the resolution`
        : `item ${CRASHED_ITEM} is ${how} before item ${CRASHED_ITEM + 1} starts (the provider's request log); every notification applied once; no pause`,
    ...(spec.reconciledBy === 'person'
      ? { recovery: `kill → the run paused (the harness's status query, 200 ms polling); the resolution follows after ${PAUSE_HOLD_MS} ms of watching` }
      : {}),
    async run(rep): Promise<RunOutcome> {
      const x = new Expectations();
      const calls = [notificationsCall(rep.tag, spec.tool, BATCH_ITEMS)];
      const armed = await rep.worker({ crashAt: { point: 'after-effect', toolName: spec.tool, occurrence: CRASHED_ITEM } });
      const standby = rep.standby();
      const handle = await rep.start(calls);
      x.equal(await within(armed.exited, 90_000), 'SIGKILL', `the armed worker's exit after item ${CRASHED_ITEM}'s effect`);
      const killedAt = Date.now();
      x.equal(
        (await countsByRecipient(rep)).reduce((a, b) => a + b, 0),
        CRASHED_ITEM,
        'notifications applied when the worker died',
      );
      standby.open();
      await rep.forgetStickyWorker();

      let state = await rep.settle(handle);
      let paused = false;
      let recoveryMs: number | null = null;
      let resolvedAt: number | null = null;
      if (spec.reconciledBy === 'person') {
        if (x.check(state.kind === 'paused', `the run did not pause (${state.kind === 'timeout' ? state.reason : 'it finished'})`) && state.kind === 'paused') {
          paused = true;
          recoveryMs = Date.now() - killedAt;
          resolvedAt = await resolveItemAsPerson(rep, handle, state, x);
          state = await rep.settle(handle);
        }
      } else {
        x.check(state.kind !== 'paused', 'the run paused, but the item can be reconciled by its key');
      }
      const effects = await checkNotifications(rep, BATCH_ITEMS, x);
      const resultsLost = await countLostResults(rep, calls, state, x);
      let note = '';
      if (state.kind === 'finished') {
        const call = batchCall(state.result);
        const output = call?.outcome !== null && call?.outcome !== undefined && 'output' in call.outcome ? (call.outcome.output as { applied?: number; sources?: unknown }) : null;
        x.equal(output?.applied, BATCH_ITEMS, 'items applied as the batch call reported them');
        note = `last attempt's item sources ${JSON.stringify(output?.sources ?? null)}`;
        if (!paused) recoveryMs = ((await rep.callEvents(handle)).get(calls[0]!.id)?.completedAt ?? killedAt) - killedAt;
      }
      await checkOrder(rep, spec.reconciledBy, killedAt, resolvedAt, x);
      return { ...effects, resultsLost, paused, unknownNotPaused: spec.reconciledBy === 'person' && !paused, recoveryMs, failures: x.failures, note };
    },
  };
}

/**
 * Plays the person for the paused item: checks the pause names item 20, that nothing more is
 * sent while the run waits, finds item 20's notification at the provider and resolves it
 * `applied` with its id. Returns when the resolution was sent (ms since the epoch).
 */
async function resolveItemAsPerson(
  rep: Repetition,
  handle: WorkflowHandle<typeof agentWorkflow>,
  state: Extract<RunState, { kind: 'paused' }>,
  x: Expectations,
): Promise<number | null> {
  const pausedOn = state.status.paused!;
  const recipient = batchRecipients(rep.tag, BATCH_ITEMS)[CRASHED_ITEM - 1]!;
  x.equal(
    [pausedOn.errorType, pausedOn.item?.key, pausedOn.item?.index, pausedOn.item?.generation],
    ['OUTCOME_UNKNOWN', recipient, CRASHED_ITEM - 1, 1],
    'the pause (type, item key, item index, generation)',
  );
  const before = await countsByRecipient(rep);
  await sleep(PAUSE_HOLD_MS);
  const after = await countsByRecipient(rep);
  x.equal(after, before, 'notifications while the run waits for a person (nothing may be sent)');
  x.equal(
    after.reduce((a, b) => a + b, 0),
    CRASHED_ITEM,
    `notifications applied while paused (items ${CRASHED_ITEM + 1}-${BATCH_ITEMS} must wait)`,
  );
  const found = (await provider(rep).list(recipient)).find((n) => n.recipient === recipient);
  if (!x.check(found !== undefined, `item ${CRASHED_ITEM}'s notification is not at the provider`)) return null;
  const resolvedAt = Date.now();
  try {
    await handle.executeUpdate(resolveOutcomeUpdate, {
      args: [
        {
          callId: pausedOn.callId,
          pauseId: pausedOn.pauseId,
          resolution: 'applied',
          result: { notificationId: found!.notificationId },
          receipt: { notificationId: found!.notificationId, sentAt: found!.sentAt },
          reason: `crash harness person: ${found!.notificationId} to ${recipient} is in the provider's log`,
        },
      ],
    });
  } catch (error) {
    x.check(false, `the person's resolution of item ${CRASHED_ITEM} was refused: ${(error as { cause?: { message?: string } }).cause?.message ?? String(error)}`);
  }
  return resolvedAt;
}

/**
 * Item 21 starts only after item 20 is settled: at the provider, item 21's first request arrives
 * after item 20's reconciliation (a lookup that found it, or a same-key repeat the provider
 * replayed) was answered; for the person's pause, after the resolution was sent.
 */
async function checkOrder(rep: Repetition, by: 'lookup' | 'same-key' | 'person', killedAt: number, resolvedAt: number | null, x: Expectations): Promise<void> {
  const [r20, r21] = batchRecipients(rep.tag, BATCH_ITEMS).slice(CRASHED_ITEM - 1, CRASHED_ITEM + 1) as [string, string];
  const log = await provider(rep).requests(recipientPrefix(rep.tag));
  const of = (r: string) => log.filter((q) => q.recipient === r);
  const show = (q: NotificationRequest | undefined) => (q === undefined ? 'none' : `#${q.seq} ${q.operation} ${q.outcome}`);
  const first21 = of(r21)[0];
  if (!x.check(first21 !== undefined, `item ${CRASHED_ITEM + 1} never reached the provider`)) return;
  x.check(first21!.receivedAtMs >= killedAt, `item ${CRASHED_ITEM + 1}'s first request (${show(first21)}) came before the kill`);
  if (by === 'person') {
    if (resolvedAt !== null)
      x.check(
        first21!.receivedAtMs >= resolvedAt,
        `item ${CRASHED_ITEM + 1}'s first request came ${resolvedAt - first21!.receivedAtMs} ms before the person's resolution of item ${CRASHED_ITEM}`,
      );
    x.equal(of(r20).map(show).length, 1, `requests for item ${CRASHED_ITEM} (sent once, never again)`);
    return;
  }
  const want = by === 'lookup' ? { operation: 'lookup', outcome: 'found' } : { operation: 'send', outcome: 'replayed' };
  const reconciliation = of(r20).find((q) => q.receivedAtMs >= killedAt);
  if (
    !x.check(
      reconciliation !== undefined && reconciliation.operation === want.operation && reconciliation.outcome === want.outcome,
      `item ${CRASHED_ITEM}'s first request after the kill: expected a ${want.operation} answered ${want.outcome}, got ${show(reconciliation)} (all: ${of(r20).map(show).join(', ')})`,
    )
  )
    return;
  x.check(
    first21!.seq > reconciliation!.seq && reconciliation!.answeredAtMs !== null && first21!.receivedAtMs >= reconciliation!.answeredAtMs,
    `item ${CRASHED_ITEM + 1}'s first request (${show(first21)}) came before item ${CRASHED_ITEM}'s reconciliation (${show(reconciliation)}) was answered`,
  );
}

/** Cancellation while item `inFlight` is in flight. */
function cancelScenario(inFlight: number): Scenario {
  const tool = 'send_notifications';
  return {
    id: `batch-cancel-after-item-${inFlight}`,
    title: `${BATCH_ITEMS} notifications in one batch call, cancelled while item ${inFlight} is in flight (${tool})`,
    forced: `TTC_CRASH_ITEM_HOLD=${tool}#${inFlight}: item ${inFlight}'s request is held; the harness signals cancelRun, waits until the activity saw the cancellation, then releases the request`,
    expected: `item ${inFlight} finishes, nothing after it starts; the result reports exactly ${inFlight} applied, ${BATCH_ITEMS - inFlight} not applied, 0 unknown; the provider applied exactly recipients 1-${inFlight}, once each`,
    recovery: 'cancel → the run closed (its result)',
    async run(rep): Promise<RunOutcome> {
      const x = new Expectations();
      const hold = rep.path('item-hold');
      const calls = [notificationsCall(rep.tag, tool, BATCH_ITEMS)];
      // Items get a long deadline: the held request must not outlive it while the cancellation travels.
      await rep.worker({ env: { TTC_CRASH_ITEM_HOLD: `${tool}#${inFlight}:${hold}`, TTC_CRASH_CALL_DEADLINE_MS: '20000', TTC_SHUTDOWN_GRACE_TIME: '30s' } });
      const handle = await rep.start(calls);
      x.check((await waitForFile(`${hold}.held`, 90_000)) !== null, `item ${inFlight}'s request was never held`);
      const cancelledAt = Date.now();
      await handle.signal(cancelRunSignal, { reason: `crash harness: cancel while item ${inFlight} is in flight` });
      x.check((await waitForFile(`${hold}.cancel-seen`, 30_000)) !== null, 'the batch activity never saw the cancellation');
      writeFileSync(hold, '');
      const state = await rep.settle(handle);
      const effects = await checkNotifications(rep, inFlight, x);
      let resultsLost = 0;
      let recoveryMs: number | null = null;
      if (
        x.check(state.kind === 'finished', `the run did not finish (${state.kind === 'paused' ? 'paused' : state.kind === 'timeout' ? state.reason : ''})`) &&
        state.kind === 'finished'
      ) {
        recoveryMs = Date.now() - cancelledAt;
        x.equal(state.result.status, 'cancelled', 'run status');
        const report = batchCall(state.result)?.batch;
        if (!x.check(report !== undefined, `the batch call's report is missing from the result (call: ${JSON.stringify(batchCall(state.result) ?? null).slice(0, 300)})`))
          resultsLost = 1;
        else {
          const recipients = batchRecipients(rep.tag, BATCH_ITEMS);
          x.equal(
            { total: report!.total, applied: report!.applied.count, notApplied: report!.notApplied.count, unknown: report!.unknown.count },
            { total: BATCH_ITEMS, applied: inFlight, notApplied: BATCH_ITEMS - inFlight, unknown: 0 },
            'the batch call in the result (items applied / not applied / unknown)',
          );
          x.equal([report!.applied.keys, report!.notApplied.keys], [recipients.slice(0, inFlight), recipients.slice(inFlight)], 'item keys applied / not applied');
        }
      }
      if (!existsSync(hold)) writeFileSync(hold, '');
      return { ...effects, resultsLost, paused: false, unknownNotPaused: false, recoveryMs, failures: x.failures };
    },
  };
}

export const batchScenarios: readonly Scenario[] = [
  crashAfterItemScenario({ id: 'batch-after-item-effect-lookup', tool: 'send_notifications', reconciledBy: 'lookup' }),
  crashAfterItemScenario({ id: 'batch-after-item-effect-same-key', tool: 'send_notifications_by_key', reconciledBy: 'same-key' }),
  crashAfterItemScenario({ id: 'batch-after-item-effect-no-idempotency', tool: 'send_notifications_plain', reconciledBy: 'person' }),
  cancelScenario(19),
  cancelScenario(20),
];
