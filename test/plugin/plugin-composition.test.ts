/**
 * The plugin composes with Temporal's own machinery (real dev server, real SQLite store).
 * - OpenTelemetry: with `OpenTelemetryPlugin` registered first, each attempt's `RunActivity` span
 *   wraps the whole fence, so the checkpoint decisions, the activity's one execution and a retry
 *   that delivers the stored result are all inside that attempt's span. Registered after the
 *   fence, a store-delivered retry has no span at all (the fence returns without calling `next`).
 * - Prebuilt bundles: `bundleWorkflowCode({ plugins: [plugin] })` puts the workflow interceptor
 *   module in the bundle, so the call id comes from the `_ttc-call` header; a bundle made without
 *   the plugin falls back to the activity-context identity.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkerOptions } from '@temporalio/worker';
import { callBindingId } from '../../src/protocol';
import { openCheckpointStore, type CheckpointStore } from '../../src';
import { fencedCallContext, ToolCheckpointPlugin } from '../../src/plugin';
import type { FencePoint } from '../../src/activities';
import { createLocalEnv, installQuietTemporalRuntime, type LocalTestEnv } from '../helpers/temporal';
import { createTestTracing, type TestTracing } from '../helpers/otel';
import { paymentActivities, readLedger } from './payment-activities';
import { checkoutWorkflow } from './workflows';

installQuietTemporalRuntime();
jest.setTimeout(180_000);

let env: LocalTestEnv;
let dir: string;
let store: CheckpointStore;

beforeAll(async () => {
  env = await createLocalEnv();
  dir = mkdtempSync(join(tmpdir(), 'ttc-plugin-compose-'));
  store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
});

afterAll(async () => {
  await store?.close();
  await env?.teardown();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Runs `body` with a worker, then shuts it down. */
async function withWorker<T>(options: WorkerOptions, body: () => Promise<T>): Promise<T> {
  const worker = await Worker.create(options);
  return worker.runUntil(body());
}

/** The checkpoint of `callId` in `workflowId`'s run chain (`runChainId` defaults to the first run). */
async function checkpointOf(workflowId: string, callId: string, runChainId?: string) {
  const description = await env.client.workflow.getHandle(workflowId).describe();
  const chain = runChainId ?? description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
  return store.getByCall('default/default', callBindingId({ runChainId: chain, workflowId, callId }));
}

