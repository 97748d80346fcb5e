import { FakeTwilioServer } from '@parley/carrier-twilio';
import { DisposableNatsServer, DisposablePostgres, EventStreamClient, RunningPlatform } from '@parley/testing';

const KEY = 'vsk_e2e_disruption_key_000001';
const MEDIA_LOST_SECONDS = 15;
const CARRIER_RECONCILE_SECONDS = 5;
/** The calls service's reaper and reconciler each look every 5 s. */
const PASS_SECONDS = 5;

async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

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

  beforeAll(async () => {
    [nats, pg] = await Promise.all([DisposableNatsServer.start(), DisposablePostgres.start()]);
    platform = await RunningPlatform.start({
      mode: 'distributed',
      natsUrl: nats.url,
      databaseServerUrl: pg.url,
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        RPC_TIMEOUT_MS: '1500',
        MEDIA_LOST_SECONDS: String(MEDIA_LOST_SECONDS),
        CARRIER_RECONCILE_SECONDS: String(CARRIER_RECONCILE_SECONDS),
        TWILIO_ACCOUNT_SID: twilio.accountSid,
        TWILIO_AUTH_TOKEN: twilio.authToken,
        TWILIO_API_BASE_URL: await twilio.start(),
        TWILIO_FROM_NUMBER: '+15550009999',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await twilio.stop();
    await nats?.stop();
    await pg?.stop();
  }, 60_000);

  const api = () => platform.api(KEY);
  const greeter = async () =>
    (await api().post('/v1/agents', { name: 'Front desk', languages: [{ code: 'en', greeting: 'Hello, this is the front desk.' }] })).body as { id: string };
  const getCall = async (id: string) => (await api().get(`/v1/calls/${id}`)).body as { status: string; end_reason: string; failure_reason: string };

  it('fails a call whose media worker died as media_lost within MEDIA_LOST_SECONDS plus a reaper pass, and hangs its carrier leg up', async () => {
    const agent = await greeter();
    const call = (await api().post('/v1/calls', { agent_id: agent.id, to: '+15550100001' })).body;
    const media = await twilio.connectMediaStream(call.carrier_call_id);
    await eventually(async () => ((await getCall(call.id)).status === 'in_progress' ? true : undefined), 10_000, 'the answer');

    await platform.kill('media-worker');
    const killedAt = Date.now();
    const failed = await eventually(async () => {
      const c = await getCall(call.id);
      return c.status === 'failed' ? c : undefined;
    }, (MEDIA_LOST_SECONDS + PASS_SECONDS + 15) * 1000, 'the call to fail');

    expect(failed).toMatchObject({ status: 'failed', end_reason: 'media_lost', failure_reason: expect.stringContaining('media worker') });
    // The last heartbeat was at most 10 s before the kill: the bound is MEDIA_LOST_SECONDS + a pass after it.
    expect(Date.now() - killedAt).toBeLessThan((MEDIA_LOST_SECONDS + PASS_SECONDS + 15) * 1000);
    await eventually(
      async () => (twilio.calls.some((c) => c.action === 'update' && c.callSid === call.carrier_call_id && c.form['Status'] === 'completed') ? true : undefined),
      5_000,
      'the carrier leg to be hung up',
    );
    expect(media.open).toBe(false);

    platform.restart('media-worker');
    await platform.waitReady();
  }, 60_000);

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
