import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { DataSource } from 'typeorm';
import { WebhookEvent } from '@parley/contracts';
import { parseEgressAllowlist } from '@parley/egress';
import { openServiceDatabase, Sealer } from '@parley/persistence';
// eslint-disable-next-line @nx/enforce-module-boundaries -- test-only helper for a fresh database
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { Clock, DeliveryEngine } from './delivery.engine';
import { EndpointsDomain } from './endpoints.domain';
import { EndpointEntity } from './entities';
import { WEBHOOKS_MIGRATIONS } from './migrations';

interface Received {
  body: string;
  headers: IncomingMessage['headers'];
}

class Receiver {
  readonly received: Received[] = [];
  status = 200;
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        this.received.push({ body, headers: req.headers });
        res.writeHead(this.status).end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

class FakeClock implements Clock {
  constructor(public at = new Date('2026-11-21T12:00:00.000Z')) {}
  now(): Date {
    return new Date(this.at);
  }
  advance(ms: number): void {
    this.at = new Date(this.at.getTime() + ms);
  }
}

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const stripe = new Stripe('sk_test_unused');
let seq = 0;
const event = (type: WebhookEvent['type'], account = 'acme'): WebhookEvent =>
  ({
    id: `evt_test_${Date.now()}_${seq++}`,
    type,
    call_id: 'call_1',
    created_at: new Date().toISOString(),
    data: { agent_id: 'agt_1', direction: 'outbound', to: '+15550100000', from: '+15550100001' },
    account_id: account,
    agent_id: 'agt_1',
  }) as WebhookEvent;

describe('webhook delivery (real PostgreSQL, local receiver)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let receiver: Receiver;
  let clock: FakeClock;
  let endpoints: EndpointsDomain;
  let engine: DeliveryEngine;
  // The receiver is a plain-http server on 127.0.0.1: exempt from the address rules and allowed http explicitly.
  const policy = { egress: parseEgressAllowlist('127.0.0.1').policy, httpHosts: ['127.0.0.1'] };

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = await openServiceDatabase(db.url, { schema: 'webhooks', entities: [EndpointEntity], migrations: WEBHOOKS_MIGRATIONS });
    receiver = new Receiver();
    await receiver.start();
  });

  afterAll(async () => {
    await receiver.stop();
    await ds.destroy();
    await db.drop();
  });

  beforeEach(async () => {
    await ds.query('TRUNCATE endpoints CASCADE');
    receiver.received.length = 0;
    receiver.status = 200;
    clock = new FakeClock();
    endpoints = new EndpointsDomain(ds, new Sealer('int-test-secret-key-long-enough-0001', 'webhooks:endpoint-secrets'), policy);
    engine = new DeliveryEngine(ds, endpoints, policy, clock);
  });

  const failures = async (id: string) => (await ds.getRepository(EndpointEntity).findOneByOrFail({ id })).consecutiveFailures;

  it('delivers only to enabled endpoints whose events match: exact type, family and *', async () => {
    const make = async (path: string, events: string[], enabled = true) =>
      (await endpoints.create('acme', { url: `${receiver.url}/${path}`, events, enabled })).endpoint.id;
    await make('exact', ['call.started']);
    await make('family', ['call.*']);
    await make('all', ['*']);
    await make('other', ['csat.received']);
    await make('off', ['*'], false);
    await endpoints.create('globex', { url: `${receiver.url}/foreign`, events: ['*'] });
    expect(await engine.accept(event('call.started'))).toBe(3);
    await engine.pass();
    expect(receiver.received.map((r) => r.headers['service-event-type'])).toEqual(['call.started', 'call.started', 'call.started']);
  });

  it('fans out events accepted at the same time to each one’s own account, once each, and counts them per event', async () => {
    await endpoints.create('acme', { url: `${receiver.url}/acme-1` });
    await endpoints.create('acme', { url: `${receiver.url}/acme-2` });
    await endpoints.create('globex', { url: `${receiver.url}/globex`, events: ['call.ended'] });
    const acme = event('call.started', 'acme');
    const globexStarted = event('call.started', 'globex');
    const globexEnded = event('call.ended', 'globex');

    const counts = await Promise.all([acme, globexStarted, globexEnded, acme, event('call.started', 'initech')].map((e) => engine.accept(e)));
    await engine.pass();

    expect(counts).toEqual([2, 0, 1, 2, 0]);
    const got = receiver.received.map((r) => `${r.headers['service-event-id']} ${r.headers['service-event-type']}`).sort();
    expect(got).toEqual([`${acme.id} call.started`, `${acme.id} call.started`, `${globexEnded.id} call.ended`].sort());
  });

  it('signs deliveries so that Stripe’s verifier accepts them and refuses a tampered body', async () => {
    const { secret } = await endpoints.create('acme', { url: receiver.url });
    const e = event('call.ended');
    await engine.accept(e);
    await engine.pass();
    const [got] = receiver.received;
    expect(got.headers['service-event-id']).toBe(e.id);
    expect(got.headers['service-delivery-attempt']).toBe('1');
    expect(got.headers['service-timestamp']).toBe(String(Math.floor(clock.now().getTime() / 1000)));
    expect(JSON.parse(got.body)).toEqual({ id: e.id, type: e.type, call_id: e.call_id, created_at: e.created_at, data: e.data });
    const header = String(got.headers['service-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const t = Number(header.slice(2, header.indexOf(',')));
    // Stripe checks the timestamp against the real clock; sign-time is the fake clock's.
    expect(() => stripe.webhooks.constructEvent(got.body, header, secret, Math.abs(Date.now() / 1000 - t) + 60)).not.toThrow();
    expect(() => stripe.webhooks.constructEvent(got.body.replace('call_1', 'call_2'), header, secret, 1e9)).toThrow();
  });

  it('retries exactly after 1 s, 5 s, 25 s, 2 min and 10 min, six attempts in all, keeping the event id', async () => {
    receiver.status = 500;
    const { endpoint } = await endpoints.create('acme', { url: receiver.url });
    await engine.accept(event('call.failed'));
    const waits = [0, 1_000, 5_000, 25_000, 120_000, 600_000];
    for (const [i, wait] of waits.entries()) {
      clock.advance(wait - 1);
      if (wait > 0) expect(await engine.pass()).toBe(0);
      clock.advance(1);
      expect(await engine.pass()).toBe(1);
      expect(receiver.received).toHaveLength(i + 1);
      expect(receiver.received[i].headers['service-delivery-attempt']).toBe(String(i + 1));
    }
    clock.advance(24 * 3600_000);
    expect(await engine.pass()).toBe(0);
    expect(new Set(receiver.received.map((r) => r.headers['service-event-id'])).size).toBe(1);
    const [row] = await ds.query(`SELECT state, attempts FROM deliveries WHERE endpoint_id = $1`, [endpoint.id]);
    expect(row).toEqual({ state: 'failed', attempts: 6 });
    const history = await ds.query(`SELECT attempt, status_code, succeeded FROM delivery_attempts WHERE endpoint_id = $1 ORDER BY attempt`, [endpoint.id]);
    expect(history.map((h: { attempt: number }) => h.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('disables the endpoint at exactly the 20th consecutive failure, records why, and resumes once re-enabled', async () => {
    receiver.status = 503;
    const { endpoint } = await endpoints.create('acme', { url: receiver.url });
    for (let i = 0; i < 4; i++) await engine.accept(event('call.ended'));
    for (const wait of [0, 1_000, 5_000, 25_000]) {
      clock.advance(wait);
      await engine.pass();
    }
    expect(await failures(endpoint.id)).toBe(16);
    expect((await endpoints.get('acme', endpoint.id)).enabled).toBe(true);
    clock.advance(120_000);
    await engine.pass();
    const disabled = await endpoints.get('acme', endpoint.id);
    expect(disabled.consecutiveFailures).toBe(20);
    expect(disabled.enabled).toBe(false);
    expect(disabled.disabledReason).toContain('20 consecutive failed deliveries');

    // Nothing more is sent while disabled, even when attempts fall due.
    await engine.accept(event('call.ended'));
    clock.advance(600_000);
    const sent = receiver.received.length;
    expect(await engine.pass()).toBe(0);
    expect(receiver.received).toHaveLength(sent);

    receiver.status = 200;
    const enabled = await endpoints.update('acme', endpoint.id, { enabled: true });
    expect(enabled).toMatchObject({ enabled: true, consecutiveFailures: 0, disabledReason: null });
    expect(await engine.pass()).toBeGreaterThan(0);
    expect(await failures(endpoint.id)).toBe(0);
  });

  it('resets the failure count on a success', async () => {
    receiver.status = 500;
    const { endpoint } = await endpoints.create('acme', { url: receiver.url });
    await engine.accept(event('call.ended'));
    await engine.pass();
    clock.advance(1_000);
    await engine.pass();
    expect(await failures(endpoint.id)).toBe(2);
    receiver.status = 204;
    clock.advance(5_000);
    await engine.pass();
    expect(await failures(endpoint.id)).toBe(0);
  });

  it('keeps delivering to other endpoints while a slow receiver has a long backlog, at most 8 attempts at a time to it', async () => {
    let held = 0;
    const hung: (() => void)[] = [];
    const slow = createServer((req, res) => {
      held++;
      req.resume();
      hung.push(() => res.writeHead(200).end());
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    try {
      await endpoints.create('slowco', { url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/hook` });
      await endpoints.create('acme', { url: receiver.url });
      // A backlog longer than one pass claims, all older than the other account's event.
      await Promise.all(Array.from({ length: 600 }, () => engine.accept(event('call.started', 'slowco'))));
      clock.advance(1);
      const other = event('call.started', 'acme');
      await engine.accept(other);

      const claimed = await engine.pass({ wait: false });

      expect(claimed).toBe(9);
      await waitFor(() => receiver.received.length === 1 && held === 8);
      expect(receiver.received[0].headers['service-event-id']).toBe(other.id);
      expect(await engine.pass({ wait: false })).toBe(0); // the slow one has no free place
    } finally {
      hung.forEach((answer) => answer());
      await engine.onApplicationShutdown();
      await new Promise((r) => slow.close(r));
    }
  });

  it('does not deliver an event twice when the bus redelivers it', async () => {
    await endpoints.create('acme', { url: receiver.url });
    const e = event('call.started');
    await engine.accept(e);
    await engine.accept(e);
    await engine.pass();
    expect(receiver.received).toHaveLength(1);
  });

  it("sends an agent's events to its own webhook_url instead of the tenant's endpoints, and other agents' events to the tenant's", async () => {
    const hooks = { webhookUrl: async (_account: string, agent: string) => (agent === 'agt_own' ? `${receiver.url}/agent` : undefined) };
    engine = new DeliveryEngine(ds, endpoints, policy, clock, hooks as never);
    await endpoints.create('acme', { url: `${receiver.url}/tenant` });
    await engine.accept({ ...event('call.started'), agent_id: 'agt_own' });
    await engine.accept({ ...event('call.started'), agent_id: 'agt_other' });
    await engine.pass();
    expect(receiver.received).toHaveLength(2);
    const owned = await ds.getRepository(EndpointEntity).findOneByOrFail({ url: `${receiver.url}/agent` });
    expect(owned.ownerAgentId).toBe('agt_own');
    const byEndpoint = await ds.query(`SELECT e.url, d.event_id FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id ORDER BY e.url`);
    expect(byEndpoint.map((r: { url: string }) => r.url)).toEqual([`${receiver.url}/agent`, `${receiver.url}/tenant`]);
  });

  it('creates a second endpoint for a URL the account already has, each with its own secret', async () => {
    const first = await endpoints.create('acme', { url: receiver.url, events: ['call.started'] });
    const second = await endpoints.create('acme', { url: receiver.url, events: ['call.ended'] });
    expect(second.endpoint.id).not.toBe(first.endpoint.id);
    expect(second.secret).not.toBe(first.secret);
    expect(await engine.accept(event('call.ended'))).toBe(1);
  });

  it('declares by URL: creates, then updates the one endpoint; refuses with 409 naming them when several share it', async () => {
    const created = await endpoints.declare('acme', { url: receiver.url, events: ['call.started'] });
    expect(created.created).toBe(true);
    const updated = await endpoints.declare('acme', { url: receiver.url, events: ['call.ended'] });
    expect(updated).toMatchObject({ created: false, endpoint: { id: created.endpoint.id, events: ['call.ended'] } });
    const other = await endpoints.create('acme', { url: receiver.url });
    await expect(endpoints.declare('acme', { url: receiver.url })).rejects.toMatchObject({
      code: 'conflict',
      extra: { endpoint_ids: [created.endpoint.id, other.endpoint.id] },
    });
  });

  it('records test deliveries in the history marked as tests, without counting them towards auto-disable or resetting the count', async () => {
    receiver.status = 500;
    const { endpoint } = await endpoints.create('acme', { url: receiver.url });
    await engine.accept(event('call.ended'));
    await engine.pass();
    expect(await failures(endpoint.id)).toBe(1);
    for (let i = 0; i < 20; i++) expect((await engine.sendTest(endpoint, '{}', `evt_t${i}`, 'webhook_endpoint.test')).delivered).toBe(false);
    receiver.status = 200;
    expect((await engine.sendTest(endpoint, '{}', 'evt_ok', 'webhook_endpoint.test')).delivered).toBe(true);

    const after = await endpoints.get('acme', endpoint.id);
    expect(after).toMatchObject({ enabled: true, consecutiveFailures: 1, disabledReason: null });
    const history = await ds.query(`SELECT test, count(*)::int AS n FROM delivery_attempts WHERE endpoint_id = $1 GROUP BY test ORDER BY test`, [endpoint.id]);
    expect(history).toEqual([
      { test: false, n: 1 },
      { test: true, n: 21 },
    ]);
  });

  it('signs with every active secret during a rotation overlap', async () => {
    const { endpoint, secret: first } = await endpoints.create('acme', { url: receiver.url });
    const { secret: second } = await endpoints.rotateSecret('acme', endpoint.id, 3600);
    await engine.accept(event('call.started'));
    await engine.pass();
    const [got] = receiver.received;
    const header = String(got.headers['service-signature']);
    expect(header.split(',').filter((p) => p.startsWith('v1='))).toHaveLength(2);
    for (const secret of [first, second]) expect(() => stripe.webhooks.constructEvent(got.body, header, secret, 1e9)).not.toThrow();
  });
});
