import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeChatCompletionBody } from '@parley/llm';
import { say } from './support/caller-speech';
import { PhonePlatform, startPhonePlatform } from './support/phone-platform';
import { until } from './support/until';

const KEY = 'vsk_usage_owner_key_00000001';
const GREETING = 'Hello, this is the bakery.';
const QUESTION = 'When do you open on Sunday?';
const ANSWER = 'We open at eight on Sunday mornings and close at noon.';

/** The operator's prices (PRICES_FILE): every vendor this call uses has one. */
const PRICES = {
  currency: 'EUR',
  carrier: { twilio: '0.0140' },
  stt: { deepgram: '0.0059' },
  llm: { '*': { input: '0.15', output: '0.60' } },
  tts: { local: '30' },
};

interface CallBody {
  id: string;
  status: string;
  carrier_call_id: string;
  usage: { carrier_seconds: number; carrier_minutes: number; stt_seconds: number; llm_input_tokens: number; llm_output_tokens: number; tts_characters: number };
  cost: { amount: number; currency: string | null; breakdown: { carrier: number; stt: number; llm: number; tts: number } };
}

const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

/**
 * Usage and cost on the running platform (issue 22, parts 2 and 3): a phone call through Twilio (FakeTwilioServer),
 * Deepgram and an OpenAI-compatible model (fakes on their real protocols; the model's stream sends its usage chunk),
 * the offline voice. The call's usage is recorded as it runs; its cost follows the operator's price table; the
 * answer's response latency is on its transcript turn; the overview of the period has the same cost and latency.
 */