describe('with OpenTelemetryPlugin', () => {
  let tracing: TestTracing;

  beforeAll(() => {
    tracing = createTestTracing();
  });

  afterAll(async () => {
    await tracing?.shutdown();
  });

  /**
   * Runs checkoutWorkflow with `plugins(fencePlugin, otelPlugin)`; the first attempt fails right
   * after its result is stored, so the second attempt delivers the stored result. Records, for
   * every fence point and for the activity's execution, the span active there.
   */
  async function checkout(workflowId: string, order: (fence: ToolCheckpointPlugin, otel: OpenTelemetryPlugin) => WorkerOptions['plugins']) {
    const ledger = join(dir, `${workflowId}.jsonl`);
    const { chargeCard } = paymentActivities(ledger);
    const seen: { where: string; spanId: string | undefined }[] = [];
    let failed = false;
    const hooks = {
      step(point: FencePoint, attemptId: string) {
        const span = tracing.activeSpan();
        span?.addEvent(`ttc.fence.${point}`);
        seen.push({ where: `${attemptId.split('-').slice(0, 2).join('-')}:${point}`, spanId: span?.spanContext().spanId });
        if (point === 'after-result-stored' && !failed) {
          failed = true;
          throw new Error('test hook: attempt fails after its result is stored');
        }
      },
    };
    const fence = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } }, hooks });
    // `as never`: the plugin's types are from its own @opentelemetry 1.x copies, the test's SDK is 2.x.
    const otel = new OpenTelemetryPlugin({
      tracer: tracing.tracer,
      resource: resourceFromAttributes({ 'service.name': 'ttc-test' }) as never,
      // Workflow spans go through a sink to this processor; the test reads the activity spans only.
      spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()) as never,
    });
    const taskQueue = `compose-${workflowId}`;
    const result = await withWorker(
      {
        connection: env.nativeConnection,
        taskQueue,
        workflowsPath: require.resolve('./workflows'),
        activities: {
          chargeCard: async (customer: string, amountCents: number) => {
            seen.push({ where: `activity:${fencedCallContext()?.callId}`, spanId: tracing.activeSpan()?.spanContext().spanId });
            return chargeCard(customer, amountCents);
          },
        },
        plugins: order(fence, otel),
      },
      () => env.client.workflow.execute(checkoutWorkflow, { workflowId, taskQueue, args: ['cus_otel', 900] }),
    );
    const spans = tracing.spans('RunActivity:chargeCard').filter((s) => s.attributes['temporalWorkflowId'] === workflowId);
    return { result, seen, spans, effects: readLedger(ledger) };
  }

  it("registered first, OTel's RunActivity span of each attempt wraps the fence: the decisions, the one execution and the store-delivered retry", async () => {
    const { result, seen, spans, effects } = await checkout('otel-first', (fence, otel) => [otel, fence]);
    expect(effects).toHaveLength(1);
    expect(result).toEqual({ chargeId: effects[0]!.id });
    // One span per attempt: attempt 1 failed after storing, attempt 2 delivered the stored result.
    expect(spans).toHaveLength(2);
    const [first, second] = spans.map((s) => s.spanContext().spanId);
    const spanOf = (prefix: string) => [...new Set(seen.filter((s) => s.where.startsWith(prefix)).map((s) => s.spanId))];
    expect(spanOf('attempt-1:')).toEqual([first]);
    expect(spanOf('activity:')).toEqual([first]);
    expect(spanOf('attempt-2:')).toEqual([second]);
    // Attempt 1's result write also recorded its delivery (docs/protocol.md#cost): attempt 2 finds
    // the call delivered and returns it as stored.
    expect(seen.filter((s) => s.where.startsWith('attempt-2:')).map((s) => s.where)).toEqual(['attempt-2:before-claim', 'attempt-2:after-delivery-completed']);
    // The fence decisions are events of the attempt's span, in order.
    expect(spans[0]!.events.map((e) => e.name)).toEqual(
      expect.arrayContaining(['ttc.fence.before-claim', 'ttc.fence.after-claim', 'ttc.fence.before-execute', 'ttc.fence.after-effect', 'ttc.fence.after-result-stored']),
    );
    expect(spans[1]!.events.map((e) => e.name)).toEqual(['ttc.fence.before-claim', 'ttc.fence.after-delivery-completed']);
    expect(spans[1]!.status.code).not.toBe(2 /* SpanStatusCode.ERROR */);
  });

  it('registered after the fence, a store-delivered retry has no span: the fence returns before OTel runs', async () => {
    const { seen, spans, effects } = await checkout('otel-last', (fence, otel) => [fence, otel]);
    expect(effects).toHaveLength(1);
    expect(spans).toHaveLength(1);
    expect(seen.filter((s) => s.where.startsWith('attempt-') && s.spanId !== undefined)).toEqual([]);
    expect(seen.find((s) => s.where.startsWith('activity:'))?.spanId).toBe(spans[0]!.spanContext().spanId);
  });
});

describe('with a prebuilt workflow bundle', () => {
  const QUIET = new DefaultLogger('WARN');

  /** Runs checkoutWorkflow on a worker with the plugin and `workflowBundle`; returns the call id the activity ran under. */
  async function checkoutOnBundle(workflowId: string, code: string): Promise<{ callId: string | undefined; runId: string }> {
    const { chargeCard } = paymentActivities(join(dir, `${workflowId}.jsonl`));
    let callId: string | undefined;
    const taskQueue = `bundle-${workflowId}`;
    const runId = await withWorker(
      {
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: { code },
        activities: {
          chargeCard: async (customer: string, amountCents: number) => {
            callId = fencedCallContext()?.callId;
            return chargeCard(customer, amountCents);
          },
        },
        plugins: [new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } })],
      },
      async () => {
        const handle = await env.client.workflow.start(checkoutWorkflow, { workflowId, taskQueue, args: ['cus_bundle', 100] });
        await handle.result();
        return handle.firstExecutionRunId;
      },
    );
    return { callId, runId };
  }

  it('bundleWorkflowCode({ plugins: [plugin] }) carries the workflow interceptor: the call id comes from the _ttc-call header', async () => {
    const plugin = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } });
    const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), plugins: [plugin], logger: QUIET });
    const { callId } = await checkoutOnBundle('bundle-with-plugin', code);
    expect(callId).toBe('act-1');
    expect((await checkpointOf('bundle-with-plugin', 'act-1'))?.status).toBe('delivered');
  });

  it('a bundle made without the plugin falls back to the activity-context identity (activity id in the run)', async () => {
    const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), logger: QUIET });
    const { callId, runId } = await checkoutOnBundle('bundle-without-plugin', code);
    expect(callId).toBe('activity-1');
    expect(await checkpointOf('bundle-without-plugin', 'act-1')).toBeNull();
    expect((await checkpointOf('bundle-without-plugin', 'activity-1', runId))?.status).toBe('delivered');
  });
});
