import { FakeTwilioServer } from '@parley/carrier-twilio';
import { FakeChatCompletionBody, FakeOpenAiServer } from '@parley/llm';
import { FakeDeepgramServer } from '@parley/speech';
import { ApiClient, eventually } from '@parley/testing';
import { say } from './support/caller-speech';
import { loudestFrame } from './support/phone-audio';
import { PhonePlatform, startPhonePlatform } from './support/phone-platform';
import { until } from './support/until';

const KEY = 'vsk_kcalls_owner_key_0000001';
const GREETING = 'Hello, this is the returns desk.';
const QUESTION = 'How many days do I have to return something?';
const ANSWER = 'You have 30 days from delivery to return it for a full refund.';

const HANDBOOK = `# Customer handbook

## Refund policy
You can return any item within 30 days of delivery for a full refund. Refunds are paid to the original card within
five business days of the parcel reaching our warehouse.

## Shipping
Standard shipping is free on orders over 50 euros. Express delivery costs 9 euros and arrives the next business day.
`;

interface Turn {
  role: string;
  text: string;
  grounding: { document_id: string; knowledge_base_id: string; title: string; score: number }[];
}

/**
 * Grounding on the running platform: a knowledge base created and a markdown document ingested through the API, an
 * agentic agent naming the base, a call placed through Twilio (FakeTwilioServer) whose caller asks, on the Media
 * Stream, a question the document answers (Deepgram and the model are fakes on their real protocols; the voice is
 * the offline one). The media worker searches the base over the agents service's gRPC within the turn's budget.
 */
describe('a call answered from a knowledge base on the running platform (standalone)', () => {
  let phone: PhonePlatform;
  let api: ApiClient;
  let twilio: FakeTwilioServer;
  let deepgram: FakeDeepgramServer;
  let llm: FakeOpenAiServer;

  beforeAll(async () => {
    phone = await startPhonePlatform(KEY, {
      // The budget is the point of the media service's scenario (libs/media/service knowledge-budget.int-spec); here the lookup crosses
      // gRPC on a shared 2-core machine, so the turn may wait a second for it.
      KNOWLEDGE_RETRIEVAL_TIMEOUT_MS: '1000',
    });
    ({ api, twilio, deepgram, llm } = phone);
  }, 120_000);

  afterAll(() => phone?.stop());

  it('looks the question up in the agent’s base, gives the model the chunk, speaks the answer and names the document on the transcript turn', async () => {
    const kb = await api.post('/v1/knowledge_bases', { name: 'Returns' });
    expect(kb.status).toBe(201);
    const added = await api.post(`/v1/knowledge_bases/${kb.body.id}/documents`, { title: 'Handbook', text: HANDBOOK, content_type: 'text/markdown' });
    expect(added.status).toBe(202);
    const docId = added.body.id as string;
    await eventually(
      async () => (await api.get(`/v1/knowledge_bases/${kb.body.id}/documents?status=ready`)).body.data.find((d: { id: string }) => d.id === docId),
      20_000,
      'the document to be ready',
    );

    const agent = await api.post('/v1/agents', {
      name: 'Returns desk',
      autonomy: 'agentic',
      knowledge_base_id: kb.body.id,
      languages: [{ code: 'en-US', greeting: GREETING, stt_provider: 'deepgram', system_prompt: 'You answer questions about returns.' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
    });
    expect(agent.status).toBe(201);

    deepgram.utterances(QUESTION);
    llm.reply((body: FakeChatCompletionBody) => (body.stream ? ANSWER : '{}'));
    const created = await api.post('/v1/calls', { agent_id: agent.body.id, to: '+15550100081' });
    expect(created.status).toBe(201);
    const call = created.body as { id: string; carrier_call_id: string };
    expect(await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress')).toBe(204);
    const media = await twilio.connectMediaStream(call.carrier_call_id);

    const transcript = async () => (await api.get(`/v1/calls/${call.id}/transcript`)).body as { turns: Turn[] };
    await until(async () => (await transcript()).turns.some((t) => t.text === GREETING), 'the greeting', 20_000);
    const before = media.receivedAudio().length;
    await say(media, QUESTION);
    const answered = await until(async () => (await transcript()).turns.find((t) => t.role === 'assistant' && t.text === ANSWER), 'the grounded answer', 20_000);

    // The model's streaming request carried the document's chunk, numbered, in a system message, before the history.
    const streamed = llm.requests.filter((r) => r.body.stream);
    expect(streamed).toHaveLength(1);
    const messages = streamed[0].body.messages as { role: string; content: string }[];
    const passages = messages.find((m) => m.role === 'system' && m.content.startsWith('Passages from the knowledge base'));
    expect(passages?.content).toContain('[1] Handbook — ');
    expect(passages?.content).toContain('Refund policy');
    expect(passages?.content).toMatch(/You can return any item within 30 days of delivery for a full refund\./);
    expect(messages.findIndex((m) => m === passages)).toBeLessThan(messages.findIndex((m) => m.role === 'user'));
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: QUESTION });
    // The search tool is offered beside it.
    expect((streamed[0].body.tools ?? []).map((t) => t.function.name)).toContain('search_knowledge_base');

    // Spoken: the voice's audio reached the caller after the question.
    expect(loudestFrame(media.receivedAudio().subarray(before)).rms).toBeGreaterThan(300);
    // The transcript's assistant turn names the document that grounded it; the other turns name none.
    expect(answered.grounding).toEqual([{ document_id: docId, knowledge_base_id: kb.body.id, title: 'Handbook', score: expect.any(Number) }]);
    expect(answered.grounding[0].score).toBeGreaterThan(0);
    const turns = (await transcript()).turns;
    expect(turns.map((t) => [t.role, t.text, t.grounding.length])).toEqual([
      ['assistant', GREETING, 0],
      ['user', QUESTION, 0],
      ['assistant', ANSWER, 1],
    ]);
    await media.stop();
  }, 50_000);
});
