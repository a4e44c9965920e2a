/**
 * End to end, docs/protocol.md#worker-plugin "a person resolves it in the store": a user's plain
 * workflow (`checkoutWorkflow`, `proxyActivities`) calls the fenced `chargeCard`; the worker
 * process is SIGKILLed right after the charge was applied (`TTC_CRASH_AT=after-effect:chargeCard`),
 * so the outcome is unknown (no lookup). A second worker with `onUnknownOutcome: 'wait'` keeps the
 * activity waiting (each attempt only re-reads the store); a person runs `ttc resolve-in-store
 * <workflowId> act-1 --applied <json> --reason …` as a separate process, and the next attempt
 * delivers that result: the workflow completes with it, the charge ran once. Real dev server, real
 * SQLite store, real processes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { callBindingId } from '../../src/checkpoint/call-identity';
import type { CheckpointRecord } from '../../src/checkpoint/types';
import { ToolCheckpointPlugin } from '../../src/plugin';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import { runCli } from '../helpers/cli';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { paymentActivities, readLedger } from './payment-activities';
import { spawnPluginWorker } from './plugin-worker-process';
import { checkoutWorkflow } from './workflows';

installQuietTemporalRuntime('ERROR');
jest.setTimeout(180_000);

describe("resolve-in-store end to end: a user's workflow waits on an unknown outcome until a person resolves it", () => {
  let env: LocalTestEnv;
  let dir: string;
  let storeUrl: string;
  let store: CheckpointStore;
  const doomed: Array<{ kill(): void; exited: Promise<unknown> }> = [];

  beforeAll(async () => {
    env = await createLocalEnv();
    dir = mkdtempSync(join(tmpdir(), 'ttc-resolve-in-store-e2e-'));
    storeUrl = `sqlite:${join(dir, 'checkpoints.db')}`;
    store = await openCheckpointStore(storeUrl);
  });

  afterAll(async () => {
    for (const worker of doomed) worker.kill();
    await Promise.all(doomed.map((w) => w.exited));
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('SIGKILL after the charge; the waiting activity delivers what `ttc resolve-in-store --applied` stored; one charge', async () => {
    const taskQueue = 'resolve-in-store-e2e';
    const workflowId = 'resolve-in-store-e2e';
    const ledger = join(dir, 'ledger.jsonl');
    const worker1 = await spawnPluginWorker({ address: env.devServer.address, taskQueue, storeUrl, ledger, lookup: false }, 'after-effect');
    doomed.push(worker1);
    const handle = await env.client.workflow.start(checkoutWorkflow, { workflowId, taskQueue, args: ['cus_7', 4_200] });
    expect(await worker1.exited).toBe('SIGKILL');
    const charges = readLedger(ledger);
    expect(charges).toEqual([expect.objectContaining({ kind: 'charge', pid: worker1.pid })]);

    const binding = { namespace: `${env.devServer.namespace}/default`, callId: callBindingId({ runChainId: handle.firstExecutionRunId, workflowId, callId: 'act-1' }) };
    const survivor = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('./workflows'),
      activities: { chargeCard: paymentActivities(ledger).chargeCard },
      // Each waiting attempt re-reads the store after 2 s; the workflow's policy allows 10 attempts.
      plugins: [
        new ToolCheckpointPlugin({
          store,
          reconcileMarginMs: 0,
          onUnknownOutcome: 'wait',
          unknownOutcomeRetryMs: 2_000,
          fence: { chargeCard: { revision: 'v1', callDeadlineMs: 2_000 } },
        }),
      ],
    });
    const { result, cli } = await survivor.runUntil(async () => {
      // The survivor's attempt found the dead claim past its settle time, marked it uncertain and waits.
      let paused: CheckpointRecord | null = null;
      for (let i = 0; i < 300 && paused?.status !== 'uncertain'; i += 1) {
        paused = await store.getByCall(binding.namespace, binding.callId);
        if (paused?.status !== 'uncertain') await new Promise((r) => setTimeout(r, 100));
      }
      expect(paused?.status).toBe('uncertain');
      // A person, in other processes, with the store URL and the namespace only: `ttc pending` shows
      // the call's revision and run chain, and the decision names both.
      const personEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TTC_STORE_URL: storeUrl, TEMPORAL_NAMESPACE: env.devServer.namespace };
      const pending = await runCli(['pending', '--no-temporal'], personEnv);
      const row = pending.stdout.split('\n').find((line) => line.includes(`${workflowId}/act-1`))!;
      const [, revision, runChain] = /\(revision (\d+), run chain ([^)]+)\)/.exec(row)!;
      expect([Number(revision), runChain]).toEqual([paused!.revision, handle.firstExecutionRunId]);
      const out = await runCli(
        [
          'resolve-in-store',
          workflowId,
          'act-1',
          '--run-chain',
          runChain!,
          '--revision',
          revision!,
          '--applied',
          JSON.stringify({ chargeId: charges[0]!.id }),
          '--reason',
          `found ${charges[0]!.id} in the ledger`,
          '--by',
          'e2e-operator',
        ],
        personEnv,
      );
      return { result: await handle.result(), cli: out };
    });

    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(`resolved ${workflowId}/act-1 in the store as applied`);
    expect(cli.stdout).toContain('tool: chargeCard revision v1');
    expect(cli.stdout).toMatch(/status: uncertain → completed/);
    // The key the CLI reports is the key the charge was sent with.
    expect(cli.stdout).toContain(`idempotency key: ${charges[0]!.idempotencyKey}`);

    expect(result).toEqual({ chargeId: charges[0]!.id });
    expect(readLedger(ledger)).toEqual(charges);
    const record = await store.getByCall(binding.namespace, binding.callId);
    expect(record?.status).toBe('delivered');
    expect(record?.result?.payload).toMatchObject({
      ok: true,
      output: { chargeId: charges[0]!.id },
      resolvedInStore: { kind: 'applied', by: 'e2e-operator', reason: `found ${charges[0]!.id} in the ledger`, fromStatus: 'uncertain' },
    });
    // The activity was not run again: only attempt 1 (the killed worker) reached it.
    expect(record?.execution?.attemptId).toMatch(/^attempt-1-/);
  });
});
