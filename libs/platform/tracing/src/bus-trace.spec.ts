import { trace } from '@opentelemetry/api';
import { recordSpans, SpanRecorder } from './testing/record-spans';
import { traceHeaders, untraced } from './bus-trace';

const tracer = trace.getTracer('bus-trace-test');
const later = <T>(fn: () => T) => new Promise<T>((resolve) => setTimeout(() => resolve(fn()), 1));

describe('trace context helpers', () => {
  it('carry nothing while tracing is off (no SDK: the no-op propagator)', () => {
    expect(tracer.startActiveSpan('off', (span) => (span.end(), traceHeaders()))).toEqual({});
  });

  describe('with tracing on', () => {
    let recorder: SpanRecorder;
    beforeAll(() => (recorder = recordSpans()));
    afterAll(() => recorder.stop());

    it('write the active span as a W3C traceparent', () => {
      const { headers, ids } = tracer.startActiveSpan('on', (span) => {
        span.end();
        return { headers: traceHeaders(), ids: span.spanContext() };
      });
      expect(headers).toEqual({ traceparent: `00-${ids.traceId}-${ids.spanId}-01` });
    });

    it('detach a background loop’s timer from the request that woke it, where a plain timer stays in its trace', async () => {
      const seen = await tracer.startActiveSpan('request', async (span) => {
        const plain = later(() => trace.getActiveSpan());
        const detached = new Promise((resolve) => setTimeout(untraced(() => resolve(trace.getActiveSpan())), 1));
        const result = { plain: await plain, detached: await detached };
        span.end();
        return { ...result, span };
      });
      expect(seen.plain).toBe(seen.span);
      expect(seen.detached).toBeUndefined();
    });
  });
});
