/**
 * The Temporal dev server is SIGKILLed mid-run, while a create_ticket is in flight (the
 * provider holds the request for 1.5 s), and restarted on the same port with the same
 * database file. The worker and the client reconnect; the run finishes with every effect
 * applied once.
 */
import { checkEffects, countLostResults, settleWithOperator } from '../checks';
import type { Repetition } from '../repetition';
import { Expectations, type RunOutcome, type Scenario } from '../scenario';
import { emailCall, ticketCall } from '../transcripts';

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** How long the server stays down, ms. */
const DOWN_MS = 1_000;

export const serverRestartScenario: Scenario = {
  id: 'server-restart',
  title: 'Temporal dev server SIGKILLed mid-call and restarted (create_ticket in flight, then send_email)',
  forced: `SIGKILL of \`temporal server start-dev\` while the provider holds the create_ticket request (delayMs 1,500); restart after ${DOWN_MS} ms on the same port and database file`,
  expected: 'the run finishes, no pause; one ticket and one email',
  exclusive: true,
  async run(rep: Repetition): Promise<RunOutcome> {
    const x = new Expectations();
    const calls = [ticketCall(rep.tag, 1), emailCall(rep.tag, 2)];
    const provider = rep.stack.provider.client;
    await rep.worker();
    await provider.setFaults({ delayMs: 1_500, pathPrefix: '/tickets' });
    let killedAt = 0;
    try {
      const handle = await rep.start(calls);
      await rep.waitForRecord(calls[0]!, (r) => r.status === 'executing', 90_000);
      await sleep(200); // the request is at the provider now
      const down = await rep.stack.killServer();
      killedAt = down.killedAt;
      await sleep(DOWN_MS);
      await down.restart();
      await provider.clearFaults();

      const { state, pauses } = await settleWithOperator(rep, handle, calls, x);
      x.equal(pauses, [], 'pauses');
      const effects = await checkEffects(rep, calls, x);
      const resultsLost = await countLostResults(rep, calls, state, x);
      const completedAt = (await rep.callEvents(handle)).get(calls[0]!.id)?.completedAt;
      return { ...effects, resultsLost, paused: pauses.length > 0, unknownNotPaused: false, recoveryMs: completedAt == null ? null : completedAt - killedAt, failures: x.failures };
    } finally {
      await provider.clearFaults().catch(() => undefined);
    }
  },
};
