import { randomBytes } from 'node:crypto';
import { connect, JetStreamManager, NatsConnection, nanos } from 'nats';
import { STREAMS } from '@parley/contracts';
import { BusMessage } from './bus';
import { JetStreamBus } from './jetstream-bus';

const NATS_URL = process.env['NATS_URL'];
const describeWithNats = NATS_URL ? describe : describe.skip;

/** The streams persist between runs: every subject, durable name and message id of this run carries RUN. */
const RUN = randomBytes(5).toString('hex');
const subjectFor = (name: string) => `parley.domain.inttest.${RUN}.${name}`;
const durableFor = (name: string) => `inttest_${RUN}_${name}`;
const idFor = (name: string) => `inttest:${RUN}:${name}`;

async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeWithNats('JetStream bus (real NATS)', () => {
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  let publisher: JetStreamBus;
  const buses: JetStreamBus[] = [];
  const durables: string[] = [];

  async function bus(name: string): Promise<JetStreamBus> {
    const b = await JetStreamBus.connect(NATS_URL as string, `parley-inttest-${name}`);
    buses.push(b);
    return b;
  }

  /** Subscribes a durable consumer that records only this run's messages. */
  async function recordingSubscriber(on: JetStreamBus, name: string, handle?: (m: BusMessage) => void) {
    const received: BusMessage[] = [];
    const durable = durableFor(name);
    durables.push(durable);
    await on.subscribe(subjectFor(name), durable, async (m) => {
      if (!m.id.startsWith(`inttest:${RUN}:`)) return;
      handle?.(m);
      received.push(m);
    });
    return received;
  }

  beforeAll(async () => {
    publisher = await bus('publisher');
    admin = await connect({ servers: (NATS_URL as string).split(',') });
    jsm = await admin.jetstreamManager();
  });

  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close().catch(() => undefined)));
    if (jsm) {
      for (const d of new Set(durables)) await jsm.consumers.delete(STREAMS.domain.name, d).catch(() => undefined);
      await jsm.streams.purge(STREAMS.domain.name, { filter: `parley.domain.inttest.${RUN}.>` }).catch(() => undefined);
    }
    await admin?.close();
  });

  it('declares the streams at connect, with a duplicate window', async () => {
    for (const stream of Object.values(STREAMS)) {
      const info = await jsm.streams.info(stream.name);
      expect(info.config.subjects).toEqual([...stream.subjects]);
      expect(info.config.duplicate_window).toBe(nanos(10 * 60 * 1000));
    }
  });

  it('delivers a message published before a durable consumer subscribed', async () => {
    const payload = { hello: 'world', n: 1 };
    await publisher.publish(subjectFor('basic'), payload, { id: idFor('basic-1'), headers: { 'X-Request-Id': 'req_inttest' } });

    const consumerBus = await bus('basic');
    const received = await recordingSubscriber(consumerBus, 'basic');
    await waitUntil(() => received.length >= 1, 5000, 'the message');

    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ id: idFor('basic-1'), subject: subjectFor('basic'), payload, deliveryCount: 1 });
    expect(received[0].headers['X-Request-Id']).toBe('req_inttest');
  });

  it('redelivers a message whose handler threw, with a higher delivery count', async () => {
    const attempts: number[] = [];
    const consumerBus = await bus('redeliver');
    const received = await recordingSubscriber(consumerBus, 'redeliver', (m) => {
      attempts.push(m.deliveryCount);
      if (m.deliveryCount === 1) throw new Error('handler fails the first time');
    });
    await publisher.publish(subjectFor('redeliver'), { n: 1 }, { id: idFor('redeliver-1') });

    // The first failure is retried after 1 s.
    await waitUntil(() => received.length === 1, 8000, 'the redelivery');
    expect(attempts).toEqual([1, 2]);
    expect(received[0]).toMatchObject({ id: idFor('redeliver-1'), deliveryCount: 2 });
  });

  it('handles one message at a time by default, and up to `concurrency` at once when asked', async () => {
    const peakOf = async (name: string, concurrency?: number) => {
      let running = 0;
      let peak = 0;
      let done = 0;
      const durable = durableFor(name);
      durables.push(durable);
      await (await bus(name)).subscribe(
        subjectFor(name),
        durable,
        async (m) => {
          if (!m.id.startsWith(`inttest:${RUN}:`)) return;
          peak = Math.max(peak, ++running);
          await sleep(30);
          running--;
          done++;
        },
        { concurrency },
      );
      for (let i = 0; i < 8; i++) await publisher.publish(subjectFor(name), { i }, { id: idFor(`${name}-${i}`) });
      await waitUntil(() => done === 8, 8000, `the ${name} messages`);
      return peak;
    };

    expect(await peakOf('serial')).toBe(1);
    expect(await peakOf('concurrent', 4)).toBe(4);
  });

  it('delivers once a message published twice with the same id within the duplicate window', async () => {
    const subject = subjectFor('dedupe');
    await publisher.publish(subject, { copy: 1 }, { id: idFor('dedupe-1') });
    await publisher.publish(subject, { copy: 2 }, { id: idFor('dedupe-1') });
    await publisher.publish(subject, { sentinel: true }, { id: idFor('dedupe-sentinel') });

    const received = await recordingSubscriber(await bus('dedupe'), 'dedupe');
    // Stream order: once the sentinel arrives, everything before it has been delivered.
    await waitUntil(() => received.some((m) => m.id === idFor('dedupe-sentinel')), 5000, 'the sentinel');
    await sleep(200);

    const copies = received.filter((m) => m.id === idFor('dedupe-1'));
    expect(copies).toHaveLength(1);
    expect(copies[0].payload).toEqual({ copy: 1 });
    expect(received).toHaveLength(2);
  });

  it('gives a durable consumer that was away the messages published meanwhile, and not what it had acknowledged', async () => {
    const subject = subjectFor('durable');
    const before = await bus('durable-before');
    const first = await recordingSubscriber(before, 'durable');
    await publisher.publish(subject, { n: 1 }, { id: idFor('durable-1') });
    await waitUntil(() => first.length === 1, 5000, 'the first message');
    await before.close();

    await publisher.publish(subject, { n: 2 }, { id: idFor('durable-2') });
    await publisher.publish(subject, { n: 3 }, { id: idFor('durable-3') });

    const after = await bus('durable-after');
    const second = await recordingSubscriber(after, 'durable');
    await waitUntil(() => second.length >= 2, 5000, 'the messages published while away');
    await sleep(200);

    expect(first.map((m) => m.id)).toEqual([idFor('durable-1')]);
    expect(second.map((m) => m.id)).toEqual([idFor('durable-2'), idFor('durable-3')]);
  });

  it('shares one durable consumer between two replicas: each message handled by one of them', async () => {
    const subject = subjectFor('shared');
    const [a, b] = await Promise.all([bus('shared-a'), bus('shared-b')]);
    const receivedA = await recordingSubscriber(a, 'shared');
    const receivedB = await recordingSubscriber(b, 'shared');

    const ids = Array.from({ length: 40 }, (_, i) => idFor(`shared-${i}`));
    for (const id of ids) await publisher.publish(subject, { id }, { id });
    await waitUntil(() => receivedA.length + receivedB.length >= ids.length, 5000, 'all messages');
    await sleep(200);

    const all = [...receivedA, ...receivedB].map((m) => m.id);
    expect(all.sort()).toEqual([...ids].sort());
  });

  it('broadcasts to every listener on any connection, without storing the message', async () => {
    const other = await bus('listener');
    const heard: unknown[] = [];
    const subject = `parley.live.inttest.${RUN}`;
    const stopA = await other.listen(subject, (p) => void heard.push(['a', p]));
    const stopB = await publisher.listen(`parley.live.inttest.${RUN}.>`, (p) => void heard.push(['wide', p]));
    await publisher.broadcast(subject, { n: 1 });
    await publisher.broadcast(`${subject}.deeper`, { n: 2 });
    await waitUntil(() => heard.length === 2, 5000, 'two broadcasts heard');
    stopA();
    stopB();
    await publisher.broadcast(subject, { n: 3 });
    await sleep(200);
    // Two connections: no order between them.
    expect(heard).toEqual(expect.arrayContaining([['a', { n: 1 }], ['wide', { n: 2 }]]));
    expect(heard).toHaveLength(2);
  });
});
