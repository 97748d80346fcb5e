import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { DataSource } from 'typeorm';
import { STREAMS, WebhookEvent, webhookEventSubject } from '@parley/contracts';
import { parseEgressAllowlist } from '@parley/egress';
import { defaultProjectId, openServiceDatabase, Sealer } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { consumerName, DeadLetter, DeadLetterStore, MAX_DELIVERIES, OutboxRecord } from '@parley/messaging';
import { DbClock } from './db-clock';
import { DeliveriesRepository } from './deliveries.repository';
import { DeliveryEngine } from './delivery.engine';
import { EndpointsDomain } from './endpoints.domain';
import { EndpointsRepository } from './endpoints.repository';
import { EndpointEntity } from './entities';
import { WEBHOOKS_MIGRATIONS } from './migrations';
import { WebhooksGrpcController } from './webhooks.controllers';

interface Received {
  body: string;
  headers: IncomingMessage['headers'];
  path: string;
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
        this.received.push({ body, headers: req.headers, path: req.url ?? '' });
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

/** Fixes the database's now for the engine's statements. */
class FakeClock implements DbClock {
  constructor(public at = new Date('2026-11-21T12:00:00.000Z')) {}
  fixedNow(): Date {
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
    ds = await openServiceDatabase(db.url, { schema: 'webhooks', entities: [EndpointEntity, OutboxRecord], migrations: WEBHOOKS_MIGRATIONS });
    receiver = new Receiver();
    await receiver.start();
  });

  afterAll(async () => {
    await receiver.stop();
    await ds.destroy();
    await db.drop();
  });

  beforeEach(async () => {
    await ds.query('TRUNCATE endpoints, dead_letters, outbox, project_limits_reported CASCADE');
    receiver.received.length = 0;
    receiver.status = 200;
    clock = new FakeClock();
    const sealer = new Sealer('int-test-secret-key-long-enough-0001', 'webhooks:endpoint-secrets');
    endpoints = new EndpointsDomain(new EndpointsRepository(ds, clock), new DeliveriesRepository(ds, clock), sealer, policy);
    engine = engineWith(clock);
  });

  /** An engine whose statements read the time from `time` (the test's fixed clock unless a test says otherwise). */
  const engineWith = (time: DbClock, hooks?: { webhookUrl: (account: string, agent: string) => Promise<string | undefined> }) =>
    new DeliveryEngine(new DeliveriesRepository(ds, time), new EndpointsRepository(ds, time), endpoints, policy, hooks as never);

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

  describe('projects', () => {
    const SALES = `prj_${'1'.repeat(22)}`;
    const SUPPORT = `prj_${'2'.repeat(22)}`;

    it('delivers a project’s events to that project’s endpoints and the default project’s, never another project’s', async () => {
      await endpoints.create('acme', { url: `${receiver.url}/default` });
      await endpoints.create('acme', { url: `${receiver.url}/default-named` }, { id: defaultProjectId('acme'), maxEndpoints: 0 });
      await endpoints.create('acme', { url: `${receiver.url}/sales` }, { id: SALES, maxEndpoints: 0 });
      await endpoints.create('acme', { url: `${receiver.url}/support` }, { id: SUPPORT, maxEndpoints: 0 });

      expect(await engine.accept({ ...event('call.started'), project_id: SALES })).toBe(3);
      // An event of no project (a workflow run's, say) reaches only the default project's endpoints.
      expect(await engine.accept(event('call.started'))).toBe(2);
      await engine.pass();
      expect(receiver.received.map((r) => r.path.replace('/hook', '')).sort()).toEqual(['/default', '/default', '/default-named', '/default-named', '/sales']);
    });

    it('refuses the endpoint past the project’s max_webhook_endpoints with 402, on create and on a declare that creates', async () => {
      const sales = { id: SALES, maxEndpoints: 2 };
      await endpoints.create('acme', { url: `${receiver.url}/a` }, sales);
      await endpoints.declare('acme', { url: `${receiver.url}/b` }, sales);
      const refused = await endpoints.create('acme', { url: `${receiver.url}/c` }, sales).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: 'plan_limit_reached', extra: { limit: 'max_webhook_endpoints', project_id: SALES, ceiling: 2 } });
      expect(await endpoints.declare('acme', { url: `${receiver.url}/d` }, sales).catch((e: unknown) => e)).toMatchObject({ code: 'plan_limit_reached' });
      // Re-declaring an existing one creates nothing; another project, or the account's default, has its own count.
      expect((await endpoints.declare('acme', { url: `${receiver.url}/b` }, sales)).created).toBe(false);
      await endpoints.create('acme', { url: `${receiver.url}/e` }, { id: SUPPORT, maxEndpoints: 2 });
      expect((await endpoints.list('acme', 10, '', SALES)).items.map((e) => e.url).sort()).toEqual([`${receiver.url}/a`, `${receiver.url}/b`]);
    });

