import { FakeTwilioServer } from '@parley/carrier-twilio';
import { ApiResponse, RunningPlatform } from '@parley/testing';

const KEY = 'vsk_burst_owner_key_000000001';
const BURST = 200;
const WITHIN_MS = 3000;
/** Smaller than the burst, so admission has to refuse part of it (placed calls hold capacity until answered). */
const CAPACITY = 60;

const numberOf = (i: number) => `+1555030${String(i).padStart(4, '0')}`;

describe('call set-up burst: every POST /v1/calls is a placed call or a refusal before dialling', () => {
  let platform: RunningPlatform;
  let twilio: FakeTwilioServer;
  let agentId: string;

  beforeAll(async () => {
    twilio = new FakeTwilioServer();
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        MAX_CONCURRENT_CALLS: '1000',
        MEDIA_WORKER_CAPACITY: String(CAPACITY),
        ...(await twilio.platformEnv()),
      },
    });
    agentId = (await platform.api(KEY).post('/v1/agents', { name: 'Burst', languages: [{ code: 'en' }] })).body.id;
    // The media worker's load reports reach call admission within a report interval of its start.
    await new Promise((r) => setTimeout(r, 1500));
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await twilio?.stop();
  });

  it(`answers ${BURST} creates in ${WITHIN_MS / 1000} s each with a call dialled once or a 503 with Retry-After and nothing dialled`, async () => {
    const api = platform.api(KEY);
    const answers: Promise<ApiResponse>[] = [];
    const started = Date.now();
    for (let i = 0; i < BURST; i++) {
      const due = started + (i * WITHIN_MS) / BURST;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      answers.push(api.post('/v1/calls', { agent_id: agentId, to: numberOf(i) }, { 'idempotency-key': `burst-${i}` }));
    }
    const sentWithinMs = Date.now() - started;
    const responses = await Promise.all(answers);
    // A call answered while its dial was still under way is dialled shortly after; let those dials land.
    await new Promise((r) => setTimeout(r, 3000));

    const creates = twilio.calls.filter((c) => c.action === 'create');
    const dialsTo = (to: string) => twilio.calls.filter((c) => c.action === 'create' && c.form['To'] === to);
    const placed = responses.filter((r) => r.status === 201);
    const refused = responses.filter((r) => r.status === 503);
    const admissions = (await (await fetch(`${platform.baseUrl}/metrics`)).text()).split('\n').filter((l) => l.startsWith('parley_call_admissions_total'));
    console.log(
      `burst: ${BURST} creates sent within ${sentWithinMs} ms: ${placed.length} placed, ${refused.length} refused before dialling\n${admissions.join('\n')}`,
    );

    expect(sentWithinMs).toBeLessThan(WITHIN_MS + 1000);
    expect(placed.length + refused.length).toBe(BURST);
    responses.forEach((response, i) => {
      const dials = dialsTo(numberOf(i));
      if (response.status === 201) {
        expect(response.body).toMatchObject({ object: 'call', to: numberOf(i), status: expect.stringMatching(/^(queued|failed)$/) });
        expect(dials).toHaveLength(1);
        if (response.body.carrier_call_id) expect(response.body.carrier_call_id).toBe(dials[0].callSid);
      } else {
        // retry_after_seconds is the calls service's word that nothing was dialled (a lost answer has none).
        expect(response.body).toMatchObject({ code: 'service_unavailable', retry_after_seconds: expect.any(Number) });
        expect(Number(response.headers.get('retry-after'))).toBe(response.body.retry_after_seconds);
        expect(dials).toHaveLength(0);
      }
    });
    // No number was dialled twice, and nothing was dialled that was not answered as a placed call.
    expect(new Set(creates.map((c) => c.form['To'])).size).toBe(creates.length);
    expect(creates).toHaveLength(placed.length);
    // Placed calls hold media capacity until answered: admission never placed more than the worker can carry.
    expect(placed.length).toBeGreaterThan(0);
    expect(placed.length).toBeLessThanOrEqual(CAPACITY);
    expect(refused.length).toBeGreaterThan(0);

    // A refused create retried with its key once capacity allows is placed then, and dialled once.
    const i = responses.findIndex((r) => r.status === 503);
    await platform.api(KEY).post(`/v1/calls/${placed[0].body.id}/end`);
    const retry = await api.post('/v1/calls', { agent_id: agentId, to: numberOf(i) }, { 'idempotency-key': `burst-${i}` });
    expect(retry.status).toBe(201);
    expect(dialsTo(numberOf(i))).toHaveLength(1);
  });
});
