import { createHash, randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { WebhookEvent, webhookEventSubject } from '@parley/contracts';
import { BusDeadLetters1764200000000, CreateOutbox1763700000000, enqueueOutbox, JetStreamBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { newId, openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, DisposableNatsServer, RunningPlatform, TestDatabase } from '@parley/testing';

/*
 * Chaos: events go outbox → relay → JetStream → webhook dispatcher → receiver while the dispatcher is SIGKILLed and
 * restarted every ~2 s and NATS itself is killed and restarted once. Delivery is at least once: nothing may be lost,
 * nothing foreign may arrive, and any duplicate carries the id of a published event.
 *
 * NATS: a server of this test's own (DisposableNatsServer). The dispatcher's durable consumer name is fixed, so
 * every platform on a shared NATS (other test files, other people's runs, benchmarks) would share it and take —
 * then drop, finding no endpoint in their database — part of this test's events; its own server also lets the test
 * restart NATS without disturbing anyone.
 *
 * Timeline (bounded, < 120 s): platform start ≈ 5-10 s; publishing ≈ 10 s with the chaos alongside; then at most
 * 60 s for the outbox and the deliveries to drain (a SIGKILLed dispatcher's JetStream messages and delivery leases
 * come back after 30 s, so the drain usually ends about 30 s after the last kill).
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// CHAOS_EVENTS and CHAOS_DRAIN_SECONDS override the defaults for investigations (the suite runs the defaults).
const EVENTS = Number(process.env['CHAOS_EVENTS'] ?? 2000);
const PUBLISH_MS = 10_000;
const BATCH = 20; // events per outbox transaction
const DRAIN_TIMEOUT_MS = Number(process.env['CHAOS_DRAIN_SECONDS'] ?? 90) * 1000;
/** Chaos actions, in ms after publishing starts. */
const KILLS_AT = [2_000, 4_000, 7_500, 9_500, 11_000];
const NATS_RESTART_AT = 5_500;
const NATS_DOWN_MS = 1_000;

const ACCOUNT = `chaos_${randomBytes(4).toString('hex')}`;
const KEY = `vsk_chaos_owner_${randomBytes(8).toString('hex')}`;

/** Records every delivery; answers 500 to ~5% of first attempts (chosen by event id) to exercise retries. */
class Ledger {
  /** Every 2xx-answered delivery's Service-Event-Id, in arrival order (duplicates included). */
  readonly delivered: string[] = [];
  readonly unique = new Set<string>();
  refusedFirstAttempts = 0;
  requests = 0;

  private readonly server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      this.requests++;
      const id = String(req.headers['service-event-id'] ?? '');
      if (req.headers['service-delivery-attempt'] === '1' && Ledger.refuseFirst(id)) {
        this.refusedFirstAttempts++;
        res.writeHead(500).end();
        return;
      }
      this.delivered.push(id);
      this.unique.add(id);
      res.writeHead(200).end();
    });
  });

  static refuseFirst(id: string): boolean {
    return createHash('sha256').update(id).digest()[0] < 13; // 13/256 ≈ 5 %
  }

  static async start(): Promise<Ledger> {
    const ledger = new Ledger();
    await new Promise<void>((resolve) => ledger.server.listen(0, '127.0.0.1', resolve));
    return ledger;
  }

  url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/chaos`;
  }

  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    return closed;
  }
}

/**
 * What the dispatcher stored (schema webhooks of the platform's database), for the report: whether the missing
 * events ever reached its delivery queue (one row per event and endpoint) or are still waiting there.
 */
async function dispatcherState(databaseUrl: string, missing: string[]): Promise<string> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const q = async (sql: string) => JSON.stringify((await db.query(sql)).rows);
    const { rows } = await db.query(`SELECT state, count(*)::int AS n FROM webhooks.deliveries WHERE event_id = ANY($1) GROUP BY 1`, [missing]);
    const queued = rows.reduce((sum: number, r: { n: number }) => sum + r.n, 0);
    return [
      `  missing events: ${missing.length - queued} never reached the delivery queue, ${queued} are in it: ${JSON.stringify(rows)}`,
      `  endpoints: ${await q(`SELECT enabled, consecutive_failures, disabled_reason FROM webhooks.endpoints`)}`,
      `  deliveries: ${await q(`SELECT state, attempts, (locked_until > now()) AS leased, count(*)::int AS n FROM webhooks.deliveries GROUP BY 1, 2, 3 ORDER BY 1, 2`)}`,
      `  failed attempts: ${await q(`SELECT attempt, coalesce(error, '') AS error, count(*)::int AS n FROM webhooks.delivery_attempts WHERE NOT succeeded GROUP BY 1, 2 ORDER BY 1, 3 DESC LIMIT 10`)}`,
    ].join('\n');
  } finally {
    await db.end();
  }
}

function callStarted(): WebhookEvent<'call.started'> {
  return {
    id: newId('evt'),
    type: 'call.started',
    call_id: newId('call'),
    created_at: new Date().toISOString(),
    data: { agent_id: 'agt_chaos', direction: 'outbound', to: '+15550100001', from: '+15550100002' },
    account_id: ACCOUNT,
    agent_id: null,
  };
}

describe('webhooks under chaos: dispatcher SIGKILLs and a NATS restart lose nothing', () => {
  let platform: RunningPlatform | undefined;
  let ledger: Ledger | undefined;
  let producerDb: TestDatabase | undefined;
  let producer: DataSource | undefined;
  let bus: JetStreamBus | undefined;
  let relay: OutboxRelay | undefined;
  let nats: DisposableNatsServer;

  beforeAll(async () => {
    nats = await DisposableNatsServer.start();
    const natsUrl = nats.url;
    ledger = await Ledger.start();
    platform = await RunningPlatform.start({
      mode: 'distributed',
      bootstrapKeys: [`${ACCOUNT}:owner:${KEY}`],
      natsUrl,
      env: { EGRESS_ALLOWLIST: '127.0.0.1', WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1' },
    });
    // The producer side, as a service publishes: its own schema with an outbox, and a relay to JetStream.
    producerDb = await createTestDatabase('parley_chaos');
    producer = await openServiceDatabase(producerDb.url, {
      schema: 'chaos_producer',
      entities: [OutboxRecord],
      migrations: [CreateOutbox1763700000000, BusDeadLetters1764200000000],
    });
    bus = await JetStreamBus.connect(natsUrl, 'chaos-producer', platform.natsNamespace);
    relay = new OutboxRelay(producer, bus, { pollMs: 100 });
    relay.start();
  }, 90_000);

  afterAll(async () => {
    await relay?.stop();
    await bus?.close().catch(() => undefined);
    await producer?.destroy().catch(() => undefined);
    await producerDb?.drop().catch(() => undefined);
    await platform?.stop();
    await ledger?.close();
    await nats?.stop();
  }, 30_000);

  it(`delivers all ${EVENTS} events at least once`, async () => {
    const p = platform as RunningPlatform;
    const l = ledger as Ledger;
    const ds = producer as DataSource;
    const started = Date.now();

    const created = await p.api(KEY).post('/v1/webhook_endpoints', { url: l.url(), events: ['call.started'] });
    expect(created.status).toBe(201);

    const published = new Set<string>();
    const subject = webhookEventSubject('call.started');
    const publish = async () => {
      const batches = EVENTS / BATCH;
      for (let b = 0; b < batches; b++) {
        const due = started + (b * PUBLISH_MS) / batches;
        if (due > Date.now()) await sleep(due - Date.now());
        const events = Array.from({ length: BATCH }, callStarted);
        await ds.transaction(async (m) => {
          for (const e of events) await enqueueOutbox(m, subject, e, e.id);
        });
        for (const e of events) published.add(e.id);
        relay?.nudge();
      }
    };

    let kills = 0;
    let natsRestarted = false;
    const chaos = async () => {
      const actions = [...KILLS_AT.map((at) => ({ at, what: 'kill' as const })), { at: NATS_RESTART_AT, what: 'nats' as const }].sort(
        (a, b) => a.at - b.at,
      );
      for (const action of actions) {
        if (started + action.at > Date.now()) await sleep(started + action.at - Date.now());
        if (action.what === 'kill') {
          await p.kill('webhook-dispatcher');
          p.restart('webhook-dispatcher');
          kills++;
        } else {
          try {
            await nats.kill();
            await sleep(NATS_DOWN_MS);
          } finally {
            await nats.restart();
          }
          natsRestarted = true;
        }
      }
    };

    // Both run to the end (no chaos left running behind a failed publish), then any failure is reported.
    for (const outcome of await Promise.allSettled([publish(), chaos()])) if (outcome.status === 'rejected') throw outcome.reason;
    const publishedMs = Date.now() - started;

    // Drain: the outbox empties (the relay retries what failed while NATS was down), then the ledger fills.
    let pendingOutbox = Infinity;
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (pendingOutbox > 0) {
        const [row] = await ds.query(`SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL`);
        pendingOutbox = row.n;
      }
      if (pendingOutbox === 0 && [...published].every((id) => l.unique.has(id))) break;
      await sleep(250);
    }
    const drainedMs = Date.now() - started;

    const missing = [...published].filter((id) => !l.unique.has(id));
    const foreign = [...l.unique].filter((id) => !published.has(id));
    const duplicates = l.delivered.length - l.unique.size;
    const times = new Map<string, number>();
    for (const id of l.delivered) times.set(id, (times.get(id) ?? 0) + 1);
    const duplicateIds = [...times].filter(([, n]) => n > 1).map(([id]) => id);
    console.log(
      [
        `webhooks chaos: published ${published.size}, received ${l.delivered.length} (2xx), unique ${l.unique.size}, duplicates ${duplicates}` +
          ` (${duplicateIds.length} ids), missing ${missing.length}, foreign ${foreign.length}`,
        `  dispatcher SIGKILLs ${kills}, NATS restarted ${natsRestarted}, first attempts refused with 500: ${l.refusedFirstAttempts}, requests ${l.requests}`,
        `  outbox rows still unpublished ${pendingOutbox}; publishing + chaos ${publishedMs} ms, ` +
          (missing.length ? `gave up waiting after ${drainedMs} ms` : `all delivered after ${drainedMs} ms`),
      ].join('\n'),
    );
    if (missing.length) console.log(`missing (first 10): ${missing.slice(0, 10).join(', ')}\n${await dispatcherState(p.databaseUrl, missing)}\n${p.logs()}`);

    expect(pendingOutbox).toBe(0);
    expect(published.size).toBe(EVENTS);
    expect(missing.length).toBe(0);
    expect(foreign.length).toBe(0);
    for (const id of duplicateIds) expect(published.has(id)).toBe(true);
    expect(kills).toBe(KILLS_AT.length);
    expect(natsRestarted).toBe(true);
  }, DRAIN_TIMEOUT_MS + 40_000);
});