    it('sends project.limit_reached once however many creates are refused in parallel at max_webhook_endpoints, and again once it was back under', async () => {
      const support = { id: SUPPORT, maxEndpoints: 1 };
      const reports = async () =>
        (await ds.query(`SELECT payload FROM outbox WHERE subject = $1`, [webhookEventSubject('project.limit_reached').name])).map((r: { payload: WebhookEvent }) => r.payload);
      const first = await endpoints.create('acme', { url: `${receiver.url}/only` }, support);
      const refuse = (n: number) =>
        Promise.all(
          Array.from({ length: n }, (_, i) =>
            (i % 2 ? endpoints.declare('acme', { url: `${receiver.url}/d${i}` }, support) : endpoints.create('acme', { url: `${receiver.url}/c${i}` }, support)).catch((e: unknown) => e),
          ),
        );
      expect(await refuse(12)).toEqual(Array.from({ length: 12 }, () => expect.objectContaining({ code: 'plan_limit_reached' })));
      expect(await reports()).toEqual([
        expect.objectContaining({
          type: 'project.limit_reached',
          call_id: null,
          account_id: 'acme',
          project_id: SUPPORT,
          data: { project_id: SUPPORT, limit: 'max_webhook_endpoints', ceiling: 1 },
        }),
      ]);
      // Back under the ceiling: the next endpoint is created and clears the mark, so reaching it again is reported again.
      await endpoints.delete('acme', first.endpoint.id);
      await endpoints.create('acme', { url: `${receiver.url}/again` }, support);
      await refuse(4);
      expect(await reports()).toHaveLength(2);
    });
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
    // Signed at this replica's time: the receiver compares it with its own wall clock.
    expect(Math.abs(Number(got.headers['service-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    expect(JSON.parse(got.body)).toEqual({ id: e.id, type: e.type, call_id: e.call_id, created_at: e.created_at, data: e.data });
    const header = String(got.headers['service-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(() => stripe.webhooks.constructEvent(got.body, header, secret, 300)).not.toThrow();
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

  it('keeps the endpoint enabled at the 19th consecutive failure and disables it at exactly the 20th, cancelling what was pending', async () => {
    receiver.status = 503;
    const { endpoint } = await endpoints.create('acme', { url: receiver.url });
    for (let i = 0; i < 19; i++) await engine.accept(event('call.ended'));
    // First attempts only: their retries fall due a second later, and the clock stands still.
    while ((await engine.pass()) > 0);
    expect(await endpoints.get('acme', endpoint.id)).toMatchObject({ enabled: true, consecutiveFailures: 19, disabledReason: null });

    await engine.accept(event('call.ended'));
    expect(await engine.pass()).toBe(1);
    const disabled = await endpoints.get('acme', endpoint.id);
    expect(disabled).toMatchObject({ enabled: false, consecutiveFailures: 20 });
    expect(disabled.disabledReason).toContain('20 consecutive failed deliveries; last: HTTP 503');
    expect(await states(endpoint.id)).toEqual({ cancelled: 20 });
    const history = await historyOf(endpoint.id);
    expect(count(history.map((h) => h.outcome))).toEqual({ failed: 20, cancelled: 20 });
    expect(history.find((h) => h.outcome === 'cancelled')).toMatchObject({ attempt: 1, error: expect.stringContaining('disabled automatically'), next_attempt_at: '' });
    // The 20th failure schedules nothing: its delivery was cancelled in the same statement.
    expect(history.filter((h) => h.outcome === 'failed' && h.next_attempt_at === '')).toHaveLength(1);
  });

  it('records events that occur while disabled as skipped, and resumes nothing from before once re-enabled', async () => {
    const { endpoint } = await endpoints.create('acme', { url: receiver.url });
    receiver.status = 500;
    await engine.accept(event('call.started'));
    await engine.pass();
    clock.advance(10);
    await endpoints.update('acme', endpoint.id, { enabled: false });
    clock.advance(10);
    const whileDisabled = event('call.ended');
    expect(await engine.accept(whileDisabled)).toBe(0);
    clock.advance(3_600_000);
    expect(await engine.pass()).toBe(0);
    expect(receiver.received).toHaveLength(1);
    expect(await states(endpoint.id)).toEqual({ cancelled: 1, skipped: 1 });
    expect((await historyOf(endpoint.id)).map((h) => [h.outcome, h.event_id === whileDisabled.id])).toEqual([
      ['skipped', true],
      ['cancelled', false],
      ['failed', false],
    ]);

    receiver.status = 200;
    expect(await endpoints.update('acme', endpoint.id, { enabled: true })).toMatchObject({ enabled: true, consecutiveFailures: 0 });
    clock.advance(24 * 3_600_000);
    expect(await engine.pass()).toBe(0);
    const after = event('call.ended');
    expect(await engine.accept(after)).toBe(1);
    await engine.pass();
    expect(receiver.received.map((r) => r.headers['service-event-id']).slice(1)).toEqual([after.id]);
  });

  it('keeps the failure count and an automatic disable when the endpoint is declared again with PUT', async () => {
    receiver.status = 500;
    const declared = await endpoints.declare('acme', { url: receiver.url });
    await engine.accept(event('call.started'));
    await engine.pass();
    expect((await endpoints.declare('acme', { url: receiver.url })).endpoint).toMatchObject({ enabled: true, consecutiveFailures: 1 });

    for (let i = 0; i < 19; i++) await engine.accept(event('call.started'));
    while ((await engine.pass()) > 0);
    expect(await endpoints.get('acme', declared.endpoint.id)).toMatchObject({ enabled: false, consecutiveFailures: 20 });
    for (const enabled of [undefined, true, false]) {
      const again = await endpoints.declare('acme', { url: receiver.url, enabled, description: 'deploy' });
      expect(again.endpoint).toMatchObject({ enabled: false, consecutiveFailures: 20, disabledReason: expect.stringContaining('20 consecutive'), description: 'deploy' });
    }

    // Only PATCH lifts it; a manual disable is then the declared state's to change.
    await endpoints.update('acme', declared.endpoint.id, { enabled: true });
    expect((await endpoints.declare('acme', { url: receiver.url, enabled: false })).endpoint).toMatchObject({ enabled: false, disabledReason: null });
    expect((await endpoints.declare('acme', { url: receiver.url })).endpoint).toMatchObject({ enabled: true, consecutiveFailures: 0 });
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
      await engine.drain();
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
    engine = engineWith(clock, hooks);
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

  /** A receiver that holds every request until told to answer; `closed` counts requests the sender aborted. */
  async function holdingReceiver(): Promise<{ url: string; held: () => number; closed: () => number; answer: (status: number) => void; stop: () => Promise<void> }> {
    const hung: ((status: number) => void)[] = [];
    let closed = 0;
    const server = createServer((req, res) => {
      req.resume();
      res.on('close', () => {
        if (!res.writableFinished) closed++;
      });
      hung.push((status) => res.writeHead(status).end());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      held: () => hung.length,
      closed: () => closed,
      answer: (status) => hung.splice(0).forEach((a) => a(status)),
      stop: () => new Promise((r) => server.close(() => r())),
    };
  }

  it('abandons attempts in flight when the endpoint is disabled: aborted, never counted, nothing rescheduled or sent again', async () => {
    const slow = await holdingReceiver();
    try {
      const { endpoint } = await endpoints.create('acme', { url: slow.url });
      for (let i = 0; i < 3; i++) await engine.accept(event('call.started'));
      expect(await engine.pass({ wait: false })).toBe(3);
      await waitFor(() => slow.held() === 3);

      await endpoints.update('acme', endpoint.id, { enabled: false });
      await engine.abandonCancelled();
      await waitFor(() => slow.closed() === 3);
      await engine.drain();

      expect(await endpoints.get('acme', endpoint.id)).toMatchObject({ enabled: false, consecutiveFailures: 0 });
      expect(await states(endpoint.id)).toEqual({ cancelled: 3 });
      const history = await historyOf(endpoint.id);
      expect(count(history.map((h) => h.outcome))).toEqual({ aborted: 3, cancelled: 3 });
      expect(history.find((h) => h.outcome === 'aborted')).toMatchObject({ error: expect.stringContaining('abandoned'), next_attempt_at: '' });

      await endpoints.update('acme', endpoint.id, { enabled: true });
      clock.advance(3_600_000);
      expect(await engineWith(clock).pass()).toBe(0);
      expect(slow.held()).toBe(3);
    } finally {
      slow.answer(200);
      await slow.stop();
    }
  });

  it('deletes softly: in-flight attempts stop and are recorded without a foreign-key failure, the history stays readable, the URL is free', async () => {
    const slow = await holdingReceiver();
    try {
      const { endpoint } = await endpoints.create('acme', { url: slow.url });
      await engine.accept(event('call.started'));
      await engine.accept(event('call.ended'));
      expect(await engine.pass({ wait: false })).toBe(2);
      await waitFor(() => slow.held() === 2);

      await endpoints.delete('acme', endpoint.id);
      await engine.abandonCancelled();
      await engine.drain();

      await expect(endpoints.get('acme', endpoint.id)).rejects.toMatchObject({ code: 'not_found' });
      expect((await endpoints.list('acme', 20, '')).items).toEqual([]);
      await expect(endpoints.delete('acme', endpoint.id)).rejects.toMatchObject({ code: 'not_found' });
      expect(await ds.query(`SELECT count(*)::int AS n FROM endpoint_secrets WHERE endpoint_id = $1`, [endpoint.id])).toEqual([{ n: 0 }]);
      expect(count((await historyOf(endpoint.id)).map((h) => h.outcome))).toEqual({ aborted: 2, cancelled: 2 });
      expect((await historyOf(endpoint.id)).find((h) => h.outcome === 'cancelled')?.error).toContain('deleted');
      await expect(controllerFor().listDeliveries({ account_id: 'globex', id: endpoint.id, limit: 20, after: '' })).rejects.toMatchObject({ code: 'not_found' });
      expect(await engine.accept(event('call.started'))).toBe(0);
      expect((await endpoints.declare('acme', { url: slow.url })).created).toBe(true);
    } finally {
      slow.answer(200);
      await slow.stop();
    }
  });

  it('takes leases and due times from the database clock: a replica whose clock runs an hour ahead neither steals a lease nor retries early', async () => {
    const slow = await holdingReceiver();
    const databaseTime: DbClock = { fixedNow: () => null };
    const first = engineWith(databaseTime);
    try {
      const { endpoint } = await endpoints.create('acme', { url: slow.url });
      await first.accept(event('call.started'));
      expect(await first.pass({ wait: false })).toBe(1);
      await waitFor(() => slow.held() === 1);
      const [lease] = await ds.query(`SELECT EXTRACT(EPOCH FROM locked_until - now())::float AS s FROM deliveries WHERE endpoint_id = $1`, [endpoint.id]);
      expect(lease.s).toBeGreaterThan(25);

      jest.useFakeTimers({ now: Date.now() + 3_600_000, doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask', 'hrtime', 'performance'] });
      const skewed = engineWith(databaseTime);
      expect(await skewed.pass()).toBe(0);

      slow.answer(503);
      await first.drain();
      const [due] = await ds.query(`SELECT EXTRACT(EPOCH FROM next_attempt_at - now())::float AS s FROM deliveries WHERE endpoint_id = $1`, [endpoint.id]);
      expect(due.s).toBeGreaterThan(0.5);
      expect(await skewed.pass()).toBe(0);
      expect(slow.held()).toBe(0);
    } finally {
      jest.useRealTimers();
      slow.answer(200);
      await slow.stop();
    }
  });

  it('replays an event parked in its dead_letters table into delivery once, however often an operator asks; a failed replay stays parked', async () => {
    let agentsDown = true;
    const hooks = {
      webhookUrl: async () => {
        if (agentsDown) throw new Error('agents service unavailable');
        return undefined;
      },
    };
    engine = engineWith(clock, hooks);
    // What the bus transport does with the events consumer's last allowed delivery (libs/platform/messaging).
    const deadLetters = new DeadLetterStore(ds, 'webhook-dispatcher');
    const consumer = consumerName('webhook-dispatcher', STREAMS.webhookEvents.subjects[0]);
    const replayTo = new Map([[consumer, (letter: DeadLetter) => engine.accept(letter.payload as WebhookEvent)]]);
    await endpoints.create('acme', { url: receiver.url });
    const e = event('call.started');
    const failure = await engine.accept(e).catch((error: unknown) => error);
    await deadLetters.park(consumer, { id: `msg-${e.id}`, subject: 'parley.events.call.started', payload: e, headers: {}, deliveries: MAX_DELIVERIES }, failure);

    const [parked] = await ds.query(`SELECT id, consumer, message_id, payload, reason, deliveries, replayed_at FROM dead_letters`);
    expect(parked).toMatchObject({ consumer, message_id: `msg-${e.id}`, payload: JSON.stringify(e), reason: 'agents service unavailable', deliveries: MAX_DELIVERIES, replayed_at: null });
    expect(parked.id).toMatch(/^wdl_/);
    expect(await deadLetters.replay(replayTo)).toBe(0);

    await ds.query(`UPDATE dead_letters SET replay_requested_at = now() WHERE replayed_at IS NULL`);
    expect(await deadLetters.replay(replayTo)).toBe(1);
    expect((await ds.query(`SELECT reason, replayed_at FROM dead_letters`))[0]).toEqual({ reason: 'replay failed: agents service unavailable', replayed_at: null });

    agentsDown = false;
    await ds.query(`UPDATE dead_letters SET replay_requested_at = now() WHERE replayed_at IS NULL`);
    expect(await deadLetters.replay(replayTo)).toBe(1);
    await engine.pass();
    expect(receiver.received.map((r) => r.headers['service-event-id'])).toEqual([e.id]);
    expect((await ds.query(`SELECT replayed_at IS NOT NULL AS replayed FROM dead_letters`))[0]).toEqual({ replayed: true });
    // A second replay finds the deliveries already made: nothing is sent twice.
    await ds.query(`UPDATE dead_letters SET replay_requested_at = now()`);
    await deadLetters.replay(replayTo);
    await engine.pass();
    expect(receiver.received).toHaveLength(1);
  });

  const controllerFor = () => new WebhooksGrpcController(endpoints, engine, new DeliveriesRepository(ds, clock));
  const historyOf = async (id: string) => (await controllerFor().listDeliveries({ account_id: 'acme', id, limit: 100, after: '' })).data;
  const states = async (id: string): Promise<Record<string, number>> =>
    Object.fromEntries(
      (await ds.query(`SELECT state, count(*)::int AS n FROM deliveries WHERE endpoint_id = $1 GROUP BY state ORDER BY state`, [id])).map(
        (r: { state: string; n: number }) => [r.state, r.n],
      ),
    );
});

function count(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}
