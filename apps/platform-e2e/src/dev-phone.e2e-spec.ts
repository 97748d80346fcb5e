import { DEV_CARRIER_NUMBER, DevPhoneClient } from '@parley/carrier-dev';
import { FakeOpenAiServer } from '@parley/llm';
import { FakeDeepgramServer } from '@parley/speech';
import { ApiClient, RunningPlatform } from '@parley/testing';
import { RealtimeTestClient } from './support/realtime-client';
import { until } from './support/until';
import { WebhookReceiver } from './support/webhook-receiver';

const KEY = 'vsk_devphone_owner_key_0001';

/** The page's media leg as the dev phone opens it: the realtime protocol with the carrier's stream token. */
async function mediaLeg(url: string, token: string): Promise<RealtimeTestClient> {
  const leg = new RealtimeTestClient(url);
  await leg.start(token);
  return leg;
}

describe('the dev phone: the standalone default carrier, driven like a phone carrier (standalone, no Twilio)', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  const hooks = new WebhookReceiver();
  let agentId: string;
  let page: DevPhoneClient;
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });
  const llm = new FakeOpenAiServer();

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        // A public address this machine cannot reach (a tunnel, say): the switch delivers to the gateway it runs in.
        PUBLIC_URL: 'https://parley.invalid',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        EGRESS_ALLOWLIST: '127.0.0.1',
        DEEPGRAM_API_KEY: 'dg-key',
        DEEPGRAM_BASE_URL: await deepgram.start(),
        LLM_BASE_URL: await llm.start(),
        LLM_API_KEY: 'sk-test',
      },
    });
    api = platform.api(KEY);
    await api.post('/v1/webhook_endpoints', { url: await hooks.start(), events: ['call.*'] });
    const agent = await api.post('/v1/agents', {
      name: 'Dev front desk',
      languages: [{ code: 'en-US', greeting: 'Hello from Parley.', stt_provider: 'deepgram', system_prompt: 'You take table bookings.' }],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
    page = await DevPhoneClient.connect(`${platform.baseUrl.replace(/^http/, 'ws')}/dev/phone/socket`);
  }, 120_000);

  afterAll(async () => {
    await page?.close();
    await platform?.stop();
    await deepgram.stop();
    await llm.stop();
    await hooks.stop();
  });

  const call = async (id: string) => (await api.get(`/v1/calls/${id}`)).body;
  const hook = (callId: string, type: string) => hooks.next(type, callId);

  it('is on by default without a phone carrier: npm start prints the page’s address, which serves the page', async () => {
    expect(platform.output('standalone')).toContain(`Dev phone: ${platform.baseUrl}/dev/phone\n`);
    const html = await fetch(`${platform.baseUrl}/dev/phone`);
    expect(html.status).toBe(200);
    expect(await html.text()).toContain('Parley dev phone');
  });

  it('rings the page on POST /v1/calls; the page answers, hears the greeting on the media stream and hangs up: completed', async () => {
    const created = await api.post('/v1/calls', { agent_id: agentId, to: '+15555550111' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ direction: 'outbound', carrier: 'dev', from: DEV_CARRIER_NUMBER, to: '+15555550111' });
    const id = created.body.id as string;

    const ring = await page.next('ring', (m) => m.call.to === '+15555550111');
    expect(ring.call).toMatchObject({ direction: 'outbound', from: DEV_CARRIER_NUMBER, agent_id: agentId });
    await until(async () => (await call(id)).status === 'ringing', 'ringing');
    page.send({ type: 'answer', call_id: ring.call.id });
    const connected = await page.next('connected', (m) => m.call_id === ring.call.id);
    expect(connected.stream_url).toBe(`${platform.mediaUrl}/streams/dev`);
    await until(async () => (await call(id)).status === 'in_progress', 'in_progress');
    expect((await call(id)).carrier_call_id).toBe(ring.call.id);

    const leg = await mediaLeg(connected.stream_url, connected.stream_token);
    const start = await until(() => leg.received.find((m) => m.type === 'call-start'), 'call-start on the media stream');
    expect(start).toMatchObject({ call_id: id, agent_id: agentId, direction: 'outbound' });
    await until(() => leg.agentPeak > 2000, 'the greeting as audio');
    await until(() => leg.received.some((m) => m.type === 'transcript' && m.role === 'assistant' && m.text === 'Hello from Parley.'), 'the greeting’s turn');
    await hook(id, 'call.started');

    // The page hangs up as the dev phone does: on its media leg and on the switch.
    leg.send({ type: 'hangup' });
    page.send({ type: 'hangup', call_id: ring.call.id });
    expect(await page.next('ended', (m) => m.call_id === ring.call.id)).toMatchObject({ reason: 'hangup' });
    await leg.closed;
    await until(async () => (await call(id)).status === 'ended', 'ended');
    expect((await call(id)).end_reason).toBe('completed');
    expect((await hook(id, 'call.ended')).data).toMatchObject({ end_reason: 'completed' });
    await until(async () => JSON.stringify((await api.get(`/v1/calls/${id}/transcript`)).body).includes('Hello from Parley.'), 'the transcript');
  }, 60_000);

  it('answers as a machine: the verdict reaches the calls service, and an agent set to hang up on machines ends it voicemail', async () => {
    const agent = await api.post('/v1/agents', { name: 'No voicemail', languages: [{ code: 'en-US', stt_provider: 'deepgram' }], conversation: { voicemail: 'hangup' } });
    expect(agent.body).toMatchObject({ object: 'agent' });
    const created = (await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15555550133' })).body;
    const ring = await page.next('ring', (m) => m.call.to === '+15555550133');
    page.send({ type: 'answer', call_id: ring.call.id, as: 'machine' });
    const connected = await page.next('connected', (m) => m.call_id === ring.call.id);
    const leg = await mediaLeg(connected.stream_url, connected.stream_token);
    // Parley hangs up on the machine: the page's leg ends as a hang-up from the far end.
    expect(await page.next('ended', (m) => m.call_id === ring.call.id)).toMatchObject({ reason: 'remote_hangup' });
    await leg.closed;
    const ended = await until(async () => ((await call(created.id)).status === 'ended' ? call(created.id) : undefined), 'ended');
    expect(ended).toMatchObject({ end_reason: 'voicemail' });
  }, 60_000);

  it('transfers when the agent does: the page shows the number, its leg ends, and the call ends transferred', async () => {
    const agent = await api.post('/v1/agents', {
      name: 'Transferring desk',
      languages: [{ code: 'en-US', greeting: 'Hello.', stt_provider: 'deepgram' }],
      transfer_number: '+15555550177',
    });
    expect(agent.body).toMatchObject({ object: 'agent' });
    deepgram.utterances('Put me through to a person.');
    llm.reply(() => ({ toolCalls: [{ id: 'call_transfer', name: 'transfer_call', arguments: '{"reason":"asked for a person"}' }] }));
    const created = (await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15555550144' })).body;
    const ring = await page.next('ring', (m) => m.call.to === '+15555550144');
    page.send({ type: 'answer', call_id: ring.call.id });
    const connected = await page.next('connected', (m) => m.call_id === ring.call.id);
    const leg = await mediaLeg(connected.stream_url, connected.stream_token);
    await until(() => leg.received.some((m) => m.type === 'transcript' && m.role === 'assistant' && m.text === 'Hello.'), 'the greeting’s turn');
    await leg.speak('Put me through to a person.', 1200);
    expect(await page.next('transferring', (m) => m.call_id === ring.call.id)).toMatchObject({ destination: '+15555550177' });
    expect(await page.next('ended', (m) => m.call_id === ring.call.id)).toMatchObject({ reason: 'transferred', destination: '+15555550177' });
    // The page closes its leg as the dev phone does when a transfer takes the call away.
    leg.send({ type: 'hangup' });
    await leg.closed;
    const ended = await until(async () => ((await call(created.id)).status === 'ended' ? call(created.id) : undefined), 'ended');
    expect(ended).toMatchObject({ end_reason: 'transferred' });
    expect((await hook(created.id, 'call.transferred')).data).toMatchObject({ destination: '+15555550177' });
  }, 60_000);

  it('ends no_answer after the agent’s ring time when nobody answers', async () => {
    const agent = await api.post('/v1/agents', { name: 'Quick ring', languages: [{ code: 'en-US', stt_provider: 'deepgram' }], ring_seconds: 2 });
    expect(agent.body).toMatchObject({ object: 'agent', ring_seconds: 2 });
    const created = await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15555550122' });
    expect(created.body).toMatchObject({ object: 'call', carrier: 'dev' });
    const ring = await page.next('ring', (m) => m.call.to === '+15555550122');
    expect(await page.next('ring-stop', (m) => m.call_id === ring.call.id)).toMatchObject({ reason: 'no_answer' });
    await until(async () => (await call(created.body.id)).status === 'ended', 'ended');
    expect((await call(created.body.id)).end_reason).toBe('no_answer');
    expect((await hook(created.body.id, 'call.ended')).data).toMatchObject({ end_reason: 'no_answer' });
  }, 60_000);
});

