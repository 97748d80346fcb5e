import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { ApiClient, RunningPlatform } from '@parley/testing';

const OWNER = 'vsk_whk_owner_key_00000000001';
const STRANGER = 'vsk_whk_stranger_key_0000001';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

/** A local webhook receiver: records every request (raw body and headers) and answers `status`. */
class Receiver {
  readonly received: Received[] = [];
  status = 200;

  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.received.push({ path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks) });
      res.writeHead(this.status, { 'content-type': 'text/plain' }).end('ok');
    });
  });

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** The one request received since `count` requests had arrived. */
  since(count: number): Received {
    expect(this.received).toHaveLength(count + 1);
    return this.received[count];
  }

  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    return closed;
  }
}

/** Verifies a delivery exactly as a Stripe-based receiver would (throws when it does not verify). */
function verify(delivery: Received, secret: string, body: Buffer | string = delivery.raw) {
  return Stripe.webhooks.constructEvent(body, String(delivery.headers['service-signature']), secret, 300);
}

const v1Count = (delivery: Received) => String(delivery.headers['service-signature']).split(',').filter((p) => p.startsWith('v1=')).length;

describe('webhook endpoints over HTTP', () => {
  let platform: RunningPlatform;
  let receiver: Receiver;
  let api: ApiClient;
  let stranger: ApiClient;

  // Every endpoint gets its own path, so PUT (which declares by URL) finds at most the one it made.
  let paths = 0;
  const freshUrl = () => receiver.url(`/hook/${++paths}`);
  const put = (body: unknown) => api.request('PUT', '/v1/webhook_endpoints', body);
  const create = async (body: Record<string, unknown> = {}) => {
    const res = await api.post('/v1/webhook_endpoints', { url: freshUrl(), ...body });
    expect(res.status).toBe(201);
    return res.body as { id: string; url: string; secret: string } & Record<string, unknown>;
  };

  beforeAll(async () => {
    receiver = await Receiver.start();
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${OWNER}`, `umbrella:owner:${STRANGER}`],
      // The receiver is plain http on 127.0.0.1: exempt from the address rules and, explicitly, allowed http.
      // 127.0.0.2 is exempt from the address rules only, to show that this never allows http.
      env: { EGRESS_ALLOWLIST: '127.0.0.1,127.0.0.2', WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1' },
    });
    api = platform.api(OWNER);
    stranger = platform.api(STRANGER);
  });

  afterAll(async () => {
    await platform?.stop();
    await receiver?.close();
  });

  beforeEach(() => {
    receiver.status = 200;
  });

  describe('creating and reading', () => {
    it('returns the secret once, in the creation response; reads and lists never carry it', async () => {
      const url = freshUrl();
      const res = await api.post('/v1/webhook_endpoints', { url, description: 'CRM', metadata: { team: 'ops' } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^whep_/),
        object: 'webhook_endpoint',
        // Created without a project: the account's default project.
        project_id: expect.stringMatching(/^prj_[0-9A-Za-z]{22}$/),
        url,
        events: ['*'],
        description: 'CRM',
        enabled: true,
        metadata: { team: 'ops' },
        disabled_reason: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        secret: expect.stringMatching(/^whsec_/),
      });

      const read = await api.get(`/v1/webhook_endpoints/${res.body.id}`);
      expect(read.status).toBe(200);
      const { secret: _secret, ...withoutSecret } = res.body;
      expect(read.body).toEqual(withoutSecret);
      expect(JSON.stringify(read.body)).not.toContain(res.body.secret);

      const listed = await api.get('/v1/webhook_endpoints?limit=100');
      expect(listed.status).toBe(200);
      expect(listed.body.object).toBe('list');
      expect(listed.body.data.map((e: { id: string }) => e.id)).toContain(res.body.id);
      for (const e of listed.body.data) expect(e).not.toHaveProperty('secret');
      expect(JSON.stringify(listed.body)).not.toContain(res.body.secret);
    });

    it('defaults events to ["*"] and keeps the given ones', async () => {
      expect((await create()).events).toEqual(['*']);
      expect((await create({ events: ['call.ended', 'call.transcript.*'] })).events).toEqual(['call.ended', 'call.transcript.*']);
    });

    it('accepts plain http to a host the development setting lists (WEBHOOK_ALLOW_HTTP_HOSTS=127.0.0.1)', async () => {
      const res = await api.post('/v1/webhook_endpoints', { url: receiver.url('/allowed') });
      expect(res.status).toBe(201);
      expect(res.body.url).toBe(receiver.url('/allowed'));
    });

    it('holds an agent’s and a group’s webhook_url to the same rule: http to a listed host, nowhere else', async () => {
      const agent = await api.post('/v1/agents', { name: 'Dev hook', languages: [{ code: 'en-US' }], webhook_url: receiver.url('/agent') });
      expect(agent.status).toBe(201);
      const group = await api.post('/v1/agent_groups', { name: 'Dev hooks', defaults: { webhook_url: receiver.url('/group') } });
      expect(group.status).toBe(201);
      const refused = await api.post('/v1/agents', { name: 'Plain hook', languages: [{ code: 'en-US' }], webhook_url: 'http://example.com/hook' });
      expect(refused.status).toBe(422);
      expect(refused.body.errors).toEqual([{ field: 'webhook_url', message: expect.stringContaining('WEBHOOK_ALLOW_HTTP_HOSTS') }]);
    });

    it.each([
      ['a private address', 'https://10.0.0.1/hook'],
      ['the cloud metadata address', 'https://169.254.169.254/'],
      ['plain http to a host no setting lists', 'http://example.com/hook'],
      ['plain http to an address EGRESS_ALLOWLIST lists (it exempts from the address rules, never from https)', 'http://127.0.0.2:9/hook'],
    ])('refuses %s with 422 at url', async (_name, url) => {
      for (const [method, path] of [['POST', '/v1/webhook_endpoints'], ['PUT', '/v1/webhook_endpoints']] as const) {
        const res = await api.request(method, path, { url });
        expect(res.status).toBe(422);
        expect(res.body.code).toBe('validation_error');
        expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['url']);
      }
    });

    it('reports a bad url and a bad enabled together: two entries in one 422, on POST, PUT and PATCH', async () => {
      const endpoint = await create();
      for (const url of ['http://example.com/hook', 'https://10.0.0.1/hook', '']) {
        for (const [method, path] of [
          ['POST', '/v1/webhook_endpoints'],
          ['PUT', '/v1/webhook_endpoints'],
          ['PATCH', `/v1/webhook_endpoints/${endpoint.id}`],
        ] as const) {
          const res = await api.request(method, path, { url, enabled: 'yes' });
          expect(res.status).toBe(422);
          expect(res.body.code).toBe('validation_error');
          expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['enabled', 'url']);
        }
      }
    });

    it('refuses an unknown event type with 422 at events, and an unknown field with 400', async () => {
      const bad = await api.post('/v1/webhook_endpoints', { url: freshUrl(), events: ['call.started', 'call.nope'] });
      expect(bad.status).toBe(422);
      expect(bad.body.code).toBe('validation_error');
      expect(bad.body.errors.map((e: { field: string }) => e.field)).toEqual(['events']);

      const unknown = await api.post('/v1/webhook_endpoints', { url: freshUrl(), secret: 'whsec_mine' });
      expect(unknown.status).toBe(400);
      expect(unknown.body.code).toBe('invalid_request');
      expect(unknown.body.errors).toEqual([{ field: 'secret', message: 'is not a known field' }]);
    });

    it('creates a second endpoint for a URL the account already has (201, its own id and secret)', async () => {
      const endpoint = await create({ events: ['call.started'] });
      const again = await api.post('/v1/webhook_endpoints', { url: endpoint.url, events: ['call.ended'] });
      expect(again.status).toBe(201);
      expect(again.body).toMatchObject({ url: endpoint.url, events: ['call.ended'], secret: expect.stringMatching(/^whsec_/) });
      expect(again.body.id).not.toBe(endpoint.id);
      expect(again.body.secret).not.toBe(endpoint.secret);
      const sharing = (await api.get('/v1/webhook_endpoints?limit=100')).body.data.filter((e: { url: string }) => e.url === endpoint.url);
      expect(sharing.map((e: { id: string }) => e.id).sort()).toEqual([endpoint.id, again.body.id].sort());
    });

    it('pages the list with cursors', async () => {
      // The other account, so the pages hold only what this test made.
      const reader = stranger;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await reader.post('/v1/webhook_endpoints', { url: freshUrl() })).body.id);
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await reader.get(`/v1/webhook_endpoints?limit=2${cursor ? `&starting_after=${cursor}` : ''}`);
        expect(page.status).toBe(200);
        seen.push(...page.body.data.map((e: { id: string }) => e.id));
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(seen.sort()).toEqual(ids.sort());
      expect(new Set(seen).size).toBe(seen.length);
    });
  });

  describe('updating', () => {
    it('disables and re-enables with PATCH, keeping everything else', async () => {
      const endpoint = await create({ events: ['call.ended'], description: 'keep me' });
      const off = await api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { enabled: false });
      expect(off.status).toBe(200);
      expect(off.body).toMatchObject({ id: endpoint.id, enabled: false, events: ['call.ended'], description: 'keep me', disabled_reason: null });
      expect(off.body).not.toHaveProperty('secret');
      const on = await api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { enabled: true });
      expect(on.status).toBe(200);
      expect(on.body).toMatchObject({ enabled: true, events: ['call.ended'], description: 'keep me' });
      expect((await api.get(`/v1/webhook_endpoints/${endpoint.id}`)).body.enabled).toBe(true);
    });

    it('refuses a bad patch with 422 naming the field', async () => {
      const endpoint = await create();
      const res = await api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { events: [] });
      expect(res.status).toBe(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['events']);
    });

    it('declares by URL with PUT: 201 with the secret the first time, then 200 with the same id and exactly the given state', async () => {
      const url = receiver.url('/declared');
      const first = await put({ url, events: ['call.ended'], description: 'first', metadata: { v: '1' } });
      expect(first.status).toBe(201);
      expect(first.body).toMatchObject({ url, events: ['call.ended'], description: 'first', metadata: { v: '1' }, enabled: true });
      expect(first.body.secret).toMatch(/^whsec_/);

      const second = await put({ url, enabled: false });
      expect(second.status).toBe(200);
      expect(second.body).not.toHaveProperty('secret');
      expect(second.body).toMatchObject({ id: first.body.id, url, events: ['*'], description: '', metadata: {}, enabled: false });

      const again = await put({ url, enabled: false });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: first.body.id, events: ['*'], description: '', metadata: {}, enabled: false });

      const all = (await api.get('/v1/webhook_endpoints?limit=100')).body.data.filter((e: { url: string }) => e.url === url);
      expect(all).toHaveLength(1);
    });

    it('refuses a PUT to a URL several endpoints share with 409 conflict naming them, changing none', async () => {
      const first = await create({ description: 'one' });
      const second = (await api.post('/v1/webhook_endpoints', { url: first.url, description: 'two' })).body;
      const res = await put({ url: first.url, enabled: false });
      expect(res.status).toBe(409);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body).toMatchObject({ code: 'conflict', endpoint_ids: [first.id, second.id], request_id: expect.any(String) });
      for (const e of [first, second]) expect((await api.get(`/v1/webhook_endpoints/${e.id}`)).body.enabled).toBe(true);
    });

    it('refuses a PUT without a url', async () => {
      const res = await put({ events: ['*'] });
      expect(res.status).toBe(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['url']);
    });
  });

  describe('accounts', () => {
    it("answers 404 for every route on another account's endpoint", async () => {
      const endpoint = await create();
      const base = `/v1/webhook_endpoints/${endpoint.id}`;
      const before = receiver.received.length;
      for (const res of [
        await stranger.get(base),
        await stranger.patch(base, { enabled: false }),
        await stranger.delete(base),
        await stranger.get(`${base}/deliveries`),
        await stranger.post(`${base}/test`),
        await stranger.post(`${base}/rotate_secret`, {}),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
      expect(receiver.received).toHaveLength(before);
      expect((await api.get(base)).body.enabled).toBe(true);
    });
  });

  describe('test deliveries and signatures', () => {
    it('delivers a signed envelope that verifies with the secret (as Stripe verifies); a tampered body does not', async () => {
      const endpoint = await create();
      const before = receiver.received.length;
      const res = await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ delivered: true, response_code: 200 });

      const delivery = receiver.since(before);
      expect(receiver.url(delivery.path)).toBe(endpoint.url);
      expect(delivery.headers['content-type']).toContain('application/json');
      const signature = String(delivery.headers['service-signature']);
      expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      const t = Number(signature.slice(2, signature.indexOf(',')));
      expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(60);
      expect(delivery.headers['service-timestamp']).toBe(String(t));
      expect(delivery.headers['service-delivery-attempt']).toBe('1');

      const envelope = JSON.parse(delivery.raw.toString('utf8'));
      expect(envelope).toEqual({
        id: expect.stringMatching(/^evt_/),
        type: expect.any(String),
        call_id: envelope.call_id === null ? null : expect.any(String),
        created_at: expect.any(String),
        data: expect.any(Object),
      });
      expect(delivery.headers['service-event-id']).toBe(envelope.id);
      expect(delivery.headers['service-event-type']).toBe(envelope.type);

      const event = verify(delivery, endpoint.secret) as unknown as { id: string };
      expect(event.id).toBe(envelope.id);
      const tampered = Buffer.from(delivery.raw.toString('utf8').replace(envelope.id, 'evt_forged'));
      expect(() => verify(delivery, endpoint.secret, tampered)).toThrow(Stripe.errors.StripeSignatureVerificationError);
      expect(() => verify(delivery, 'whsec_not_the_secret')).toThrow(Stripe.errors.StripeSignatureVerificationError);
    });

    it('reports a failing receiver: delivered false, the status received and an error', async () => {
      const endpoint = await create();
      receiver.status = 500;
      const before = receiver.received.length;
      const res = await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ delivered: false, response_code: 500, error: expect.any(String) });
      expect(res.body.error.length).toBeGreaterThan(0);
      expect(receiver.since(before)).toBeDefined();
    });

    it('rotates the secret: during the overlap each delivery carries one v1 per active secret and verifies with either', async () => {
      const endpoint = await create();
      const rotated = await api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { overlap_seconds: 3600 });
      expect(rotated.status).toBe(200);
      expect(rotated.body).toEqual({
        object: 'webhook_endpoint_secret',
        endpoint_id: endpoint.id,
        secret: expect.stringMatching(/^whsec_/),
        previous_secret_expires_at: expect.any(String),
      });
      expect(rotated.body.secret).not.toBe(endpoint.secret);
      const expires = Date.parse(rotated.body.previous_secret_expires_at);
      expect(expires).toBeGreaterThan(Date.now() + 3500_000);
      expect(expires).toBeLessThan(Date.now() + 3700_000);
      expect((await api.get(`/v1/webhook_endpoints/${endpoint.id}`)).body).not.toHaveProperty('secret');

      const before = receiver.received.length;
      expect((await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`)).body).toEqual({ delivered: true, response_code: 200 });
      const delivery = receiver.since(before);
      expect(v1Count(delivery)).toBe(2);
      expect(() => verify(delivery, endpoint.secret)).not.toThrow();
      expect(() => verify(delivery, rotated.body.secret)).not.toThrow();
    });

    it('rotates with the default overlap of a day when the body names none', async () => {
      const endpoint = await create();
      const rotated = await api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`);
      expect(rotated.status).toBe(200);
      const expires = Date.parse(rotated.body.previous_secret_expires_at);
      expect(expires).toBeGreaterThan(Date.now() + 86_300_000);
      expect(expires).toBeLessThan(Date.now() + 86_500_000);
    });

    it('retires the old secret at once with overlap_seconds 0', async () => {
      const endpoint = await create();
      const rotated = await api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { overlap_seconds: 0 });
      expect(rotated.status).toBe(200);
      const before = receiver.received.length;
      await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`);
      const delivery = receiver.since(before);
      expect(v1Count(delivery)).toBe(1);
      expect(() => verify(delivery, rotated.body.secret)).not.toThrow();
      expect(() => verify(delivery, endpoint.secret)).toThrow(Stripe.errors.StripeSignatureVerificationError);
    });

    it('refuses an overlap beyond a week with 422', async () => {
      const endpoint = await create();
      const res = await api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { overlap_seconds: 604_801 });
      expect(res.status).toBe(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['overlap_seconds']);
    });
  });

  describe('deliveries and deletion', () => {
    it('lists delivery attempts as a list envelope', async () => {
      const endpoint = await create();
      const res = await api.get(`/v1/webhook_endpoints/${endpoint.id}/deliveries?limit=5`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ object: 'list', data: expect.any(Array), has_more: expect.any(Boolean) });
    });

    it('lists test deliveries in the history marked as tests; 20 failed tests do not disable the endpoint', async () => {
      const endpoint = await create();
      const ok = await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`);
      expect(ok.body).toEqual({ delivered: true, response_code: 200 });
      const [tested] = (await api.get(`/v1/webhook_endpoints/${endpoint.id}/deliveries`)).body.data;
      expect(tested).toEqual({
        id: expect.any(String),
        object: 'webhook_delivery',
        event_id: expect.stringMatching(/^evt_/),
        event_type: 'webhook_endpoint.test',
        attempt: 1,
        status_code: 200,
        error: null,
        duration_ms: expect.any(Number),
        succeeded: true,
        created_at: expect.any(String),
        next_attempt_at: null,
        test: true,
        outcome: 'succeeded',
      });

      receiver.status = 503;
      for (let i = 0; i < 20; i++) expect((await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`)).body.delivered).toBe(false);
      const after = await api.get(`/v1/webhook_endpoints/${endpoint.id}`);
      expect(after.body).toMatchObject({ enabled: true, disabled_reason: null });
      const history = (await api.get(`/v1/webhook_endpoints/${endpoint.id}/deliveries?limit=100`)).body.data;
      expect(history).toHaveLength(21);
      expect(history.every((d: { test: boolean }) => d.test)).toBe(true);
      expect(history.filter((d: { status_code: number }) => d.status_code === 503)).toHaveLength(20);
    });

    it('deletes an endpoint: {id, object, deleted}, then 404 and gone from the list, its history still readable', async () => {
      const endpoint = await create();
      expect((await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`)).body.delivered).toBe(true);
      const res = await api.delete(`/v1/webhook_endpoints/${endpoint.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: endpoint.id, object: 'webhook_endpoint', deleted: true });
      const after = await api.get(`/v1/webhook_endpoints/${endpoint.id}`);
      expect(after.status).toBe(404);
      expect(after.body.code).toBe('not_found');
      const listed = (await api.get('/v1/webhook_endpoints?limit=100')).body.data.map((e: { id: string }) => e.id);
      expect(listed).not.toContain(endpoint.id);
      const history = await api.get(`/v1/webhook_endpoints/${endpoint.id}/deliveries`);
      expect(history.status).toBe(200);
      expect(history.body.data).toMatchObject([{ test: true, outcome: 'succeeded' }]);
      expect((await api.delete(`/v1/webhook_endpoints/${endpoint.id}`)).status).toBe(404);
    });
  });
});
