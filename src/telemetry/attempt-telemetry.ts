/**
 * Traces and metrics of one fenced call attempt.
 *
 * Span: `execute_tool <tool name>`, kind INTERNAL, following the OpenTelemetry GenAI semantic
 * conventions for tool execution (`gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name`,
 * `gen_ai.tool.call.id`, `gen_ai.tool.type` = `function`), with the `ttc.*` attributes of
 * `./attributes` (status found, action, result source, revision, idempotency key) and the store's
 * operations as child spans (`./traced-store`). On failure: status ERROR and `error.type` = the
 * CheckpointError code. It is a child of the active span: with `@temporalio/interceptors-opentelemetry`'s
 * plugin registered, the attempt's `RunActivity` span.
 *
 * Only `@opentelemetry/api` is used: without an OpenTelemetry SDK registered, the tracer is a
 * no-op and the span costs next to nothing. Metrics go to the given Temporal metric meter (see
 * `./fence-metrics`). Telemetry never changes the fence's behaviour: a tracer, span processor,
 * context manager or meter that throws is ignored (`./isolated`).
 */
import { context, ProxyTracerProvider, SpanKind, trace } from '@opentelemetry/api';
import type { MetricMeter } from '@temporalio/common';
import type { Action, CheckpointRecord } from '../checkpoint/types';
import type { CheckpointStore } from '../stores/checkpoint-store';
import { EXECUTE_TOOL, GEN_AI, TTC } from './attributes';
import { errorType } from './error-type';
import { FenceMetrics } from './fence-metrics';
import { isolated, IsolatedSpan } from './isolated';
import { tracedStore } from './traced-store';

/** The instrumentation scope of the fence's spans. */
export const TRACER_NAME = 'temporal-tool-checkpoint';

/** The failure codes counted on `ttc_pauses`: the attempt ends waiting, for a person or for reconciliation. */
const PAUSE_CODES: readonly string[] = ['OUTCOME_UNKNOWN', 'RECONCILE_PENDING'];

/** The result sources under which an approved call's tool ran or was settled by this attempt (not redelivered). */
const ACTED_SOURCES: readonly string[] = ['executed', 'lookup', 'same-key-repeat'];

/** What the span says about the call, known before the attempt starts. */
export interface ObservedCall {
  readonly toolName: string;
  readonly toolRevision: string;
  /** The model's tool-call id (`gen_ai.tool.call.id`). */
  readonly callId: string;
  readonly idempotencyKey: string;
  /** The Temporal activity attempt, 1 for the first. */
  readonly attempt: number;
  /** The call runs under a person's approval (its input carries the approved intent digest). */
  readonly approved: boolean;
  /** Who approved it, when the approval named someone. */
  readonly approvedBy?: string;
}

/** What an attempt returns, as far as telemetry reads it (a `FencedToolResult`). */
export interface ObservedResult {
  readonly source: string;
  readonly outcome: { readonly ok: boolean; readonly error?: { readonly type?: unknown }; readonly resolvedInStore?: { readonly kind?: unknown; readonly by?: unknown } };
}

/** What the attempt reports while it runs. */
export interface AttemptObserver {
  /**
   * A round decided: `found` is the record it decided on, or null when this attempt's insert
   * created it; `action` is what it does. The last round's values are kept.
   */
  decided(found: CheckpointRecord | null, action: Action): void;
}

/** The tracer when the global tracer provider's `getTracer` throws: a no-op one (a provider without a delegate). */
const NO_OP_TRACER = new ProxyTracerProvider().getTracer(TRACER_NAME);

/**
 * Runs `attempt` inside its `execute_tool` span, with `store` traced, and records its result or
 * failure on the span and the metrics. The result or error of `attempt` is returned or thrown
 * unchanged, and `attempt` runs exactly once, whatever the telemetry does: every telemetry call
 * is {@link isolated} (a tracer, span, context manager or meter that throws is ignored).
 *
 * @param meter the activity context's `metricMeter` (Temporal's; a no-op without a metrics exporter)
 * @param attempt gets the traced store (use it for every store operation of the attempt) and the observer
 */
