import { Browser, Page } from 'playwright-core';
import { FakeOpenAiServer } from '@parley/llm';
import { FakeDeepgramServer } from '@parley/speech';
import { ApiClient, RunningPlatform } from '@parley/testing';
import { keypadAgent } from './support/agents';
import { launchChromium } from './support/chromium';
import { until } from './support/until';

const KEY = 'vsk_devphone_browser_key_0001';
const GREETING = 'Hello from Parley.';
const QUESTION = 'I would like a table for four.';
const ANSWER = 'Of course, for which day?';

const transcript = (page: Page) => page.locator('#transcript p').allTextContents();
const heardMs = async (page: Page) => Number((await page.locator('#agentLevel').getAttribute('data-heard-ms')) ?? 0);

describe('the dev phone page in a real browser (headless Chromium), the standalone default carrier', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  let browser: Browser;
  let page: Page;
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });
  const llm = new FakeOpenAiServer();

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: { DEEPGRAM_API_KEY: 'dg-key', DEEPGRAM_BASE_URL: await deepgram.start(), LLM_BASE_URL: await llm.start(), LLM_API_KEY: 'sk-test' },
    });
    api = platform.api(KEY);
    browser = await launchChromium(QUESTION);
    page = await browser.newPage();
    // 127.0.0.1 is a secure context: the page may use the microphone over plain http.
    await page.goto(`${platform.baseUrl}/dev/phone`);
    await until(async () => (await page.locator('#link').textContent())?.includes('Connected to the dev switch'), 'the page on the switch');
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await platform?.stop();
    await deepgram.stop();
    await llm.stop();
  });

  it('rings on POST /v1/calls; answered, it hears the greeting, is heard and answered, and hangs up: completed', async () => {
    deepgram.utterances(QUESTION, QUESTION, QUESTION);
    llm.reply(() => ({ content: ANSWER }));
    const agent = await api.post('/v1/agents', { name: 'Dev desk', languages: [{ code: 'en-US', greeting: GREETING, stt_provider: 'deepgram' }] });
    const call = (await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15555550111' })).body;
    expect(call.carrier).toBe('dev');
    // Dialled already: still queued, or ringing when the dev switch's answer came before the response.
    expect(['queued', 'ringing']).toContain(call.status);

    const ring = page.locator('.ring', { hasText: '+15555550111' });
    await ring.waitFor();
    expect(await ring.textContent()).toContain(agent.body.id);
    await ring.getByRole('button', { name: 'Answer', exact: true }).click();

    await until(async () => (await transcript(page)).includes(`Agent: ${GREETING}`), 'the greeting on the page');
    await until(async () => (await heardMs(page)) >= 500, 'the greeting heard in the page');
    await until(async () => (await transcript(page)).includes(`You: ${QUESTION}`), 'the callee heard by the agent');
    const before = await heardMs(page);
    await until(async () => (await transcript(page)).includes(`Agent: ${ANSWER}`), 'the answer');
    await until(async () => (await heardMs(page)) >= before + 500, 'the answer heard in the page');

    await page.getByRole('button', { name: 'Hang up' }).click();
    const ended = await until(async () => {
      const record = (await api.get(`/v1/calls/${call.id}`)).body;
      return record.status === 'ended' ? record : undefined;
    }, 'the call to end');
    expect(ended).toMatchObject({ end_reason: 'completed', direction: 'outbound', carrier: 'dev' });
  }, 90_000);

  it('calls a keypad agent from the page (an inbound call) and walks its menu with the page’s keypad', async () => {
    const { body: spec, menu, support } = keypadAgent('Dev keypad');
    const agent = await api.post('/v1/agents', spec);
    expect(agent.status).toBe(201);
    await page.locator('#agentId').fill(agent.body.id);
    await page.getByRole('button', { name: 'Call', exact: true }).click();
    await until(async () => (await transcript(page)).includes(`Agent: ${menu}`), 'the menu');
    await page.locator('#keypad').getByRole('button', { name: '2', exact: true }).click();
    await until(async () => (await transcript(page)).includes(`Agent: ${support}`), 'the support line');
    const calls = (await api.get('/v1/calls')).body.data as { id: string; agent_id: string; direction: string; from: string; to: string }[];
    const inbound = calls.find((c) => c.agent_id === agent.body.id);
    expect(inbound).toMatchObject({ direction: 'inbound', from: '+15555550123', to: '+15555550100' });
    await until(async () => (await api.get(`/v1/calls/${inbound?.id}`)).body.status === 'ended', 'the call to end');
    expect(JSON.stringify((await api.get(`/v1/calls/${inbound?.id}/transcript`)).body)).toContain(support);
  }, 60_000);

  it('lets a call nobody answers ring out: no_answer after the agent’s ring time', async () => {
    const agent = await api.post('/v1/agents', { name: 'Quick ring', languages: [{ code: 'en-US', stt_provider: 'deepgram' }], ring_seconds: 2 });
    const call = (await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15555550122' })).body;
    const ring = page.locator('.ring', { hasText: '+15555550122' });
    await ring.waitFor();
    await ring.waitFor({ state: 'detached', timeout: 15_000 });
    await until(async () => (await api.get(`/v1/calls/${call.id}`)).body.end_reason === 'no_answer', 'no_answer');
  }, 60_000);
});
