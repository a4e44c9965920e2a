/**
 * Traces and metrics: every fenced call attempt is an `execute_tool <tool>` span
 * (OpenTelemetry GenAI conventions) with the fence's attributes and the store's operations as
 * child spans, and is counted on the activity's metric meter. The real activities run in
 * MockActivityEnvironment against a real SQLite store; spans land in the SDK's in-memory
 * exporter through the global tracer provider (as a user's OpenTelemetry SDK would register it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { noopMetricMeter, type MetricMeter, type MetricTags } from '@temporalio/common';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type WorkerOptions } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError } from '../../../src/activities';
import type { FencedToolInput, FencedToolResult, ResolveToolCallInput, ResolveToolCallResult, ToolCallDescription } from '../../../src/activities/contract/contract';
import { ToolCheckpointPlugin } from '../../../src/plugin';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { createTestTracing, type TestTracing } from '../../helpers/otel';

const SECRET_TITLE = 'title-that-must-not-leak';
const QUIET = new DefaultLogger('ERROR');

/** Every value a metric got, with its tags (the SDK adds the activity's: namespace, task queue, activity type). */
class RecordingMeter {
  readonly points: { name: string; tags: MetricTags; value: number }[] = [];
  readonly meter: MetricMeter = {
    createCounter: (name) => ({ ...noopMetricMeter.createCounter(name), add: (value: number, tags?: MetricTags) => void this.points.push({ name, tags: tags ?? {}, value }) }),
    createHistogram: (name) => ({
      ...noopMetricMeter.createHistogram(name),
      record: (value: number, tags?: MetricTags) => void this.points.push({ name, tags: tags ?? {}, value }),
    }),
    createGauge: (name) => noopMetricMeter.createGauge(name),
    withTags: () => this.meter,
  };

  /** `name`'s points as `value of tag` → sum of values (counters) or number of points (histograms, `count`). */
  by(name: string, tag: string, count = false): Record<string, number> {
    const totals: Record<string, number> = {};
    for (const p of this.points.filter((p) => p.name === name)) totals[String(p.tags[tag])] = (totals[String(p.tags[tag])] ?? 0) + (count ? 1 : p.value);
    return totals;
  }
}

