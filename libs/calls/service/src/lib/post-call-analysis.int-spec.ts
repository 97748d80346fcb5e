import { ClientGrpc } from '@nestjs/microservices';
import { of, throwError } from 'rxjs';
import { DataSource } from 'typeorm';
import { CallEnded, SUBJECTS } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { FakeLlm, LlmError } from '@parley/llm';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallsDomain, NewCall, toCallMessage } from './calls.domain';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { POST_CALL_MAX_ATTEMPTS, PostCallAnalysis } from './post-call-analysis';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 50, POST_CALL_MODEL: 'post-call-default', PUBLIC_URL: 'https://parley.example' });

const FIELDS = [
  { name: 'caller_name', description: 'The caller’s first name' },
  { name: 'party_size', description: 'How many people the booking is for', type: 'number' },
  { name: 'vip', description: 'Whether the caller said they are a member', type: 'boolean' },
  { name: 'outcome', description: 'How the call ended', type: 'enum', options: ['booked', 'not_booked', 'unclear'] },
];

/** The agents service as the calls service sees it: each agent id with its own `post_call` block. */
const POST_CALL: Record<string, unknown> = {
  agt_default: undefined,
  agt_full: { extraction: FIELDS },
  agt_no_summary: { summary: false, model: 'agent-model', extraction: [FIELDS[3]] },
  agt_off: { summary: false, extraction: [] },
};
let agentsDown = false;
const agents = {
  getService: () => ({
    getAgent: (req: { account_id: string; id: string }) => {
      if (agentsDown) return throwError(() => ({ code: 14, details: 'connection refused' }));
      if (req.account_id !== 'acc_1' || !(req.id in POST_CALL)) {
        return throwError(() => ({ code: 5, details: JSON.stringify({ code: 'not_found', message: 'No such agent.' }) }));
      }
      const postCall = POST_CALL[req.id];
      return of({ agent: { id: req.id, spec_json: JSON.stringify({ name: 'Ada', ...(postCall ? { post_call: postCall } : {}) }), effective_json: '{}' } });
    },
  }),
} as unknown as ClientGrpc;

const newCall = (agentId: string): NewCall => ({
  accountId: 'acc_1',
  agentId,
  direction: 'outbound',
  to: '+15550100000',
  from: '+15550109999',
  status: 'queued',
  carrier: 'twilio',
  carrierCallId: null,
  recordingEnabled: false,
  variables: {},
  metadata: {},
});

const JSON_ANSWER = JSON.stringify({
  summary: 'Ada booked a table for four on Friday.',
  extracted: { caller_name: 'Ada', party_size: '4', vip: 'yes', outcome: 'Booked' },
});

