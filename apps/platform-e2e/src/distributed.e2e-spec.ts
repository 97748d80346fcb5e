import { mulawToPcm16, pcm16ToMulaw, rms } from '@parley/audio';
import { FakeTwilioServer } from '@parley/carrier-twilio';
import { RealtimeServerMessage } from '@parley/contracts';
import { ApiClient, EventStreamClient, RunningPlatform } from '@parley/testing';
import { RealtimeTestClient } from './support/realtime-client';
import { until } from './support/until';

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
        ...(await twilio.platformEnv()),
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
    const place = () => api.post('/v1/calls', { agent_id: agent.id, to: '+15550100000' });
    let created = await place();
    // A 503 that promises nothing was dialled (retry_after_seconds: admission, on a platform just started) is retried
    // once after the time it names, as the API asks of clients.
    if (created.status === 503 && created.body.retry_after_seconds) {
      await new Promise((r) => setTimeout(r, created.body.retry_after_seconds * 1000));
      created = await place();
    }
    const call = created.body;
    expect(call).toMatchObject({ status: 'queued' });
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

  describe('with a second gateway and a second media worker (replicas behind load balancers)', () => {
    let gateway2: ApiClient;
    let worker2: string;

    beforeAll(async () => {
      const [gateway, worker] = await Promise.all([platform.addReplica('gateway'), platform.addReplica('media-worker')]);
      gateway2 = new ApiClient(gateway.url, KEY);
      worker2 = worker.url;
    });

    const peers = (client: RealtimeTestClient) => client.received.filter((m): m is Extract<RealtimeServerMessage, { type: 'peer' }> => m.type === 'peer');
    const signals = (client: RealtimeTestClient) => client.received.filter((m) => m.type === 'signal');

    it('pairs a rendezvous whose two seats reach two media workers through two gateways', async () => {
      const api = platform.api(KEY);
      const agent = (await api.post('/v1/agents', { name: 'Meet', mode: 'webrtc', languages: [{ code: 'en' }] })).body;
      const call = (await api.post('/v1/calls/rendezvous', { agent_id: agent.id })).body;
      const a = (await api.post(`/v1/calls/${call.id}/seat`, { seat: 'a' })).body;
      const b = (await gateway2.post(`/v1/calls/${call.id}/seat`, { seat: 'b' })).body;
      const seatA = new RealtimeTestClient(`${platform.mediaUrl}/realtime`);
      const seatB = new RealtimeTestClient(`${worker2}/realtime`);
      await seatA.start(a.token, call.id);
      await until(async () => (await api.get(`/v1/calls/${call.id}`)).body.status === 'ringing', 'the first seat to ring', 10_000);
      await seatB.start(b.token, call.id);

      await until(() => peers(seatA).length > 0 && peers(seatB).length > 0, 'the seats to meet across workers', 10_000);
      expect(peers(seatA)[0]).toMatchObject({ state: 'joined', seat: 'b' });
      expect(peers(seatB)[0]).toMatchObject({ state: 'joined', seat: 'a' });
      expect([peers(seatA)[0].offer, peers(seatB)[0].offer].filter(Boolean)).toHaveLength(1);
      await until(async () => (await api.get(`/v1/calls/${call.id}`)).body.status === 'in_progress', 'the call to be answered', 10_000);

      seatA.send({ type: 'signal', data: { sdp: { type: 'offer', sdp: 'v=0' } } });
      seatB.send({ type: 'signal', data: { candidate: null } });
      await until(() => signals(seatA).length > 0 && signals(seatB).length > 0, 'the signals to cross', 10_000);
      expect(signals(seatB)).toEqual([{ type: 'signal', data: { sdp: { type: 'offer', sdp: 'v=0' } } }]);

      seatB.send({ type: 'hangup' });
      expect((await seatA.closed).code).toBe(1000);
      expect(seatA.received.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
      await until(async () => (await api.get(`/v1/calls/${call.id}`)).body.status === 'ended', 'the call to end', 10_000);
      expect((await api.get(`/v1/calls/${call.id}`)).body.end_reason).toBe('completed');
    }, 60_000);

    it('lets an operator on the other gateway and media worker claim a phone call ringing on the first, once, and talk with the caller', async () => {
      const api = platform.api(KEY);
      const agent = (await api.post('/v1/agents', { name: 'Front desk', autonomy: 'simple', ring_seconds: 30, languages: [{ code: 'en' }] })).body;
      const inbound = await twilio.placeInboundCall({
        voiceUrl: `${platform.baseUrl}/carriers/twilio/voice/${agent.id}`,
        from: '+15550166666',
        to: '+15550009999',
        statusCallbackUrl: `${platform.baseUrl}/carriers/twilio/status`,
      });
      const caller = await twilio.connectMediaStream(inbound.sid);
      // The caller hears ringback from the first worker, not an agent.
      await until(() => caller.receivedFrames >= 25, 'ringback', 10_000);
      expect(rms(mulawToPcm16(caller.receivedAudio()))).toBeGreaterThan(1000);

      const console2 = (await gateway2.post('/v1/realtime/tokens', { role: 'console', operator: 'alice' })).body;
      const ringing = await until(async () => {
        const listed = await new ApiClient(gateway2.baseUrl, console2.token).get('/v1/calls/ringing');
        return listed.body.data?.find((c: { carrier_call_id: string }) => c.carrier_call_id === inbound.sid);
      }, 'the call on the other gateway’s ringing list', 10_000);
      expect(ringing).toMatchObject({ status: 'ringing', claimable: true, claimed_by: null });

      // Two operators claim at the same moment through the two gateways: the database decides, once.
      const claims = await Promise.all([
        api.post(`/v1/calls/${ringing.id}/claim`, { operator: 'bob' }),
        new ApiClient(gateway2.baseUrl, console2.token).post(`/v1/calls/${ringing.id}/claim`, {}),
      ]);
      expect(claims.map((c) => c.status).sort()).toEqual([201, 409]);
      const won = claims.find((c) => c.status === 201)?.body;
      expect(won).toMatchObject({ role: 'operator', call_id: ringing.id, call: { status: 'in_progress' } });

      const operator = new RealtimeTestClient(`${worker2}/realtime`);
      await operator.start(won.token, ringing.id);
      await until(() => operator.received.some((m) => m.type === 'call-start'), 'the operator to join', 10_000);
      const before = caller.receivedFrames;
      await operator.speak('Front desk, how can I help?');
      await until(() => caller.receivedFrames > before + 40, 'the operator’s voice at the caller', 10_000);
      expect(rms(mulawToPcm16(caller.receivedAudio().subarray(before * 160)))).toBeGreaterThan(300);

      const tone = pcm16ToMulaw(Int16Array.from({ length: 8000 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000))));
      await caller.sendAudio(tone, { paced: true });
      await until(() => operator.agentPeak > 4000, 'the caller’s voice at the operator', 10_000);

      operator.send({ type: 'hangup' });
      await caller.closed;
      await until(async () => (await api.get(`/v1/calls/${ringing.id}`)).body.status === 'ended', 'the call to end', 10_000);
      expect((await api.get(`/v1/calls/${ringing.id}`)).body).toMatchObject({ end_reason: 'completed', claimed_by: won.call.claimed_by });
    }, 60_000);
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