// Distributed mode needs a real NATS (NATS_URL); the README's plain `npm test` runs without one.
const describeWithNats = process.env['NATS_URL'] ? describe : describe.skip;

describeWithNats('the dev phone switched on in distributed mode (DEV_CARRIER=on: the switch in the one gateway)', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  let page: DevPhoneClient;
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      mode: 'distributed',
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: { DEV_CARRIER: 'on', DEEPGRAM_API_KEY: 'dg-key', DEEPGRAM_BASE_URL: await deepgram.start() },
    });
    api = platform.api(KEY);
    page = await DevPhoneClient.connect(`${platform.baseUrl.replace(/^http/, 'ws')}/dev/phone/socket`);
  }, 120_000);

  afterAll(async () => {
    await page?.close();
    await platform?.stop();
    await deepgram.stop();
  });

  it('rings the page from the calls service’s own process; answered, the media attaches; hung up, completed', async () => {
    const agent = await api.post('/v1/agents', { name: 'Distributed desk', languages: [{ code: 'en-US', greeting: 'Hello.', stt_provider: 'deepgram' }] });
    const created = (await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15555550155' })).body;
    expect(created).toMatchObject({ carrier: 'dev', from: DEV_CARRIER_NUMBER });
    const ring = await page.next('ring', (m) => m.call.to === '+15555550155');
    page.send({ type: 'answer', call_id: ring.call.id });
    const connected = await page.next('connected', (m) => m.call_id === ring.call.id);
    const leg = await mediaLeg(connected.stream_url, connected.stream_token);
    await until(() => leg.received.find((m) => m.type === 'call-start'), 'call-start on the media stream');
    leg.send({ type: 'hangup' });
    page.send({ type: 'hangup', call_id: ring.call.id });
    await leg.closed;
    await until(async () => (await api.get(`/v1/calls/${created.id}`)).body.end_reason === 'completed', 'completed');
  }, 60_000);
});
