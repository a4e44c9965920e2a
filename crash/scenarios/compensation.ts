/**
 * The order saga: reserve inventory → charge payment → create shipment, each a tool
 * with an idempotency key and a lookup (examples/order-tools.ts); the reservation is compensated by
 * a function (release), the charge by another tool (refund_payment). Runs with real processes:
 * - the shipment is refused (BUSINESS_REJECTION, the run's `compensateOn`): refund, then release,
 *   once each, in that order;
 * - the same with the worker SIGKILLed right after the refund's effect: the refund is recovered
 *   by its lookup or its key (applied once), then the release runs;
 * - a cancel after the charge (while the shipment waits for approval): refund + release once each;
 * - a refund the provider refuses for good (a card that cannot be refunded): the run pauses with
 *   the compensation pending; the harness, as the person, resolves it applied; the release runs
 *   and the run ends with both compensated.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { OrderClient } from '../../examples/provider/order-client';
import { NO_REFUND_CARD, UNSERVED_DESTINATION } from '../../examples/provider/order-routes';
import type { OrderEffect } from '../../examples/provider/types';
import { canonicalJson } from '../../src/checkpoint/canonical-json';
import { compensationBindingCallId } from '../../src/activities/fence/compensation-call';
import type { agentWorkflow } from '../../src/workflows';
import { cancelRunSignal, resolveOutcomeUpdate, runStatusQuery } from '../../src/workflows/agent/messages';
import type { AgentWorkflowResult, CallReport, RunStatus, StopReason } from '../../src/workflows/agent/types';
import { countLostResults, PAUSE_HOLD_MS, within } from '../checks';
import type { Repetition, RunState } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { orderCalls, type ScriptedCall } from '../transcripts';
import { sleep, waitFor } from '../waits';

type Kind = OrderEffect['kind'];

const orderId = (rep: Repetition) => `order-${rep.tag}`;

/** The order's applied effects at the provider, as kinds in the order applied. */
async function orderEffects(rep: Repetition): Promise<OrderEffect[]> {
  return new OrderClient(rep.stack.provider.url).orderEffects(orderId(rep));
}

/** Effects, duplicates (the same kind on the same subject more than once) and the expected sequence of kinds. */
function checkEffectSequence(effects: readonly OrderEffect[], expected: readonly Kind[], x: Expectations): { effectsApplied: number; duplicates: number } {
  x.equal(
    effects.map((e) => e.kind),
    expected,
    'effects at the provider, in the order applied',
  );
  const seen = new Map<string, number>();
  for (const e of effects) seen.set(`${e.kind} ${e.subjectId}`, (seen.get(`${e.kind} ${e.subjectId}`) ?? 0) + 1);
  return { effectsApplied: effects.length, duplicates: [...seen.values()].reduce((a, n) => a + Math.max(0, n - 1), 0) };
}

/**
 * The compensations in the result: reserve's and charge's compensated (with the sources allowed),
 * each equal to the bytes stored in the compensation's checkpoint (else counted lost); the
 * result's effects list them as compensated.
 */
async function checkCompensations(
  rep: Repetition,
  calls: readonly ScriptedCall[],
  result: AgentWorkflowResult,
  sources: { reserve: readonly string[]; charge: readonly string[] },
  x: Expectations,
): Promise<number> {
  let lost = 0;
  const byId = (id: string): CallReport | undefined => result.calls.find((c) => c.modelCallId === id);
  for (const [call, allowed] of [
    [calls[0]!, sources.reserve],
    [calls[1]!, sources.charge],
  ] as const) {
    const report = byId(call.id);
    const c = report?.compensation;
    if (
      !x.check(c !== undefined && c.status === 'compensated', `${call.name}'s compensation: ${c === undefined ? 'none' : `${c.status} (${c.errorType ?? ''} ${c.reason ?? ''})`}`)
    ) {
      lost += 1;
      continue;
    }
    x.check(c!.source !== null && allowed.includes(c!.source), `${call.name}'s compensation source ${c!.source} (expected ${allowed.join(' or ')})`);
    const address = rep.address(call.id);
    const record = await rep.stack.inspector.getByCall(address.namespace, compensationBindingCallId(address.callId, c!.generation));
    const same = record?.result != null && c!.outcome !== null && canonicalJson(record.result.payload) === canonicalJson(c!.outcome);
    if (!x.check(same, `${call.name}'s compensation: checkpoint ${record?.status ?? 'missing'}, the result's outcome ${same ? 'equals' : 'differs from'} the stored bytes`))
      lost += 1;
  }
  x.equal([...result.effects.compensated].sort(), [calls[0]!.id, calls[1]!.id].sort(), 'effects compensated (call ids)');
  x.equal(result.effects.compensationPending, [], 'effects with a compensation pending');
  x.equal(result.effects.applied, [], 'effects left applied');
  return lost;
}

