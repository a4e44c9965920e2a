/**
 * OpenTelemetry for tests: an in-memory span exporter behind a tracer, and an AsyncLocalStorage
 * context manager (what `@opentelemetry/context-async-hooks` provides, which is not installed)
 * so that `trace.getActiveSpan()` sees the span an interceptor started.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { context, ROOT_CONTEXT, trace, type Context, type ContextManager, type Span, type Tracer } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

class AsyncLocalStorageContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.apply(thisArg, args));
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...args: unknown[]) => unknown;
    return ((...args: unknown[]) => this.with(ctx, fn, undefined, ...args)) as unknown as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}

/** A tracer whose finished spans land in `exporter`, with the global context manager installed. */
export interface TestTracing {
  readonly tracer: Tracer;
  readonly exporter: InMemorySpanExporter;
  /** Finished spans named `name`, in start order. */
  spans(name: string): ReadableSpan[];
  /** The span active in the current async context, if any. */
  activeSpan(): (Span & Partial<Pick<ReadableSpan, 'name'>>) | undefined;
  shutdown(): Promise<void>;
}

/** Sets up {@link TestTracing}: installs the context manager globally (undone by `shutdown`). */
export function createTestTracing(): TestTracing {
  const manager = new AsyncLocalStorageContextManager();
  context.setGlobalContextManager(manager);
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return {
    tracer: provider.getTracer('ttc-test'),
    exporter,
    spans: (name) =>
      exporter
        .getFinishedSpans()
        .filter((s) => s.name === name)
        .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]),
    activeSpan: () => trace.getActiveSpan() as (Span & Partial<Pick<ReadableSpan, 'name'>>) | undefined,
    async shutdown() {
      await provider.shutdown();
      context.disable();
    },
  };
}