describe('spans and metrics of a fenced call attempt', () => {
  let dir: string;
  let store: CheckpointStore;
  let tracing: TestTracing;
  let provider: BasicTracerProvider;
  const executions: string[] = [];

  const ticket = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: z.object({ title: z.string() }).strict(),
    async execute(input) {
      executions.push(input.title);
      return { output: { ticketId: 'T-1', title: input.title }, receipt: { id: 'T-1' } };
    },
  });
  // No lookup, no key deduplication: an unknown outcome pauses the run.
  const email = defineTool({
    name: 'send_email',
    revision: 'v1',
    input: z.object({ to: z.string() }).strict(),
    async execute() {
      throw new ToolError('unknown-outcome', 'the connection dropped after the request was sent');
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-telemetry-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    tracing = createTestTracing();
    provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(tracing.exporter)] });
    trace.setGlobalTracerProvider(provider);
  });

  afterAll(async () => {
    trace.disable();
    await provider?.shutdown();
    await tracing?.shutdown();
    await store?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => tracing.exporter.reset());

  /** One attempt of `runFencedTool`, its metrics recorded. */
  async function attempt(
    input: FencedToolInput,
    attemptNumber: number,
    meter = new RecordingMeter(),
  ): Promise<{ result?: FencedToolResult; error?: unknown; meter: RecordingMeter }> {
    const activities = createToolActivities({ store, tools: [ticket, email] });
    const env = new MockActivityEnvironment(
      { activityType: input.toolName, attempt: attemptNumber, heartbeatTimeoutMs: 30_000, workflowExecution: { workflowId: 'wf-telemetry', runId: 'run-telemetry' } },
      { metricMeter: meter.meter, logger: QUIET },
    );
    try {
      return { result: await env.run(activities.runFencedTool, input), meter };
    } catch (error) {
      return { error, meter };
    }
  }

  /** The one span named `name`, and the spans whose parent it is, in start order. */
  function spanTree(name: string): { span: ReadableSpan; children: ReadableSpan[] } {
    const [span, ...others] = tracing.spans(name);
    expect(others).toEqual([]);
    const children = tracing.exporter
      .getFinishedSpans()
      .filter((s) => s.parentSpanContext?.spanId === span!.spanContext().spanId)
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
    return { span: span!, children };
  }

  it('a fresh call: one execute_tool span (GenAI attributes, source executed) with the store operations as children, two of them writes; counted as executed', async () => {
    const input: FencedToolInput = { tenant: 'acme', callId: 'call-fresh', toolName: 'create_ticket', input: { title: SECRET_TITLE } };
    const { result, meter } = await attempt(input, 1);
    expect(result?.source).toBe('executed');
    const { span, children } = spanTree('execute_tool create_ticket');
    const [stored, ...more] = await store.listByStatus(['delivered']);
    expect(more).toEqual([]);
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    expect(span.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'create_ticket',
      'gen_ai.tool.call.id': 'call-fresh',
      'gen_ai.tool.type': 'function',
      'ttc.tool.revision': 'v1',
      'ttc.idempotency_key': result!.idempotencyKey,
      'ttc.attempt': 1,
      'ttc.call.approved': false,
      'ttc.checkpoint.status_found': 'absent',
      'ttc.action': 'execute',
      'ttc.result.source': 'executed',
      'ttc.result.ok': true,
      'ttc.checkpoint.revision': stored!.revision,
    });
    // The claim is the insert, the result and its delivery are one write: two statements.
    expect(children.map((s) => [s.name, s.kind, s.attributes['db.system.name'], s.attributes['db.operation.name']])).toEqual([
      ['ttc.store createIfAbsent', SpanKind.CLIENT, 'sqlite', 'createIfAbsent'],
      ['ttc.store compareAndSwap', SpanKind.CLIENT, 'sqlite', 'compareAndSwap'],
    ]);
    expect(children.map((s) => s.attributes['ttc.store.created'] ?? s.attributes['ttc.cas.swapped'] ?? null)).toEqual([true, true]);
    // Neither the arguments nor the result reach any span.
    expect(JSON.stringify(tracing.exporter.getFinishedSpans().map((s) => s.attributes))).not.toMatch(/title-that-must-not-leak|T-1/);
    expect(meter.by('ttc_tool_calls', 'source')).toEqual({ executed: 1 });
    expect(meter.by('ttc_store_operation_latency', 'operation', true)).toEqual({ createIfAbsent: 1, compareAndSwap: 1 });
    expect(meter.points.find((p) => p.name === 'ttc_tool_calls')?.tags).toMatchObject({ activityType: 'create_ticket' });
  });

  it('a retried attempt of a delivered call returns the stored result: source store, status found delivered, one store read, the tool not called again', async () => {
    const input: FencedToolInput = { tenant: 'acme', callId: 'call-retried', toolName: 'create_ticket', input: { title: 'retried' } };
    await attempt(input, 1);
    tracing.exporter.reset();
    const { result, meter } = await attempt(input, 2);
    expect(result?.source).toBe('store');
    expect(executions.filter((t) => t === 'retried')).toHaveLength(1);
    const { span, children } = spanTree('execute_tool create_ticket');
    expect(span.attributes).toMatchObject({
      'ttc.attempt': 2,
      'ttc.checkpoint.status_found': 'delivered',
      'ttc.action': 'none',
      'ttc.result.source': 'store',
      'ttc.idempotency_key': result!.idempotencyKey,
    });
    // A retry expects the record: it reads it first, one statement, and inserts nothing.
    expect(children.map((s) => [s.name, s.attributes['ttc.store.created']])).toEqual([['ttc.store get', undefined]]);
    expect(meter.by('ttc_tool_calls', 'source')).toEqual({ store: 1 });
  });

  it('an attempt that fails sets the span status to ERROR with error.type = the error code, and counts a pause', async () => {
    const input: FencedToolInput = { tenant: 'acme', callId: 'call-unknown', toolName: 'send_email', input: { to: 'a@example.com' } };
    const { error, meter } = await attempt(input, 1);
    expect((error as { type?: string }).type).toBe('OUTCOME_UNKNOWN');
    const { span, children } = spanTree('execute_tool send_email');
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'OUTCOME_UNKNOWN' });
    expect(span.attributes).toMatchObject({ 'error.type': 'OUTCOME_UNKNOWN', 'ttc.checkpoint.status_found': 'absent', 'ttc.action': 'execute' });
    expect(span.attributes['ttc.result.source']).toBeUndefined();
    // The claim, the uncertain mark.
    expect(children.map((s) => s.name)).toEqual(['ttc.store createIfAbsent', 'ttc.store compareAndSwap']);
    expect(meter.by('ttc_pauses', 'reason')).toEqual({ OUTCOME_UNKNOWN: 1 });
    expect(meter.by('ttc_tool_calls', 'source')).toEqual({});
  });

  it('who decided names the span (ttc.decision.by): the approver on an approved call, the person who resolved on a delivered resolution; the checkpoint and the delivered outcome keep the resolver', async () => {
    const activities = createToolActivities({ store, tools: [ticket, email] });
    const mock = (attemptNumber: number) =>
      new MockActivityEnvironment(
        { activityType: 'x', attempt: attemptNumber, heartbeatTimeoutMs: 30_000, workflowExecution: { workflowId: 'wf-telemetry', runId: 'run-telemetry' } },
        { logger: QUIET },
      );
    // An approved call: the approval's `by` travels with the input.
    const approvedInput: FencedToolInput = { tenant: 'acme', callId: 'call-approved-by', toolName: 'create_ticket', input: { title: 'approved' } };
    const described = (await mock(1).run(activities.describeToolCall, approvedInput)) as ToolCallDescription;
    await attempt({ ...approvedInput, expectedIntentDigest: described.intentDigest!, approvedBy: 'alice@example.com' }, 1);
    expect(spanTree('execute_tool create_ticket').span.attributes).toMatchObject({ 'ttc.call.approved': true, 'ttc.decision.by': 'alice@example.com' });

    // A lost answer, resolved applied by carol: stored with her name, delivered to the next attempt.
    const lost: FencedToolInput = { tenant: 'acme', callId: 'call-resolved-by', toolName: 'send_email', input: { to: 'b@example.com' } };
    await attempt(lost, 1);
    const resolution: ResolveToolCallInput = {
      ...lost,
      resolution: 'applied',
      result: { ok: true, output: { messageId: 'm-1' }, receipt: null },
      reason: 'found in the outbox',
      decidedBy: 'carol',
    };
    const resolved = (await mock(2).run((input: ResolveToolCallInput) => activities.resolveToolCall(input), resolution)) as ResolveToolCallResult;
    expect(resolved.outcome).toEqual({ ok: true, output: { messageId: 'm-1' }, receipt: null, resolvedInStore: expect.objectContaining({ kind: 'applied', by: 'carol' }) });
    const [record] = (await store.listByStatus(['delivered'])).filter((r) => JSON.stringify(r.binding).includes('call-resolved-by'));
    expect(record!.result!.payload).toMatchObject({ resolvedInStore: { kind: 'applied', by: 'carol', reason: 'found in the outbox' } });
    tracing.exporter.reset();
    const { result } = await attempt(lost, 3);
    expect(result?.source).toBe('store');
    expect(spanTree('execute_tool send_email').span.attributes).toMatchObject({ 'ttc.result.resolved_by_person': 'applied', 'ttc.decision.by': 'carol' });
    // A call nobody decided on carries no such attribute.
    tracing.exporter.reset();
    await attempt({ tenant: 'acme', callId: 'call-undecided', toolName: 'create_ticket', input: { title: 'undecided' } }, 1);
    expect(spanTree('execute_tool create_ticket').span.attributes['ttc.decision.by']).toBeUndefined();
  });

  it("composes with OpenTelemetryPlugin: the fence's execute_tool span is a child of the attempt's RunActivity span, the store spans its children", async () => {
    const fence = new ToolCheckpointPlugin({ store, fence: { chargeCard: { revision: 'v1' } } });
    // `as never`: the plugin's types are from its own @opentelemetry 1.x copies, the test's SDK is 2.x.
    const otel = new OpenTelemetryPlugin({
      tracer: tracing.tracer,
      resource: resourceFromAttributes({ 'service.name': 'ttc-test' }) as never,
      spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()) as never,
    });
    // As Worker.create applies plugins in order: OTel first, so its RunActivity span wraps the fence.
    const options = fence.configureWorker(otel.configureWorker({ taskQueue: 'unit' } as WorkerOptions));
    const env = new MockActivityEnvironment(
      { activityType: 'chargeCard', activityId: '1', workflowType: 'checkoutWorkflow', workflowExecution: { workflowId: 'wf-otel', runId: 'run-otel' } },
      { interceptors: options.interceptors?.activity ?? [] },
    );
    const charged = await env.run(async (customer: string) => ({ chargeId: `ch-${customer}` }), 'cus_otel');
    expect(charged).toEqual({ chargeId: 'ch-cus_otel' });
    const [runActivity] = tracing.spans('RunActivity:chargeCard');
    const { span, children } = spanTree('execute_tool chargeCard');
    expect(span.parentSpanContext?.spanId).toBe(runActivity!.spanContext().spanId);
    expect(span.spanContext().traceId).toBe(runActivity!.spanContext().traceId);
    expect(span.attributes).toMatchObject({ 'gen_ai.tool.name': 'chargeCard', 'gen_ai.tool.call.id': 'activity-1', 'ttc.result.source': 'executed' });
    expect(children.map((s) => s.name)).toEqual(['ttc.store createIfAbsent', 'ttc.store compareAndSwap']);
  });
});