/** Waits for the run and checks how it stopped. */
function checkStop(state: RunState, status: RunStatus, because: StopReason, x: Expectations): state is Extract<RunState, { kind: 'finished' }> {
  if (
    !x.check(
      state.kind === 'finished',
      `the run did not finish (${state.kind === 'paused' ? `paused on ${state.status.paused?.callId} ${state.status.paused?.role ?? ''} ${state.status.paused?.errorType}` : state.kind === 'timeout' ? state.reason : ''})`,
    )
  )
    return false;
  const result = (state as Extract<RunState, { kind: 'finished' }>).result;
  x.equal([result.status, result.stoppedBecause], [status, because], 'run status and why it stopped');
  return true;
}

/** Results lost among the calls that ran (the shipment's refusal included: its stored error is its result). */
async function lostOfCallsThatRan(rep: Repetition, calls: readonly ScriptedCall[], state: Extract<RunState, { kind: 'finished' }>, x: Expectations): Promise<number> {
  const ran = state.result.calls.filter((c) => c.status === 'completed' || c.status === 'resolved-applied');
  // countLostResults checks the finished run's calls against their checkpoints; it expects a completed run, so give it one.
  const sub = new Expectations();
  const lost = await countLostResults(rep, calls, { kind: 'finished', result: { ...state.result, status: 'completed', calls: ran } }, sub);
  for (const f of sub.failures) x.check(false, f);
  return lost;
}

const ORDER_FORCED = 'the model asks for reserve_inventory → charge_payment → create_shipment in one turn (one call at a time)';

const shipRejectedScenario: Scenario = {
  id: 'saga-ship-rejected',
  title: `reserve → charge → ship, the shipment refused (BUSINESS_REJECTION; compensateOn)`,
  forced: `${ORDER_FORCED}; the provider refuses to ship to ${UNSERVED_DESTINATION}`,
  expected: 'the run stops incomplete (compensate-on); refund then release run once each, in that order; both compensated, source executed',
  recovery: 'none (no crash)',
  async run(rep): Promise<RunOutcome> {
    const x = new Expectations();
    const calls = orderCalls(rep.tag, { destination: UNSERVED_DESTINATION });
    await rep.worker();
    const handle = await rep.start(calls, { compensateOn: ['BUSINESS_REJECTION'] });
    const state = await rep.settle(handle);
    const effects = checkEffectSequence(await orderEffects(rep), ['inventory.reserve', 'payment.charge', 'payment.refund', 'inventory.release'], x);
    let resultsLost = 0;
    if (checkStop(state, 'incomplete', 'compensate-on', x)) {
      x.equal(
        state.result.calls.map((c) => [c.toolName, c.status, c.outcome !== null && 'ok' in c.outcome ? c.outcome.ok : null]),
        [
          ['reserve_inventory', 'completed', true],
          ['charge_payment', 'completed', true],
          ['create_shipment', 'completed', false],
        ],
        'calls (tool, status, ok)',
      );
      resultsLost = (await lostOfCallsThatRan(rep, calls, state, x)) + (await checkCompensations(rep, calls, state.result, { reserve: ['executed'], charge: ['executed'] }, x));
    }
    return { ...effects, resultsLost, paused: false, unknownNotPaused: false, recoveryMs: null, failures: x.failures };
  },
};

