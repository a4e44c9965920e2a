/**
 * One business action across runs, end to end (docs/protocol.md#business-keys): two agent runs
 * for the same order race on two worker processes sharing a PostgreSQL store on a dev server; the
 * order is charged once, the run that did not charge says which run did, and a third run with the
 * same order and another amount is refused (IDEMPOTENCY_CONFLICT) without a charge.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient, scriptedRunInput, startAgentRun } from '../../src/client';
import { resolveConfig } from '../../src/config';
import { startDevServer, type DevServer } from '../../src/dev/dev-server';
import { spawnWorker, type WorkerProcess } from '../../src/dev/worker-process';
import { startProvider, type RunningProvider } from '../../examples/provider/start-provider';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { transcriptFor } from '../../crash/transcripts';

jest.setTimeout(240_000);

/** A scripted Anthropic conversation (the crash harness's shape): one `charge_payment` call, then a final answer. */
function chargeTranscript(orderId: string, amountCents: number): unknown {
  return transcriptFor(`${orderId}-${amountCents}`, [{ id: 'toolu_charge', name: 'charge_payment', input: { orderId, amountCents, card: 'card_visa' } }]);
}

describe('a business key across runs on a fleet with a PostgreSQL store', () => {
  let dir: string;
  let server: DevServer;
  let provider: RunningProvider;
  let database: TestDatabase;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-business-e2e-'));
    [server, provider, database] = await Promise.all([startDevServer(), startProvider({ dbFile: join(dir, 'provider.db'), stderr: 'ignore' }), createTestDatabase()]);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await provider?.stop();
    await server?.stop({ signal: 'SIGKILL' });
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('charges an order once for two racing runs, says which run charged, and refuses the same order with another amount', async () => {
    const env = { TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: 'business-keys', TTC_STORE_URL: database.url, TTC_PROVIDER_URL: provider.url };
    const config = resolveConfig({}, { ...process.env, ...env });
    const toolsModule = join(__dirname, '../fixtures/business-key-tools.ts');
    workers.push(...(await Promise.all(['worker-a', 'worker-b'].map((identity) => spawnWorker({ env, identity, toolsModule })))));
    const { client, close } = await connectClient(config);
    try {
      const stamp = Date.now();
      const runs = await Promise.all(
        ['a', 'b'].map((name) => startAgentRun(client, config, scriptedRunInput(config, chargeTranscript('order-77', 1_500)), `order-77-webhook-${name}-${stamp}`)),
      );
      const results = await Promise.all(runs.map((run) => run.result()));

      const charges = (await provider.client.effects()).byKind['payment.charge'];
      expect(charges).toBe(1);
      expect(results.map((r) => [r.status, r.calls.map((c) => c.status)])).toEqual([
        ['completed', ['completed']],
        ['completed', ['completed']],
      ]);
      const calls = results.map((r) => r.calls[0]!);
      const charger = calls.findIndex((c) => c.answeredBy === undefined);
      expect(charger).toBeGreaterThanOrEqual(0);
      const answered = calls[1 - charger]!;
      expect(calls[charger]!.source).toBe('executed');
      const chargerRun = await runs[charger]!.describe();
      expect(answered.answeredBy).toEqual({ workflowId: chargerRun.workflowId, runChainId: chargerRun.runId, callId: 'toolu_charge' });
      expect(answered.reason).toContain(`already done by another run: workflow ${runs[charger]!.workflowId}`);
      expect(answered.outcome).toEqual(calls[charger]!.outcome);
      expect(answered.idempotencyKey).toBe(calls[charger]!.idempotencyKey);
      // The answered run does not own the charge: it is applied, and never compensated by that run.
      expect(results[1 - charger]!.effects.applied).toEqual(['toolu_charge']);

      const other = await startAgentRun(client, config, scriptedRunInput(config, chargeTranscript('order-77', 2_500)), `order-77-webhook-c-${stamp}`);
      const refused = (await other.result()).calls[0]!;

      expect(refused).toMatchObject({ status: 'failed', errorType: 'IDEMPOTENCY_CONFLICT' });
      expect(refused.reason).toContain(`workflow ${runs[charger]!.workflowId}`);
      expect((await provider.client.effects()).byKind['payment.charge']).toBe(1);
    } finally {
      await close();
    }
  });
});
