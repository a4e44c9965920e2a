/**
 * Telemetry never changes the fence's behaviour, explored (fast-check): a call's
 * attempts run through the real fenced activity (`createToolActivities(...).runFencedTool` in a
 * `MockActivityEnvironment`, a real SQLite store, a virtual clock) twice, once with working
 * telemetry and once with telemetry that throws at an arbitrary subset of its calls: whole kinds
 * (the meter's instrument creation, `add`, `record`; the tracer provider, `startSpan`, a span's
 * `setAttribute` / `setStatus` / `end` / `isRecording`; the context manager's `active` / `with`,
 * before or after calling back) and single calls by their index. Both runs must end alike: the
 * same result or error type of every attempt, the same number of executions and lookups of the
 * tool, the same final checkpoint status, and no unhandled rejection.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context, ROOT_CONTEXT, trace, type Context, type ContextManager, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { noopMetricMeter, type MetricMeter } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import fc from 'fast-check';
import { z } from 'zod';
import { createToolActivities, defineTool, ToolError } from '../../src/activities';
import type { FencedToolInput, FencedToolResult } from '../../src/activities/contract/contract';
import { callBindingId } from '../../src/checkpoint/call-identity';
import type { CheckpointStore } from '../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../src/stores/open-checkpoint-store';

const RUNS = 100;
const QUIET = new DefaultLogger('ERROR');
const TENANT = 'acme';
const WORKFLOW = { workflowId: 'wf-telemetry-isolation', runId: 'run-telemetry-isolation' };

const KINDS = [
  'meter.createCounter',
  'meter.createHistogram',
  'counter.add',
  'histogram.record',
  'provider.getTracer',
  'tracer.startSpan',
  'span.setAttribute',
  'span.setStatus',
  'span.end',
  'span.isRecording',
  'context.active',
  'context.with',
  'context.with after callback',
] as const;
type Kind = (typeof KINDS)[number];

/** Where telemetry throws: every call of `kinds`, and the calls numbered `at` (counting every telemetry call of the run). */
interface Faults {
  readonly kinds: readonly Kind[];
  readonly at: readonly number[];
}

/** The faults of the run in progress (null: telemetry works), and its telemetry calls so far. */
let faults: Faults | null = null;
let calls = 0;

function telemetryCall(kind: Kind): void {
  const n = calls++;
  if (faults !== null && (faults.kinds.includes(kind) || faults.at.includes(n))) throw new Error(`telemetry broke: ${kind} (call ${n})`);
}

/** The meter of the activity context, its instruments faulty. */
const faultyMeter: MetricMeter = {
  createCounter(name) {
    telemetryCall('meter.createCounter');
    return { ...noopMetricMeter.createCounter(name), add: () => telemetryCall('counter.add') };
  },
  createHistogram(name) {
    telemetryCall('meter.createHistogram');
    return { ...noopMetricMeter.createHistogram(name), record: () => telemetryCall('histogram.record') };
  },
  createGauge: (name) => noopMetricMeter.createGauge(name),
  withTags: () => faultyMeter,
};

/** A real SDK span behind faulty operations. */
function faultySpan(span: Span): Span {
  const faulty: Span = {
    spanContext: () => span.spanContext(),
    setAttribute(key, value) {
      telemetryCall('span.setAttribute');
      span.setAttribute(key, value);
      return faulty;
    },
    setAttributes(attributes) {
      telemetryCall('span.setAttribute');
      span.setAttributes(attributes);
      return faulty;
    },
    addEvent: () => faulty,
    addLink: () => faulty,
    addLinks: () => faulty,
    setStatus(status) {
      telemetryCall('span.setStatus');
      span.setStatus(status);
      return faulty;
    },
    updateName: () => faulty,
    end(endTime) {
      telemetryCall('span.end');
      span.end(endTime);
    },
    isRecording() {
      telemetryCall('span.isRecording');
      return span.isRecording();
    },
    recordException: () => undefined,
  };
  return faulty;
}

/** The global tracer provider, as a user's SDK registers it: real recording spans (kept in memory), faulty. */
function faultyTracerProvider(sdk: BasicTracerProvider): TracerProvider {
  return {
    getTracer(name, version) {
      telemetryCall('provider.getTracer');
      const tracer = sdk.getTracer(name, version);
      const faulty: Tracer = {
        startSpan(spanName, options, ctx) {
          telemetryCall('tracer.startSpan');
          return faultySpan(tracer.startSpan(spanName, options, ctx));
        },
        startActiveSpan: tracer.startActiveSpan.bind(tracer) as Tracer['startActiveSpan'],
      };
      return faulty;
    },
  };
}

/** The global context manager (AsyncLocalStorage, as `@opentelemetry/context-async-hooks`'), faulty. */
class FaultyContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    telemetryCall('context.active');
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    telemetryCall('context.with');
    const value = this.storage.run(ctx, () => fn.apply(thisArg, args));
    telemetryCall('context.with after callback');
    return value;
  }

  bind<T>(_ctx: Context, target: T): T {
    return target;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}

/** What the tool does on each execution, in order (the last repeats), and whether (and what) its lookup finds. */
interface Scenario {
  readonly answers: readonly ('ok' | 'rejected' | 'unknown-outcome')[];
  readonly lookup: 'none' | 'found' | 'absent';
  /** Virtual time between one attempt's end and the next one's start, ms (10 minutes passes any settle time). */
  readonly gapsMs: readonly number[];
}

