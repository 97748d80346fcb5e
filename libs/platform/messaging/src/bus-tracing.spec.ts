import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern } from '@nestjs/microservices';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { recordSpans, SpanRecorder } from '@parley/tracing/testing';
import { traceHeaders } from '@parley/tracing';
import { BusServer } from './bus-server';
import { InProcessBus } from './in-process-bus';

const OK = 'parley.domain.bus-tracing-test.ok';
const FAILS = 'parley.domain.bus-tracing-test.fails';
/** The span active in each handler call, as its trace and span ids. */
const handled: { traceId?: string; spanId?: string }[] = [];

@Controller()
class ProbeController {
  @EventPattern(OK)
  async onOk(): Promise<void> {
    const active = trace.getActiveSpan()?.spanContext();
    handled.push({ traceId: active?.traceId, spanId: active?.spanId });
  }

  @EventPattern(FAILS)
  async onFails(): Promise<void> {
    throw new Error('handler refuses');
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

describe('trace context across the bus', () => {
  let recorder: SpanRecorder;
  let bus: InProcessBus;
  let app: INestMicroservice;
  const tracer = trace.getTracer('bus-tracing-test');

  beforeAll(async () => {
    recorder = recordSpans();
    bus = new InProcessBus();
    app = await NestFactory.createMicroservice(ProbeModule, { strategy: new BusServer(bus, 'probe'), logger: false });
    await app.listen();
    bus.open();
  });

  afterAll(async () => {
    await app?.close();
    await bus?.close();
    await recorder?.stop();
  });

  beforeEach(() => {
    handled.length = 0;
    recorder.reset();
  });

  it('runs the handler in a consumer span parley.bus.<subject> that is a child of the publisher’s span', async () => {
    await tracer.startActiveSpan('producer', async (span) => {
      await bus.publish(OK, { n: 1 }, { id: 'bt-1' });
      span.end();
    });

    const [producer] = recorder.named('producer');
    const [consumer] = recorder.named(`parley.bus.${OK}`);
    expect(consumer.kind).toBe(SpanKind.CONSUMER);
    expect(consumer.spanContext().traceId).toBe(producer.spanContext().traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(producer.spanContext().spanId);
    expect(consumer.attributes).toMatchObject({ 'messaging.system': 'nats', 'messaging.destination.name': OK, 'messaging.message.id': 'bt-1' });
    expect(handled).toEqual([{ traceId: consumer.spanContext().traceId, spanId: consumer.spanContext().spanId }]);
  });

  it('joins the trace of headers taken earlier (an outbox row published later by the relay, outside any span)', async () => {
    let stored: Record<string, string> = {};
    tracer.startActiveSpan('transaction', (span) => {
      stored = traceHeaders();
      span.end();
    });
    expect(stored['traceparent']).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    await bus.publish(OK, { n: 2 }, { id: 'bt-2', headers: stored });

    const [transaction] = recorder.named('transaction');
    const [consumer] = recorder.named(`parley.bus.${OK}`);
    expect(consumer.spanContext().traceId).toBe(transaction.spanContext().traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(transaction.spanContext().spanId);
  });

  it('starts a trace of its own for a message that carries none', async () => {
    await bus.publish(OK, { n: 3 }, { id: 'bt-3' });

    const [consumer] = recorder.named(`parley.bus.${OK}`);
    expect(consumer.parentSpanContext).toBeUndefined();
  });

  it('marks the consumer span failed with the handler’s error', async () => {
    // NestJS's exception layer turns the error into an RPC error value; the delivery fails all the same.
    await expect(bus.publish(FAILS, {}, { id: 'bt-4' })).rejects.toBeDefined();

    const [consumer] = recorder.named(`parley.bus.${FAILS}`);
    expect(consumer.status).toMatchObject({ code: SpanStatusCode.ERROR });
    expect(consumer.events.map((e) => e.name)).toEqual(['exception']);
  });
});
