/**
 * A reset right after a SIGKILLed worker applied an effect (docs/deploying.md#resetting-a-run): the
 * worker dies after the provider applied the call and before the result was stored (the claim is
 * `executing`), and the operator resets the run to its first workflow task with
 * `temporal workflow reset` at once. The reset run asks the model again, gets the same call (under
 * its own id, `<id>@<runId>`), and must find the discarded call's checkpoint through the occurrence
 * of its intent: it waits for the killed claim to settle, then reconciles it (a ticket, by lookup)
 * or pauses for the operator (an email); the effect is never applied again.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { canonicalJson } from '../../src/checkpoint/canonical-json';
import { temporalCliPath } from '../../src/dev/temporal-binaries';
import type { agentWorkflow } from '../../src/workflows';
import type { WorkflowHandle } from '@temporalio/client';
import { checkEffects, settleWithOperator, within } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { emailCall, ticketCall, type ScriptedCall } from '../transcripts';

/** `temporal workflow reset` of the repetition's first run to its first workflow task; the reset run's handle. */
async function resetToFirstTask(rep: Repetition, runId: string): Promise<WorkflowHandle<typeof agentWorkflow>> {
  const server = rep.stack.server();
  await promisify(execFile)(temporalCliPath(), [
    'workflow',
    'reset',
    '--workflow-id',
    rep.workflowId,
    '--run-id',
    runId,
    '--type',
    'FirstWorkflowTask',
    '--reason',
    'crash harness: reset after the worker died',
    '--address',
    server.address,
    '--namespace',
    server.namespace,
  ]);
  const current = await rep.stack.client.workflow.getHandle(rep.workflowId).describe();
  return rep.stack.client.workflow.getHandle(rep.workflowId, current.runId) as WorkflowHandle<typeof agentWorkflow>;
}

function resetScenario(id: string, tool: 'create_ticket' | 'send_email'): Scenario {
  const ticket = tool === 'create_ticket';
  return {
    id,
    title: `reset to the first workflow task right after a SIGKILL after the effect (${tool}, ${ticket ? 'lookup' : 'no lookup'})`,
    forced: `TTC_CRASH_AT=after-effect:${tool} on the only worker; \`temporal workflow reset --type FirstWorkflowTask\` right after the SIGKILL; a standby joins after the reset`,
    expected: ticket
      ? "the reset run's call is answered from the discarded call's checkpoint (appliedByRun names the discarded run), reconciled by lookup after the killed claim settles: one ticket"
      : "the reset run's call pauses on the discarded call's unknown outcome; the operator finds the email and resolves applied (appliedByRun names the discarded run): one email",
    recovery: 'from the SIGKILL to the reset run finishing (the reset, the claim settling, the lookup or the operator)',
    async run(rep): Promise<RunOutcome> {
      const x = new Expectations();
      const call: ScriptedCall = ticket ? ticketCall(rep.tag, 1) : emailCall(rep.tag, 1);
      const armed = await rep.worker({ crashAt: { point: 'after-effect', toolName: tool } });
      const standby = rep.standby();
      await rep.start([call]);
      const exit = await within(armed.exited, 90_000);
      const killedAt = Date.now();
      x.equal(exit, 'SIGKILL', "the armed worker's exit at after-effect");
      x.equal((await rep.record(call))?.status, 'executing', 'checkpoint when the worker died');
      const handle = await resetToFirstTask(rep, rep.runChainId!);
      standby.open();

      const { state, pauses } = await settleWithOperator(rep, handle, [call], x);
      const paused = pauses.length > 0;
      if (ticket) x.equal(pauses, [], 'pauses (a lookup settles the discarded claim)');
      else
        x.equal(
          pauses.map((p) => [p.errorType, p.resolution]),
          [['OUTCOME_UNKNOWN', 'applied']],
          'pause (type, what the operator found)',
        );
      const effects = await checkEffects(rep, [call], x);
      let resultsLost = 1;
      if (state.kind === 'finished') {
        x.equal(state.result.status, 'completed', 'run status');
        const [answered] = state.result.calls;
        x.check(
          answered !== undefined && answered.callId !== call.id && answered.modelCallId === call.id,
          `the reset run's call ${answered?.callId} is its own call of model call ${call.id}`,
        );
        // Also when the operator resolved it: the resolution names the discarded call its adoption answers to.
        x.equal(answered?.appliedByRun, { runId: rep.runChainId!, callId: call.id }, 'appliedByRun');
        x.equal(answered?.status, ticket ? 'completed' : 'resolved-applied', 'status of the reset run call');
        // The result the reset run got is the one stored in the discarded call's checkpoint.
        const stored = await rep.record(call);
        const same =
          stored?.status === 'delivered' && stored.result !== null && answered?.outcome != null && canonicalJson(stored.result.payload) === canonicalJson(answered.outcome);
        if (x.check(same, `the discarded call's checkpoint is ${stored?.status ?? 'missing'} and ${same ? 'holds' : 'does not hold'} the result the reset run got`))
          resultsLost = 0;
      } else x.check(false, `the reset run did not finish (${state.kind})`);
      const event = (await rep.callEvents(handle)).get(`${call.id}@${(await handle.describe()).runId}`);
      const endAt = event?.completedAt ?? event?.failedAt ?? null;
      return { ...effects, resultsLost, paused, unknownNotPaused: !ticket && !paused, recoveryMs: endAt === null ? null : endAt - killedAt, failures: x.failures };
    },
  };
}

export const resetScenarios: Scenario[] = [resetScenario('reset-after-effect-lookup', 'create_ticket'), resetScenario('reset-after-effect-no-lookup', 'send_email')];
