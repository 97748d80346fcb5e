import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Browser, Page } from 'playwright-core';
import { FakeOpenAiServer } from '@parley/llm';
import { FakeDeepgramServer } from '@parley/speech';
import { ApiClient, RunningPlatform } from '@parley/testing';
import { keypadAgent } from './support/agents';
import { launchChromium } from './support/chromium';
import { until } from './support/until';
import { WebhookReceiver } from './support/webhook-receiver';

const KEY = 'vsk_browser_owner_key_0001';
const QUESTION = 'I would like a table for four.';
const ANSWER = 'Of course, for which day?';
const GREETING = 'Hello from Parley.';

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

type Seen = { events: string[]; transcript: [string, string][]; agentPeak: number; agentLoudMs: number; ends: string[] };
const seen = (page: Page) => page.evaluate(() => (globalThis as unknown as { seen: Seen }).seen);

describe('a real browser (headless Chromium) talks to an agent through the embed script', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  let site: Server;
  let siteUrl: string;
  let browser: Browser;
  const hooks = new WebhookReceiver();
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });
  const llm = new FakeOpenAiServer();

  beforeAll(async () => {
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
    await api.post('/v1/webhook_endpoints', { url: await hooks.start(), events: ['call.started', 'call.ended'] });
    site = customerSite(platform.baseUrl, api);
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    // 127.0.0.1 is a secure context: the page may ask for the microphone over plain http.
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
    browser = await launchChromium(QUESTION);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => site?.close(r));
    await platform?.stop();
    await deepgram.stop();
    await llm.stop();
    await hooks.stop();
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
      expect((await hooks.next('call.ended', callId)).data).toMatchObject({ end_reason: 'completed' });
      expect((await hooks.next('call.started', callId)).data).toMatchObject({ direction: 'web' });
      const transcript = await api.get(`/v1/calls/${callId}/transcript`);
      expect(JSON.stringify(transcript.body)).toContain(QUESTION);
      expect(JSON.stringify(transcript.body)).toContain(ANSWER);
    } finally {
      await page.close();
    }
  }, 90_000);

  it('drives a keypad agent with the page’s keypresses', async () => {
    const { body: spec, menu, support } = keypadAgent('Browser keypad');
    const agent = await api.post('/v1/agents', spec);
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
      expect((await hooks.next('call.ended', callId)).data).toMatchObject({ end_reason: 'completed', turns: 3 });
    } finally {
      await page.close();
    }
  }, 90_000);
});
