import { register } from 'prom-client';
import type { Flow } from '@parley/contracts';
import { FakeLlm, StreamRequest } from '@parley/llm';
import { agentSettings } from './agent-settings';
import { FakeKnowledgeSearch } from './knowledge/fake-knowledge-search';
import { setup } from './testing/engine-harness';
import { ManualClock } from './clock';

const PASSAGES = [
  { documentId: 'doc_hours', knowledgeBaseId: 'kb_faq', title: 'Opening hours', heading: 'Store', text: 'The store opens at nine and closes at six, Monday to Saturday.' },
  { documentId: 'doc_returns', knowledgeBaseId: 'kb_faq', title: 'Returns policy', heading: 'Refunds', text: 'Returns are accepted within 30 days with a receipt.' },
  { documentId: 'doc_secret', knowledgeBaseId: 'kb_other', title: 'Internal', heading: '', text: 'Staff discount on returns is 20 percent.' },
];

function agent(capabilities: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}, autonomy: 'agentic' | 'custom' = 'agentic') {
  return agentSettings(
    {
      languages: [{ code: 'en-US', greeting: 'Hello.', system_prompt: 'You are Ada.', stt_provider: 'fake-stt', tts_provider: 'fake-tts' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
      knowledge_base_id: 'kb_faq',
      ...extra,
    },
    { autonomy, capabilities },
    { model: 'fake-model', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
  );
}

function call(settings: ReturnType<typeof agent>, llm: FakeLlm, delayMs = 20) {
  const clock = new ManualClock();
  const knowledge = new FakeKnowledgeSearch(clock, PASSAGES);
  knowledge.delayMs = delayMs;
  const h = setup(settings, { llm, clock, knowledge });
  const answers = () => h.turns.filter((t) => t.role === 'assistant');
  return { ...h, knowledge, answers };
}

const systemText = (request: StreamRequest | undefined) => (request?.messages ?? []).filter((m) => m.role === 'system').map((m) => m.content).join('\n');
const lookups = async (outcome: string) =>
  (await register.getSingleMetric('parley_engine_knowledge_lookups_total')?.get())?.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;

describe('voice engine: grounding answers in knowledge bases', () => {
  it('looks the caller’s words up in the agent’s bases and answers with the passages; the turn records which documents grounded it', async () => {
    const llm = new FakeLlm(['We open at nine.']);
    const c = call(agent(undefined), llm);
    void c.engine.start();
    await c.pumpUntil(() => c.answers().length === 1);
    await c.ask('When does the store open?');
    await c.pumpUntil(() => c.answers().length === 2);

    expect(c.knowledge.queries).toEqual([expect.objectContaining({ baseIds: ['kb_faq'], query: 'When does the store open?', limit: 4 })]);
    expect(systemText(llm.requests[0])).toContain('[1] Opening hours — Store\nThe store opens at nine and closes at six');
    expect(systemText(llm.requests[0])).not.toContain('Staff discount');
    expect(c.answers()[1].grounding).toEqual([{ document_id: 'doc_hours', knowledge_base_id: 'kb_faq', title: 'Opening hours', score: expect.any(Number) }]);
    expect(llm.requests[0].tools?.map((t) => t.name)).toContain('search_knowledge_base');
  });

  it('answers without grounding once the lookup overruns the turn’s budget, within the budget and 50 ms, and counts the miss', async () => {
    const before = await lookups('timeout');
    let askedAt = -1;
    const llm = new FakeLlm([], { fallback: () => ((askedAt = clockOf()), 'Let me think.') });
    const c = call(agent({ search_knowledge: true, retrieval_timeout_ms: 100 }, {}, 'custom'), llm, 5000);
    const clockOf = () => c.clock.now();
    void c.engine.start();
    await c.pumpUntil(() => c.answers().length === 1);
    await c.ask('When does the store open?');
    await c.pumpUntil(() => llm.requests.length === 1);

    const turnEnd = c.turns.find((t) => t.role === 'user')?.endMs ?? Infinity;
    expect(askedAt - turnEnd).toBeGreaterThanOrEqual(100);
    expect(askedAt - turnEnd).toBeLessThanOrEqual(150);
    expect(systemText(llm.requests[0])).not.toContain('Passages');
    expect(c.knowledge.queries[0].signal.aborted).toBe(true);
    expect(await lookups('timeout')).toBe(before + 1);
  });

  it('looks nothing up and offers no search for a custom agent without search_knowledge', async () => {
    const llm = new FakeLlm(['Hi.']);
    const c = call(agent({ end_call: true }, {}, 'custom'), llm);
    void c.engine.start();
    await c.pumpUntil(() => c.answers().length === 1);
    await c.ask('When does the store open?');
    await c.pumpUntil(() => c.answers().length === 2);
    expect(c.knowledge.queries).toEqual([]);
    expect(llm.requests[0].tools?.map((t) => t.name)).not.toContain('search_knowledge_base');
  });

  it('runs search_knowledge_base with the model’s own query and gives it the passages', async () => {
    const llm = new FakeLlm([{ toolCalls: [{ id: 't1', name: 'search_knowledge_base', arguments: '{"query":"returns receipt"}' }] }, 'Within 30 days.']);
    // A base only through the group-inherited list.
    const inherited = agentSettings(
      { languages: [{ code: 'en-US', greeting: 'Hello.', system_prompt: 'You are Ada.', stt_provider: 'fake-stt', tts_provider: 'fake-tts' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 } },
      { knowledge_base_ids: ['kb_faq'] },
      { model: 'fake-model', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    );
    expect(inherited.knowledge.baseIds).toEqual(['kb_faq']);
    const d = call(inherited, llm);
    void d.engine.start();
    await d.pumpUntil(() => d.answers().length === 1);
    await d.ask('Hello there');
    await d.pumpUntil(() => d.answers().length === 2);

    expect(d.knowledge.queries.map((q) => q.query)).toEqual(['Hello there', 'returns receipt']);
    expect(llm.requests[1].messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: 't1', content: expect.stringContaining('Returns are accepted within 30 days') });
    expect(d.answers()[1].grounding?.map((g) => g.document_id)).toEqual(['doc_returns']);
  });

  it('grounds a flow node in its own bases, and in none with an empty list (no lookup, no search tool)', async () => {
    const flow: Flow = {
      start: 'faq',
      nodes: [
        { id: 'faq', knowledge_base_ids: ['kb_other'], edges: [{ to: 'chat', type: 'always' }] },
        { id: 'chat', knowledge_base_ids: [] },
      ],
    };
    const llm = new FakeLlm([], { fallback: 'Sure.' });
    const c = call(agent(undefined, { flow, knowledge_base_ids: ['kb_other'] }), llm);
    void c.engine.start();
    await c.pumpUntil(() => c.answers().length === 1);
    await c.ask('Is there a staff discount on returns?');
    await c.pumpUntil(() => c.answers().length === 2);

    // The always edge moves to `chat` within the turn: the node answering has no bases.
    expect(c.knowledge.queries.map((q) => q.baseIds)).toEqual([['kb_other']]);
    expect(systemText(llm.requests[0])).not.toContain('Passages');
    expect(llm.requests[0].tools?.map((t) => t.name)).not.toContain('search_knowledge_base');
  });
});
