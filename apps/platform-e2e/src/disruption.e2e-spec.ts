import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { FakeTwilioServer } from '@parley/carrier-twilio';
import { DisposableNatsServer, DisposablePostgres, EventStreamClient, eventually, RunningPlatform } from '@parley/testing';

const KEY = 'vsk_e2e_disruption_key_000001';
const MEDIA_LOST_SECONDS = 15;
const CARRIER_RECONCILE_SECONDS = 5;
/** The calls service's reaper and reconciler each look every 5 s. */
const PASS_SECONDS = 5;
/** The media worker's drain: calls run on for CALL_DRAIN_SECONDS, then are ended within SHUTDOWN_GRACE_MS. */
const CALL_DRAIN_SECONDS = 1;
const SHUTDOWN_GRACE_MS = 4_000;

/**
 * The distributed platform under the failures seen in production — a media worker killed, NATS restarted,
 * PostgreSQL down, a carrier callback refused — each injected for real: the services are processes of their own,
 * and NATS and PostgreSQL are servers of this test's own (never the machine's shared ones), killed and restarted.
 */
describe('distributed platform under disruption (own NATS and PostgreSQL)', () => {
  let nats: DisposableNatsServer;
  let pg: DisposablePostgres;
  let platform: RunningPlatform;
  const twilio = new FakeTwilioServer();
  /** Every webhook delivery the account's endpoint received (retries included). */
  const delivered: { id: string; type: string; call_id: string; data: Record<string, unknown> }[] = [];
  const receiver: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      delivered.push(JSON.parse(body));
      res.writeHead(200).end();
    });
  });

  beforeAll(async () => {
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    [nats, pg] = await Promise.all([DisposableNatsServer.start(), DisposablePostgres.start()]);
    platform = await RunningPlatform.start({
      mode: 'distributed',
      natsUrl: nats.url,
      databaseServerUrl: pg.url,
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        RPC_TIMEOUT_MS: '1500',
        CALL_DRAIN_SECONDS: String(CALL_DRAIN_SECONDS),
        SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
        EGRESS_ALLOWLIST: '127.0.0.1',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        MEDIA_LOST_SECONDS: String(MEDIA_LOST_SECONDS),
        CARRIER_RECONCILE_SECONDS: String(CARRIER_RECONCILE_SECONDS),
        ...(await twilio.platformEnv()),
      },
    });
    const endpoint = await api().post('/v1/webhook_endpoints', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, events: ['call.*'] });
    expect(endpoint.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await twilio.stop();
    await new Promise((r) => receiver.close(r));
    await nats?.stop();
    await pg?.stop();
  }, 60_000);

  const api = () => platform.api(KEY);
  const greeter = async () =>
    (await api().post('/v1/agents', { name: 'Front desk', languages: [{ code: 'en', greeting: 'Hello, this is the front desk.' }] })).body as { id: string };
  const getCall = async (id: string) =>
    (await api().get(`/v1/calls/${id}`)).body as { status: string; end_reason: string; failure_reason: string; recording_available: boolean };

  /** Calls answered on the media worker, each with its agent speaking on a live stream. */
  async function liveCalls(count: number, agent: { id: string }) {
    const calls: { id: string; carrier_call_id: string }[] = [];
    for (let i = 0; i < count; i++) calls.push((await api().post('/v1/calls', { agent_id: agent.id, to: `+1555010${String(100 + i)}0` })).body);
    const streams = await Promise.all(calls.map((c) => twilio.connectMediaStream(c.carrier_call_id)));
    await eventually(async () => (streams.every((m) => m.receivedFrames > 25) ? true : undefined), 20_000, 'every agent to speak');
    for (const call of calls) expect((await getCall(call.id)).status).toBe('in_progress');
    return { calls, streams };
  }

  /** The call's `call.ended` deliveries, once the first arrived and a moment passed for any other. */
  async function endedEvents(callId: string) {
    const ended = () => delivered.filter((e) => e.call_id === callId && e.type === 'call.ended');
    await eventually(async () => (ended().length > 0 ? true : undefined), 20_000, `call.ended of ${callId}`);
    await new Promise((r) => setTimeout(r, 1_000));
    return ended();
  }

  it('fails every call of a media worker killed mid-call as media_lost within MEDIA_LOST_SECONDS + 15 s, with one call.ended each, and hangs the carrier legs up', async () => {
    const { calls, streams } = await liveCalls(2, await greeter());

    await platform.kill('media-worker');
    const killedAt = Date.now();
    // The last heartbeat was at most 10 s before the kill: the bound is MEDIA_LOST_SECONDS + a pass after it.
    const bound = (MEDIA_LOST_SECONDS + PASS_SECONDS + 15) * 1000;
    for (const call of calls) {
      const failed = await eventually(async () => {
        const c = await getCall(call.id);
        return c.status === 'failed' ? c : undefined;
      }, bound, 'the call to fail');
      expect(failed).toMatchObject({ status: 'failed', end_reason: 'media_lost', failure_reason: expect.stringContaining('media worker') });
    }
    expect(Date.now() - killedAt).toBeLessThan(bound);
    for (const call of calls) {
      const ended = await endedEvents(call.id);
      expect(new Set(ended.map((e) => e.id)).size).toBe(1);
      expect(ended[0].data).toMatchObject({ end_reason: 'media_lost' });
      await eventually(
        async () => (twilio.calls.some((c) => c.action === 'update' && c.callSid === call.carrier_call_id && c.form['Status'] === 'completed') ? true : undefined),
        5_000,
        'the carrier leg to be hung up',
      );
    }
    expect(streams.every((m) => !m.open)).toBe(true);

    platform.restart('media-worker');
    await platform.waitReady();
  }, 90_000);

  it('drains a SIGTERMed media worker: every live call ends with reason shutdown and its recording is stored before the process exits', async () => {
    const agent = (await api().post('/v1/agents', { name: 'Recorded desk', record_calls: true, languages: [{ code: 'en', greeting: 'Hello, this call is recorded.' }] })).body;
    const { calls, streams } = await liveCalls(2, agent);

    const { code, ms } = await platform.terminate('media-worker');

    expect(code).toBe(0);
    expect(ms).toBeLessThan(CALL_DRAIN_SECONDS * 1000 + SHUTDOWN_GRACE_MS);
    // Read right after the exit: what the worker did, it did before exiting.
    for (const call of calls) {
      expect(await getCall(call.id)).toMatchObject({ status: 'ended', end_reason: 'shutdown', recording_available: true });
      const recording = await api().get(`/v1/calls/${call.id}/recording`);
      expect(recording.status).toBe(200);
    }
    await Promise.all(streams.map((m) => m.closed));
    expect(platform.output('media-worker')).not.toContain('drain incomplete');
    for (const call of calls) {
      const ended = await endedEvents(call.id);
      expect(new Set(ended.map((e) => e.id)).size).toBe(1);
      expect(ended[0].data).toMatchObject({ end_reason: 'shutdown' });
      await eventually(async () => (delivered.some((e) => e.call_id === call.id && e.type === 'call.recording.ready') ? true : undefined), 10_000, 'call.recording.ready');
    }

    platform.restart('media-worker');
    await platform.waitReady();
  }, 60_000);

  it('says which calls a SIGTERMed media worker could not end nor store the recording of, when the calls service is gone, and exits in time', async () => {
    const agent = (await api().post('/v1/agents', { name: 'Recorded desk', record_calls: true, languages: [{ code: 'en', greeting: 'Hello, this call is recorded.' }] })).body;
    const { calls } = await liveCalls(2, agent);
    await platform.kill('calls');

    const { code, ms } = await platform.terminate('media-worker');

    expect(code).toBe(0);
    expect(ms).toBeLessThan(CALL_DRAIN_SECONDS * 1000 + SHUTDOWN_GRACE_MS);
    const report = platform
      .output('media-worker')
      .split('\n')
      .filter((line) => line.includes('drain incomplete'))
      .map((line) => JSON.parse(line) as { calls: number; notEnded: string[]; recordingsNotStored: string[] });
    const ids = calls.map((c) => c.id).sort();
    expect(report).toEqual([expect.objectContaining({ calls: 2, notEnded: expect.arrayContaining(ids), recordingsNotStored: expect.arrayContaining(ids) })]);

    // Left live, they are failed media_lost by the reaper once the calls service is back.
    platform.restart('calls');
    platform.restart('media-worker');
    await platform.waitReady();
    for (const call of calls) {
      await eventually(async () => ((await getCall(call.id)).end_reason === 'media_lost' ? true : undefined), (MEDIA_LOST_SECONDS + PASS_SECONDS + 15) * 1000, 'media_lost');
      expect(new Set((await endedEvents(call.id)).map((e) => e.id)).size).toBe(1);
    }
  }, 90_000);

  it('speaks to a caller who is answered while NATS is down, ends that call cleanly after the restart, and carries new calls', async () => {
    const agent = await greeter();
    const call = (await api().post('/v1/calls', { agent_id: agent.id, to: '+15550100002' })).body;

    await nats.kill();
    const media = await twilio.connectMediaStream(call.carrier_call_id);
    await eventually(async () => (media.receivedFrames > 25 ? true : undefined), 20_000, 'the greeting while NATS is down');
    await nats.restart();
    await platform.waitReady();

    media.stop();
    await eventually(async () => ((await getCall(call.id)).status === 'ended' ? true : undefined), 15_000, 'the call to end');
    expect(await getCall(call.id)).toMatchObject({ status: 'ended', end_reason: 'completed' });

    // A call after the restart: its live events travel over the reconnected bus, its agent speaks.
    const next = (await api().post('/v1/calls', { agent_id: agent.id, to: '+15550100006' })).body;
    const stream = await EventStreamClient.open(`${platform.baseUrl}/v1/calls/${next.id}/events`, KEY);
    const nextMedia = await twilio.connectMediaStream(next.carrier_call_id);
    await stream.waitFor((e) => e.event === 'call.started', 15_000);
    await eventually(async () => (nextMedia.receivedFrames > 25 ? true : undefined), 15_000, 'the greeting after the restart');
    nextMedia.stop();
    await stream.waitFor((e) => e.data.status === 'ended', 15_000);
  }, 60_000);

  it('answers 503 service_unavailable with Retry-After, not 500, while PostgreSQL is down, and serves again once it is back', async () => {
    const agent = await greeter();
    await pg.shutdown();
    try {
      for (const res of [
        await api().post('/v1/calls', { agent_id: agent.id, to: '+15550100003' }),
        await api().get('/v1/agents'),
        await api().get('/v1/calls'),
      ]) {
        expect(res.status).toBe(503);
        expect(res.body.code).toBe('service_unavailable');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    } finally {
      await pg.restart();
    }
    const placed = await eventually(async () => {
      const res = await api().post('/v1/calls', { agent_id: agent.id, to: '+15550100004' });
      return res.status === 201 ? res.body : undefined;
    }, 30_000, 'calls to be placed again');
    expect(placed.status).toBe('queued');
  }, 60_000);

  it('reconciles a call whose status callback the platform refused, from the carrier’s REST API', async () => {
    const agent = await greeter();
    const call = (await api().post('/v1/calls', { agent_id: agent.id, to: '+15550100005' })).body;
    expect(await twilio.sendStatusCallback(call.carrier_call_id, 'ringing')).toBe(204);

    await platform.kill('gateway');
    await expect(twilio.sendStatusCallback(call.carrier_call_id, 'no-answer')).rejects.toThrow(); // refused: nobody listens
    platform.restart('gateway');
    await platform.waitReady();

    const ended = await eventually(async () => {
      const c = await getCall(call.id);
      return c.status === 'ended' ? c : undefined;
    }, (CARRIER_RECONCILE_SECONDS + PASS_SECONDS + 15) * 1000, 'the reconciled outcome');
    expect(ended).toMatchObject({ status: 'ended', end_reason: 'no_answer' });
    expect(twilio.calls.some((c) => c.action === 'fetch' && c.callSid === call.carrier_call_id)).toBe(true);
  }, 60_000);
});
