import { writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, chromium, Page } from 'playwright-core';
import { encodeWav } from '@parley/audio';
import { FakeOpenAiServer } from '@parley/llm';
import { FakeDeepgramServer, mespeakWav } from '@parley/speech';
import { ApiClient, RunningPlatform } from '@parley/testing';

const KEY = 'vsk_browser_owner_key_0001';
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const QUESTION = 'I would like a table for four.';
const ANSWER = 'Of course, for which day?';
const GREETING = 'Hello from Parley.';

/**
 * The microphone Chromium's fake capture device plays, in a loop: 4 s of silence (the greeting plays meanwhile),
 * the question spoken by eSpeak, then 8 s of silence in which the agent answers.
 */
function microphoneWav(): string {
  const speech = mespeakWav(QUESTION);
  const rate = speech.sampleRate;
  const samples = new Int16Array(rate * 4 + speech.samples.length + rate * 8);
  samples.set(speech.samples, rate * 4);
  const path = join(tmpdir(), `parley-mic-${process.pid}.wav`);
  writeFileSync(path, encodeWav(samples, rate));
  return path;
}

/**
 * The customer's side: a page that loads the embed script from the deployment and a server that mints tokens with
 * the API key (the browser never sees it). `window.startCall(agentId)` starts a call; everything the client says is
 * kept in `window.seen`.
 */
