/**
 * A user's existing workflow and activities get fenced calls by adding the plugin to
 * `Worker.create({ plugins })` (real dev server, real SQLite store). A hook fails the first
 * attempt right after the result is stored; the retry returns the stored result without
 * calling the activity again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimplePlugin } from '@temporalio/plugin';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { z } from 'zod';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { ToolCheckpointPlugin } from '../../src/plugin';
import { defineTool, type FencePoint } from '../../src/activities';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { paymentActivities, readLedger } from './payment-activities';
import { chargeEachRunWorkflow, checkoutWorkflow, invoiceWorkflow, ticketWorkflow } from './workflows';

installQuietTemporalRuntime();
jest.setTimeout(120_000);

const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

/** Fence hooks that fail the first attempt reaching `point`, and record every point reached. */
function failOnceAt(point: FencePoint): { seen: string[]; hooks: { step(p: FencePoint, attemptId: string): void } } {
  const seen: string[] = [];
  let failed = false;
  return {
    seen,
    hooks: {
      step(p, attemptId) {
        seen.push(`${attemptId.split('-').slice(0, 2).join('-')}:${p}`);
        if (p === point && !failed) {
          failed = true;
          throw new Error(`test hook: attempt fails at ${p}`);
        }
      },
    },
  };
}

