import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { connect, NatsConnection } from 'nats';
import { DataSource } from 'typeorm';
import { STREAMS } from '@parley/contracts';
// Test-only use of the shared test helpers; the boundary rule is about what the library itself depends on.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createTestDatabase, DisposableNatsServer, TestDatabase } from '@parley/testing';
import { BusHandlerErrors, BusServer, consumerName } from './bus-server';
import { BusDeadLetters1764200000000, busDeadLettersTotal, busDeadLettersWaiting, DeadLetterStore } from './dead-letters';
import { JetStreamBus } from './jetstream-bus';
import { CreateOutbox1763700000000 } from './outbox';

const SUBJECT = 'parley.domain.dead-letter-test.changed';
const SERVICE = 'dead-letter-probe';
const CONSUMER = consumerName(SERVICE, SUBJECT);
const MAX = 3;

interface Probe {
  n: string;
  poison?: boolean;
}

/** Every message the handler was given, in order; a poison one throws until the cause is fixed. */
const handled: string[] = [];
let poisonFixed = false;

@Controller()
class ProbeController {
  @EventPattern(SUBJECT)
  async onChanged(@Payload() probe: Probe): Promise<void> {
    handled.push(probe.n);
    if (probe.poison && !poisonFixed) throw new Error(`cannot handle ${probe.n}`);
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

const OTHER_SUBJECT = 'parley.domain.dead-letter-test.other';
const otherHandled: string[] = [];

@Controller()
class OtherProbeController {
  @EventPattern(OTHER_SUBJECT)
  async onOther(@Payload() probe: Probe): Promise<void> {
    otherHandled.push(probe.n);
    throw new Error(`cannot handle ${probe.n}`);
  }
}

@Module({ controllers: [OtherProbeController] })
class OtherProbeModule {}

async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const count = (n: string) => handled.filter((h) => h === n).length;

async function metric(gauge: typeof busDeadLettersTotal | typeof busDeadLettersWaiting): Promise<number> {
  return (await gauge.get()).values.find((v) => v.labels.service === SERVICE && v.labels.consumer === CONSUMER)?.value ?? 0;
}

describe('a durable consumer on JetStream parks a message whose handler keeps failing, and replays it on request', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let nats: DisposableNatsServer;
  let bus: JetStreamBus;
  let admin: NatsConnection;
  let app: INestMicroservice;

  const deadLetters = (): Promise<{ consumer: string; message_id: string; subject: string; payload: string; reason: string; deliveries: number; replayed_at: Date | null }[]> =>
    dataSource.query(`SELECT * FROM dead_letters ORDER BY id`);

  beforeAll(async () => {
    db = await createTestDatabase('parley_bus_dead_letters');
    dataSource = await new DataSource({ type: 'postgres', url: db.url, migrations: [CreateOutbox1763700000000, BusDeadLetters1764200000000], poolSize: 5 }).initialize();
    await dataSource.runMigrations();
    nats = await DisposableNatsServer.start();
    bus = await JetStreamBus.connect(nats.url, 'dead-letter-probe');
    admin = await connect({ servers: nats.url });
    const server = new BusServer(bus, SERVICE, new DeadLetterStore(dataSource, SERVICE), { maxDeliveries: MAX, replayPollMs: 100 });
    app = await NestFactory.createMicroservice(ProbeModule, { strategy: server, logger: false });
    // As the service runtime does: without it the reason would be Nest's generic "Internal server error".
    app.useGlobalInterceptors(new BusHandlerErrors());
    await app.listen();
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await bus?.close().catch(() => undefined);
    await admin?.close().catch(() => undefined);
    await nats?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  it(`parks it after ${MAX} failed deliveries with the handler's error and acknowledges it, counted; the messages after it are handled`, async () => {
    const before = await metric(busDeadLettersTotal);
    await bus.publish(SUBJECT, { n: 'poison-1', poison: true }, { id: 'poison-1' });
    await bus.publish(SUBJECT, { n: 'good-1' }, { id: 'good-1' });
    await bus.publish(SUBJECT, { n: 'good-2' }, { id: 'good-2' });

    await waitUntil(() => count('good-1') === 1 && count('good-2') === 1, 5_000, 'the good messages');
    await waitUntil(async () => (await deadLetters()).length === 1, 20_000, 'the poison message parked');

    const [parked] = await deadLetters();
    expect(parked).toMatchObject({ consumer: CONSUMER, message_id: 'poison-1', subject: SUBJECT, reason: 'cannot handle poison-1', deliveries: MAX, replayed_at: null });
    expect(JSON.parse(parked.payload)).toEqual({ n: 'poison-1', poison: true });
    expect(count('poison-1')).toBe(MAX);
    expect((await metric(busDeadLettersTotal)) - before).toBe(1);
    // Acknowledged: the consumer holds nothing more to redeliver.
    const info = await (await admin.jetstreamManager()).consumers.info(STREAMS.domain.name, CONSUMER);
    expect(info.num_ack_pending + info.num_pending).toBe(0);
    await sleep(1_500);
    expect(count('poison-1')).toBe(MAX);
    expect(count('good-1') + count('good-2')).toBe(2);
    await waitUntil(async () => (await metric(busDeadLettersWaiting)) === 1, 2_000, 'the waiting gauge');
  }, 40_000);

  it('hands a parked message an operator asked to replay to its handler once, and marks it replayed', async () => {
    poisonFixed = true;
    await dataSource.query(`UPDATE dead_letters SET replay_requested_at = now() WHERE replayed_at IS NULL`);

    await waitUntil(async () => (await deadLetters())[0].replayed_at !== null, 5_000, 'the replay');
    await sleep(500); // further replay polls
    expect(count('poison-1')).toBe(MAX + 1);
    expect(await metric(busDeadLettersWaiting)).toBe(0);
  });

  it('keeps a message whose replay fails again parked, the reason saying so', async () => {
    poisonFixed = false;
    await dataSource.query(`UPDATE dead_letters SET replay_requested_at = now()`);

    await waitUntil(async () => (await deadLetters())[0].reason.startsWith('replay failed'), 5_000, 'the failed replay');
    const [parked] = await deadLetters();
    expect(parked.reason).toBe('replay failed: cannot handle poison-1');
    await sleep(500);
    expect(count('poison-1')).toBe(MAX + 2);
  });

  it('redelivers a message whose parking fails (its table unavailable), and parks it on a later delivery: nothing is dropped', async () => {
    const service = 'dead-letter-probe-2';
    const other = await NestFactory.createMicroservice(OtherProbeModule, {
      strategy: new BusServer(bus, service, new DeadLetterStore(dataSource, service), { maxDeliveries: 2 }),
      logger: false,
    });
    other.useGlobalInterceptors(new BusHandlerErrors());
    await other.listen();
    try {
      await dataSource.query(`ALTER TABLE dead_letters RENAME TO dead_letters_away`);
      await bus.publish(OTHER_SUBJECT, { n: 'poison-2' }, { id: 'poison-2' });
      // The 2nd delivery (after 1 s) is the last allowed: its parking fails, so the bus redelivers it after 5 s.
      await waitUntil(() => otherHandled.length === 2, 5_000, 'the last allowed delivery');
      await sleep(300);
      await dataSource.query(`ALTER TABLE dead_letters_away RENAME TO dead_letters`);

      await waitUntil(async () => (await deadLetters()).some((l) => l.message_id === 'poison-2'), 10_000, 'the message parked');
      expect(otherHandled).toEqual(['poison-2', 'poison-2', 'poison-2']);
      expect((await deadLetters()).find((l) => l.message_id === 'poison-2')).toMatchObject({ consumer: consumerName(service, OTHER_SUBJECT), reason: 'cannot handle poison-2', deliveries: 3 });
    } finally {
      await other.close();
    }
  }, 30_000);
});
