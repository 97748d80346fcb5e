import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

/** The spans a test produced, kept in memory. */
export interface SpanRecorder {
  spans(): ReadableSpan[];
  named(name: string): ReadableSpan[];
  /** The finished spans whose parent is `parent`, in its trace. */
  childrenOf(parent: ReadableSpan): ReadableSpan[];
  reset(): void;
  /** Unregisters everything recordSpans registered. */
  stop(): Promise<void>;
}

/**
 * Tracing on, in this process, for a test: a tracer provider exporting to memory at once (SimpleSpanProcessor), the
 * AsyncLocalStorage context manager and the W3C propagator, registered as the @opentelemetry/api globals that
 * Parley's manual spans and header propagation use (what startTracing's SDK registers in a running process).
 */
export function recordSpans(): SpanRecorder {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const spans = () => exporter.getFinishedSpans();
  return {
    spans,
    named: (name) => spans().filter((s) => s.name === name),
    childrenOf: (parent) =>
      spans().filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId && s.spanContext().traceId === parent.spanContext().traceId),
    reset: () => exporter.reset(),
    stop: async () => {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