const refundKilledScenario: Scenario = {
  id: 'saga-refund-after-effect-kill',
  title: "the shipment refused; kill right after the refund's effect, before its result was stored (refund_payment, lookup and key dedupe)",
  forced: `${ORDER_FORCED} to ${UNSERVED_DESTINATION}; TTC_CRASH_AT=after-effect:refund_payment on the only worker; a standby joins after the SIGKILL`,
  expected: 'the refund is recovered by its lookup or its key (applied once), then the release runs once: effects reserve, charge, refund, release',
  recovery: "kill → the run's result (the refund recovered and the release run)",
  async run(rep): Promise<RunOutcome> {
    const x = new Expectations();
    const calls = orderCalls(rep.tag, { destination: UNSERVED_DESTINATION });
    const armed = await rep.worker({ crashAt: { point: 'after-effect', toolName: 'refund_payment' } });
    const standby = rep.standby();
    const handle = await rep.start(calls, { compensateOn: ['BUSINESS_REJECTION'] });
    x.equal(await within(armed.exited, 90_000), 'SIGKILL', "the armed worker's exit after the refund's effect");
    const killedAt = Date.now();
    x.equal(
      (await orderEffects(rep)).map((e) => e.kind),
      ['inventory.reserve', 'payment.charge', 'payment.refund'],
      'effects when the worker died',
    );
    standby.open();
    await rep.forgetStickyWorker();
    const state = await rep.settle(handle);
    const recoveryMs = state.kind === 'finished' ? Date.now() - killedAt : null;
    const effects = checkEffectSequence(await orderEffects(rep), ['inventory.reserve', 'payment.charge', 'payment.refund', 'inventory.release'], x);
    let resultsLost = 0;
    if (checkStop(state, 'incomplete', 'compensate-on', x)) {
      resultsLost =
        (await lostOfCallsThatRan(rep, calls, state, x)) +
        (await checkCompensations(rep, calls, state.result, { reserve: ['executed'], charge: ['lookup', 'same-key-repeat'] }, x));
    }
    return { ...effects, resultsLost, paused: false, unknownNotPaused: false, recoveryMs, failures: x.failures };
  },
};

const cancelAfterChargeScenario: Scenario = {
  id: 'saga-cancel-after-charge',
  title: 'reserve → charge, then the run is cancelled while the shipment waits for approval',
  forced: `${ORDER_FORCED}; create_shipment needs approval; the harness signals cancelRun once the shipment awaits it (the run's compensateOn is [])`,
  expected: 'the run ends cancelled; the shipment never ran; refund then release run once each: effects reserve, charge, refund, release',
  recovery: "cancel → the run's result",
  async run(rep): Promise<RunOutcome> {
    const x = new Expectations();
    const calls = orderCalls(rep.tag);
    await rep.worker();
    const handle = await rep.start(calls, { compensateOn: [], approvalRequired: { create_shipment: { expiresAfterMs: 120_000 } } });
    // The charge has completed and the shipment waits for its approval (approvals may be asked for before earlier calls ran).
    const waiting = await waitFor(
      async () => {
        const status = await handle.query(runStatusQuery).catch(() => null);
        const charged = status?.calls.some((c) => c.modelCallId === calls[1]!.id && c.status === 'completed');
        const awaiting = status?.pendingCalls.some((c) => c.modelCallId === calls[2]!.id && c.status === 'awaiting-approval');
        return charged && awaiting ? true : undefined;
      },
      90_000,
      100,
    );
    x.check(waiting === true, 'the charge never completed with the shipment waiting for approval');
    const cancelledAt = Date.now();
    await handle.signal(cancelRunSignal, { reason: 'crash harness: the customer cancelled the order' });
    const state = await rep.settle(handle);
    const recoveryMs = state.kind === 'finished' ? Date.now() - cancelledAt : null;
    const effects = checkEffectSequence(await orderEffects(rep), ['inventory.reserve', 'payment.charge', 'payment.refund', 'inventory.release'], x);
    let resultsLost = 0;
    if (checkStop(state, 'cancelled', 'cancel', x)) {
      x.equal(state.result.effects.notRun, [calls[2]!.id], 'effects not run (the shipment)');
      resultsLost = (await lostOfCallsThatRan(rep, calls, state, x)) + (await checkCompensations(rep, calls, state.result, { reserve: ['executed'], charge: ['executed'] }, x));
    }
    return { ...effects, resultsLost, paused: false, unknownNotPaused: false, recoveryMs, failures: x.failures };
  },
};

