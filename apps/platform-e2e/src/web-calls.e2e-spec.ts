import { REALTIME_CLOSE } from '@parley/contracts';
import { FakeOpenAiServer } from '@parley/llm';
import { FakeDeepgramServer } from '@parley/speech';
import { ApiClient, RunningPlatform } from '@parley/testing';
import { keypadAgent } from './support/agents';
import { RealtimeTestClient } from './support/realtime-client';
import { until } from './support/until';
import { WebhookReceiver } from './support/webhook-receiver';

const KEY = 'vsk_webcall_owner_key_0001';
const OTHER_KEY = 'vsk_webcall_other_key_0001';

describe('web calls: a browser talks to an agent over the realtime socket (standalone)', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  let other: ApiClient;
  const hooks = new WebhookReceiver();
  let agentId: string;
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });
  const llm = new FakeOpenAiServer();

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`, `globex:owner:${OTHER_KEY}`],
      env: {
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        EGRESS_ALLOWLIST: '127.0.0.1',
        DEEPGRAM_API_KEY: 'dg-key',
        DEEPGRAM_BASE_URL: await deepgram.start(),
        LLM_BASE_URL: await llm.start(),
        LLM_API_KEY: 'sk-test',
      },
    });
    api = platform.api(KEY);
    other = platform.api(OTHER_KEY);
    await api.post('/v1/webhook_endpoints', { url: await hooks.start(), events: ['call.started', 'call.ended'] });
    const agent = await api.post('/v1/agents', {
      name: 'Web front desk',
      languages: [{ code: 'en-US', greeting: 'Hello from Parley.', stt_provider: 'deepgram', system_prompt: 'You take table bookings.' }],
    });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await deepgram.stop();
    await llm.stop();
    await hooks.stop();
  });

  const mint = async (client = api, id = agentId) => {
    const res = await client.post('/v1/realtime/tokens', { agent_id: id, variables: { page: 'pricing' } });
    expect(res.status).toBe(201);
    return res.body as { object: string; token: string; url: string; call_id: string; expires_at: string; call: { id: string; status: string; direction: string } };
  };

  it('hears the greeting, is heard and answered, sees both turns, hangs up: the call ends completed with its webhooks', async () => {
    deepgram.utterances('I would like a table for four.');
    llm.reply(() => ({ content: 'Of course, for which day?' }));
    const minted = await mint();
    expect(minted).toMatchObject({ object: 'realtime_token', url: `${platform.mediaUrl}/realtime`, call: { status: 'queued', direction: 'web' } });
    expect(Date.parse(minted.expires_at) - Date.now()).toBeLessThanOrEqual(60_000);

    const browser = new RealtimeTestClient(minted.url);
    await browser.start(minted.token, minted.call_id);
    await until(() => browser.received.find((m) => m.type === 'call-start'), 'call-start');
    expect(browser.received[0]).toEqual({ type: 'call-start', call_id: minted.call_id, agent_id: agentId, direction: 'web', sample_rate: 16000, frame_ms: 20 });
    await until(() => browser.received.some((m) => m.type === 'transcript' && m.role === 'assistant' && m.text === 'Hello from Parley.'), 'the greeting’s turn');
    // The greeting arrived as audio, not silence.
    expect(browser.agentPeak).toBeGreaterThan(2000);

    await browser.speak('I would like a table for four.', 1200);
    await until(() => browser.received.some((m) => m.type === 'transcript' && m.role === 'user' && m.text === 'I would like a table for four.'), 'the caller’s turn');
    await until(() => browser.received.some((m) => m.type === 'transcript' && m.role === 'assistant' && m.text === 'Of course, for which day?'), 'the answer');

    browser.send({ type: 'hangup' });
    expect(await browser.closed).toEqual({ code: 1000, reason: 'stream stopped' });
    expect(browser.received.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });

    expect((await hooks.next('call.ended', minted.call_id)).data).toMatchObject({ end_reason: 'completed', turns: 3 });
    expect((await hooks.next('call.started', minted.call_id)).data).toMatchObject({ agent_id: agentId, direction: 'web' });
    const record = await api.get(`/v1/calls/${minted.call_id}`);
    expect(record.body).toMatchObject({ status: 'ended', end_reason: 'completed', direction: 'web' });
    const transcript = await api.get(`/v1/calls/${minted.call_id}/transcript`);
    expect(JSON.stringify(transcript.body)).toContain('I would like a table for four.');
  }, 60_000);

  it('follows a keypad menu driven by the browser’s keypresses, and the call ends when the menu does', async () => {
    const { body: spec, menu, support } = keypadAgent('Web keypad');
    const keypad = await api.post('/v1/agents', spec);
    expect(keypad.status).toBe(201);
    const minted = await mint(api, keypad.body.id);
    const browser = new RealtimeTestClient(minted.url);
    await browser.start(minted.token, minted.call_id);
    await until(() => browser.received.some((m) => m.type === 'transcript' && m.text === menu), 'the menu');
    browser.send({ type: 'dtmf', digit: '2' });
    const end = await browser.closed;
    expect(end.code).toBe(1000);
    expect(browser.turns).toEqual([
      ['assistant', menu],
      ['user', '2'],
      ['assistant', support],
    ]);
    expect(browser.received.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
    expect((await hooks.next('call.ended', minted.call_id)).data).toMatchObject({ end_reason: 'completed', turns: 3 });
  }, 60_000);

  it('refuses at connect a used, forged, misdirected or other-account token, and an API key, each with its own close code', async () => {
    const first = await mint();
    const browser = new RealtimeTestClient(first.url);
    await browser.start(first.token);
    await until(() => browser.received.find((m) => m.type === 'call-start'), 'call-start');

    const refusal = async (token: string, callId?: string) => {
      const socket = new RealtimeTestClient(first.url);
      await socket.start(token, callId);
      return socket.closed;
    };
    expect(await refusal(first.token)).toEqual({ code: REALTIME_CLOSE.tokenUsed, reason: expect.stringMatching(/^token_used: /) });
    const [body, mac] = first.token.split('.');
    expect((await refusal(`${body}.${mac.slice(0, -3)}abc`)).code).toBe(REALTIME_CLOSE.tokenInvalid);
    expect(await refusal(KEY)).toEqual({ code: REALTIME_CLOSE.tokenInvalid, reason: expect.stringContaining('API key') });

    const second = await mint();
    expect((await refusal(second.token, first.call_id)).code).toBe(REALTIME_CLOSE.tokenForbidden);
    // Another account's token cannot join this account's call.
    const theirs = await mint(other, (await other.post('/v1/agents', { name: 'Theirs', languages: [{ code: 'en-US' }] })).body.id);
    expect((await refusal(theirs.token, first.call_id)).code).toBe(REALTIME_CLOSE.tokenForbidden);
    expect((await other.post(`/v1/calls/${first.call_id}/token`, {})).status).toBe(404);
    // The misdirected token was not used up: it still joins its own call.
    const rightful = new RealtimeTestClient(second.url);
    await rightful.start(second.token, second.call_id);
    await until(() => rightful.received.find((m) => m.type === 'call-start'), 'call-start of the second call');

    browser.close();
    rightful.close();
    await Promise.all([browser.closed, rightful.closed]);
  }, 60_000);

  it('mints another token for a web call nobody joined, and 409 once the call is over', async () => {
    const minted = await mint();
    const again = await api.post(`/v1/calls/${minted.call_id}/token`, {});
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ object: 'realtime_token', call_id: minted.call_id, role: 'caller' });
    expect(again.body.token).not.toBe(minted.token);
    expect((await api.post(`/v1/calls/${minted.call_id}/token`, { role: 'operator' })).status).toBe(422);

    await api.post(`/v1/calls/${minted.call_id}/end`);
    const over = await api.post(`/v1/calls/${minted.call_id}/token`, {});
    expect(over.status).toBe(409);
    expect(over.headers.get('content-type')).toContain('application/problem+json');
    const socket = new RealtimeTestClient(minted.url);
    await socket.start(again.body.token);
    expect((await socket.closed).code).toBe(REALTIME_CLOSE.callOver);
  }, 30_000);
});
