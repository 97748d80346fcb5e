import { createServer, request, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { FakeTwilioServer } from '@parley/carrier-twilio';
import { RunningPlatform } from '@parley/testing';

const KEY = 'vsk_e2e_idempotency_key_0000001';
const RPC_TIMEOUT_MS = 1500;

// Distributed mode needs a real NATS; CI always has one.
const describeWithNats = process.env['NATS_URL'] ? describe : describe.skip;

/**
 * Between the calls service and the fake Twilio: while `freezeOnDial` is set, a dial request stops the calls
 * service's process (SIGSTOP) past the gateway's deadline before it is passed on, as a long pause of that process
 * would. The call is already recorded; its answer reaches the gateway too late.
 */
class FreezingCarrierProxy {
  freezeOnDial: (() => number | undefined) | undefined;
  private readonly server: Server;

  constructor(private readonly target: string) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const pid = req.method === 'POST' && /\/Calls\.json$/.test(req.url ?? '') ? this.freezeOnDial?.() : undefined;
        if (pid) {
          this.freezeOnDial = undefined;
          process.kill(pid, 'SIGSTOP');
          await new Promise((r) => setTimeout(r, RPC_TIMEOUT_MS + 1000));
          process.kill(pid, 'SIGCONT');
        }
        const upstream = request(`${this.target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        upstream.end(Buffer.concat(chunks));
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describeWithNats('Idempotency-Key on the distributed platform: a request that may have taken effect never runs twice', () => {
  let platform: RunningPlatform;
  const twilio = new FakeTwilioServer();
  let proxy: FreezingCarrierProxy;

  beforeAll(async () => {
    proxy = new FreezingCarrierProxy(await twilio.start());
    platform = await RunningPlatform.start({
      mode: 'distributed',
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS),
        ...(await twilio.platformEnv()),
        TWILIO_API_BASE_URL: await proxy.start(),
      },
    });
    // The gateway is ready before the services behind it have migrated their schemas.
    const api = platform.api(KEY);
    const until = Date.now() + 30_000;
    while ((await api.get('/v1/agents')).status !== 200 || (await api.get('/v1/calls')).status !== 200) {
      if (Date.now() > until) throw new Error('the agents and calls services did not come up');
      await new Promise((r) => setTimeout(r, 200));
    }
  });

  afterAll(async () => {
    await platform?.stop();
    await proxy?.stop();
    await twilio.stop();
  });

  it('answers a retry of an agent create whose deadline passed while the agents service still committed with 409, never a second agent', async () => {
    const api = platform.api(KEY);
    const db = new Client({ connectionString: platform.databaseUrl });
    await db.connect();
    const body = { name: `late-${Date.now()}`, languages: [{ code: 'en' }] };
    const named = async () => (await api.get('/v1/agents?limit=100')).body.data.filter((a: { name: string }) => a.name === body.name).length;
    try {
      // The agents service's insert waits behind this lock past the gateway's deadline, then commits.
      await db.query('BEGIN');
      await db.query('LOCK TABLE agents.agents IN EXCLUSIVE MODE');
      const first = await api.post('/v1/agents', body, { 'idempotency-key': body.name });
      const during = await api.post('/v1/agents', body, { 'idempotency-key': body.name });
      await db.query('COMMIT');

      expect(first.status).toBe(503);
      const deadline = Date.now() + 10_000;
      while ((await named()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const after = await api.post('/v1/agents', body, { 'idempotency-key': body.name });

      expect(await named()).toBe(1);
      for (const retry of [during, after]) {
        expect(retry.status).toBe(409);
        expect(retry.body).toMatchObject({ code: 'idempotency_conflict', detail: expect.stringMatching(/interrupted/) });
      }
    } finally {
      await db.end();
    }
  });

  it('answers 409 to every retry while the first create is held in flight, then replays it: one agent', async () => {
    const api = platform.api(KEY);
    const db = new Client({ connectionString: platform.databaseUrl });
    await db.connect();
    const body = { name: `held-${Date.now()}`, languages: [{ code: 'en' }] };
    try {
      // The first create waits behind this lock (well within its deadline) while the retries arrive.
      await db.query('BEGIN');
      await db.query('LOCK TABLE agents.agents IN EXCLUSIVE MODE');
      const first = api.post('/v1/agents', body, { 'idempotency-key': body.name });
      await new Promise((r) => setTimeout(r, 300));
      const during = await Promise.all(Array.from({ length: 6 }, () => api.post('/v1/agents', body, { 'idempotency-key': body.name })));
      await db.query('COMMIT');
      const created = await first;
      const after = await api.post('/v1/agents', body, { 'idempotency-key': body.name });

      expect(created.status).toBe(201);
      for (const retry of during) {
        expect(retry.status).toBe(409);
        expect(retry.body).toMatchObject({ code: 'idempotency_conflict', detail: expect.stringMatching(/still running/) });
      }
      expect(after.status).toBe(201);
      expect(after.headers.get('idempotency-replayed')).toBe('true');
      expect(after.body).toEqual(created.body);
      expect((await api.get('/v1/agents?limit=100')).body.data.filter((a: { name: string }) => a.name === body.name)).toHaveLength(1);
    } finally {
      await db.end();
    }
  });

  it('keeps the key of a request whose gateway was killed (SIGKILL) mid-request held: the retry on the restarted gateway is 409, one agent', async () => {
    const api = platform.api(KEY);
    const db = new Client({ connectionString: platform.databaseUrl });
    await db.connect();
    const body = { name: `orphan-${Date.now()}`, languages: [{ code: 'en' }] };
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE agents.agents IN EXCLUSIVE MODE');
      const lost = api.post('/v1/agents', body, { 'idempotency-key': body.name }).then(
        () => 'answered',
        () => 'cut off',
      );
      await new Promise((r) => setTimeout(r, 300));
      await platform.kill('gateway');
      expect(await lost).toBe('cut off');
      // The agents service still holds the create and commits it once the lock goes.
      await db.query('COMMIT');
      platform.restart('gateway');
      await platform.waitReady();

      const retry = await api.post('/v1/agents', body, { 'idempotency-key': body.name });
      expect(retry.status).toBe(409);
      expect(retry.body).toMatchObject({ code: 'idempotency_conflict', detail: expect.stringMatching(/still running/) });
      const named = async () => (await api.get('/v1/agents?limit=100')).body.data.filter((a: { name: string }) => a.name === body.name).length;
      const deadline = Date.now() + 10_000;
      while ((await named()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await named()).toBe(1);
    } finally {
      await db.end();
    }
  }, 60_000);

  it('answers a retry of a call create whose answer was lost (calls service frozen after dialling) with the same call, dialled once', async () => {
    const api = platform.api(KEY);
    const agent = (await api.post('/v1/agents', { name: 'Dialler', languages: [{ code: 'en' }] })).body;
    const body = { agent_id: agent.id, to: '+15550100077' };
    proxy.freezeOnDial = () => platform.processId('calls');

    const first = await api.post('/v1/calls', body, { 'idempotency-key': 'frozen-dial' });
    expect(first.status).toBe(503);
    expect(first.body.detail).toMatch(/may have been placed/);
    // The frozen process wakes once the gateway has given up; its call is recorded and dialled.
    await new Promise((r) => setTimeout(r, 1500));
    const retry = await api.post('/v1/calls', body, { 'idempotency-key': 'frozen-dial' });

    expect(retry.status).toBe(201);
    const calls = (await api.get(`/v1/calls?limit=100`)).body.data.filter((c: { to: string }) => c.to === body.to);
    expect(calls.map((c: { id: string }) => c.id)).toEqual([retry.body.id]);
    expect(twilio.calls.filter((c) => c.action === 'create' && c.form['To'] === body.to)).toHaveLength(1);
  });
});
