import { randomBytes } from 'node:crypto';
import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern } from '@nestjs/microservices';
import { trace } from '@opentelemetry/api';
import { connect, NatsConnection } from 'nats';
import { DataSource } from 'typeorm';
import { AgentChanged, STREAMS, Subject } from '@parley/contracts';
// Test-only use of the shared test helpers; the boundary rule is about what the library itself depends on.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { recordSpans, SpanRecorder } from '@parley/tracing/testing';
import { BusServer, consumerName } from './bus-server';
import { BusDeadLetters1764200000000 } from './dead-letters';
import { JetStreamBus } from './jetstream-bus';
import { CreateOutbox1763700000000, enqueueOutbox, OutboxRecord, OutboxRelay } from './outbox';

const NATS_URL = process.env['NATS_URL'];
const describeWithNats = NATS_URL ? describe : describe.skip;

/** The domain stream persists between runs: this run's subject and consumer carry RUN. */
const RUN = randomBytes(5).toString('hex');
const SUBJECT: Subject<AgentChanged> = { name: `parley.domain.tracingtest.${RUN}.changed`, stream: STREAMS.domain };
const SERVICE = `tracingtest_${RUN}`;
const handled: { traceId?: string; id: string }[] = [];

@Controller()
class ProbeController {
  @EventPattern(SUBJECT.name)
  async onChanged(payload: AgentChanged): Promise<void> {
    handled.push({ traceId: trace.getActiveSpan()?.spanContext().traceId, id: payload.agent_id });
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

async function waitUntil(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describeWithNats('trace context through the outbox and JetStream (real PostgreSQL and NATS)', () => {
  let recorder: SpanRecorder;
  let db: TestDatabase;
  let dataSource: DataSource;
  let bus: JetStreamBus;
  let app: INestMicroservice;
  let relay: OutboxRelay;
  let admin: NatsConnection;
  const tracer = trace.getTracer('bus-tracing-int-test');

  beforeAll(async () => {
    recorder = recordSpans();
    db = await createTestDatabase('parley_tracing');
    dataSource = await new DataSource({
      type: 'postgres',
      url: db.url,
      entities: [OutboxRecord],
      migrations: [CreateOutbox1763700000000, BusDeadLetters1764200000000],
    }).initialize();
    await dataSource.runMigrations();
    bus = await JetStreamBus.connect(NATS_URL as string, `parley-tracingtest-${RUN}`);
    app = await NestFactory.createMicroservice(ProbeModule, { strategy: new BusServer(bus, SERVICE), logger: false });
    await app.listen();
    relay = new OutboxRelay(dataSource, bus, { service: SERVICE });
    relay.start();
  });

  afterAll(async () => {
    await relay?.stop();
    await app?.close();
    await bus?.close();
    admin = await connect({ servers: (NATS_URL as string).split(',') });
    const jsm = await admin.jetstreamManager();
    await jsm.consumers.delete(STREAMS.domain.name, consumerName(SERVICE, SUBJECT.name)).catch(() => undefined);
    await jsm.streams.purge(STREAMS.domain.name, { filter: `parley.domain.tracingtest.${RUN}.>` }).catch(() => undefined);
    await admin.close();
    await dataSource?.destroy();
    await db?.drop();
    await recorder?.stop();
  });

  it('parents the consumer span on the span whose transaction wrote the outbox row, though the relay published it later', async () => {
    await tracer.startActiveSpan('request', async (span) => {
      await dataSource.transaction((manager) => enqueueOutbox(manager, SUBJECT, { account_id: 'acct_t', agent_id: 'agt_outboxed', at: new Date(0).toISOString() }, `tracingtest:${RUN}:1`));
      span.end();
    });
    const [stored] = await dataSource.query(`SELECT headers FROM outbox WHERE message_id = $1`, [`tracingtest:${RUN}:1`]);
    expect(stored.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    await waitUntil(() => handled.some((h) => h.id === 'agt_outboxed'), 'the relayed message to be handled');

    const [request] = recorder.named('request');
    const consumer = recorder.named(`parley.bus.${SUBJECT.name}`).find((s) => s.attributes['messaging.message.id'] === `tracingtest:${RUN}:1`);
    expect(consumer?.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(consumer?.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(handled.find((h) => h.id === 'agt_outboxed')?.traceId).toBe(request.spanContext().traceId);
  });

  it('carries the publisher’s active span in the NATS headers of a direct publish', async () => {
    await tracer.startActiveSpan('publisher', async (span) => {
      await bus.publish(SUBJECT.name, { account_id: 'acct_t', agent_id: 'agt_direct', at: new Date(0).toISOString() }, { id: `tracingtest:${RUN}:2` });
      span.end();
    });

    await waitUntil(() => handled.some((h) => h.id === 'agt_direct'), 'the published message to be handled');

    const [publisher] = recorder.named('publisher');
    const consumer = recorder.named(`parley.bus.${SUBJECT.name}`).find((s) => s.attributes['messaging.message.id'] === `tracingtest:${RUN}:2`);
    expect(consumer?.parentSpanContext?.spanId).toBe(publisher.spanContext().spanId);
    expect(consumer?.spanContext().traceId).toBe(publisher.spanContext().traceId);
  });
});