describe('post-call analysis (real PostgreSQL, in-process bus, fake LLM)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let bus: InProcessBus;
  let relay: OutboxRelay;
  let calls: CallsDomain;
  /** Calls whose call.ended domain event the bus hands to the analysis; the others' are acknowledged untouched. */
  const viaBus = new Map<string, PostCallAnalysis>();
  const deliveries: { callId: string; outcome: string }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('parley_postcall');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    bus = new InProcessBus();
    // What the service's BusServer does for PostCallConsumer: a durable consumer of its own call.ended.
    await bus.subscribe(SUBJECTS.callEnded.name, 'calls_parley_domain_calls_call_ended', async (m) => {
      const event = m.payload as CallEnded;
      const analysis = viaBus.get(event.call_id);
      if (!analysis) return;
      try {
        deliveries.push({ callId: event.call_id, outcome: await analysis.onCallEnded(event) });
      } catch (error) {
        deliveries.push({ callId: event.call_id, outcome: `failed: ${(error as Error).message}` });
        throw error;
      }
    });
    bus.open();
    relay = new OutboxRelay(dataSource, bus, { pollMs: 50 });
    calls = new CallsDomain(dataSource, relay, bus, config);
    relay.start();
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  afterEach(() => {
    agentsDown = false;
  });

  const analysisWith = (llm: FakeLlm) => new PostCallAnalysis(calls, llm, agents, config);

  async function endedCall(agentId: string, turns: [('user' | 'assistant'), string][], analysis?: PostCallAnalysis): Promise<CallEntity> {
    const call = await calls.insert(newCall(agentId));
    if (analysis) viaBus.set(call.id, analysis);
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    for (const [i, [role, text]] of turns.entries()) {
      await calls.appendTurn('acc_1', call.id, { role, text, language: 'en', startMs: i * 1000, endMs: i * 1000 + 800, interrupted: false });
    }
    return calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason: 'completed' }));
  }

  const rows = async (callId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find({ order: { seq: 'ASC' } })) as OutboxRecord[]).filter(
      (r) => (r.payload as { call_id?: string }).call_id === callId,
    );
  const webhookEvents = async (callId: string) =>
    (await rows(callId)).filter((r) => r.subject.startsWith('parley.events.')).map((r) => r.payload as { type: string; data: Record<string, unknown> });
  const analysed = async (callId: string) => (await webhookEvents(callId)).filter((e) => e.type === 'call.analysed');

  async function waitFor<T>(check: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await check();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('after call.ended, writes the summary and typed fields onto the call and enqueues call.analysed with them', async () => {
    const llm = new FakeLlm([{ text: JSON_ANSWER, model: 'post-call-default-2025' }]);
    const call = await endedCall(
      'agt_full',
      [
        ['assistant', 'Good evening, Trattoria Ada speaking.'],
        ['user', 'Hi, this is Ada, I am a member. A table for four on Friday, please.'],
        ['assistant', 'Booked: four people, Friday at eight.'],
      ],
      analysisWith(llm),
    );

    const done = await waitFor(async () => {
      const c = await calls.get('acc_1', call.id);
      return c.analysedAt ? c : undefined;
    });
    const extracted = { caller_name: 'Ada', party_size: 4, vip: true, outcome: 'booked' };
    expect(done).toMatchObject({ status: 'ended', endReason: 'completed', summary: 'Ada booked a table for four on Friday.', extracted });
    expect(done).toMatchObject({ analysisModel: 'post-call-default-2025', analysisAttempts: 0, analysisError: null });
    const message = toCallMessage(done);
    expect(message.summary).toBe('Ada booked a table for four on Friday.');
    expect(JSON.parse(message.extracted_json)).toEqual(extracted);

    // The domain event was written with call.ended (same transaction), the analysis came after it.
    const all = await rows(call.id);
    const domain = all.find((r) => r.subject === SUBJECTS.callEnded.name);
    expect(domain).toMatchObject({ messageId: `calls.call.ended:${call.id}`, payload: { account_id: 'acc_1', call_id: call.id, agent_id: 'agt_full' } });
    expect(domain?.publishedAt).not.toBeNull();
    const types = (await webhookEvents(call.id)).map((e) => e.type);
    expect(types).toEqual(['call.started', 'call.transcript.updated', 'call.transcript.updated', 'call.transcript.updated', 'call.ended', 'call.analysed']);
    const ended = (await webhookEvents(call.id)).find((e) => e.type === 'call.ended');
    expect(ended?.data).not.toHaveProperty('summary');
    expect(ended?.data).not.toHaveProperty('extracted');
    expect((await analysed(call.id))[0].data).toEqual({ summary: 'Ada booked a table for four on Friday.', extracted, model: 'post-call-default-2025' });

    // One JSON-mode request with the deployment's model, the transcript and every field.
    expect(llm.requests).toHaveLength(1);
    const request = llm.requests[0];
    expect(request).toMatchObject({ model: 'post-call-default', json: true, temperature: 0 });
    expect(request.messages[1].content).toContain('Caller: Hi, this is Ada, I am a member.');
    expect(request.messages[1].content).toContain('Agent: Booked: four people, Friday at eight.');
    for (const f of FIELDS) expect(request.messages[0].content).toContain(JSON.stringify(f.name));
    expect(request.messages[0].content).toContain('one of "booked", "not_booked", "unclear"');
  });

  it('with the summary off, asks for the fields only (with the agent’s model) and sends summary null', async () => {
    const llm = new FakeLlm([JSON.stringify({ summary: 'ignored', extracted: { outcome: 'nonsense' } })]);
    const call = await endedCall('agt_no_summary', [['user', 'No thanks, not today.']]);

    expect(await analysisWith(llm).onCallEnded({ account_id: 'acc_1', call_id: call.id, agent_id: 'agt_no_summary' })).toBe('analysed');
    expect(llm.requests[0].model).toBe('agent-model');
    expect(llm.requests[0].messages[0].content).not.toContain('"summary"');
    // An enum value outside the options is null.
    expect((await analysed(call.id)).map((e) => e.data)).toEqual([{ summary: null, extracted: { outcome: null }, model: 'agent-model' }]);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ summary: null, extracted: { outcome: null }, analysisModel: 'agent-model' });
  });

  it('with the summary off and no fields, asks nothing, writes nothing and sends no call.analysed', async () => {
    const llm = new FakeLlm();
    const call = await endedCall('agt_off', [['user', 'Hello?']]);

    expect(await analysisWith(llm).onCallEnded({ account_id: 'acc_1', call_id: call.id, agent_id: 'agt_off' })).toBe('nothing_to_do');
    expect(llm.requests).toHaveLength(0);
    expect(await analysed(call.id)).toEqual([]);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ analysedAt: null, summary: null, extracted: null });
  });

  it('for a call with no turns, asks no model and sends call.analysed with summary null and every field null', async () => {
    const llm = new FakeLlm();
    const call = await endedCall('agt_full', []);

    expect(await analysisWith(llm).onCallEnded({ account_id: 'acc_1', call_id: call.id, agent_id: 'agt_full' })).toBe('analysed');
    expect(llm.requests).toHaveLength(0);
    const nulls = { caller_name: null, party_size: null, vip: null, outcome: null };
    expect((await analysed(call.id)).map((e) => e.data)).toEqual([{ summary: null, extracted: nulls, model: 'post-call-default' }]);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ summary: null, extracted: nulls, analysisModel: 'post-call-default' });
  });

  it('uses the defaults (summary only) for an agent without a post_call block or one deleted since', async () => {
    const llm = new FakeLlm([JSON.stringify({ summary: 'A short call.' }), JSON.stringify({ summary: 'Another short call.' })]);
    const analysis = analysisWith(llm);
    const plain = await endedCall('agt_default', [['user', 'Just checking.']]);
    const deleted = await endedCall('agt_deleted', [['user', 'Just checking again.']]);

    await analysis.onCallEnded({ account_id: 'acc_1', call_id: plain.id, agent_id: 'agt_default' });
    await analysis.onCallEnded({ account_id: 'acc_1', call_id: deleted.id, agent_id: 'agt_deleted' });
    expect((await analysed(plain.id))[0].data).toEqual({ summary: 'A short call.', extracted: {}, model: 'post-call-default' });
    expect((await analysed(deleted.id))[0].data).toEqual({ summary: 'Another short call.', extracted: {}, model: 'post-call-default' });
  });

  it('retries a failed model call through the bus’s redelivery, then writes the analysis once', async () => {
    const llm = new FakeLlm([new LlmError('fake: 503 from the model server', { code: 'http', status: 503 }), JSON_ANSWER]);
    const call = await endedCall('agt_full', [['user', 'A table for four, please.']], analysisWith(llm));

    const done = await waitFor(async () => {
      const c = await calls.get('acc_1', call.id);
      return c.analysedAt ? c : undefined;
    });
    expect(deliveries.filter((d) => d.callId === call.id).map((d) => d.outcome)).toEqual(['failed: fake: 503 from the model server', 'analysed']);
    expect(done).toMatchObject({ status: 'ended', analysisAttempts: 1, analysisError: null, summary: 'Ada booked a table for four on Friday.' });
    expect(await analysed(call.id)).toHaveLength(1);
    const domain = (await rows(call.id)).find((r) => r.subject === SUBJECTS.callEnded.name);
    expect(domain).toMatchObject({ attempts: 2 });
  });

  it(`gives up after ${POST_CALL_MAX_ATTEMPTS} failed attempts: records the error, acknowledges, never touches the status`, async () => {
    const llm = new FakeLlm([], { fallback: new LlmError('fake: connection refused', { code: 'connection' }) });
    const analysis = analysisWith(llm);
    const call = await endedCall('agt_full', [['user', 'Hello?']]);
    const event = { account_id: 'acc_1', call_id: call.id, agent_id: 'agt_full' };

    for (let attempt = 1; attempt < POST_CALL_MAX_ATTEMPTS; attempt++) {
      await expect(analysis.onCallEnded(event)).rejects.toThrow('connection refused');
      expect(await calls.get('acc_1', call.id)).toMatchObject({ analysisAttempts: attempt, analysisError: null });
    }
    expect(await analysis.onCallEnded(event)).toBe('given_up');
    const after = await calls.get('acc_1', call.id);
    expect(after).toMatchObject({ status: 'ended', endReason: 'completed', analysisAttempts: POST_CALL_MAX_ATTEMPTS, analysedAt: null, summary: null });
    expect(after.analysisError).toContain('connection refused');
    expect(after.endedAt).toEqual(call.endedAt);
    expect(await analysed(call.id)).toEqual([]);

    // A later redelivery does nothing.
    expect(await analysis.onCallEnded(event)).toBe('given_up');
    expect(llm.requests).toHaveLength(POST_CALL_MAX_ATTEMPTS);
  });

  it('counts an agents service outage as a failed attempt', async () => {
    const llm = new FakeLlm([JSON_ANSWER]);
    const analysis = analysisWith(llm);
    const call = await endedCall('agt_full', [['user', 'Hello?']]);
    const event = { account_id: 'acc_1', call_id: call.id, agent_id: 'agt_full' };

    agentsDown = true;
    await expect(analysis.onCallEnded(event)).rejects.toMatchObject({ code: 'service_unavailable' });
    agentsDown = false;
    expect(await analysis.onCallEnded(event)).toBe('analysed');
    expect(await calls.get('acc_1', call.id)).toMatchObject({ analysisAttempts: 1, summary: 'Ada booked a table for four on Friday.' });
  });

  it('ignores a redelivered event for an analysed call, and writes one analysis when two deliveries race', async () => {
    const llm = new FakeLlm([], { fallback: JSON_ANSWER });
    const analysis = analysisWith(llm);
    const call = await endedCall('agt_full', [['user', 'A table for four.']]);
    const event = { account_id: 'acc_1', call_id: call.id, agent_id: 'agt_full' };

    const raced = await Promise.all([analysis.onCallEnded(event), analysis.onCallEnded(event)]);
    expect([...raced].sort()).toEqual(['already_done', 'analysed']);
    const requests = llm.requests.length;
    expect(await analysis.onCallEnded(event)).toBe('already_done');
    expect(llm.requests).toHaveLength(requests);
    expect(await analysed(call.id)).toHaveLength(1);
  });

  it('sends the domain event for an answered call that ended or failed, never for one that was never answered', async () => {
    const hasDomainEvent = async (callId: string) => (await rows(callId)).some((r) => r.subject === SUBJECTS.callEnded.name);
    const failedAfterAnswer = await calls.insert(newCall('agt_full'));
    await calls.transition('acc_1', failedAfterAnswer.id, () => ({ status: 'in_progress' }));
    await calls.transition('acc_1', failedAfterAnswer.id, () => ({ status: 'failed', endReason: 'no_media' }));
    const canceled = await calls.insert(newCall('agt_full'));
    await calls.transition('acc_1', canceled.id, () => ({ status: 'ended', endReason: 'canceled' }));
    const refused = await calls.insert(newCall('agt_full'));
    await calls.transition('acc_1', refused.id, () => ({ status: 'failed', endReason: 'carrier_error' }));

    expect(await hasDomainEvent(failedAfterAnswer.id)).toBe(true);
    expect(await hasDomainEvent(canceled.id)).toBe(false);
    expect(await hasDomainEvent(refused.id)).toBe(false);
    expect(await analysisWith(new FakeLlm()).onCallEnded({ account_id: 'acc_1', call_id: 'call_missing', agent_id: 'agt_full' })).toBe('gone');
  });
});
