/**
 * Adversarial: "a throw inside telemetry must never fail or double-run a call". The real
 * fenced activity (createToolActivities, MockActivityEnvironment) against a real SQLite store, with
 * telemetry that throws: a Temporal metric meter whose instruments throw, and an OpenTelemetry
 * span processor (registered globally, as a user's SDK would be) whose onEnd throws. The tool must
 * run exactly once and the attempt must return its result; each kind of failure is logged once,
 * as a warning through the activity logger. (Found by review: `storeLatency` and `span.end()` ran
 * in a `finally` after the claim's insert, so their exception replaced its result.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { noopMetricMeter, type LogLevel, type LogMetadata, type MetricMeter } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type Logger } from '@temporalio/worker';
import { z } from 'zod';
import { createToolActivities, defineTool } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';

const QUIET = new DefaultLogger('ERROR');

/** A meter whose counters and histograms throw when used (a broken exporter, a name clash with another instrument kind). */
const throwingMeter: MetricMeter = {
  createCounter: (name) => ({
    ...noopMetricMeter.createCounter(name),
    add: () => {
      throw new Error('metric exporter broke');
    },
  }),
  createHistogram: (name) => ({
    ...noopMetricMeter.createHistogram(name),
    record: () => {
      throw new Error('metric exporter broke');
    },
  }),
  createGauge: (name) => noopMetricMeter.createGauge(name),
  withTags: () => throwingMeter,
};

class ThrowingOnEnd implements SpanProcessor {
  onStart(): void {}
  onEnd(_span: ReadableSpan): void {
    throw new Error('span exporter broke');
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

describe('telemetry that throws never fails or double-runs a fenced call', () => {
  let dir: string;
  let store: CheckpointStore;
  const executions: string[] = [];
  const ticket = defineTool({
    name: 'create_ticket',
    revision: 'v1',
    input: z.object({ title: z.string() }).strict(),
    async execute(input) {
      executions.push(input.title);
      return { output: { ticketId: `T-${input.title}` }, receipt: null };
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-adv13-telemetry-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
  });
  afterAll(async () => {
    trace.disable();
    await store?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function attempt(callId: string, title: string, meter: MetricMeter, attemptNumber = 1, logger: Logger = QUIET): Promise<{ result?: FencedToolResult; error?: unknown }> {
    const activities = createToolActivities({ store, tools: [ticket] });
    const input: FencedToolInput = { tenant: 'acme', callId, toolName: 'create_ticket', input: { title } };
    const env = new MockActivityEnvironment(
      { activityType: 'create_ticket', attempt: attemptNumber, heartbeatTimeoutMs: 30_000, workflowExecution: { workflowId: 'wf-adv13', runId: 'run-adv13' } },
      { metricMeter: meter, logger },
    );
    try {
      return { result: await env.run(activities.runFencedTool, input) };
    } catch (error) {
      return { error };
    }
  }

  // First: each kind of failure is logged once per process, so a later test would find it logged already.
  it('each kind of telemetry failure is logged once, as a warning through the activity logger', async () => {
    const warnings: string[] = [];
    const logger = new DefaultLogger('WARN', ({ level, message }: { level: LogLevel; message: string; meta?: LogMetadata }) => void (level === 'WARN' && warnings.push(message)));
    const first = await attempt('call-logged', 'logged', throwingMeter, 1, logger);
    const second = await attempt('call-logged', 'logged', throwingMeter, 2, logger);
    expect([first.result?.source, second.result?.source, executions.filter((t) => t === 'logged').length]).toEqual(['executed', 'store', 1]);
    expect(warnings.sort()).toEqual([
      expect.stringMatching(/^telemetry failed and was ignored \(metric ttc_store_operation_latency\)/),
      expect.stringMatching(/^telemetry failed and was ignored \(metric ttc_tool_calls\)/),
    ]);
  });

  it('a metric meter whose instruments throw: the call runs once and its result is returned', async () => {
    const first = await attempt('call-meter', 'meter', throwingMeter);
    const retry = first.error === undefined ? null : await attempt('call-meter', 'meter', throwingMeter, 2);
    expect({
      error: first.error === undefined ? null : String(first.error),
      source: first.result?.source,
      executions: executions.filter((t) => t === 'meter').length,
      retryError: retry?.error === undefined ? null : String(retry.error),
    }).toEqual({
      error: null,
      source: 'executed',
      executions: 1,
      retryError: null,
    });
  });

  it('a span processor whose onEnd throws: the call runs once and its result is returned', async () => {
    const provider = new BasicTracerProvider({ spanProcessors: [new ThrowingOnEnd()] });
    trace.setGlobalTracerProvider(provider);
    try {
      const first = await attempt('call-span', 'span', noopMetricMeter);
      expect({ error: first.error === undefined ? null : String(first.error), source: first.result?.source, executions: executions.filter((t) => t === 'span').length }).toEqual({
        error: null,
        source: 'executed',
        executions: 1,
      });
    } finally {
      trace.disable();
    }
  });
});
