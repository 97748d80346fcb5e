import { ClientGrpc } from '@nestjs/microservices';
import { of, throwError } from 'rxjs';
import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { EndReason, SuccessCriteria } from '@parley/contracts';
import { FakeLlm, LlmError } from '@parley/llm';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { ANALYSIS_WAITS_FOR_MEDIA_MS, CallsDomain, toCallMessage } from './calls.domain';
import { CallsRepository, NewCall } from './calls.repository';
import { CallUsage } from './call-usage';
import { CallUsageRepository } from './call-usage.repository';
import { CallEntity, CallTurnEntity } from './entities';
import { parsePrices } from './price-table';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { POST_CALL_CONCURRENCY, POST_CALL_LEASE_MS, POST_CALL_MAX_ATTEMPTS, POST_CALL_RETRY_DELAYS_MS, PostCallAnalysis } from './post-call-analysis';

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

describe('post-call analysis worker (real PostgreSQL, fake LLM, injected clock)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let bus: InProcessBus;
  let relay: OutboxRelay;
  let calls: CallsDomain;
  const mediaWorkers = new FakeMediaWorkers();
  /** The workers' clock: the wall clock until a test sets it (to reach a back-off or a lease's end). */
  let fixed: Date | undefined;
  const clock = () => fixed ?? new Date();

  beforeAll(async () => {
    db = await createTestDatabase('parley_postcall');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus, { pollMs: 50 });
    calls = new CallsDomain(new CallsRepository(dataSource), relay, bus, config, mediaWorkers.commands);
    relay.start();
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  beforeEach(async () => {
    // Every test starts with nothing due, so a worker's pass sees only the calls its test ends.
    await dataSource.query(`UPDATE calls SET analysis_due_at = NULL`);
    fixed = undefined;
  });

  afterEach(() => {
    agentsDown = false;
  });

  const workerWith = (llm: FakeLlm) => new PostCallAnalysis(calls, llm, agents, config, clock);

  /**
   * A call answered and ended with `turns`; `mediaAttached`: a media worker's stream was still reporting at the end;
   * `success`: the agent's post_call.success when the call was created; `endReason`: default completed.
   */
  async function endedCall(
    agentId: string,
    turns: [('user' | 'assistant'), string][],
    { mediaAttached = false, success = undefined as SuccessCriteria | undefined, endReason = 'completed' as EndReason } = {},
  ): Promise<CallEntity> {
    const call = await calls.insert({ ...newCall(agentId), successCriteria: success });
    await calls.transition('acc_1', call.id, () => ({ status: 'in_progress' }));
    if (mediaAttached) await calls.touchMedia('acc_1', call.id);
    for (const [i, [role, text]] of turns.entries()) {
      await calls.appendTurn('acc_1', call.id, { role, text, language: 'en', startMs: i * 1000, endMs: i * 1000 + 800, interrupted: false });
    }
    return calls.transition('acc_1', call.id, () => ({ status: 'ended', endReason }));
  }

  const rows = async (callId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find({ order: { seq: 'ASC' } })) as OutboxRecord[]).filter(
      (r) => (r.payload as { call_id?: string }).call_id === callId,
    );
  const webhookEvents = async (callId: string) =>
    (await rows(callId)).filter((r) => r.subject.startsWith('parley.events.')).map((r) => r.payload as { type: string; data: Record<string, unknown> });
  const analysed = async (callId: string) => (await webhookEvents(callId)).filter((e) => e.type === 'call.analysed');
  const outcomes = async (worker: PostCallAnalysis) => (await worker.runDue()).map((r) => r.outcome);
  /** Sets the clock to `ms` after `from`. */
  const at = (from: Date, ms: number) => (fixed = new Date(from.getTime() + ms));

  it('schedules the analysis with the end, then writes the summary and typed fields onto the call with call.analysed', async () => {
    const llm = new FakeLlm([{ text: JSON_ANSWER, model: 'post-call-default-2025' }]);
    const call = await endedCall('agt_full', [
      ['assistant', 'Good evening, Trattoria Ada speaking.'],
      ['user', 'Hi, this is Ada, I am a member. A table for four on Friday, please.'],
      ['assistant', 'Booked: four people, Friday at eight.'],
    ]);
    // Same transaction as the end: due at the end, no domain event, no analysis yet.
    expect(call.analysisDueAt?.getTime()).toBe(call.endedAt?.getTime());
    expect((await rows(call.id)).filter((r) => !r.subject.startsWith('parley.events.'))).toEqual([]);

    expect(await workerWith(llm).runDue()).toEqual([{ callId: call.id, outcome: 'analysed' }]);
    const done = await calls.get('acc_1', call.id);
    const extracted = { caller_name: 'Ada', party_size: 4, vip: true, outcome: 'booked' };
    expect(done).toMatchObject({ status: 'ended', endReason: 'completed', summary: 'Ada booked a table for four on Friday.', extracted });
    expect(done).toMatchObject({ analysisModel: 'post-call-default-2025', analysisAttempts: 0, analysisError: null, analysisDueAt: null });
    const message = toCallMessage(done);
    expect(message.summary).toBe('Ada booked a table for four on Friday.');
    expect(JSON.parse(message.extracted_json)).toEqual(extracted);

    const types = (await webhookEvents(call.id)).map((e) => e.type);
    expect(types).toEqual(['call.started', 'call.transcript.updated', 'call.transcript.updated', 'call.transcript.updated', 'call.ended', 'call.analysed']);
    const ended = (await webhookEvents(call.id)).find((e) => e.type === 'call.ended');
    expect(ended?.data).not.toHaveProperty('summary');
    expect(ended?.data).not.toHaveProperty('extracted');
    expect((await analysed(call.id))[0].data).toEqual({ summary: 'Ada booked a table for four on Friday.', extracted, model: 'post-call-default-2025', successful: null });

    // One JSON-mode request with the deployment's model, the transcript and every field.
    expect(llm.requests).toHaveLength(1);
    const request = llm.requests[0];
    expect(request).toMatchObject({ model: 'post-call-default', json: true, temperature: 0 });
    expect(request.messages[1].content).toContain('Caller: Hi, this is Ada, I am a member.');
    expect(request.messages[1].content).toContain('Agent: Booked: four people, Friday at eight.');
    for (const f of FIELDS) expect(request.messages[0].content).toContain(JSON.stringify(f.name));
    expect(request.messages[0].content).toContain('one of "booked", "not_booked", "unclear"');
    // Nothing due any more.
    expect(await workerWith(llm).runDue()).toEqual([]);
  });

  it('records the tokens the model reported with the call’s usage and cost (a line per attempt)', async () => {
    const prices = parsePrices({ llm: { 'post-call-default': { input: '1', output: '2' } } });
    const usage = new CallUsage(new CallUsageRepository(dataSource), prices);
    const llm = new FakeLlm([{ text: JSON_ANSWER, model: 'post-call-default-2025', usage: { inputTokens: 1000, outputTokens: 200 } }]);
    const call = await endedCall('agt_full', [['user', 'A table for four on Friday, please.']]);

    expect(await new PostCallAnalysis(calls, llm, agents, config, clock, usage).runDue()).toEqual([{ callId: call.id, outcome: 'analysed' }]);
    expect(toCallMessage(await calls.get('acc_1', call.id))).toMatchObject({
      usage: { llm_input_tokens: 1000, llm_output_tokens: 200 },
      // 1000 × 1/M + 200 × 2/M, priced by the model asked for (not the dated one the provider reported).
      cost: { llm: '0.0014', amount: '0.0014', currency: 'USD' },
    });
    expect(await dataSource.query(`SELECT stream_id, kind, provider, model, quantity::int FROM calls.call_usage WHERE call_id = $1 ORDER BY kind`, [call.id])).toEqual([
      { stream_id: 'post-call:1', kind: 'llm_input_tokens', provider: llm.name, model: 'post-call-default', quantity: 1000 },
      { stream_id: 'post-call:1', kind: 'llm_output_tokens', provider: llm.name, model: 'post-call-default', quantity: 200 },
    ]);
  });

  it('waits for a media stream still attached at the end, so the turns it writes after the end are analysed', async () => {
    const llm = new FakeLlm([{ text: JSON_ANSWER, model: 'post-call-default-2025' }]);
    // The caller hangs up: the carrier's callback ends the call while the worker still flushes the last turn.
    const ended = await endedCall('agt_full', [['assistant', 'Good evening, Trattoria Ada.']], { mediaAttached: true });
    expect(ended.analysisDueAt?.getTime()).toBe(ended.endedAt!.getTime() + ANALYSIS_WAITS_FOR_MEDIA_MS);
    expect(await workerWith(llm).runDue()).toEqual([]);
    await calls.appendTurn('acc_1', ended.id, { role: 'user', text: 'A table for four on Friday, please.', language: 'en', startMs: 1000, endMs: 2000, interrupted: false });
    await calls.mediaStopped('acc_1', ended.id);

    expect(await workerWith(llm).runDue()).toEqual([{ callId: ended.id, outcome: 'analysed' }]);
    expect(llm.requests[0].messages[1].content).toContain('Caller: A table for four on Friday, please.');
  });

  it('analyses a call whose attached stream never reports its stop once the wait is over, and a claimed one is not pulled forward', async () => {
    const llm = new FakeLlm([{ text: JSON_ANSWER, model: 'post-call-default-2025' }]);
    const ended = await endedCall('agt_full', [['user', 'Hello?']], { mediaAttached: true });

    at(ended.endedAt!, ANALYSIS_WAITS_FOR_MEDIA_MS - 1);
    expect(await workerWith(llm).runDue()).toEqual([]);
    const lease = new Date(Date.now() + 600_000);
    expect(await calls.claimDueAnalyses(new Date(ended.endedAt!.getTime() + ANALYSIS_WAITS_FOR_MEDIA_MS), 10, lease)).toHaveLength(1);
    // A late stop does not make a claimed analysis due again (the claim's lease stands).
    await calls.mediaStopped('acc_1', ended.id);
    expect((await calls.get('acc_1', ended.id)).analysisDueAt?.getTime()).toBe(lease.getTime());
  });

  it('with the summary off, asks for the fields only (with the agent’s model) and sends summary null', async () => {
    const llm = new FakeLlm([JSON.stringify({ summary: 'ignored', extracted: { outcome: 'nonsense' } })]);
    const call = await endedCall('agt_no_summary', [['user', 'No thanks, not today.']]);

    expect(await outcomes(workerWith(llm))).toEqual(['analysed']);
    expect(llm.requests[0].model).toBe('agent-model');
    expect(llm.requests[0].messages[0].content).not.toContain('"summary"');
    // An enum value outside the options is null.
    expect((await analysed(call.id)).map((e) => e.data)).toEqual([{ summary: null, extracted: { outcome: null }, model: 'agent-model', successful: null }]);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ summary: null, extracted: { outcome: null }, analysisModel: 'agent-model' });
  });

  it('with the summary off and no fields, asks nothing, writes nothing, sends no call.analysed and ends the schedule', async () => {
    const llm = new FakeLlm();
    const call = await endedCall('agt_off', [['user', 'Hello?']]);

    expect(await outcomes(workerWith(llm))).toEqual(['nothing_to_do']);
    expect(llm.requests).toHaveLength(0);
    expect(await analysed(call.id)).toEqual([]);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ analysedAt: null, summary: null, extracted: null, analysisDueAt: null });
    at(new Date(), 24 * 3600_000);
    expect(await workerWith(llm).runDue()).toEqual([]);
  });

  it('for a call with no turns, asks no model and sends call.analysed with summary null and every field null', async () => {
    const llm = new FakeLlm();
    const call = await endedCall('agt_full', []);

    expect(await outcomes(workerWith(llm))).toEqual(['analysed']);
    expect(llm.requests).toHaveLength(0);
    const nulls = { caller_name: null, party_size: null, vip: null, outcome: null };
    expect((await analysed(call.id)).map((e) => e.data)).toEqual([{ summary: null, extracted: nulls, model: 'post-call-default', successful: null }]);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ summary: null, extracted: nulls, analysisModel: 'post-call-default' });
  });

  it('uses the defaults (summary only) for an agent without a post_call block or one deleted since', async () => {
    const llm = new FakeLlm([], { fallback: (r) => JSON.stringify({ summary: r.messages[1].content.includes('again') ? 'Another short call.' : 'A short call.' }) });
    const plain = await endedCall('agt_default', [['user', 'Just checking.']]);
    const deleted = await endedCall('agt_deleted', [['user', 'Just checking again.']]);

    expect(await outcomes(workerWith(llm))).toEqual(['analysed', 'analysed']);
    expect((await analysed(plain.id))[0].data).toEqual({ summary: 'A short call.', extracted: {}, model: 'post-call-default', successful: null });
    expect((await analysed(deleted.id))[0].data).toEqual({ summary: 'Another short call.', extracted: {}, model: 'post-call-default', successful: null });
  });

  it(`retries after ${POST_CALL_RETRY_DELAYS_MS.map((d) => d / 1000).join(' s, ')} s, then gives up after ${POST_CALL_MAX_ATTEMPTS} failed attempts without touching the status`, async () => {
    const llm = new FakeLlm([], { fallback: new LlmError('fake: connection refused', { code: 'connection' }) });
    const worker = workerWith(llm);
    const call = await endedCall('agt_full', [['user', 'Hello?']]);

    let failedAt = at(new Date(), 0);
    expect(await outcomes(worker)).toEqual(['retry']);
    for (const [i, delay] of POST_CALL_RETRY_DELAYS_MS.entries()) {
      const after = await calls.get('acc_1', call.id);
      expect(after).toMatchObject({ analysisAttempts: i + 1, analysisError: null });
      expect(after.analysisDueAt?.getTime()).toBe(failedAt.getTime() + delay);
      at(failedAt, delay - 1);
      expect(await worker.runDue()).toEqual([]);
      failedAt = at(failedAt, delay);
      expect(await outcomes(worker)).toEqual([i + 2 < POST_CALL_MAX_ATTEMPTS ? 'retry' : 'given_up']);
    }
    expect(llm.requests).toHaveLength(POST_CALL_MAX_ATTEMPTS);
    const after = await calls.get('acc_1', call.id);
    expect(after).toMatchObject({ status: 'ended', endReason: 'completed', analysisAttempts: POST_CALL_MAX_ATTEMPTS, analysedAt: null, summary: null });
    expect(after).toMatchObject({ analysisError: 'fake: connection refused', analysisDueAt: null });
    expect(await analysed(call.id)).toEqual([]);
    at(failedAt, 24 * 3600_000);
    expect(await worker.runDue()).toEqual([]);
    expect(llm.requests).toHaveLength(POST_CALL_MAX_ATTEMPTS);
  });

  it('counts the agents service being down as a failed attempt and succeeds on the retry', async () => {
    const llm = new FakeLlm([JSON_ANSWER]);
    const worker = workerWith(llm);
    const call = await endedCall('agt_full', [['user', 'A table for four, please.']]);

    agentsDown = true;
    const failedAt = at(new Date(), 0);
    expect(await outcomes(worker)).toEqual(['retry']);
    agentsDown = false;
    at(failedAt, POST_CALL_RETRY_DELAYS_MS[0]);
    expect(await outcomes(worker)).toEqual(['analysed']);
    expect(await calls.get('acc_1', call.id)).toMatchObject({ analysisAttempts: 1, analysisDueAt: null, summary: 'Ada booked a table for four on Friday.' });
    expect(await analysed(call.id)).toHaveLength(1);
  });

  it('a call claimed by a worker that crashed is taken up again once its lease ran out; the late failure is ignored', async () => {
    const llm = new FakeLlm([], { fallback: JSON_ANSWER });
    const call = await endedCall('agt_full', [['user', 'A table for four.']]);
    const claimedAt = clock();
    // A worker claims the call, then dies without a word.
    const [lost] = await calls.claimDueAnalyses(claimedAt, 10, new Date(claimedAt.getTime() + POST_CALL_LEASE_MS));
    expect(lost).toMatchObject({ callId: call.id, accountId: 'acc_1', agentId: 'agt_full' });

    const worker = workerWith(llm);
    at(claimedAt, POST_CALL_LEASE_MS - 1);
    expect(await worker.runDue()).toEqual([]);
    at(claimedAt, POST_CALL_LEASE_MS);
    expect(await worker.runDue()).toEqual([{ callId: call.id, outcome: 'analysed' }]);
    // The dead worker's claim is no longer the call's: a late failure report changes nothing.
    expect(await calls.rescheduleAnalysis('acc_1', call.id, lost.lease, 'too late', POST_CALL_MAX_ATTEMPTS, () => new Date())).toMatchObject({ outcome: 'stale' });
    expect(await calls.get('acc_1', call.id)).toMatchObject({ analysisAttempts: 0, analysisError: null, analysisDueAt: null });
    expect(await analysed(call.id)).toHaveLength(1);
  });

  it('two workers never analyse the same call twice, and one worker runs at most a few at once', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const llm = new FakeLlm([], {
      fallback: async () => {
        await gate;
        return JSON_ANSWER;
      },
    });
    const ended = [];
    for (let i = 0; i < POST_CALL_CONCURRENCY * 2 + 1; i++) ended.push(await endedCall('agt_full', [['user', `Table ${i}, please.`]]));
    const [a, b] = [workerWith(llm), workerWith(llm)];

    const passes = Promise.all([a.runDue(), b.runDue(), a.runDue(), b.runDue()]);
    // While both are busy (POST_CALL_CONCURRENCY each), one call is left for later: once both are full (however
    // slowly a loaded machine claims), a while longer brings no more.
    for (const deadline = Date.now() + 10_000; llm.requests.length < POST_CALL_CONCURRENCY * 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    expect(llm.requests).toHaveLength(POST_CALL_CONCURRENCY * 2);
    release();
    const done = (await passes).flat();
    expect(done).toHaveLength(POST_CALL_CONCURRENCY * 2);
    expect(new Set(done.map((d) => d.callId)).size).toBe(POST_CALL_CONCURRENCY * 2);
    expect(await outcomes(a)).toEqual(['analysed']);
    expect(llm.requests).toHaveLength(ended.length);
    for (const call of ended) expect(await analysed(call.id)).toHaveLength(1);
  });

  it('writes one analysis when an analysis of an already analysed call still comes through', async () => {
    const llm = new FakeLlm([], { fallback: JSON_ANSWER });
    const worker = workerWith(llm);
    const call = await endedCall('agt_full', [['user', 'A table for four.']]);
    const now = clock();
    const [claim] = await calls.claimDueAnalyses(now, 10, new Date(now.getTime() + POST_CALL_LEASE_MS));

    const raced = await Promise.all([worker.analyse(claim), worker.analyse(claim)]);
    expect([...raced].sort()).toEqual(['already_done', 'analysed']);
    const requests = llm.requests.length;
    expect(await worker.analyse(claim)).toBe('already_done');
    expect(llm.requests).toHaveLength(requests);
    expect(await analysed(call.id)).toHaveLength(1);
  });

  it('schedules an answered call that ended or failed, never one that was never answered', async () => {
    const failedAfterAnswer = await calls.insert(newCall('agt_full'));
    await calls.transition('acc_1', failedAfterAnswer.id, () => ({ status: 'in_progress' }));
    await calls.transition('acc_1', failedAfterAnswer.id, () => ({ status: 'failed', endReason: 'no_media' }));
    const canceled = await calls.insert(newCall('agt_full'));
    await calls.transition('acc_1', canceled.id, () => ({ status: 'ended', endReason: 'canceled' }));
    const refused = await calls.insert(newCall('agt_full'));
    await calls.transition('acc_1', refused.id, () => ({ status: 'failed', endReason: 'carrier_error' }));

    expect((await calls.get('acc_1', failedAfterAnswer.id)).analysisDueAt).not.toBeNull();
    expect((await calls.get('acc_1', canceled.id)).analysisDueAt).toBeNull();
    expect((await calls.get('acc_1', refused.id)).analysisDueAt).toBeNull();
    expect(await workerWith(new FakeLlm([JSON_ANSWER])).runDue()).toEqual([{ callId: failedAfterAnswer.id, outcome: 'analysed' }]);
    expect(await calls.get('acc_1', failedAfterAnswer.id)).toMatchObject({ status: 'failed', endReason: 'no_media' });
  });

  it('on shutdown, hands a call in flight back (due now, no attempt counted)', async () => {
    // A model that answers only when the request is aborted.
    const llm = new FakeLlm([
      (request) => new Promise((_, reject) => request.signal?.addEventListener('abort', () => reject(new LlmError('fake: aborted', { code: 'aborted' })))),
    ]);
    const worker = workerWith(llm);
    const call = await endedCall('agt_full', [['user', 'Hello?']]);

    const pass = worker.runDue();
    await new Promise((r) => setTimeout(r, 100));
    await worker.stop();
    expect(await pass).toEqual([{ callId: call.id, outcome: 'released' }]);
    const after = await calls.get('acc_1', call.id);
    expect(after).toMatchObject({ analysisAttempts: 0, analysisError: null, analysedAt: null });
    expect(after.analysisDueAt!.getTime()).toBeLessThanOrEqual(clock().getTime());
  });

  describe('the call’s verdict by the agent’s post_call.success', () => {
    const verdict = async (callId: string) => (await calls.get('acc_1', callId)).successful;

    it('is decided in the transaction that ends the call by its end reason when no extracted field decides', async () => {
      const success = { end_reasons: ['completed', 'transferred'] };
      const completed = await endedCall('agt_full', [['user', 'Hello?']], { success });
      const hungUp = await endedCall('agt_full', [['user', 'Hello?']], { success, endReason: 'hangup' });
      // The default end reasons: completed, hangup, transferred.
      const byDefault = await endedCall('agt_full', [['user', 'Hello?']], { success: {}, endReason: 'hangup' });

      expect([completed.successful, hungUp.successful, byDefault.successful]).toEqual([true, false, true]);
      expect([await verdict(completed.id), await verdict(hungUp.id), await verdict(byDefault.id)]).toEqual([true, false, true]);
      expect(toCallMessage(completed).successful).toBe(true);
      expect(toCallMessage(hungUp).successful).toBe(false);
      // The analysis confirms it and says so in call.analysed.
      await workerWith(new FakeLlm([], { fallback: JSON_ANSWER })).runDue();
      expect((await analysed(hungUp.id))[0].data).toMatchObject({ successful: false });
      expect(await verdict(completed.id)).toBe(true);
    });

    it('is null for a call whose agent defines no success, before and after its analysis', async () => {
      const call = await endedCall('agt_full', [['user', 'Hello?']]);
      expect(call.successful).toBeNull();
      expect(toCallMessage(call).successful).toBeUndefined();
      await workerWith(new FakeLlm([JSON_ANSWER])).runDue();
      expect(await verdict(call.id)).toBeNull();
      expect((await analysed(call.id))[0].data).toMatchObject({ successful: null });
    });

    it('with an extracted field, waits for the analysis: the field present and truthy, or equal to equals', async () => {
      const llm = new FakeLlm([], { fallback: JSON_ANSWER });
      // JSON_ANSWER: vip yes (true), outcome Booked (booked), caller_name Ada.
      const vip = await endedCall('agt_full', [['user', 'I am a member.']], { success: { extracted_field: { name: 'vip' } } });
      const booked = await endedCall('agt_full', [['user', 'A table, please.']], { success: { extracted_field: { name: 'outcome', equals: 'booked' } } });
      const notBooked = await endedCall('agt_full', [['user', 'A table, please.']], { success: { extracted_field: { name: 'outcome', equals: 'not_booked' } } });
      const fourPeople = await endedCall('agt_full', [['user', 'For four.']], { success: { extracted_field: { name: 'party_size', equals: 4 } } });
      expect([vip, booked, notBooked, fourPeople].map((c) => c.successful)).toEqual([null, null, null, null]);

      expect(await outcomes(workerWith(llm))).toEqual(['analysed', 'analysed', 'analysed', 'analysed']);
      expect([await verdict(vip.id), await verdict(booked.id), await verdict(notBooked.id), await verdict(fourPeople.id)]).toEqual([true, true, false, true]);
      expect((await analysed(vip.id))[0].data).toMatchObject({ extracted: { vip: true }, successful: true });
      expect((await analysed(notBooked.id))[0].data).toMatchObject({ extracted: { outcome: 'booked' }, successful: false });
    });

    it('with an extracted field, an end reason that does not count decides false at the end, whatever the analysis says', async () => {
      const call = await endedCall('agt_full', [['user', 'I am a member.']], { success: { end_reasons: ['completed'], extracted_field: { name: 'vip' } }, endReason: 'hangup' });
      expect(call.successful).toBe(false);
      await workerWith(new FakeLlm([JSON_ANSWER])).runDue();
      expect(await verdict(call.id)).toBe(false);
    });

    it('a field the analysis could not fill is not a success (a call with no turns: every field null)', async () => {
      const call = await endedCall('agt_full', [], { success: { extracted_field: { name: 'vip' } } });
      expect(await outcomes(workerWith(new FakeLlm()))).toEqual(['analysed']);
      expect(await verdict(call.id)).toBe(false);
    });

    it('stays null when the analysis is given up: it could not be decided', async () => {
      const call = await endedCall('agt_full', [['user', 'I am a member.']], { success: { extracted_field: { name: 'vip' } } });
      const now = clock();
      const [claim] = await calls.claimDueAnalyses(now, 10, new Date(now.getTime() + POST_CALL_LEASE_MS));
      expect(await calls.rescheduleAnalysis('acc_1', call.id, claim.lease, 'fake: the model is down', 1, () => new Date())).toMatchObject({ outcome: 'given_up' });
      expect(await calls.get('acc_1', call.id)).toMatchObject({ analysisError: 'fake: the model is down', successful: null });
    });
  });
});
