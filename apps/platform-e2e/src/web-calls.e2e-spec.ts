import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { WebSocket } from 'ws';
import { REALTIME_CLOSE, REALTIME_FRAME_MS, REALTIME_SAMPLE_RATE, RealtimeServerMessage } from '@parley/contracts';
import { FakeOpenAiServer } from '@parley/llm';
import { mulawToPcm16, Resampler } from '@parley/audio';
import { callerSpeechMulaw, FakeDeepgramServer } from '@parley/speech';
import { ApiClient, RunningPlatform } from '@parley/testing';

const KEY = 'vsk_webcall_owner_key_0001';
const OTHER_KEY = 'vsk_webcall_other_key_0001';
const FRAME_SAMPLES = (REALTIME_SAMPLE_RATE * REALTIME_FRAME_MS) / 1000;

/**
 * A browser on the realtime socket, as the embed client behaves: sends `start` with its token, echoes marks once
 * what came before has "played", streams its microphone as 20 ms PCM frames in real time.
 */
class BrowserSocket {
  readonly received: RealtimeServerMessage[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly ws: WebSocket;
  private seq = 0;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as RealtimeServerMessage;
      this.received.push(message);
      if (message.type === 'mark') this.send({ type: 'mark', name: message.name });
    });
    this.closed = new Promise((resolve) => this.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  async start(token: string, callId?: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.send({ type: 'start', token, version: 1, ...(callId ? { call_id: callId } : {}), client: 'e2e' });
  }

  /** Streams `pcm` then `trailingMs` of silence, one frame per 20 ms. */
  async speak(pcm: Int16Array, trailingMs = 0): Promise<void> {
    const all = new Int16Array(pcm.length + Math.round((trailingMs * REALTIME_SAMPLE_RATE) / 1000));
    all.set(pcm);
    for (let at = 0; at < all.length; at += FRAME_SAMPLES) {
      const frame = new Int16Array(FRAME_SAMPLES);
      frame.set(all.subarray(at, at + FRAME_SAMPLES));
      this.send({ type: 'audio', seq: this.seq++, audio: Buffer.from(frame.buffer).toString('base64') });
      await new Promise((r) => setTimeout(r, REALTIME_FRAME_MS));
    }
  }

  send(message: object): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  /** Loudest sample of the agent's audio received so far. */
  get agentPeak(): number {
    let peak = 0;
    for (const m of this.received) {
      if (m.type !== 'audio') continue;
      const pcm = Buffer.from(m.audio, 'base64');
      for (let i = 0; i + 1 < pcm.length; i += 2) peak = Math.max(peak, Math.abs(pcm.readInt16LE(i)));
    }
    return peak;
  }

  close(): void {
    this.ws.close();
  }
}

/** A caller's words as a browser sends them: wideband PCM (the phone-line speech, resampled to 16 kHz). */
const browserSpeech = (text: string) => new Resampler(8000, REALTIME_SAMPLE_RATE).process(mulawToPcm16(callerSpeechMulaw(text)));