/** How one run of a scenario ended, free of anything naming its call. */
interface Ending {
  readonly attempts: unknown[];
  readonly executions: number;
  readonly lookups: number;
  readonly status: string | null;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  answers: fc.array(fc.constantFrom('ok' as const, 'rejected' as const, 'unknown-outcome' as const), { minLength: 1, maxLength: 3 }),
  lookup: fc.constantFrom('none' as const, 'found' as const, 'absent' as const),
  gapsMs: fc.array(fc.constantFrom(0, 600_000), { minLength: 0, maxLength: 2 }),
});

const faultsArb: fc.Arbitrary<Faults> = fc.record({
  kinds: fc.subarray([...KINDS]),
  at: fc.uniqueArray(fc.nat(80), { maxLength: 12 }),
});

describe('telemetry that throws at any subset of its calls never changes a fenced call', () => {
  let dir: string;
  let store: CheckpointStore;
  let sdk: BasicTracerProvider;
  let runs = 0;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttc-telemetry-isolation-'));
    store = await openCheckpointStore(`sqlite:${join(dir, 'checkpoints.db')}`);
    sdk = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] });
    context.setGlobalContextManager(new FaultyContextManager());
    trace.setGlobalTracerProvider(faultyTracerProvider(sdk));
    process.on('unhandledRejection', onUnhandled);
  });

  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    trace.disable();
    context.disable();
    await sdk?.shutdown();
    await store?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the scenario's attempts (one more than its gaps) of a fresh call under `runFaults`. */
  async function play(scenario: Scenario, runFaults: Faults | null): Promise<Ending & { telemetryCalls: number }> {
    const callId = `call-${(runs += 1)}`;
    let now = Date.parse('2030-01-01T00:00:00.000Z');
    let executions = 0;
    let lookups = 0;
    const probe = defineTool({
      name: 'probe',
      revision: 'v1',
      input: z.object({ title: z.string() }).strict(),
      async execute(input) {
        const answer = scenario.answers[Math.min(executions, scenario.answers.length - 1)]!;
        executions += 1;
        if (answer === 'ok') return { output: { ticket: `T-${input.title}` }, receipt: { id: 'T' } };
        throw new ToolError(answer, `the provider said ${answer}`);
      },
      ...(scenario.lookup === 'none'
        ? {}
        : {
            async lookup() {
              lookups += 1;
              return scenario.lookup === 'found' ? { found: true as const, output: { ticket: 'T-looked-up' }, receipt: { id: 'T' } } : { found: false as const };
            },
          }),
    });
    const activities = createToolActivities({ store, tools: [probe], clock: () => new Date(now) });
    const input: FencedToolInput = { tenant: TENANT, callId, toolName: 'probe', input: { title: 'same' } };
    const attempts: unknown[] = [];
    faults = runFaults;
    calls = 0;
    try {
      for (let attempt = 1; attempt <= scenario.gapsMs.length + 1; attempt += 1) {
        const env = new MockActivityEnvironment(
          { activityType: 'probe', attempt, heartbeatTimeoutMs: 30_000, workflowExecution: WORKFLOW },
          { metricMeter: faultyMeter, logger: QUIET },
        );
        try {
          const { source, outcome }: FencedToolResult = await env.run(activities.runFencedTool, input);
          attempts.push({ source, outcome });
        } catch (error) {
          const { type, nonRetryable } = error as { type?: unknown; nonRetryable?: unknown };
          attempts.push({ failed: type ?? String(error), nonRetryable });
        }
        now += scenario.gapsMs[attempt - 1] ?? 0;
      }
    } finally {
      faults = null;
    }
    const record = await store.getByCall(`default/${TENANT}`, callBindingId({ runChainId: WORKFLOW.runId, workflowId: WORKFLOW.workflowId, callId }));
    return { attempts, executions, lookups, status: record?.status ?? null, telemetryCalls: calls };
  }

  it(`${RUNS} scenarios, each with working and with faulty telemetry, end alike`, async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, faultsArb, async (scenario, runFaults) => {
        const { telemetryCalls, ...working } = await play(scenario, null);
        const { telemetryCalls: faultyCalls, ...faulty } = await play(scenario, runFaults);
        expect(telemetryCalls).toBeGreaterThan(0);
        expect(faultyCalls).toBeGreaterThan(0);
        expect(faulty).toEqual(working);
        expect(unhandled).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  it('every telemetry call throwing: a fresh call runs once and is delivered', async () => {
    const { telemetryCalls, ...ending } = await play({ answers: ['ok'], lookup: 'none', gapsMs: [0] }, { kinds: [...KINDS], at: [] });
    expect(telemetryCalls).toBeGreaterThan(0);
    expect(ending).toEqual({
      attempts: [
        { source: 'executed', outcome: { ok: true, output: { ticket: 'T-same' }, receipt: { id: 'T' } } },
        { source: 'store', outcome: { ok: true, output: { ticket: 'T-same' }, receipt: { id: 'T' } } },
      ],
      executions: 1,
      lookups: 0,
      status: 'delivered',
    });
  });
});
