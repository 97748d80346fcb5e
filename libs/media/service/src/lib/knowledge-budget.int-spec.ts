import { performance } from 'node:perf_hooks';
import { register } from 'prom-client';
import { FakeChatCompletionBody } from '@parley/llm';
import { callerSpeechMulaw } from '@parley/speech';
import type { AgentSpec, KnowledgeHit, KnowledgeQuery, KnowledgeSearch } from '@parley/voice-engine';
import { until } from './testing/caller-line';
import { closeAll, placeCall } from './testing/phone-call';

/*
 * The turn's knowledge budget over the real stack (the harness of conversation.int-spec.ts: a Twilio stream to the
 * media worker, the real Deepgram, ElevenLabs and OpenAI-compatible adapters against local fakes). The knowledge
 * search is the call session's dependency (the media worker's gRPC search in production), here one answering as
 * slowly or as quickly as the scenario says.
 */

const BUDGET_MS = 100;
/** The bound: the model's request within the budget plus this of the caller's end of turn. */
const MARGIN_MS = 50;
const QUESTION = 'Can I still return the kettle I bought last month?';
const ANSWER = 'Let me check that for you.';

const PASSAGE: KnowledgeHit = {
  documentId: 'doc_returns',
  knowledgeBaseId: 'kb_policies',
  title: 'Returns policy',
  heading: 'Returns',
  text: 'Any item can be returned within 30 days of delivery.',
  score: 0.8,
};

/** A knowledge search answering PASSAGE after `delayMs`, or failing when aborted first; what it was asked, when. */
class TimedSearch implements KnowledgeSearch {
  readonly asked: { query: KnowledgeQuery; at: number; abortedAt?: number }[] = [];
  constructor(private readonly delayMs: number) {}

  search(query: KnowledgeQuery): Promise<KnowledgeHit[]> {
    const asked: { query: KnowledgeQuery; at: number; abortedAt?: number } = { query, at: performance.now() };
    this.asked.push(asked);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve([PASSAGE]), this.delayMs);
      query.signal.addEventListener(
        'abort',
        () => {
          asked.abortedAt = performance.now();
          clearTimeout(timer);
          reject(new Error('aborted'));
        },
        { once: true },
      );
    });
  }
}

/** A custom agent that searches its base each turn within BUDGET_MS. */
const agent: AgentSpec = {
  mode: 'conversation',
  autonomy: 'custom',
  capabilities: { search_knowledge: true, retrieval_timeout_ms: BUDGET_MS, end_call: true },
  knowledge_base_id: 'kb_policies',
  languages: [{ code: 'en-US', greeting: 'Hello.', system_prompt: 'You answer questions about returns.', stt_provider: 'deepgram', tts_provider: 'elevenlabs', voice_id: 'voice-ada' }],
  conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
} as AgentSpec;
const effective = { autonomy: 'custom', capabilities: agent.capabilities, knowledge_base_ids: ['kb_policies'] };

/** The model's streamed answers, each with the time (performance.now()) its request arrived. */
function answering() {
  const requests: { body: FakeChatCompletionBody; at: number }[] = [];
  const handler = (body: FakeChatCompletionBody) => {
    requests.push({ body, at: performance.now() });
    return ANSWER;
  };
  return { requests, handler };
}

const passagesIn = (body: FakeChatCompletionBody) =>
  body.messages.filter((m) => m.role === 'system' && String(m.content).startsWith('Passages from the knowledge base'));

async function timeouts(): Promise<number> {
  const metric = await register.getSingleMetric('parley_engine_knowledge_lookups_total')?.get();
  return metric?.values.find((v) => v.labels['outcome'] === 'timeout')?.value ?? 0;
}

afterEach(closeAll);
afterAll(closeAll);

describe('the knowledge lookup within the turn’s budget (Twilio stream, real adapters, fake vendors)', () => {
  it('answers without grounding within budget + 50 ms of the end of the caller’s turn when the search is slower than the budget: no passages, no grounding, the miss counted', async () => {
    const search = new TimedSearch(2000);
    const model = answering();
    const missed = await timeouts();
    const c = await placeCall({ spec: agent, effective, utterances: [QUESTION], llm: model.handler, knowledge: () => search });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(QUESTION));
    const answer = await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    // The lookup was the caller's words in the agent's base, started at the end of the turn and cut at the budget.
    const endOfTurn = c.control.turnsOf('user')[0];
    expect(endOfTurn.text).toBe(QUESTION);
    expect(search.asked).toHaveLength(1);
    const [lookup] = search.asked;
    expect(lookup.query).toMatchObject({ baseIds: ['kb_policies'], query: QUESTION });
    const cut = (lookup.abortedAt ?? Infinity) - lookup.at;
    expect(cut).toBeGreaterThanOrEqual(BUDGET_MS - 5);
    expect(cut).toBeLessThan(BUDGET_MS + MARGIN_MS);

    // The model was asked once, within budget + 50 ms of the turn's end as the calls service recorded it (the turn
    // is reported when the engine ends it, before the lookup starts), and without passages.
    expect(model.requests).toHaveLength(1);
    const [request] = model.requests;
    const waited = request.at - endOfTurn.at;
    expect(waited).toBeGreaterThanOrEqual(BUDGET_MS - 5);
    expect(waited).toBeLessThanOrEqual(BUDGET_MS + MARGIN_MS);
    expect(request.at - lookup.at).toBeLessThanOrEqual(BUDGET_MS + MARGIN_MS);
    expect(passagesIn(request.body)).toEqual([]);
    expect(request.body.messages.at(-1)).toEqual({ role: 'user', content: QUESTION });
    // The search tool is still offered: the model may look with its own query.
    expect(request.body.tools?.map((t) => t.function.name)).toContain('search_knowledge_base');

    // Spoken and recorded without grounding; the miss is counted.
    expect(answer).toMatchObject({ text: ANSWER, grounding: [] });
    expect(c.control.turns.every((t) => t.grounding.length === 0)).toBe(true);
    expect(await timeouts()).toBe(missed + 1);
  }, 20_000);

  it('grounds the answer when the search answers within the budget: the passage in a system message, the document on the turn', async () => {
    const search = new TimedSearch(10);
    const model = answering();
    const c = await placeCall({ spec: agent, effective, utterances: [QUESTION], llm: model.handler, knowledge: () => search });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(QUESTION));
    const answer = await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    expect(search.asked[0].abortedAt).toBeUndefined();
    const [request] = model.requests;
    expect(passagesIn(request.body).map((m) => m.content)).toEqual([expect.stringContaining('[1] Returns policy — Returns\nAny item can be returned within 30 days of delivery.')]);
    expect(answer).toMatchObject({ text: ANSWER, grounding: [{ document_id: 'doc_returns', knowledge_base_id: 'kb_policies', title: 'Returns policy', score: 0.8 }] });
  }, 20_000);
});