async function until<T>(check: () => T | undefined | false, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('web calls: a browser talks to an agent over the realtime socket (standalone)', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  let other: ApiClient;
  let receiver: Server;
  let agentId: string;
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });
  const llm = new FakeOpenAiServer();
  const hooks: { type: string; call_id: string; data: Record<string, unknown> }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        hooks.push(JSON.parse(body));
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
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
    await api.post('/v1/webhook_endpoints', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, events: ['call.started', 'call.ended'] });
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
    await new Promise((r) => receiver.close(r));
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

    const browser = new BrowserSocket(minted.url);
    await browser.start(minted.token, minted.call_id);
    await until(() => browser.received.find((m) => m.type === 'call-start'), 'call-start');
    expect(browser.received[0]).toEqual({ type: 'call-start', call_id: minted.call_id, agent_id: agentId, direction: 'web', sample_rate: 16000, frame_ms: 20 });
    await until(() => browser.received.some((m) => m.type === 'transcript' && m.role === 'assistant' && m.text === 'Hello from Parley.'), 'the greeting’s turn');
    // The greeting arrived as audio, not silence.
    expect(browser.agentPeak).toBeGreaterThan(2000);

    await browser.speak(browserSpeech('I would like a table for four.'), 1200);
    await until(() => browser.received.some((m) => m.type === 'transcript' && m.role === 'user' && m.text === 'I would like a table for four.'), 'the caller’s turn');
    await until(() => browser.received.some((m) => m.type === 'transcript' && m.role === 'assistant' && m.text === 'Of course, for which day?'), 'the answer');

    browser.send({ type: 'hangup' });
    expect(await browser.closed).toEqual({ code: 1000, reason: 'stream stopped' });
    expect(browser.received.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });

    const ended = await until(() => hooks.find((h) => h.type === 'call.ended' && h.call_id === minted.call_id), 'call.ended');
    expect(ended.data).toMatchObject({ end_reason: 'completed', turns: 3 });
    expect(hooks.find((h) => h.type === 'call.started' && h.call_id === minted.call_id)?.data).toMatchObject({ agent_id: agentId, direction: 'web' });
    const record = await api.get(`/v1/calls/${minted.call_id}`);
    expect(record.body).toMatchObject({ status: 'ended', end_reason: 'completed', direction: 'web' });
    const transcript = await api.get(`/v1/calls/${minted.call_id}/transcript`);
    expect(JSON.stringify(transcript.body)).toContain('I would like a table for four.');
  }, 60_000);

  it('follows a keypad menu driven by the browser’s keypresses, and the call ends when the menu does', async () => {
    const menu = 'Press 1 for sales, 2 for support.';
    const support = 'Support is open nine to five.';
    const keypad = await api.post('/v1/agents', {
      name: 'Web keypad',
      mode: 'keypad',
      languages: [{ code: 'en-US' }],
      flow: {
        start: 'menu',
        nodes: [
          {
            id: 'menu',
            type: 'static',
            say: menu,
            edges: [
              { to: 'sales', type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'eq', value: '1' }] } },
              { to: 'support', type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'eq', value: '2' }] } },
            ],
          },
          { id: 'sales', type: 'static', say: 'Connecting you to sales.' },
          { id: 'support', type: 'static', say: support },
        ],
      },
    });
    expect(keypad.status).toBe(201);
    const minted = await mint(api, keypad.body.id);
    const browser = new BrowserSocket(minted.url);
    await browser.start(minted.token, minted.call_id);
    await until(() => browser.received.some((m) => m.type === 'transcript' && m.text === menu), 'the menu');
    browser.send({ type: 'dtmf', digit: '2' });
    const end = await browser.closed;
    expect(end.code).toBe(1000);
    const turns = browser.received.filter((m) => m.type === 'transcript').map((m) => (m.type === 'transcript' ? [m.role, m.text] : []));
    expect(turns).toEqual([
      ['assistant', menu],
      ['user', '2'],
      ['assistant', support],
    ]);
    expect(browser.received.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
    const ended = await until(() => hooks.find((h) => h.type === 'call.ended' && h.call_id === minted.call_id), 'call.ended');
    expect(ended.data).toMatchObject({ end_reason: 'completed', turns: 3 });
  }, 60_000);

  it('refuses at connect a used, forged, misdirected or other-account token, and an API key, each with its own close code', async () => {
    const first = await mint();
    const browser = new BrowserSocket(first.url);
    await browser.start(first.token);
    await until(() => browser.received.find((m) => m.type === 'call-start'), 'call-start');

    const refusal = async (token: string, callId?: string) => {
      const socket = new BrowserSocket(first.url);
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
    const rightful = new BrowserSocket(second.url);
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
    const socket = new BrowserSocket(minted.url);
    await socket.start(again.body.token);
    expect((await socket.closed).code).toBe(REALTIME_CLOSE.callOver);
  }, 30_000);
});
