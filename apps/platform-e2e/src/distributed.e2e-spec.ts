import { FakeTwilioServer } from '@parley/carrier-twilio';
import { EventStreamClient, RunningPlatform } from '@parley/testing';

const KEY = 'vsk_e2e_distributed_key_000001';
const RPC_TIMEOUT_MS = 1500;

// Distributed mode needs a real NATS; CI always has one.
const describeWithNats = process.env['NATS_URL'] ? describe : describe.skip;

describeWithNats('distributed platform: one process per service', () => {
  let platform: RunningPlatform;
  const twilio = new FakeTwilioServer();

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      mode: 'distributed',
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS),
        TWILIO_ACCOUNT_SID: twilio.accountSid,
        TWILIO_AUTH_TOKEN: twilio.authToken,
        TWILIO_API_BASE_URL: await twilio.start(),
        TWILIO_FROM_NUMBER: '+15550009999',
      },
    });
  });

  afterAll(async () => {
    await platform?.stop();
    await twilio.stop();
  });

  it('carries a call across processes: dial, carrier callbacks, media stream, live event stream over NATS', async () => {
    const api = platform.api(KEY);
    const agent = (await api.post('/v1/agents', { name: 'Dialler', languages: [{ code: 'en' }] })).body;
    const call = (await api.post('/v1/calls', { agent_id: agent.id, to: '+15550100000' })).body;
    expect(call.status).toBe('queued');
    const stream = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/${call.id}/events`, KEY);
    await stream.waitFor((e) => e.data.status === 'queued');
    expect(await twilio.sendStatusCallback(call.carrier_call_id, 'ringing')).toBe(204);
    const media = await twilio.connectMediaStream(call.carrier_call_id);
    await stream.waitFor((e) => e.event === 'call.started');
    media.stop();
    await stream.ended;
    expect(stream.events.filter((e) => e.event === 'call.status').map((e) => e.data.status)).toEqual(['queued', 'ringing', 'in_progress', 'ended']);
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'completed' });
  });

  it('serves agents through gateway → gRPC → agents service → PostgreSQL', async () => {
    const api = platform.api(KEY);
    const created = await api.post('/v1/agents', { name: 'Distributed', languages: [{ code: 'en' }] });
    expect(created.status).toBe(201);
    expect((await api.get(`/v1/agents/${created.body.id}`)).body.name).toBe('Distributed');
  });

  it('answers 503 problem+json within the RPC timeout while the agents service is down, and recovers', async () => {
    const api = platform.api(KEY);
    await platform.kill('agents');
    const started = Date.now();
    const down = await api.get('/v1/agents');
    expect(Date.now() - started).toBeLessThan(RPC_TIMEOUT_MS + 1000);
    expect(down.status).toBe(503);
    expect(down.headers.get('content-type')).toContain('application/problem+json');
    expect(down.body.code).toBe('service_unavailable');

    platform.restart('agents');
    const deadline = Date.now() + 30_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = (await api.get('/v1/agents')).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
  });
});
