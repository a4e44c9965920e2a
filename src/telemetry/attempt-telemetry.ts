/**
 * Traces and metrics of one fenced call attempt (issue 13 "Traces and metrics").
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
 * `./fence-metrics`).
 */
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { MetricMeter } from '@temporalio/common';
import type { Action, CheckpointRecord } from '../checkpoint/types';
import type { CheckpointStore } from '../stores/checkpoint-store';
import { ERROR_TYPE, EXECUTE_TOOL, GEN_AI, TTC } from './attributes';
import { errorType } from './error-type';
import { FenceMetrics } from './fence-metrics';
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
}

/** What an attempt returns, as far as telemetry reads it (a `FencedToolResult`). */
export interface ObservedResult {
  readonly source: string;
  readonly outcome: { readonly ok: boolean; readonly error?: { readonly type?: unknown }; readonly resolvedInStore?: { readonly kind?: unknown } };
}

/** What the attempt reports while it runs. */
export interface AttemptObserver {
  /**
   * A round decided: `found` is the record it decided on, or null when this attempt's insert
   * created it; `action` is what it does. The last round's values are kept.
   */
  decided(found: CheckpointRecord | null, action: Action): void;
}

/**
 * Runs `attempt` inside its `execute_tool` span, with `store` traced, and records its result or
 * failure on the span and the metrics. The result or error of `attempt` is returned or thrown
 * unchanged.
 *
 * @param meter the activity context's `metricMeter` (Temporal's; a no-op without a metrics exporter)
 * @param attempt gets the traced store (use it for every store operation of the attempt) and the observer
 */
export function observeAttempt<T extends ObservedResult>(call: ObservedCall, store: CheckpointStore, meter: MetricMeter, attempt: (store: CheckpointStore, observer: AttemptObserver) => Promise<T>): Promise<T> {
  const tracer = trace.getTracer(TRACER_NAME);
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
  };
  const span = tracer.startSpan(`${EXECUTE_TOOL} ${call.toolName}`, { kind: SpanKind.INTERNAL, attributes });
  const onRecord = (record: CheckpointRecord): void => void span.setAttribute(TTC.REVISION, record.revision);
  const run = async (): Promise<T> => {
    try {
      const result = await attempt(tracedStore(store, { tracer, metrics, onRecord }), observer(span));
      succeeded(span, metrics, call, result);
      return result;
    } catch (error) {
      failed(span, metrics, error);
      throw error;
    } finally {
      span.end();
    }
  };
  // Made active only when it records: a no-op span would hide the active one (say, the
  // RunActivity span of an OpenTelemetryPlugin given its own tracer) from the store's and the
  // activity's code.
  return span.isRecording() ? context.with(trace.setSpan(context.active(), span), run) : run();
}

function observer(span: Span): AttemptObserver {
  return {
    decided(found, action) {
      span.setAttribute(TTC.STATUS_FOUND, found === null ? 'absent' : found.status);
      span.setAttribute(TTC.ACTION, action);
    },
  };
}

/** A delivered error result (`{ ok: false }`) marks the span as an error of its stored type: the tool's execution failed. */
function succeeded(span: Span, metrics: FenceMetrics, call: ObservedCall, result: ObservedResult): void {
  const { outcome } = result;
  span.setAttribute(TTC.RESULT_SOURCE, result.source);
  span.setAttribute(TTC.RESULT_OK, outcome.ok);
  const resolved = outcome.resolvedInStore?.kind;
  if (resolved === 'applied' || resolved === 'not-applied') span.setAttribute(TTC.RESOLVED_BY_PERSON, resolved);
  if (!outcome.ok) {
    const type = errorType(outcome.error);
    span.setAttribute(ERROR_TYPE, type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  }
  metrics.toolCall(result.source);
  if (call.approved && ACTED_SOURCES.includes(result.source)) metrics.approvedCallAttempt('ran');
}

function failed(span: Span, metrics: FenceMetrics, error: unknown): void {
  const type = errorType(error);
  span.setAttribute(ERROR_TYPE, type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  if (PAUSE_CODES.includes(type)) metrics.pause(type);
  if (type === 'APPROVAL_EXPIRED') metrics.approvedCallAttempt('expired');
}