describe('ToolCheckpointPlugin on a real server', () => {
  let env: LocalTestEnv;
  let dir: string;
  let store: CheckpointStore;
  /**
   * `./workflows` bundled once with the plugin's workflow interceptor (`bundleWorkflowCode({ plugins })`), for the workers
   * after the first; the first worker bundles its `workflowsPath` itself, as a user's worker with the plugin does.
   */
  let bundle: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-plugin-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    const bundlingPlugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } });
    [env, bundle] = await Promise.all([createLocalEnv(), bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), plugins: [bundlingPlugin], logger: quietLogger })]);
  });

  afterAll(async () => {
    await store?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `body` with a worker on `taskQueue`, then shuts it down. */
  async function withWorker<T>(options: Parameters<typeof Worker.create>[0], body: () => Promise<T>): Promise<T> {
    const worker = await Worker.create(options);
    return worker.runUntil(body());
  }

  /** The checkpoint of the workflow's n-th activity command, found by the call id the header carries. */
  async function checkpointOf(workflowId: string, seq: number) {
    const description = await env.client.workflow.getHandle(workflowId).describe();
    const runChainId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
    return store.getByCall('default/default', callBindingId({ runChainId, workflowId, callId: `act-${seq}` }));
  }

  it("fences a plain workflow's proxyActivities call: one effect, the retry returns the stored result without calling the activity", async () => {
    const ledger = join(dir, 'ledger-1.jsonl');
    const { chargeCard } = paymentActivities(ledger);
    let calls = 0;
    const probe = failOnceAt('after-result-stored');
    const result = await withWorker(
      {
        connection: env.nativeConnection,
        taskQueue: 'plugin-checkout',
        workflowsPath: require.resolve('./workflows'),
        activities: {
          chargeCard: async (customer: string, amountCents: number) => {
            calls += 1;
            return chargeCard(customer, amountCents);
          },
        },
        plugins: [new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, hooks: probe.hooks })],
      },
      () => env.client.workflow.execute(checkoutWorkflow, { workflowId: 'plugin-checkout-1', taskQueue: 'plugin-checkout', args: ['cus_1', 1_250] }),
    );
    const effects = readLedger(ledger);
    expect(effects).toHaveLength(1);
    expect(calls).toBe(1);
    expect(result).toEqual({ chargeId: effects[0]!.id });
    // The activity learned its call's idempotency key through fencedCallContext().
    expect(effects[0]!.idempotencyKey).toMatch(/^ttc/);
    // Attempt 1 ran the activity and failed after storing; attempt 2 delivered from the store.
    expect(probe.seen).toContain('attempt-1:after-effect');
    // Attempt 1's one result write also recorded its delivery (docs/protocol.md#cost): attempt 2
    // finds the call delivered and returns the stored result.
    expect(probe.seen.filter((s) => s.startsWith('attempt-2:'))).toEqual(['attempt-2:before-claim', 'attempt-2:after-delivery-completed']);
    const record = await checkpointOf('plugin-checkout-1', 1);
    expect(record?.status).toBe('delivered');
    expect(record?.binding.toolName).toBe('chargeCard');
    expect(record?.result?.payload).toEqual({ ok: true, output: result, receipt: null });
    // The delivery recorded is attempt 1's (its result write recorded it); attempt 2 returned the delivered result as stored.
    expect(record?.delivery?.deliveryId).toMatch(/^delivery-1-/);
  });

  it('fences an activity another plugin registers, by naming it in `fence`', async () => {
    const ledger = join(dir, 'ledger-2.jsonl');
    const { sendInvoice } = paymentActivities(ledger);
    let calls = 0;
    const other = new SimplePlugin({
      name: 'test.InvoicingPlugin',
      activities: {
        sendInvoice: async (customer: string) => {
          calls += 1;
          return sendInvoice(customer);
        },
      },
    });
    const probe = failOnceAt('after-result-stored');
    const result = await withWorker(
      {
        connection: env.nativeConnection,
        taskQueue: 'plugin-invoice',
        workflowBundle: bundle,
        plugins: [other, new ToolCheckpointPlugin({ store, fence: { sendInvoice: { revision: 'v1' } }, hooks: probe.hooks })],
      },
      () => env.client.workflow.execute(invoiceWorkflow, { workflowId: 'plugin-invoice-1', taskQueue: 'plugin-invoice', args: ['cus_2'] }),
    );
    const effects = readLedger(ledger);
    expect(effects).toHaveLength(1);
    expect(calls).toBe(1);
    expect(result).toEqual({ invoiceId: effects[0]!.id });
    expect(probe.seen).toContain('attempt-2:after-delivery-completed');
    expect((await checkpointOf('plugin-invoice-1', 1))?.binding.toolName).toBe('sendInvoice');
  });

  it('leaves activities it is not told about alone', async () => {
    const ledger = join(dir, 'ledger-3.jsonl');
    const probe = failOnceAt('after-result-stored');
    const result = await withWorker(
      {
        connection: env.nativeConnection,
        taskQueue: 'plugin-unfenced',
        workflowBundle: bundle,
        activities: { chargeCard: paymentActivities(ledger).chargeCard },
        plugins: [new ToolCheckpointPlugin({ store, fence: { sendInvoice: { revision: 'v1' } }, hooks: probe.hooks })],
      },
      () => env.client.workflow.execute(checkoutWorkflow, { workflowId: 'plugin-unfenced-1', taskQueue: 'plugin-unfenced', args: ['cus_3', 10] }),
    );
    expect(readLedger(ledger)).toEqual([expect.objectContaining({ id: result.chargeId, idempotencyKey: null })]);
    expect(probe.seen).toEqual([]);
    expect(await checkpointOf('plugin-unfenced-1', 1)).toBeNull();
  });

  it('registers each defineTool tool as an activity named by the tool, fenced', async () => {
    let executions = 0;
    const createTicket = defineTool({
      name: 'create_ticket',
      revision: 'v1',
      input: z.object({ title: z.string() }).strict(),
      async execute(input) {
        executions += 1;
        return { output: { ticketId: `T-${input.title}` } };
      },
    });
    const probe = failOnceAt('after-result-stored');
    const result = await withWorker(
      {
        connection: env.nativeConnection,
        taskQueue: 'plugin-tools',
        workflowBundle: bundle,
        plugins: [new ToolCheckpointPlugin({ store, tools: [createTicket], hooks: probe.hooks })],
      },
      () =>
        env.client.workflow.execute(ticketWorkflow, {
          workflowId: 'plugin-tools-1',
          taskQueue: 'plugin-tools',
          args: [{ tenant: 'acme', callId: 'call-1', toolName: 'create_ticket', input: { title: 'printer' } }],
        }),
    );
    expect(executions).toBe(1);
    expect(result).toMatchObject({ toolName: 'create_ticket', source: 'store', outcome: { ok: true, output: { ticketId: 'T-printer' } } });
    const history = await env.client.workflow.getHandle('plugin-tools-1').fetchHistory();
    const scheduled = history.events?.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
    expect(scheduled).toEqual(['create_ticket']);
  });

  it('gives calls of a continued-as-new run their own identity (sequence numbers restart, the chain does not)', async () => {
    const ledger = join(dir, 'ledger-5.jsonl');
    const result = await withWorker(
      {
        connection: env.nativeConnection,
        taskQueue: 'plugin-can',
        workflowBundle: bundle,
        activities: { chargeCard: paymentActivities(ledger).chargeCard },
        plugins: [new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } })],
      },
      () => env.client.workflow.execute(chargeEachRunWorkflow, { workflowId: 'plugin-can-1', taskQueue: 'plugin-can', args: ['cus_5', 3] }),
    );
    const effects = readLedger(ledger);
    expect(effects).toHaveLength(3);
    expect(new Set(effects.map((e) => e.idempotencyKey)).size).toBe(3);
    expect(result).toEqual({ chargeId: effects[2]!.id });
  });
});
