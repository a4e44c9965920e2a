/**
 * The rule of the fence's telemetry: it never changes what the fence does. Every call into
 * telemetry (a tracer, a span, a metric meter or instrument, an observer callback of ours) goes
 * through {@link isolated}: a throw is swallowed, reported once per kind through the activity
 * logger, and never rethrown, so the store's own result or error always passes through unchanged
 * (a claim already written is never followed by an exception from a span processor or a metrics
 * exporter, which would fail the attempt and strand the claim).
 */
import { SpanStatusCode, type AttributeValue, type Span, type SpanOptions, type Tracer } from '@opentelemetry/api';
import { Context } from '@temporalio/activity';
import { ERROR_TYPE } from './attributes';

/** The kinds of telemetry call already reported as failing (a few fixed names: one warning each per process). */
const reported = new Set<string>();

/**
 * `call()`'s value, or undefined when it throws. `what` names the kind of telemetry call (a fixed
 * string, e.g. `span end`, `metric ttc_tool_calls`), for the one warning it gets.
 */
export function isolated<T>(what: string, call: () => T): T | undefined {
  try {
    return call();
  } catch (error) {
    if (!reported.has(what)) {
      reported.add(what);
      try {
        Context.current().log.warn(`telemetry failed and was ignored (${what}); the fenced call is not affected. Further failures of this kind are not logged.`, {
          error: error instanceof Error ? error.message : String(error),
        });
      } catch {
        // Outside an activity, or the logger itself broke: nothing else can report it.
      }
    }
    return undefined;
  }
}

/**
 * A span whose every operation is {@link isolated}: one that failed to start is absent (its
 * operations do nothing, it is not recording).
 */
export class IsolatedSpan {
  private constructor(readonly span: Span | undefined) {}

  /** Starts `name` on `tracer` (a child of the active span). */
  static start(tracer: Tracer, name: string, options: SpanOptions): IsolatedSpan {
    return new IsolatedSpan(isolated('span start', () => tracer.startSpan(name, options)));
  }

  isRecording(): boolean {
    return isolated('span isRecording', () => this.span?.isRecording()) === true;
  }

  setAttribute(key: string, value: AttributeValue): void {
    isolated('span setAttribute', () => this.span?.setAttribute(key, value));
  }

  /** Status ERROR with `type` as its message and as `error.type`. */
  setError(type: string): void {
    this.setAttribute(ERROR_TYPE, type);
    isolated('span setStatus', () => this.span?.setStatus({ code: SpanStatusCode.ERROR, message: type }));
  }

  end(): void {
    isolated('span end', () => this.span?.end());
  }
}