describe('usage, cost and response latency of a phone call (standalone)', () => {
  let phone: PhonePlatform;

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'parley-prices-')), 'prices.json');
    writeFileSync(file, JSON.stringify(PRICES));
    phone = await startPhonePlatform(KEY, { PRICES_FILE: file });
  }, 120_000);

  afterAll(() => phone?.stop());

  it('records the call’s usage as it runs, prices it, stores the answer’s latency, and the overview reports them', async () => {
    const { api, twilio, deepgram, llm } = phone;
    const from = new Date(Date.now() - 1000).toISOString();
    const agent = await api.post('/v1/agents', {
      name: 'Bakery',
      languages: [{ code: 'en-US', greeting: GREETING, stt_provider: 'deepgram', system_prompt: 'You answer questions about the bakery.' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
    });
    expect(agent.status).toBe(201);
    deepgram.utterances(QUESTION);
    llm.reply((body: FakeChatCompletionBody) => (body.stream ? ANSWER : '{}'));

    const created = await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15550100091' });
    expect(created.status).toBe(201);
    const call = created.body as CallBody;
    expect(call.usage).toEqual({ carrier_seconds: 0, carrier_minutes: 0, stt_seconds: 0, llm_input_tokens: 0, llm_output_tokens: 0, tts_characters: 0 });
    expect(call.cost).toEqual({ amount: 0, currency: null, breakdown: { carrier: 0, stt: 0, llm: 0, tts: 0 } });
    expect(await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress')).toBe(204);
    const media = await twilio.connectMediaStream(call.carrier_call_id);
    const get = async () => (await api.get(`/v1/calls/${call.id}`)).body as CallBody;
    const transcript = async () => (await api.get(`/v1/calls/${call.id}/transcript`)).body as { turns: { role: string; text: string; response_latency_ms: number | null }[] };

    await until(async () => (await transcript()).turns.some((t) => t.text === GREETING), 'the greeting', 20_000);
    await say(media, QUESTION);
    const answer = await until(async () => (await transcript()).turns.find((t) => t.role === 'assistant' && t.text === ANSWER), 'the answer', 20_000);

    // While the call runs: the model's tokens (from its usage chunk) and the answer's characters are on the call already.
    const live = await until(async () => {
      const c = await get();
      return c.usage.llm_output_tokens > 0 && c.usage.tts_characters >= ANSWER.length ? c : undefined;
    }, 'the usage while the call runs', 20_000);
    expect(live.status).toBe('in_progress');
    expect(live.cost.currency).toBe('EUR');
    expect(live.cost.breakdown.carrier).toBe(0);
    // The model's usage as the fake API reports it: about four characters a token of the prompt and of the answer.
    const streamed = llm.requests.filter((r) => r.body.stream);
    expect(streamed).toHaveLength(1);
    expect(streamed[0].body.stream_options).toEqual({ include_usage: true });
    expect(live.usage.llm_output_tokens).toBe(Math.ceil(ANSWER.length / 4));

    // The answer's latency: the caller's end of speech to the agent's first audio; the greeting has none.
    expect(answer.response_latency_ms).toBeGreaterThan(0);
    expect(answer.response_latency_ms).toBeLessThan(10_000);
    expect((await transcript()).turns.filter((t) => t.response_latency_ms !== null)).toHaveLength(1);

    await media.stop();
    expect(await twilio.sendStatusCallback(call.carrier_call_id, 'completed')).toBe(204);
    // Ended: the carrier's minute is priced, and the post-call analysis' answer (a whole completion) adds its tokens.
    const ended = await until(async () => {
      const c = await get();
      return c.status === 'ended' && c.cost.breakdown.carrier > 0 && c.usage.llm_input_tokens > live.usage.llm_input_tokens ? c : undefined;
    }, 'the ended call’s carrier cost and post-call tokens', 30_000);
    expect(llm.requests.filter((r) => !r.body.stream)).toHaveLength(1);

    // Usage: the audio sent to Deepgram, the model's tokens, the characters synthesized, one started minute.
    expect(ended.usage.carrier_minutes).toBe(1);
    expect(ended.usage.stt_seconds).toBeGreaterThan(0);
    expect(ended.usage.stt_seconds).toBeLessThanOrEqual(ended.usage.carrier_seconds + 5);
    expect(ended.usage.llm_input_tokens).toBeGreaterThan(0);
    expect(ended.usage.tts_characters).toBeGreaterThanOrEqual(ANSWER.length);
    // Cost: each part from the usage and the price table, the amount their sum.
    const u = ended.usage;
    expect(ended.cost.currency).toBe('EUR');
    expect(ended.cost.breakdown).toEqual({
      carrier: 0.014,
      stt: expect.closeTo((u.stt_seconds / 60) * 0.0059, 6),
      llm: round6((u.llm_input_tokens * 0.15 + u.llm_output_tokens * 0.6) / 1e6),
      tts: round6((u.tts_characters * 30) / 1e6),
    });
    expect(ended.cost.amount).toBeCloseTo(ended.cost.breakdown.carrier + ended.cost.breakdown.stt + ended.cost.breakdown.llm + ended.cost.breakdown.tts, 5);

    // The overview of the period: this one call, its cost, its answer's latency, no barge-in.
    const to = new Date(Date.now() + 1000).toISOString();
    const overview = (await api.get(`/v1/analytics/overview?from=${from}&to=${to}`)).body;
    expect(overview).toMatchObject({
      calls: 1,
      answered: 1,
      cost: { currency: 'EUR', total: ended.cost.amount, average_per_call: ended.cost.amount },
      response_latency: { turns: 1, p50_ms: answer.response_latency_ms, p95_ms: answer.response_latency_ms },
      barge_in: { agent_turns: 2, count: 0, rate: 0 },
    });
    const series = (await api.get(`/v1/analytics/timeseries?from=${from}&to=${to}&bucket=hour`)).body as { data: { calls: number; cost: number; agent_turns: number }[] };
    expect(series.data.reduce((sum, b) => sum + b.cost, 0)).toBeCloseTo(ended.cost.amount, 6);
    expect(series.data.reduce((sum, b) => sum + b.agent_turns, 0)).toBe(2);
  }, 90_000);
});