const refundRefusedScenario: Scenario = {
  id: 'saga-compensation-refused',
  title: `the shipment refused; the refund refused for good by the provider (${NO_REFUND_CARD}: 403, PERMISSION_DENIED)`,
  forced: `${ORDER_FORCED} to ${UNSERVED_DESTINATION}, paid with ${NO_REFUND_CARD}`,
  expected:
    'the run pauses with the refund pending (role compensation) and does not retry it by itself; the harness, as the person who refunded through the card issuer, resolves it applied; the release runs; both compensated (refund source resolution); effects reserve, charge, release',
  recovery: 'none (no crash)',
  async run(rep): Promise<RunOutcome> {
    const x = new Expectations();
    const calls = orderCalls(rep.tag, { destination: UNSERVED_DESTINATION, card: NO_REFUND_CARD });
    await rep.worker();
    const handle = await rep.start(calls, { compensateOn: ['BUSINESS_REJECTION'] });
    let state = await rep.settle(handle);
    let paused = false;
    if (x.check(state.kind === 'paused', `the run did not pause on the refused refund (${state.kind})`) && state.kind === 'paused') {
      paused = true;
      await resolveRefundAsPerson(rep, handle, calls, state, x);
      state = await rep.settle(handle);
    }
    const effects = checkEffectSequence(await orderEffects(rep), ['inventory.reserve', 'payment.charge', 'inventory.release'], x);
    let resultsLost = 0;
    if (checkStop(state, 'incomplete', 'compensate-on', x)) {
      resultsLost = (await lostOfCallsThatRan(rep, calls, state, x)) + (await checkCompensations(rep, calls, state.result, { reserve: ['executed'], charge: ['resolution'] }, x));
    }
    return { ...effects, resultsLost, paused, unknownNotPaused: false, recoveryMs: null, failures: x.failures };
  },
};

/** Checks the pause is the charge's compensation refused for good and that nothing runs meanwhile, then resolves it applied. */
async function resolveRefundAsPerson(
  rep: Repetition,
  handle: WorkflowHandle<typeof agentWorkflow>,
  calls: readonly ScriptedCall[],
  state: Extract<RunState, { kind: 'paused' }>,
  x: Expectations,
): Promise<void> {
  const p = state.status.paused!;
  x.equal([p.callId, p.role, p.errorType], [calls[1]!.id, 'compensation', 'PERMISSION_DENIED'], 'the pause (call, role, type)');
  const before = await orderEffects(rep);
  await sleep(PAUSE_HOLD_MS);
  x.equal(
    (await orderEffects(rep)).map((e) => e.kind),
    before.map((e) => e.kind),
    'effects while the compensation waits for a person (nothing may run)',
  );
  const charge = before.find((e) => e.kind === 'payment.charge');
  try {
    await handle.executeUpdate(resolveOutcomeUpdate, {
      args: [
        {
          callId: p.callId,
          pauseId: p.pauseId,
          resolution: 'applied',
          result: { chargeId: charge?.subjectId ?? 'unknown', refundId: `issuer-${rep.tag}` },
          receipt: { refundedBy: 'card issuer' },
          reason: 'crash harness person: refunded through the card issuer',
        },
      ],
    });
  } catch (error) {
    x.check(false, `the person's resolution of the refund was refused: ${(error as { cause?: { message?: string } }).cause?.message ?? String(error)}`);
  }
}

export const compensationScenarios: readonly Scenario[] = [shipRejectedScenario, refundKilledScenario, cancelAfterChargeScenario, refundRefusedScenario];
