import { DataSource } from 'typeorm';
import { AgentChanged, Subject, STREAMS } from '@parley/contracts';
// Test-only use of the shared test helpers; the boundary rule is about what the library itself depends on.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { BusMessage } from './bus';
import { InProcessBus } from './in-process-bus';
import { BusDeadLetters1764200000000 } from './dead-letters';
import { CreateOutbox1763700000000, enqueueOutbox, OutboxRecord, OutboxRelay } from './outbox';

const TEST_SUBJECT: Subject<AgentChanged> = { name: 'parley.domain.outbox-test.changed', stream: STREAMS.domain };

function payload(n: number): AgentChanged {
  return { account_id: 'acct_test', agent_id: `agt_${n}`, at: new Date(0).toISOString() };
}

async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('transactional outbox relayed to the in-process bus', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  const relays: OutboxRelay[] = [];
  const extraSources: DataSource[] = [];

  async function openDataSource(): Promise<DataSource> {
    return new DataSource({
      type: 'postgres',
      url: db.url,
      entities: [OutboxRecord],
      migrations: [CreateOutbox1763700000000, BusDeadLetters1764200000000],
      poolSize: 5,
    }).initialize();
  }

  /** A bus with one durable subscriber that records what it receives (and may fail on purpose). */
  function recordingBus(onMessage?: (m: BusMessage) => Promise<void> | void) {
    const bus = new InProcessBus();
    const received: BusMessage[] = [];
    void bus.subscribe('parley.domain.outbox-test.>', 'outbox-test', async (m) => {
      await onMessage?.(m);
      received.push(m);
    });
    bus.open();
    return { bus, received };
  }

  function relay(ds: DataSource, bus: InProcessBus, options: ConstructorParameters<typeof OutboxRelay>[2] = {}): OutboxRelay {
    const r = new OutboxRelay(ds, bus, options);
    relays.push(r);
    return r;
  }

  async function row(messageId: string): Promise<OutboxRecord | null> {
    return dataSource.getRepository(OutboxRecord).findOneBy({ messageId });
  }

  beforeAll(async () => {
    db = await createTestDatabase('parley_outbox');
    dataSource = await openDataSource();
    await dataSource.runMigrations();
  });

  afterEach(async () => {
    await Promise.all(relays.splice(0).map((r) => r.stop()));
    await Promise.all(extraSources.splice(0).map((ds) => ds.destroy()));
    await dataSource.query(`TRUNCATE outbox`);
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('delivers a record enqueued in a committed transaction and marks it published', async () => {
    const { bus, received } = recordingBus();
    await dataSource.transaction((m) => enqueueOutbox(m, TEST_SUBJECT, payload(1), 'committed-1'));

    relay(dataSource, bus, { pollMs: 20 }).start();
    await waitUntil(async () => (await row('committed-1'))?.publishedAt != null, 5000, 'record marked published');

    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ id: 'committed-1', subject: TEST_SUBJECT.name, payload: payload(1), deliveryCount: 1 });
    expect(await row('committed-1')).toMatchObject({ attempts: 1, lastError: null });
  });

  it('never delivers a record whose transaction rolled back', async () => {
    const { bus, received } = recordingBus();
    await expect(
      dataSource.transaction(async (m) => {
        await enqueueOutbox(m, TEST_SUBJECT, payload(1), 'rolled-back');
        throw new Error('business change failed');
      }),
    ).rejects.toThrow('business change failed');
    await dataSource.transaction((m) => enqueueOutbox(m, TEST_SUBJECT, payload(2), 'committed-after'));

    relay(dataSource, bus, { pollMs: 20 }).start();
    await waitUntil(() => received.some((m) => m.id === 'committed-after'), 5000, 'the committed record');
    await sleep(100);

    expect(received.map((m) => m.id)).toEqual(['committed-after']);
    expect(await row('rolled-back')).toBeNull();
  });

  it('keeps a record whose delivery failed, with attempts and last error, and delivers it on a later pass', async () => {
    let failures = 0;
    const { bus, received } = recordingBus(() => {
      if (failures++ === 0) throw new Error('subscriber is down');
    });
    await dataSource.transaction((m) => enqueueOutbox(m, TEST_SUBJECT, payload(1), 'retried-1'));
    const r = relay(dataSource, bus, { pollMs: 20 });

    expect(await r.pass()).toBe(1);
    const failed = await row('retried-1');
    expect(failed).toMatchObject({ publishedAt: null, attempts: 1, lastError: 'subscriber is down' });
    // Backed off (half a second after a first failure), not retried in a tight loop.
    const [{ backedOff }] = await dataSource.query(
      `SELECT next_attempt_at > now() + interval '200 milliseconds' AS "backedOff" FROM outbox WHERE message_id = 'retried-1'`,
    );
    expect(backedOff).toBe(true);
    expect(await r.pass()).toBe(0);
    expect(received).toHaveLength(0);

    r.start();
    await waitUntil(async () => (await row('retried-1'))?.publishedAt != null, 5000, 'redelivery');
    expect(failures).toBe(2);
    expect(received.map((m) => m.id)).toEqual(['retried-1']);
    expect(await row('retried-1')).toMatchObject({ attempts: 2, lastError: 'subscriber is down' });
  });

  it('gives the same message id to every delivery attempt of a record (at-least-once), counting the deliveries', async () => {
    const attempts: string[] = [];
    const counts: number[] = [];
    const { bus } = recordingBus((m) => {
      attempts.push(m.id);
      counts.push(m.deliveryCount);
      if (attempts.length === 1) throw new Error('first attempt fails');
    });
    await dataSource.transaction((m) => enqueueOutbox(m, TEST_SUBJECT, payload(1), 'same-id-1'));

    relay(dataSource, bus, { pollMs: 20 }).start();
    await waitUntil(async () => (await row('same-id-1'))?.publishedAt != null, 5000, 'delivery after a failure');

    expect(attempts).toEqual(['same-id-1', 'same-id-1']);
    // The in-process bus has no redelivery of its own: a consumer's bound on deliveries counts the outbox's.
    expect(counts).toEqual([1, 2]);
  });

  it('delivers at once on nudge() instead of waiting for the next poll', async () => {
    const { bus, received } = recordingBus();
    const r = relay(dataSource, bus, { pollMs: 60_000 });
    r.start();
    await sleep(150); // the first pass finds nothing; the next poll is a minute away

    await dataSource.transaction((m) => enqueueOutbox(m, TEST_SUBJECT, payload(1), 'nudged-1'));
    await sleep(200);
    expect(received).toHaveLength(0);

    const nudgedAt = Date.now();
    r.nudge();
    await waitUntil(() => received.length === 1, 2000, 'the nudged delivery');
    expect(Date.now() - nudgedAt).toBeLessThan(2000);
    expect(received[0].id).toBe('nudged-1');
  });

  it('polls less often at rest, down to one pass per idlePollMs, and still finds a record left without a nudge', async () => {
    const { bus, received } = recordingBus();
    const r = relay(dataSource, bus, { pollMs: 20, idlePollMs: 160 });
    const pass = jest.spyOn(r, 'pass');
    r.start();
    await sleep(1_000);

    // Waits of 20, 40, 80, then 160 ms: about 9 passes in a second, where a fixed 20 ms poll made 50.
    expect(pass.mock.calls.length).toBeGreaterThanOrEqual(5);
    expect(pass.mock.calls.length).toBeLessThanOrEqual(12);

    await dataSource.transaction((m) => enqueueOutbox(m, TEST_SUBJECT, payload(1), 'unnudged-1'));
    const enqueuedAt = Date.now();
    await waitUntil(() => received.length === 1, 2000, 'the polled delivery');
    expect(Date.now() - enqueuedAt).toBeLessThan(160 + 150);
  });

  it('shares the work between two replicas relaying one table: every record delivered, none twice', async () => {
    const N = 200;
    const deliveries = new Map<string, number>();
    const count = (m: BusMessage) => void deliveries.set(m.id, (deliveries.get(m.id) ?? 0) + 1);
    // Each replica has its own connection pool and its own bus connection; handlers take a moment, so passes overlap.
    const replicaA = recordingBus(async (m) => {
      await sleep(1);
      count(m);
    });
    const replicaB = recordingBus(async (m) => {
      await sleep(1);
      count(m);
    });
    const otherSource = await openDataSource();
    extraSources.push(otherSource);

    const ids = Array.from({ length: N }, (_, i) => `replicated-${i}`);
    for (let i = 0; i < N; i += 20) {
      await dataSource.transaction(async (m) => {
        for (const id of ids.slice(i, i + 20)) await enqueueOutbox(m, TEST_SUBJECT, payload(i), id);
      });
    }

    relay(dataSource, replicaA.bus, { pollMs: 5, batchSize: 15 }).start();
    relay(otherSource, replicaB.bus, { pollMs: 5, batchSize: 15 }).start();
    await waitUntil(
      async () => Number((await dataSource.query(`SELECT count(*) AS n FROM outbox WHERE published_at IS NULL`))[0].n) === 0,
      20_000,
      'all records published',
    );

    const lost = ids.filter((id) => !deliveries.has(id));
    const duplicates = [...deliveries.values()].reduce((sum, n) => sum + n - 1, 0);
    expect(lost).toEqual([]);
    expect(duplicates).toBe(0);
    // Both replicas took part.
    expect(replicaA.received.length).toBeGreaterThan(0);
    expect(replicaB.received.length).toBeGreaterThan(0);
    expect(replicaA.received.length + replicaB.received.length).toBe(N);
  });
});
