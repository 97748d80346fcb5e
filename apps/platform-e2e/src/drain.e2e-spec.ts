import { FakeTwilioServer } from '@parley/carrier-twilio';
import { eventually, freePort, RunningPlatform } from '@parley/testing';
import { ReadinessBalancer, readyz } from './support/readiness-balancer';
import { until } from './support/until';

const KEY = 'vsk_e2e_drain_key_00000000001';
/** Long enough for the live calls to end on their own first: they must end `completed`, not `shutdown`. */
const CALL_DRAIN_SECONDS = 8;
const SHUTDOWN_GRACE_MS = 4_000;

// Distributed mode needs a real NATS; CI always has one.
const describeWithNats = process.env['NATS_URL'] ? describe : describe.skip;

/**
 * Two media workers behind a load balancer that routes new streams by readiness, as a Kubernetes Service does
 * (the calls' stream markup names the balancer). One worker, carrying live calls, gets SIGTERM.
 */
describeWithNats('a media worker drained behind a load balancer (distributed)', () => {
  let platform: RunningPlatform;
  let started = false;
  let replica: { name: string; url: string };
  const twilio = new FakeTwilioServer();
  const balancer = new ReadinessBalancer();

  beforeAll(async () => {
    const [balancerPort, mediaPort] = await Promise.all([balancer.start(), freePort()]);
    // Until the platform has started, its worker counts as ready: the harness waits for it through the balancer.
    const firstReady = readyz(() => platform.opsUrl('media-worker'));
    balancer.add('media-worker', mediaPort, async () => !started || firstReady());
    platform = await RunningPlatform.start({
      mode: 'distributed',
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        MEDIA_PORT: String(mediaPort),
        MEDIA_PUBLIC_URL: `ws://127.0.0.1:${balancerPort}`,
        CALL_DRAIN_SECONDS: String(CALL_DRAIN_SECONDS),
        SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
        ...(await twilio.platformEnv()),
      },
    });
    started = true;
    // Its ops port opens just after its media port: the balancer routes to it once its /readyz answers.
    await eventually(async () => (balancer.isReady('media-worker') ? true : undefined), 10_000, 'the first worker to be ready');
    // The second worker starts now but joins the balancer only once the first carries the live calls.
    replica = await platform.addReplica('media-worker');
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await balancer.stop();
    await twilio.stop();
  }, 60_000);

  const api = () => platform.api(KEY);
  const getCall = async (id: string) => (await api().get(`/v1/calls/${id}`)).body as { status: string; end_reason: string | null };
  const attached = async (opsUrl: string) => {
    const text = await (await fetch(`${opsUrl}/metrics`)).text();
    return Number(/^parley_media_streams_total\{carrier="twilio",outcome="attached"\} (\d+)/m.exec(text)?.[1] ?? 0);
  };

  /** A call placed and answered through the balancer, its agent speaking on the stream. */
  async function liveCall(agentId: string, to: string) {
    const call = (await api().post('/v1/calls', { agent_id: agentId, to })).body as { id: string; carrier_call_id: string };
    const media = await twilio.connectMediaStream(call.carrier_call_id);
    await eventually(async () => (media.receivedFrames > 25 ? true : undefined), 20_000, `the agent of ${to} to speak`);
    return { call, media };
  }

  it('takes the SIGTERMed worker out at once: not ready within 1 s, new calls carried by the other worker, live calls finish normally', async () => {
    const agent = (await api().post('/v1/agents', { name: 'Front desk', languages: [{ code: 'en', greeting: 'Hello, this is the front desk.' }] })).body as { id: string };
    const live = [await liveCall(agent.id, '+15550101001'), await liveCall(agent.id, '+15550101002')];
    expect(balancer.routed).toContain('media-worker');
    expect(balancer.routed).not.toContain(replica.name);

    balancer.add(replica.name, Number(new URL(replica.url).port), readyz(() => platform.opsUrl(replica.name)));
    await eventually(async () => (balancer.isReady(replica.name) ? true : undefined), 10_000, 'the second worker to be ready');
    const firstOps = platform.opsUrl('media-worker');
    const replicaOps = platform.opsUrl(replica.name);
    const attachedBefore = await attached(replicaOps);

    const sigtermAt = Date.now();
    const exited = platform.terminate('media-worker');
    await until(async () => (await fetch(`${firstOps}/readyz`)).status === 503, 'the draining worker to answer 503 on /readyz', 1_000);
    expect(Date.now() - sigtermAt).toBeLessThan(1_000);
    await until(() => !balancer.isReady('media-worker'), 'the balancer to take the draining worker out', 1_000);

    // A call placed during the drain reaches the other worker, and its agent speaks.
    const next = await liveCall(agent.id, '+15550101003');
    expect(balancer.routed.at(-1)).toBe(replica.name);
    expect(await attached(replicaOps)).toBe(attachedBefore + 1);
    expect((await getCall(next.call.id)).status).toBe('in_progress');

    // The live calls on the draining worker are still up and carried; their callers hang up within the drain.
    for (const { call, media } of live) {
      expect(media.open).toBe(true);
      expect((await getCall(call.id)).status).toBe('in_progress');
    }
    for (const { media } of live) await media.stop();
    for (const { call } of live) {
      const ended = await eventually(async () => {
        const c = await getCall(call.id);
        return c.status === 'ended' ? c : undefined;
      }, 10_000, `${call.id} to end`);
      expect(ended.end_reason).toBe('completed');
    }

    // Its calls done, the worker exits cleanly, before the drain window is over.
    const { code } = await exited;
    expect(code).toBe(0);
    expect(Date.now() - sigtermAt).toBeLessThan(CALL_DRAIN_SECONDS * 1000);
    expect(platform.output('media-worker')).not.toContain('drain incomplete');

    // The call on the other worker was never disturbed.
    expect(next.media.open).toBe(true);
    await next.media.stop();
    await eventually(async () => ((await getCall(next.call.id)).status === 'ended' ? true : undefined), 10_000, 'the last call to end');
    expect((await getCall(next.call.id)).end_reason).toBe('completed');
  }, 90_000);
});
