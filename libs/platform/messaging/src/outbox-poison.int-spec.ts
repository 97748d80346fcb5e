import { DataSource } from 'typeorm';
import { AgentChanged, Subject, STREAMS } from '@parley/contracts';
// Test-only use of the shared test helpers; the boundary rule is about what the library itself depends on.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createTestDatabase, DisposableNatsServer, TestDatabase } from '@parley/testing';
import { BusMessage } from './bus';
import { BusDeadLetters1764200000000, busDeadLettersTotal } from './dead-letters';
import { JetStreamBus } from './jetstream-bus';
import { CreateOutbox1763700000000, enqueueOutbox, OutboxRecord, OutboxRelay } from './outbox';

const TEST_SUBJECT: Subject<AgentChanged> = { name: 'parley.domain.outbox-poison.changed', stream: STREAMS.domain };
const SERVICE = 'outbox-poison-test';
const STRIKES = 3;

function payload(n: number, filler = ''): AgentChanged {
  return { account_id: 'acct_test', agent_id: `agt_${n}${filler}`, at: new Date(0).toISOString() };
}

/** Over NATS's default max_payload (1 MB): the server refuses it however often it is published. */
const oversized = (n: number) => payload(n, 'x'.repeat(1_100_000));

async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function parkedCount(): Promise<number> {
  return (await busDeadLettersTotal.get()).values.find((v) => v.labels.service === SERVICE && v.labels.consumer === 'outbox')?.value ?? 0;
}

describe('outbox relay to JetStream: a poison row is parked, an outage parks nothing', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let nats: DisposableNatsServer;
  let publisher: JetStreamBus;
  let subscriber: JetStreamBus;
  const received: BusMessage[] = [];
  const relays: OutboxRelay[] = [];

  function relay(options: ConstructorParameters<typeof OutboxRelay>[2] = {}): OutboxRelay {
    const r = new OutboxRelay(dataSource, publisher, { service: SERVICE, poisonStrikes: STRIKES, ...options });
    relays.push(r);
    return r;
  }

  const enqueue = (p: AgentChanged, id: string) => dataSource.transaction((m) => enqueueOutbox(m, TEST_SUBJECT, p, id));
  /** Makes every waiting row due now, so each pass retries them without sitting out the back-off. */
  const due = () => dataSource.query(`UPDATE outbox SET next_attempt_at = now() WHERE published_at IS NULL`);
  const outboxRow = (messageId: string) => dataSource.getRepository(OutboxRecord).findOneBy({ messageId });
  const deadLetters = (): Promise<{ message_id: string; subject: string; payload: string; reason: string; deliveries: number; consumer: string; replayed_at: Date | null }[]> =>
    dataSource.query(`SELECT * FROM dead_letters ORDER BY id`);
  const receivedIds = () => received.map((m) => m.id);

  beforeAll(async () => {
    db = await createTestDatabase('parley_outbox_poison');
    dataSource = await new DataSource({
      type: 'postgres',
      url: db.url,
      entities: [OutboxRecord],
      migrations: [CreateOutbox1763700000000, BusDeadLetters1764200000000],
      poolSize: 5,
    }).initialize();
    await dataSource.runMigrations();
    nats = await DisposableNatsServer.start();
    publisher = await JetStreamBus.connect(nats.url, 'outbox-poison-publisher');
    subscriber = await JetStreamBus.connect(nats.url, 'outbox-poison-subscriber');
    await subscriber.subscribe('parley.domain.outbox-poison.>', 'outbox_poison_test', async (m) => void received.push(m));
  }, 60_000);

  afterEach(async () => {
    await Promise.all(relays.splice(0).map((r) => r.stop()));
  });

  afterAll(async () => {
    await publisher?.close().catch(() => undefined);
    await subscriber?.close().catch(() => undefined);
    await nats?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  it(`parks a row NATS refuses after ${STRIKES} failures while other rows publish, with the reason, counted; the others are delivered`, async () => {
    const before = await parkedCount();
    await enqueue(oversized(0), 'poison-1');
    const r = relay();
    for (let i = 1; i <= STRIKES; i++) {
      await enqueue(payload(i), `good-${i}`);
      await due();
      await r.pass();
      if (i < STRIKES) expect(await outboxRow('poison-1')).toMatchObject({ publishedAt: null, poisonStrikes: i });
    }

    expect(await outboxRow('poison-1')).toBeNull();
    const [parked, ...others] = await deadLetters();
    expect(others).toEqual([]);
    expect(parked).toMatchObject({ consumer: 'outbox', message_id: 'poison-1', subject: TEST_SUBJECT.name, deliveries: STRIKES, replayed_at: null });
    expect(parked.reason).toMatch(/MAX_PAYLOAD/i);
    expect(JSON.parse(parked.payload)).toEqual(oversized(0));
    expect((await parkedCount()) - before).toBe(1);
    await waitUntil(() => received.length >= STRIKES, 10_000, 'the good rows');
    expect(receivedIds()).toEqual(['good-1', 'good-2', 'good-3']);
  });

  it('replays a parked row an operator asked for (after fixing its payload) once, and never again', async () => {
    await dataSource.query(`UPDATE dead_letters SET payload = $1, replay_requested_at = now() WHERE message_id = 'poison-1'`, [JSON.stringify(payload(0))]);
    relay({ pollMs: 20, replayPollMs: 50 }).start();

    await waitUntil(() => receivedIds().includes('poison-1'), 10_000, 'the replayed row');
    await sleep(500); // further passes and replay polls
    expect(receivedIds().filter((id) => id === 'poison-1')).toHaveLength(1);
    expect(received.find((m) => m.id === 'poison-1')?.payload).toEqual(payload(0));
    expect(await outboxRow('poison-1')).toMatchObject({ attempts: 1 });
    expect((await outboxRow('poison-1'))?.publishedAt).not.toBeNull();
    const [parked] = await deadLetters();
    expect(parked.replayed_at).not.toBeNull();
  });

  it('parks nothing while NATS is down, not even a row it would refuse, however often they fail; all but that row publish once NATS is back', async () => {
    const lettersBefore = (await deadLetters()).length;
    const parkedBefore = await parkedCount();
    await nats.kill();
    await enqueue(oversized(10), 'poison-outage');
    await enqueue(payload(11), 'outage-1');
    await enqueue(payload(12), 'outage-2');
    const r = relay();
    for (let i = 0; i < STRIKES + 1; i++) {
      await due();
      await r.pass();
    }
    expect(await outboxRow('outage-1')).toMatchObject({ publishedAt: null, attempts: STRIKES + 1, poisonStrikes: 0 });
    expect(await outboxRow('poison-outage')).toMatchObject({ publishedAt: null, attempts: STRIKES + 1, poisonStrikes: 0 });

    await nats.restart();
    await waitUntil(
      async () => {
        await due();
        await r.pass();
        return (await outboxRow('outage-2'))?.publishedAt != null && (await outboxRow('outage-1'))?.publishedAt != null;
      },
      30_000,
      'the rows written during the outage',
    );
    await waitUntil(() => receivedIds().includes('outage-2') && receivedIds().includes('outage-1'), 15_000, 'their delivery');
    expect((await deadLetters()).length).toBe(lettersBefore);
    expect(await parkedCount()).toBe(parkedBefore);
    // Once the bus publishes other rows again, the refused row counts strikes like any poison row.
    expect((await outboxRow('poison-outage'))?.poisonStrikes).toBeGreaterThanOrEqual(1);
  }, 90_000);
});
