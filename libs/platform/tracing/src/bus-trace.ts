import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

const tracer = trace.getTracer('parley-bus');

/**
 * The active trace context as message headers (W3C `traceparent`, and `tracestate`/`baggage` when present), to be
 * carried with a bus message so its consumer's span joins the trace that produced it. Empty when tracing is off
 * (the no-op propagator writes nothing) or no span is active.
 */
export function traceHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  return headers;
}

/**
 * `fn` bound to no trace: for a background loop's timer, which would otherwise carry on in the trace of whatever
 * request last woke it (AsyncLocalStorage follows a setTimeout), putting every later poll in that request's trace.
 */
export function untraced<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return context.bind(ROOT_CONTEXT, fn);
}

/**
 * Runs a bus handler in a consumer span `parley.bus.<subject>` whose parent is the context the message's headers
 * carry (the producer's trace, even when the message was stored in an outbox and published later). The span records
 * the handler's failure. With tracing off this is a non-recording span around the call.
 */
export function inConsumerSpan<T>(message: { id: string; subject: string; headers: Record<string, string>; deliveryCount: number }, handle: () => Promise<T>): Promise<T> {
  const parent = propagation.extract(ROOT_CONTEXT, message.headers);
  return tracer.startActiveSpan(
    `parley.bus.${message.subject}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'nats',
        'messaging.operation.type': 'process',
        'messaging.destination.name': message.subject,
        'messaging.message.id': message.id,
        'parley.bus.delivery': message.deliveryCount,
      },
    },
    parent,
    async (span) => {
      try {
        return await handle();
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
