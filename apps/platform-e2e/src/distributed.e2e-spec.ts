import { RunningPlatform } from '@parley/testing';

const KEY = 'vsk_e2e_distributed_key_000001';
const RPC_TIMEOUT_MS = 1500;

// Distributed mode needs a real NATS; CI always has one.
const describeWithNats = process.env['NATS_URL'] ? describe : describe.skip;

describeWithNats('distributed platform: one process per service', () => {
  let platform: RunningPlatform;

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      mode: 'distributed',
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: { RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS) },
    });
  });

  afterAll(() => platform?.stop());

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