function customerSite(baseUrl: string, api: ApiClient): Server {
  const page = `<!doctype html><html><head><meta charset="utf-8"><script src="${baseUrl}/v1/embed/"></script></head><body><script>
    window.seen = { events: [], transcript: [], agentPeak: 0, agentLoudMs: 0, ends: [] };
    window.startCall = async (agentId) => {
      const minted = await (await fetch('/token', { method: 'POST', body: JSON.stringify({ agent_id: agentId }) })).json();
      const call = new Parley.ParleyCall({ url: minted.url, token: minted.token, callId: minted.call_id });
      window.call = call;
      for (const name of ['call-start', 'speech-start', 'speech-end', 'error']) call.on(name, (p) => window.seen.events.push(name));
      call.on('transcript', (t) => window.seen.transcript.push([t.role, t.text]));
      call.on('volume', (v) => {
        window.seen.agentPeak = Math.max(window.seen.agentPeak, v.agent);
        if (v.agent > 0.02) window.seen.agentLoudMs += 100;
      });
      call.on('call-end', (e) => window.seen.ends.push(e.reason));
      await call.start();
      return minted.call_id;
    };
  </script></body></html>`;
  return createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/token') {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', async () => {
        const minted = await api.post('/v1/realtime/tokens', JSON.parse(body));
        res.writeHead(minted.status, { 'content-type': 'application/json' }).end(JSON.stringify(minted.body));
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
}

async function until<T>(probe: () => Promise<T | undefined | false>, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type Seen = { events: string[]; transcript: [string, string][]; agentPeak: number; agentLoudMs: number; ends: string[] };
const seen = (page: Page) => page.evaluate(() => (globalThis as unknown as { seen: Seen }).seen);

describe('a real browser (headless Chromium) talks to an agent through the embed script', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  let site: Server;
  let siteUrl: string;
  let browser: Browser;
  let receiver: Server;
  const hooks: { type: string; call_id: string; data: Record<string, unknown> }[] = [];
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });
  const llm = new FakeOpenAiServer();

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
      bootstrapKeys: [`acme:owner:${KEY}`],
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
    await api.post('/v1/webhook_endpoints', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, events: ['call.started', 'call.ended'] });
    site = customerSite(platform.baseUrl, api);
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    // 127.0.0.1 is a secure context: the page may ask for the microphone over plain http.
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--autoplay-policy=no-user-gesture-required',
        '--use-fake-ui-for-media-stream',
        '--use-fake-device-for-media-stream',
        `--use-file-for-fake-audio-capture=${microphoneWav()}`,
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => site?.close(r));
    await platform?.stop();
    await deepgram.stop();
    await llm.stop();
    await new Promise((r) => receiver?.close(r));
  });

  it('hears the greeting and the answer as audio, is heard, sees both turns; hanging up ends the call completed with its webhooks', async () => {
    deepgram.utterances(QUESTION, QUESTION, QUESTION);
    llm.reply(() => ({ content: ANSWER }));
    const agent = await api.post('/v1/agents', { name: 'Browser desk', languages: [{ code: 'en-US', greeting: GREETING, stt_provider: 'deepgram' }] });
    const page = await browser.newPage();
    try {
      await page.goto(siteUrl);
      const callId = await page.evaluate((id) => (globalThis as unknown as { startCall(id: string): Promise<string> }).startCall(id), agent.body.id as string);
      await until(async () => (await seen(page)).transcript.some(([role, text]) => role === 'assistant' && text === GREETING), 'the greeting');
      await until(async () => (await seen(page)).agentLoudMs >= 500, 'the greeting heard in the page');
      await until(async () => (await seen(page)).transcript.some(([role, text]) => role === 'user' && text === QUESTION), 'the question heard by the agent');
      const loudBeforeAnswer = (await seen(page)).agentLoudMs;
      await until(async () => (await seen(page)).transcript.some(([role, text]) => role === 'assistant' && text === ANSWER), 'the answer');
      await until(async () => (await seen(page)).agentLoudMs >= loudBeforeAnswer + 500, 'the answer heard in the page');

      await page.evaluate(() => (globalThis as unknown as { call: { hangup(): void } }).call.hangup());
      const after = await until(async () => ((await seen(page)).ends.length ? seen(page) : undefined), 'call-end');
      expect(after.ends).toEqual(['completed']);
      expect(after.events).toEqual(expect.arrayContaining(['call-start', 'speech-start', 'speech-end']));
      expect(after.events).not.toContain('error');
      expect(after.transcript.slice(0, 3)).toEqual([
        ['assistant', GREETING],
        ['user', QUESTION],
        ['assistant', ANSWER],
      ]);
      const ended = await until(async () => hooks.find((h) => h.type === 'call.ended' && h.call_id === callId), 'call.ended');
      expect(ended.data).toMatchObject({ end_reason: 'completed' });
      expect(hooks.find((h) => h.type === 'call.started' && h.call_id === callId)?.data).toMatchObject({ direction: 'web' });
      const transcript = await api.get(`/v1/calls/${callId}/transcript`);
      expect(JSON.stringify(transcript.body)).toContain(QUESTION);
      expect(JSON.stringify(transcript.body)).toContain(ANSWER);
    } finally {
      await page.close();
    }
  }, 90_000);

  it('drives a keypad agent with the page’s keypresses', async () => {
    const menu = 'Press 1 for sales, 2 for support.';
    const support = 'Support is open nine to five.';
    const agent = await api.post('/v1/agents', {
      name: 'Browser keypad',
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
    const page = await browser.newPage();
    try {
      await page.goto(siteUrl);
      const callId = await page.evaluate((id) => (globalThis as unknown as { startCall(id: string): Promise<string> }).startCall(id), agent.body.id as string);
      await until(async () => (await seen(page)).transcript.some(([, text]) => text === menu), 'the menu');
      await page.evaluate(() => (globalThis as unknown as { call: { sendDigits(d: string): void } }).call.sendDigits('2'));
      const after = await until(async () => ((await seen(page)).ends.length ? seen(page) : undefined), 'call-end');
      expect(after.transcript).toEqual([
        ['assistant', menu],
        ['user', '2'],
        ['assistant', support],
      ]);
      expect(after.ends).toEqual(['completed']);
      expect(after.agentPeak).toBeGreaterThan(0.02);
      const ended = await until(async () => hooks.find((h) => h.type === 'call.ended' && h.call_id === callId), 'call.ended');
      expect(ended.data).toMatchObject({ end_reason: 'completed', turns: 3 });
    } finally {
      await page.close();
    }
  }, 90_000);
});