export function observeAttempt<T extends ObservedResult>(
  call: ObservedCall,
  store: CheckpointStore,
  meter: MetricMeter,
  attempt: (store: CheckpointStore, observer: AttemptObserver) => Promise<T>,
): Promise<T> {
  const tracer = isolated('tracer', () => trace.getTracer(TRACER_NAME)) ?? NO_OP_TRACER;
  const metrics = new FenceMetrics(meter);
  const attributes = {
    [GEN_AI.OPERATION_NAME]: EXECUTE_TOOL,
    [GEN_AI.TOOL_NAME]: call.toolName,
    [GEN_AI.TOOL_CALL_ID]: call.callId,
    [GEN_AI.TOOL_TYPE]: 'function',
    [TTC.TOOL_REVISION]: call.toolRevision,
    [TTC.IDEMPOTENCY_KEY]: call.idempotencyKey,
    [TTC.ATTEMPT]: call.attempt,
    [TTC.APPROVED]: call.approved,
    ...(call.approvedBy === undefined ? {} : { [TTC.DECISION_BY]: call.approvedBy }),
  };
  const span = IsolatedSpan.start(tracer, `${EXECUTE_TOOL} ${call.toolName}`, { kind: SpanKind.INTERNAL, attributes });
  const onRecord = (record: CheckpointRecord): void => span.setAttribute(TTC.REVISION, record.revision);
  const run = async (): Promise<T> => {
    try {
      const result = await attempt(tracedStore(store, { tracer, metrics, onRecord }), observer(span));
      isolated('execute_tool result', () => succeeded(span, metrics, call, result));
      return result;
    } catch (error) {
      isolated('execute_tool failure', () => failed(span, metrics, error));
      throw error;
    } finally {
      span.end();
    }
  };
  let running: Promise<T> | undefined;
  const runOnce = (): Promise<T> => (running ??= run());
  // Made active only when it records: a no-op span would hide the active one (say, the
  // RunActivity span of an OpenTelemetryPlugin given its own tracer) from the store's and the
  // activity's code. A context manager that throws, before or after calling back, or never calls
  // back, leaves the attempt to run (once) without the span active; what it returns is not used.
  if (span.isRecording() && span.span !== undefined) {
    const active = span.span;
    isolated('context', () => context.with(trace.setSpan(context.active(), active), () => void runOnce()));
  }
  return runOnce();
}

function observer(span: IsolatedSpan): AttemptObserver {
  return {
    decided(found, action) {
      isolated('observer decided', () => {
        span.setAttribute(TTC.STATUS_FOUND, found === null ? 'absent' : found.status);
        span.setAttribute(TTC.ACTION, action);
      });
    },
  };
}

/** A delivered error result (`{ ok: false }`) marks the span as an error of its stored type: the tool's execution failed. */
function succeeded(span: IsolatedSpan, metrics: FenceMetrics, call: ObservedCall, result: ObservedResult): void {
  const { outcome } = result;
  span.setAttribute(TTC.RESULT_SOURCE, result.source);
  span.setAttribute(TTC.RESULT_OK, outcome.ok);
  const resolved = outcome.resolvedInStore?.kind;
  if (resolved === 'applied' || resolved === 'not-applied') span.setAttribute(TTC.RESOLVED_BY_PERSON, resolved);
  const by = outcome.resolvedInStore?.by;
  if (typeof by === 'string') span.setAttribute(TTC.DECISION_BY, by);
  if (!outcome.ok) span.setError(errorType(outcome.error));
  metrics.toolCall(result.source);
  if (call.approved && ACTED_SOURCES.includes(result.source)) metrics.approvedCallAttempt('ran');
}

function failed(span: IsolatedSpan, metrics: FenceMetrics, error: unknown): void {
  const type = errorType(error);
  span.setError(type);
  if (PAUSE_CODES.includes(type)) metrics.pause(type);
  if (type === 'APPROVAL_EXPIRED') metrics.approvedCallAttempt('expired');
}
