import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { ApiClient, RunningPlatform } from '@parley/testing';

const KEY = 'vsk_calls_owner_key_00000001';
const OTHER = 'vsk_calls_other_key_00000001';
const stripe = new Stripe('sk_test_unused');

describe('calls: records, state machine, limits and call events to webhooks', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  let receiver: Server;
  const received: { body: string; signature: string }[] = [];
  let secret: string;
  let agentId: string;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ body, signature: String(req.headers['service-signature']) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`, `globex:owner:${OTHER}`],
      env: { EGRESS_ALLOWLIST: '127.0.0.1', MAX_CONCURRENT_CALLS: '3', CALL_STUCK_SECONDS: '10' },
    });
    api = platform.api(KEY);
    const endpoint = await api.post('/v1/webhook_endpoints', {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      events: ['call.*'],
    });
    secret = endpoint.body.secret;
    agentId = (await api.post('/v1/agents', { name: 'Caller', languages: [{ code: 'en' }] })).body.id;
  });

  afterAll(async () => {
    await platform?.stop();
    await new Promise((r) => receiver.close(r));
  });

  const events = (callId: string) =>
    received.map((r) => ({ ...r, event: JSON.parse(r.body) })).filter((r) => r.event.call_id === callId);

  async function waitFor<T>(check: () => T | undefined, ms = 20_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = check();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('starts a call queued, dials once for a retried request, and ends it with a signed call.ended webhook', async () => {
    const body = { agent_id: agentId, to: '+15550100000', variables: { name: 'Ada' }, metadata: { crm: '42' } };
    const first = await api.post('/v1/calls', body, { 'idempotency-key': 'dial-once' });
    const retry = await api.post('/v1/calls', body, { 'idempotency-key': 'dial-once' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ object: 'call', status: 'queued', direction: 'outbound', to: '+15550100000', variables: { name: 'Ada' } });
    expect(first.body.id).toMatch(/^call_/);
    expect(retry.body.id).toBe(first.body.id);
    expect((await api.get(`/v1/calls?agent_id=${agentId}&limit=100`)).body.data.filter((c: { id: string }) => c.id === first.body.id)).toHaveLength(1);

    const ended = await api.post(`/v1/calls/${first.body.id}/end`);
    expect(ended.body).toMatchObject({ status: 'ended', end_reason: 'canceled', duration_seconds: 0 });
    const again = await api.post(`/v1/calls/${first.body.id}/end`);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');

    const delivered = await waitFor(() => events(first.body.id).find((e) => e.event.type === 'call.ended'));
    expect(delivered.event.data).toEqual({ duration_seconds: 0, turns: 0, end_reason: 'canceled' });
    expect(delivered.event).not.toHaveProperty('data.summary');
    expect(() => stripe.webhooks.constructEvent(delivered.body, delivered.signature, secret, 300)).not.toThrow();
  });

  it('records nobody answering as no_answer', async () => {
    const call = (await api.post('/v1/calls', { agent_id: agentId, to: '+15550100001' })).body;
    const given = await api.post(`/v1/calls/${call.id}/give-up`);
    expect(given.body).toMatchObject({ status: 'ended', end_reason: 'no_answer' });
  });

  it('refuses invalid numbers, unknown agents and other accounts’ calls', async () => {
    const bad = await api.post('/v1/calls', { agent_id: agentId, to: '555-0100' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toEqual(['to']);
    const noAgent = await api.post('/v1/calls', { agent_id: 'agt_missing', to: '+15550100000' });
    expect(noAgent.status).toBe(422);
    expect(noAgent.body.errors[0].field).toBe('agent_id');
    const mine = (await api.post('/v1/calls', { agent_id: agentId, to: '+15550100002' })).body;
    expect((await platform.api(OTHER).get(`/v1/calls/${mine.id}`)).status).toBe(404);
    expect((await platform.api(OTHER).post(`/v1/calls/${mine.id}/end`)).status).toBe(404);
    await api.post(`/v1/calls/${mine.id}/end`);
  });

  it('filters the list by status and refuses a bad filter', async () => {
    const ended = await api.get('/v1/calls?status=ended');
    expect(ended.body.data.every((c: { status: string }) => c.status === 'ended')).toBe(true);
    expect((await api.get('/v1/calls?status=dancing')).status).toBe(400);
  });

  it('answers 402 plan_limit_reached above the concurrent-call ceiling', async () => {
    const live = [];
    for (let i = 0; i < 3; i++) live.push((await api.post('/v1/calls', { agent_id: agentId, to: '+15550100010' })).body);
    const over = await api.post('/v1/calls', { agent_id: agentId, to: '+15550100010' });
    expect(over.status).toBe(402);
    expect(over.body.code).toBe('plan_limit_reached');
    for (const c of live.slice(1)) await api.post(`/v1/calls/${c.id}/end`);

    // The one left alone never gets media: it fails with a reason instead of staying live forever.
    const stuck = live[0];
    const deadline = Date.now() + 25_000;
    let status = '';
    while (Date.now() < deadline && status !== 'failed') {
      status = (await api.get(`/v1/calls/${stuck.id}`)).body.status;
      if (status !== 'failed') await new Promise((r) => setTimeout(r, 500));
    }
    const record = (await api.get(`/v1/calls/${stuck.id}`)).body;
    expect(record).toMatchObject({ status: 'failed', end_reason: 'no_media' });
    const types = await waitFor(() => {
      const t = events(stuck.id).map((e) => e.event.type);
      return t.includes('call.failed') && t.includes('call.ended') ? t : undefined;
    });
    expect(types.sort()).toEqual(['call.ended', 'call.failed']);
  }, 60_000);
});
